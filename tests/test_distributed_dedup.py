"""The shared duplicate indexes (focuscrawl.distributed.dedup) on a real redis-server: the
in-process indexes' answers (tests/test_dedup.py's cases), crawls kept apart, concurrent workers."""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
import redis

from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash, word_shingles
from focuscrawl.dedup.fingerprints import jaccard
from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.dedup import RedisExactIndex, RedisNearIndex
from tests.test_dedup import ORIGINAL, article, crawl_like_calls, near_copy


@pytest.fixture
def client(redis_url):
    with redis.Redis.from_url(redis_url) as client:
        yield client


def near(client, crawl="c", **kwargs) -> RedisNearIndex:
    return RedisNearIndex(client, Keys(crawl), **kwargs)


# -- the exact index ----------------------------------------------------------------------------

def test_exact_index_returns_the_first_key_and_never_the_key_itself(client):
    index = RedisExactIndex(client, Keys("c"))
    digest = content_hash("same text")
    assert index.find_or_add("http://a/1", digest) is None
    assert index.find_or_add("http://a/2", digest) == "http://a/1"
    assert index.find_or_add("http://a/3", digest) == "http://a/1"
    assert index.find_or_add("http://a/1", digest) is None  # a re-fetch is not a duplicate
    assert index.find_or_add("http://a/4", content_hash("other text")) is None
    assert len(index) == 2
    assert digest in index and content_hash("third text") not in index


def test_exact_index_answers_as_the_in_process_one(client):
    shared, local = RedisExactIndex(client, Keys("c")), ExactDuplicateIndex()
    rng = random.Random(5)
    calls = [(f"http://h{rng.randrange(30)}/{rng.randrange(50)}", content_hash(f"text {rng.randrange(40)}"))
             for _ in range(500)]
    assert [shared.find_or_add(*call) for call in calls] == [local.find_or_add(*call) for call in calls]
    assert len(shared) == len(local)


def test_exact_index_keeps_non_ascii_keys(client):
    index = RedisExactIndex(client, Keys("c"))
    index.find_or_add("http://exämple.org/ページ", "d")
    assert index.find_or_add("http://a/2", "d") == "http://exämple.org/ページ"


def test_workers_racing_on_one_content_keep_exactly_one_page(redis_url):
    answers: dict[str, str | None] = {}
    barrier = threading.Barrier(4)

    def worker(i: int) -> None:
        with redis.Redis.from_url(redis_url) as own_client:
            index = RedisExactIndex(own_client, Keys("c"))
            barrier.wait()
            for page in range(200):
                key = f"http://w{i}/{page}"
                answers[key] = index.find_or_add(key, content_hash(f"page {page}"))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for page in range(200):
        keys = [f"http://w{i}/{page}" for i in range(4)]
        kept = [key for key in keys if answers[key] is None]
        assert len(kept) == 1  # exactly one worker kept the page, the others point at it
        assert all(answers[key] == kept[0] for key in keys if key != kept[0])


# -- the near index: tests/test_dedup.py's cases ----------------------------------------------

def test_changed_date_line_is_a_near_duplicate(client):
    changed = ORIGINAL.replace("Published on 12 March 2024", "Published on 3 April 2025")
    index = near(client, threshold=0.9)
    assert index.find_or_add("http://a/original", ORIGINAL) is None
    assert index.find_or_add("http://b/copy", changed) == "http://a/original"


