"""The compact LSH index behind near-duplicate detection, against datasketch's own MinHashLSH."""

import random

import numpy as np
import pytest
from datasketch import MinHashLSH

from focuscrawl.dedup import NearDuplicateIndex
from focuscrawl.dedup import bands as bands_module
from focuscrawl.dedup.bands import BLOCK_ROWS, BandIndex
from focuscrawl.dedup.fingerprints import band_params, word_shingles


@pytest.fixture(autouse=True, params=["recent", "sorted"])
def where_entries_are(request, monkeypatch):
    """Every test twice: with the band entries in the recent dicts, and moved into the sorted
    arrays at every add."""
    if request.param == "sorted":
        monkeypatch.setattr(bands_module, "MERGE_AT_LEAST", 1)
    return request.param


def signatures(count, seed=0, words=300, vocabulary=2000):
    """MinHash signatures of random texts, and of near copies of some of them."""
    rng = random.Random(seed)
    index = NearDuplicateIndex()
    texts = []
    for i in range(count):
        if texts and i % 3 == 0:  # a near copy: a few words changed
            base = rng.choice(texts).split()
            for _ in range(3):
                base[rng.randrange(len(base))] = f"x{rng.randrange(10**6)}"
            texts.append(" ".join(base))
        else:
            texts.append(" ".join(f"w{rng.randrange(vocabulary)}" for _ in range(words)))
    return [index.minhash(word_shingles(text, 5)) for text in texts]


def test_candidates_are_those_of_datasketch_lsh_with_the_same_bands():
    minhashes = signatures(300)
    bands, rows = band_params(0.9, 128)
    ours = BandIndex(128, bands, rows)
    theirs = MinHashLSH(num_perm=128, params=(bands, rows))
    for i, m in enumerate(minhashes):
        expected = {int(key) for key in theirs.query(m)}
        # a collision of Python's hash between different bands could only add a candidate
        assert expected <= ours.candidates(m.hashvalues)
        assert ours.add(m.hashvalues) == i
        theirs.insert(str(i), m)
    assert len(ours) == 300
    assert any(len(ours.candidates(m.hashvalues)) > 1 for m in minhashes)  # the near copies were found


def test_similarities_are_datasketch_jaccard_estimates():
    minhashes = signatures(40, seed=1)
    index = BandIndex(128, *band_params(0.9, 128))
    for m in minhashes:
        index.add(m.hashvalues)
    rows = list(range(0, 40, 3))
    assert np.allclose(index.similarities(minhashes[5].hashvalues, rows), [minhashes[5].jaccard(minhashes[r]) for r in rows])
    assert index.similarities(minhashes[5].hashvalues, []).shape == (0,)


def test_a_replaced_signature_leaves_its_old_buckets():
    first, second = signatures(2, seed=2)
    index = BandIndex(128, 8, 16)
    row = index.add(first.hashvalues)
    assert index.candidates(first.hashvalues) == {row}
    index.replace(row, second.hashvalues)
    assert index.candidates(first.hashvalues) == set()
    assert index.candidates(second.hashvalues) == {row}
    assert index.similarities(second.hashvalues, [row]).tolist() == [1.0]


def test_shared_buckets_hold_every_row_and_shrink_back_on_replace():
    m, other = signatures(2, seed=3)
    index = BandIndex(128, 8, 16)
    rows = [index.add(m.hashvalues) for _ in range(3)]
    assert index.candidates(m.hashvalues) == set(rows)
    index.replace(rows[1], other.hashvalues)
    index.replace(rows[2], other.hashvalues)
    assert index.candidates(m.hashvalues) == {rows[0]}
    assert index.candidates(other.hashvalues) == {rows[1], rows[2]}


def test_the_store_grows_a_block_at_a_time_and_keeps_every_signature():
    minhashes = signatures(BLOCK_ROWS * 2 + 5, seed=4, words=30)
    index = BandIndex(128, *band_params(0.9, 128))
    for m in minhashes:
        index.add(m.hashvalues)
    assert len(index._blocks) == 3
    last = len(minhashes) - 1
    assert index.similarities(minhashes[last].hashvalues, [last, 0, BLOCK_ROWS]).tolist()[0] == 1.0
    assert last in index.candidates(minhashes[last].hashvalues)


def test_bad_shapes_and_values_are_refused():
    with pytest.raises(ValueError, match="need at least"):
        BandIndex(64, 10, 10)
    index = BandIndex(16, 4, 4)
    with pytest.raises(ValueError, match="below 2\\*\\*32"):
        index.add(np.full(16, 1 << 40, dtype=np.uint64))


def test_a_signature_replaced_after_the_arrays_were_built_is_found_by_its_new_bands_only(monkeypatch):
    monkeypatch.setattr(bands_module, "MERGE_AT_LEAST", 10**6)
    minhashes = signatures(60, seed=5)
    index = BandIndex(128, *band_params(0.9, 128))
    for m in minhashes[:50]:
        index.add(m.hashvalues)
    index._merge()  # every entry in the sorted arrays
    index.replace(7, minhashes[55].hashvalues)
    assert 7 not in index.candidates(minhashes[7].hashvalues)  # the stale entries are passed over
    assert 7 in index.candidates(minhashes[55].hashvalues)
    index._merge()  # and dropped
    assert len(index._keys) == 50 * index.bands
    assert 7 not in index.candidates(minhashes[7].hashvalues)
    assert {r for r in range(50) if r != 7} >= index.candidates(minhashes[3].hashvalues) - {7} >= {3}


def test_a_page_costs_its_signature_and_12_bytes_a_band_once_merged():
    minhashes = signatures(BLOCK_ROWS, seed=6, words=40)
    index = BandIndex(128, *band_params(0.9, 128))
    for m in minhashes:
        index.add(m.hashvalues)
    index._merge()
    assert not index._recent
    assert index._keys.nbytes + index._rows.nbytes == BLOCK_ROWS * index.bands * 12


def test_a_merge_drops_a_replaced_rows_old_entries_without_hashing_the_others(monkeypatch):
    """A re-fetched page's old entries are dropped by its row number (its new bands are all among
    the recent entries), not by hashing every entry again: a merge of a long crawl's index would
    stall the crawl. A band the new signature shares with the old is kept once."""
    monkeypatch.setattr(bands_module, "MERGE_AT_LEAST", 10**6)
    minhashes = signatures(80, seed=8)
    index = BandIndex(128, *band_params(0.9, 128))
    for m in minhashes[:70]:
        index.add(m.hashvalues)
    index._merge()
    changed = minhashes[5].hashvalues.copy()
    changed[:10] += 1  # the first band changes, the others stay
    index.replace(5, changed)
    monkeypatch.setattr(index, "_band_keys", _counting(index._band_keys, calls := []))
    index._merge()
    assert calls == []
    assert len(index._keys) == 70 * index.bands
    assert 5 in index.candidates(changed) and 5 in index.candidates(minhashes[5].hashvalues)  # bands shared


def _counting(function, calls):
    def counted(*args):
        calls.append(args)
        return function(*args)
    return counted
