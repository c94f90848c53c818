"""Exact and near-duplicate detection (focuscrawl.dedup), driven directly."""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from datasketch import MinHash
from hypothesis import given, settings
from hypothesis import strategies as st

from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash, normalise_text, word_shingles
from focuscrawl.dedup.fingerprints import band_params, jaccard, shingle_chunks

SYLLABLES = ["ka", "lo", "mi", "ren", "tu", "sa", "vel", "or", "in", "da", "pe", "qu", "ths", "zor", "an"]
VOCABULARY = sorted({a + b + c for a in SYLLABLES for b in SYLLABLES for c in SYLLABLES[:6]})


def article(seed: int, words: int = 400) -> str:
    """A deterministic page of ``words`` words in sentences and lines, like extracted main text."""
    rng = random.Random(seed)
    lines, line = [], []
    for i in range(words):
        line.append(rng.choice(VOCABULARY))
        if i % 12 == 11:
            lines.append(" ".join(line).capitalize() + ".")
            line = []
    lines.append(" ".join(line))
    return "\n".join(lines)


ORIGINAL = "Published on 12 March 2024 by the editors\n" + article(1) + "\nCopyright 2024 Example Corp. All rights reserved."


def near_copy(text: str, seed: int, changes: int = 3) -> str:
    """``text`` with ``changes`` of its words replaced."""
    rng = random.Random(seed)
    words = text.split()
    for _ in range(changes):
        words[rng.randrange(len(words))] = f"x{rng.randrange(10**6)}"
    return " ".join(words)


def crawl_like_calls(count: int, seed: int) -> list[tuple[str, str]]:
    """(key, text) as a crawl hands pages to a duplicate index (like the soak web's): a third near
    copies of another page, some shorter than a shingle, some keys fetched again (with the same
    or other content)."""
    rng = random.Random(seed)
    texts: list[str] = []
    calls = []
    for i in range(count):
        if texts and i % 3 == 0:
            text = near_copy(rng.choice(texts), i, changes=rng.randrange(1, 15))
        elif i % 17 == 5:
            text = rng.choice(["Not found", "Access denied", "Page moved here"])
        else:
            text = " ".join(f"w{rng.randrange(3000)}" for _ in range(rng.randrange(50, 300)))
        texts.append(text)
        calls.append((f"http://h{rng.randrange(5)}/{rng.randrange(int(count * 0.8))}", text))
    return calls


def test_content_hash_ignores_case_and_whitespace_only():
    assert content_hash("Hello   World\n\tagain ") == content_hash("hello world again")
    assert content_hash("hello world again") == hashlib.sha1(b"hello world again").hexdigest()
    assert content_hash("hello world again") != content_hash("hello world, again")


def test_exact_index_returns_the_first_key_and_never_the_key_itself():
    index = ExactDuplicateIndex()
    digest = content_hash("same text")
    assert index.find_or_add("http://a/1", digest) is None
    assert index.find_or_add("http://a/2", digest) == "http://a/1"
    assert index.find_or_add("http://a/3", digest) == "http://a/1"
    assert index.find_or_add("http://a/1", digest) is None  # a re-fetch is not a duplicate
    assert index.find_or_add("http://a/4", content_hash("other text")) is None
    assert len(index) == 2


def test_changed_date_line_is_a_near_duplicate():
    changed = ORIGINAL.replace("Published on 12 March 2024", "Published on 3 April 2025")
    assert changed != ORIGINAL
    index = NearDuplicateIndex(threshold=0.9)
    assert index.find_or_add("http://a/original", ORIGINAL) is None
    assert index.find_or_add("http://b/copy", changed) == "http://a/original"