def test_boilerplate_edit_is_a_near_duplicate(client):
    edited = ORIGINAL.replace(
        "Copyright 2024 Example Corp. All rights reserved.",
        "Copyright 2025 Example Holdings Inc. Some rights reserved. Privacy policy. Contact us.",
    )
    index = near(client, threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    assert index.find_or_add("http://a/edited", edited) == "http://a/original"


def test_a_different_page_is_not_a_near_duplicate(client):
    index = near(client, threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    other = ORIGINAL.replace(article(1), article(2))
    assert index.find_or_add("http://a/other", other) is None
    assert len(index) == 2


def test_an_lsh_bucket_hit_below_the_threshold_is_not_a_duplicate(client):
    lines = ORIGINAL.split("\n")
    rewritten = "\n".join(article(100 + i, 12) if i % 8 == 4 else line for i, line in enumerate(lines))
    assert 0.6 < jaccard(word_shingles(ORIGINAL, 5), word_shingles(rewritten, 5)) < 0.85
    index = near(client, threshold=0.9)
    index.find_or_add("http://a/original", ORIGINAL)
    assert "http://a/original" in index.candidates(index.minhash(word_shingles(rewritten, 5)))
    assert index.find_or_add("http://a/rewritten", rewritten) is None
    lenient = near(client, crawl="lenient", threshold=0.5)
    lenient.find_or_add("http://a/original", ORIGINAL)
    assert lenient.find_or_add("http://a/rewritten", rewritten) == "http://a/original"


def test_duplicates_point_at_the_original_not_at_each_other(client):
    index = near(client, threshold=0.9)
    index.find_or_add("http://a/1", ORIGINAL)
    assert index.find_or_add("http://a/2", ORIGINAL.replace("12 March", "13 March")) == "http://a/1"
    assert index.find_or_add("http://a/3", ORIGINAL.replace("12 March", "14 March")) == "http://a/1"
    assert len(index) == 1


def test_refetching_the_same_key_is_not_a_duplicate_of_itself(client):
    index = near(client)
    assert index.find_or_add("http://a/1", ORIGINAL) is None
    assert index.find_or_add("http://a/1", ORIGINAL.replace("12 March", "13 March")) is None
    assert index.find_or_add("http://a/2", ORIGINAL) == "http://a/1"
    assert len(index) == 1


def test_a_refetch_with_changed_content_replaces_the_signature(client):
    index = near(client)
    other = article(7)
    assert index.find_or_add("http://a/1", ORIGINAL) is None
    assert index.find_or_add("http://a/1", other) is None  # the page now says something else
    assert index.find_or_add("http://a/2", ORIGINAL) is None  # the old content is forgotten
    assert index.find_or_add("http://a/3", near_copy(other, 1)) == "http://a/1"
    assert len(index) == 2


def test_texts_shorter_than_a_shingle_fall_back_to_exact_matching(client):
    index = near(client, shingle_size=5)
    assert index.find_or_add("http://a/1", "Page not found") is None
    assert index.find_or_add("http://a/2", "  page NOT found ") == "http://a/1"
    assert index.find_or_add("http://a/3", "Page not there") is None
    assert len(index) == 2
    # its own keys: the page-level exact index of the crawl does not see them
    assert len(RedisExactIndex(client, Keys("c"))) == 0


def signature(index, changed: range = range(0), seed: int = 0):
    """A MinHash of set values: one base signature with the values at ``changed`` replaced."""
    values = np.random.default_rng(0).integers(0, 2**32, size=index.num_perm, dtype=np.uint64)
    values[list(changed)] = np.random.default_rng(seed + 1).integers(0, 2**32, size=len(changed), dtype=np.uint64)
    m = index.minhash(set())
    m.hashvalues = values
    return m


def test_the_most_similar_wins(client):
    # 6 and 10 of 128 values changed: 0.95 and 0.92 similar to the base, 0.875 to each other
    for index in (near(client), NearDuplicateIndex()):
        assert index.find_or_add_minhash("http://a/less", signature(index, range(0, 10), 1)) is None
        assert index.find_or_add_minhash("http://a/more", signature(index, range(60, 66), 2)) is None
        assert index.find_or_add_minhash("http://a/query", signature(index)) == "http://a/more"


@pytest.mark.parametrize("first", ["a", "b"])
def test_the_earliest_of_equally_similar_wins(client, first):
    # both 0.92 similar to the base, 0.84 to each other
    for index in (near(client, crawl=f"c{first}"), NearDuplicateIndex()):
        pages = {"a": signature(index, range(20, 30), 3), "b": signature(index, range(100, 110), 4)}
        for key in sorted(pages, reverse=first == "b"):
            assert index.find_or_add_minhash(f"http://a/{key}", pages[key]) is None
        assert index.find_or_add_minhash("http://a/query", signature(index)) == f"http://a/{first}"


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9, 1.0])
def test_same_answers_as_the_in_process_index(client, threshold):
    """Pages as the soak web writes them (a third near copies of another): every answer equal."""
    calls = crawl_like_calls(90, seed=int(threshold * 10))
    shared, local = near(client, threshold=threshold), NearDuplicateIndex(threshold=threshold)
    answers = [shared.find_or_add(*call) for call in calls]
    assert answers == [local.find_or_add(*call) for call in calls]
    assert any(answers) and len(shared) == len(local)


def test_signatures_are_the_in_process_ones(client):
    shingles = word_shingles(article(3), 5)
    assert np.array_equal(near(client).minhash(shingles).hashvalues, NearDuplicateIndex().minhash(shingles).hashvalues)


@pytest.mark.parametrize("kwargs", [{"threshold": 0}, {"threshold": 1.5}, {"num_perm": 4}, {"shingle_size": 0}])
def test_bad_parameters_are_refused_with_a_message(client, kwargs):
    with pytest.raises(ValueError, match="must be"):
        near(client, **kwargs)


def test_workers_of_one_crawl_must_share_parameters(client):
    near(client, threshold=0.9)
    with pytest.raises(ValueError, match="indexes near-duplicates with threshold=0.9"):
        near(client, threshold=0.8)
    near(client, crawl="other", threshold=0.8)  # another crawl, other parameters


# -- crawls, connections, workers ---------------------------------------------------------------

def test_two_crawls_do_not_mix(client):
    first, second = near(client, crawl="one"), near(client, crawl="two")
    first.find_or_add("http://a/1", ORIGINAL)
    first.find_or_add("http://a/short", "Not found")
    assert second.find_or_add("http://b/1", ORIGINAL) is None
    assert second.find_or_add("http://b/short", "Not found") is None
    assert RedisExactIndex(client, Keys("two")).find_or_add("http://b/2", "d") is None
    assert len(first) == len(second) == 2
    assert all(key.startswith((b"focus:{one}:", b"focus:{two}:")) for key in client.scan_iter())


def test_from_url_uses_the_database_of_the_url(redis_url, client):
    url = redis_url.rsplit("/", 1)[0] + "/3"
    index = RedisNearIndex.from_url(url, "c")
    index.find_or_add("http://a/1", ORIGINAL)
    assert index.find_or_add("http://a/2", ORIGINAL) == "http://a/1"
    assert RedisExactIndex.from_url(url, "c").find_or_add("http://a/1", "d") is None
    assert client.dbsize() == 0  # nothing in database 0: the band sets neither
    with redis.Redis.from_url(url) as db3:
        assert any(b"near:band:" in key for key in db3.scan_iter())


def test_a_client_decoding_replies_is_refused(redis_url):
    with redis.Redis.from_url(redis_url, decode_responses=True) as decoding:
        with pytest.raises(ValueError, match="decode_responses=False"):
            near(decoding)


def test_workers_racing_on_near_copies_lose_no_page(redis_url):
    """Two workers each index a near copy of the same pages at the same moment: a copy is a
    duplicate of the other worker's, or both are kept (the documented race); never both duplicates."""
    bases = [article(200 + i, 150) for i in range(40)]
    answers: list[list[str | None]] = [[], []]
    barrier = threading.Barrier(2)

    def worker(i: int) -> None:
        with redis.Redis.from_url(redis_url) as own_client:
            index = near(own_client)
            barrier.wait()
            for n, base in enumerate(bases):
                answers[i].append(index.find_or_add(f"http://w{i}/{n}", near_copy(base, 10 * n + i, changes=1)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    kept = 0
    for n in range(len(bases)):
        first, second = answers[0][n], answers[1][n]
        assert first is None or second is None
        assert first in (None, f"http://w1/{n}") and second in (None, f"http://w0/{n}")
        kept += (first is None) + (second is None)
    with redis.Redis.from_url(redis_url) as client:
        assert len(near(client)) == kept


def test_redis_errors_name_the_server(client):
    client.set(Keys("c")("dedup", "exact"), "not a hash")
    with pytest.raises(redis.exceptions.ResponseError, match="exact-duplicate index at redis://127.0.0.1:"):
        RedisExactIndex(client, Keys("c")).find_or_add("http://a/1", "d")
    index = near(client)
    client.set(Keys("c")("dedup", "near", "signature"), "not a hash")
    with pytest.raises(redis.exceptions.ResponseError, match="near-duplicate index at redis://127.0.0.1:"):
        index.find_or_add("http://a/1", ORIGINAL)