def test_boilerplate_edit_is_a_near_duplicate():
    edited = ORIGINAL.replace(
        "Copyright 2024 Example Corp. All rights reserved.",
        "Copyright 2025 Example Holdings Inc. Some rights reserved. Privacy policy. Contact us.",
    )
    index = NearDuplicateIndex(threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    assert index.find_or_add("http://a/edited", edited) == "http://a/original"


def test_a_different_page_is_not_a_near_duplicate():
    index = NearDuplicateIndex(threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    other = "Published on 12 March 2024 by the editors\n" + article(2) + "\nCopyright 2024 Example Corp. All rights reserved."
    assert index.find_or_add("http://a/other", other) is None
    assert len(index) == 2


def test_an_lsh_bucket_hit_below_the_threshold_is_not_a_duplicate():
    # Rewrite every 8th line: a true Jaccard around 0.75-0.85, which often shares an LSH band.
    lines = ORIGINAL.split("\n")
    rewritten = "\n".join(article(100 + i, 12) if i % 8 == 4 else line for i, line in enumerate(lines))
    similarity = jaccard(word_shingles(ORIGINAL, 5), word_shingles(rewritten, 5))
    assert 0.6 < similarity < 0.85
    index = NearDuplicateIndex(threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    # The bucket hit happens (MinHash is deterministic) ...
    assert "http://a/original" in index.candidates(index.minhash(word_shingles(rewritten, 5)))
    # ... but the verified similarity is below 0.9.
    assert index.find_or_add("http://a/rewritten", rewritten) is None
    # At a lower threshold the same pair is a duplicate.
    lenient = NearDuplicateIndex(threshold=0.5)
    lenient.find_or_add("http://a/original", ORIGINAL)
    assert lenient.find_or_add("http://a/rewritten", rewritten) == "http://a/original"


def test_duplicates_point_at_the_original_not_at_each_other():
    index = NearDuplicateIndex(threshold=0.9)
    index.find_or_add("http://a/1", ORIGINAL)
    assert index.find_or_add("http://a/2", ORIGINAL.replace("12 March", "13 March")) == "http://a/1"
    assert index.find_or_add("http://a/3", ORIGINAL.replace("12 March", "14 March")) == "http://a/1"
    assert len(index) == 1


def test_refetching_the_same_key_is_not_a_duplicate_of_itself():
    index = NearDuplicateIndex()
    assert index.find_or_add("http://a/1", ORIGINAL) is None
    assert index.find_or_add("http://a/1", ORIGINAL.replace("12 March", "13 March")) is None
    assert index.find_or_add("http://a/2", ORIGINAL) == "http://a/1"


def test_texts_shorter_than_a_shingle_fall_back_to_exact_matching():
    index = NearDuplicateIndex(shingle_size=5)
    assert word_shingles("Page not found", 5) == set()
    assert index.find_or_add("http://a/1", "Page not found") is None
    assert index.find_or_add("http://a/2", "  page NOT found ") == "http://a/1"
    assert index.find_or_add("http://a/3", "Page not there") is None


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9, 0.95])
def test_lsh_bands_make_a_pair_at_the_threshold_a_candidate_almost_surely(threshold):
    bands, rows = band_params(threshold, 128)
    assert bands * rows <= 128
    assert 1 - (1 - threshold**rows) ** bands >= 0.99
    # and a clearly less similar pair rarely is
    assert 1 - (1 - (threshold - 0.3) ** rows) ** bands < 0.5


@pytest.mark.parametrize("kwargs", [{"threshold": 0}, {"threshold": 1.5}, {"num_perm": 4}, {"shingle_size": 0}])
def test_bad_parameters_are_refused_with_a_message(kwargs):
    with pytest.raises(ValueError, match="must be"):
        NearDuplicateIndex(**kwargs)


def test_signatures_are_those_of_a_fresh_minhash():
    """The index reuses one set of permutations: its signatures are exactly datasketch's own."""
    index = NearDuplicateIndex(num_perm=64)
    shingles = word_shingles(" ".join(f"word{i}" for i in range(40)), 5)
    fresh = MinHash(num_perm=64)
    fresh.update_batch([s.encode("utf-8") for s in shingles])
    first, second = index.minhash(shingles), index.minhash(shingles)
    assert np.array_equal(first.hashvalues, fresh.hashvalues) and np.array_equal(second.hashvalues, fresh.hashvalues)
    assert first.jaccard(fresh) == 1.0


def test_a_long_page_is_hashed_in_chunks_to_the_same_signature(monkeypatch):
    # datasketch's update_batch holds shingles x num_perm integers at once (326 MiB for a page of
    # 2 MB of varied words in bench/soak.py): the index hashes in chunks, and a minimum is a minimum
    from focuscrawl.dedup import fingerprints

    index = NearDuplicateIndex()
    shingles = word_shingles(article(3, words=3000), index.shingle_size)
    whole = MinHash(num_perm=index.num_perm, permutations=index._template.permutations, scheme=index._template.scheme)
    whole.update_batch([s.encode("utf-8") for s in shingles])
    monkeypatch.setattr(fingerprints, "MINHASH_CHUNK", 100)
    assert np.array_equal(index.minhash(shingles).hashvalues, whole.hashvalues)


_SPACES = " \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2000\u2028\u3000"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abcßİ\u200b") + list(_SPACES)), max_size=80),
       st.integers(1, 6), st.integers(1, 12), st.integers(1, 4))
def test_shingles_a_piece_at_a_time_are_the_windows_of_the_whole_text(text, size, piece, chunk):
    """The text is split into words a piece at a time and the windows given a chunk at a time
    (bounded memory on a big page): together they are the windows of the whole normalised text."""
    words = " ".join(text.casefold().split()).split()
    windows = [" ".join(words[i:i + size]) for i in range(len(words) - size + 1)]
    assert normalise_text(text) == " ".join(words)
    chunks = list(shingle_chunks(text, size, chunk=chunk, piece=piece))
    assert [w for c in chunks for w in c] == windows
    assert all(len(c) <= chunk + piece for c in chunks)


def test_a_big_pages_signature_is_that_of_its_whole_set_of_shingles():
    rng = random.Random(7)
    text = " ".join(f"w{rng.randrange(50000)}" for _ in range(60000))
    index = NearDuplicateIndex()
    by_pieces = index._signature(shingle_chunks(text, 5, piece=1000))[0]
    assert np.array_equal(by_pieces.hashvalues, index.minhash(word_shingles(text, 5)).hashvalues)
