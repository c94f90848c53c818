"""The contract of a near-duplicate index's storage (``focuscrawl.dedup.lsh.BandStore``), one suite
run over the three: in process, in the crawl store (SQLite), on Redis (a real redis-server); and
the one algorithm over each of them giving the same answers."""

from __future__ import annotations

import numpy as np
import pytest

from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash
from focuscrawl.dedup.bands import MemoryBandStore
from focuscrawl.dedup.lsh import SCHEME, NearParameters, band_keys
from tests.test_dedup import crawl_like_calls

PARAMETERS = NearParameters(threshold=0.9, num_perm=128, shingle_size=5)  # 12 bands of 10 rows


@pytest.fixture(params=["memory", "sqlite", pytest.param("redis", marks=pytest.mark.slow)])
def kind(request):
    return request.param


@pytest.fixture
def make(kind, request, tmp_path):
    """make(parameters, crawl="c") -> a store of ``kind``, empty for a new crawl; the same crawl's
    store again where the storage outlives it (SQLite, Redis)."""
    opened = []
    if kind == "memory":
        yield lambda parameters=PARAMETERS, crawl="c": MemoryBandStore(parameters)
        return
    if kind == "sqlite":
        from focuscrawl.store import CrawlStore
        from focuscrawl.store.dedup import SqliteBandStore

        store = CrawlStore(tmp_path / "crawl.db")
        store.begin_crawl()
        opened.append(store)
        crawls: dict[str, int] = {}
        yield lambda parameters=PARAMETERS, crawl="c": SqliteBandStore(
            store.connection, crawls.setdefault(crawl, len(crawls) + 1), parameters)
        store.close()
        return
    import redis

    from focuscrawl.distributed.connection import Keys
    from focuscrawl.distributed.dedup import RedisBandStore

    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    yield lambda parameters=PARAMETERS, crawl="c": RedisBandStore(client, Keys(crawl), parameters)
    client.close()


@pytest.fixture
def store(make):
    return make()


def signature(seed: int, num_perm: int = 128) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**32 - 1, num_perm, dtype=np.uint64).astype("<u4")


def sharing_bands(base: np.ndarray, bands: set[int], seed: int, rows: int = PARAMETERS.rows) -> np.ndarray:
    """A signature equal to ``base`` in ``bands`` only (every other value differs)."""
    other = signature(seed)
    other[other == base] += 1
    for band in bands:
        other[band * rows:(band + 1) * rows] = base[band * rows:(band + 1) * rows]
    return other


def test_a_page_sharing_no_band_is_kept_in_the_same_step_and_found_after(store):
    first = signature(1)
    assert store.find_or_keep("http://a/1", first) == []
    assert len(store) == 1
    [(order, key, raw)] = store.candidates(first)
    assert key == "http://a/1" and np.frombuffer(raw, dtype="<u4").tolist() == first.tolist()
    assert store.candidates(signature(2)) == []


def test_one_shared_band_makes_a_candidate_and_nothing_is_kept(store):
    first = signature(1)
    store.find_or_keep("http://a/1", first)
    for band in (0, PARAMETERS.bands - 1):
        other = sharing_bands(first, {band}, seed=10 + band)
        found = store.find_or_keep(f"http://b/{band}", other)
        assert [key for _, key, _ in found] == ["http://a/1"]
        assert len(store) == 1  # a page with candidates is the index's to judge


def test_a_keys_own_page_is_never_its_candidate_in_find_or_keep(store):
    first = signature(1)
    store.find_or_keep("http://a/1", first)
    assert store.find_or_keep("http://a/1", first) == []  # kept again: its signature replaced by itself
    assert [key for _, key, _ in store.candidates(first)] == ["http://a/1"]
    assert len(store) == 1


def test_candidates_come_in_the_order_their_pages_were_kept(store):
    base = signature(1)
    store.keep("http://a/1", base)
    for i in range(2, 6):
        store.keep(f"http://a/{i}", sharing_bands(base, {i}, seed=i))
    found = store.find_or_keep("http://new/", base)
    assert [key for _, key, _ in found] == [f"http://a/{i}" for i in range(1, 6)]
    orders = [order for order, _, _ in found]
    assert orders == sorted(orders) and len(set(orders)) == 5


def test_keep_replaces_a_keys_signature_its_old_bands_go_and_its_order_stays(store):
    old, new = signature(1), signature(2)
    store.keep("http://a/0", signature(3))
    store.keep("http://a/1", old)
    [(order, _, _)] = store.candidates(old)
    store.keep("http://a/1", new)
    assert store.candidates(old) == []
    [(again, key, raw)] = store.candidates(new)
    assert (again, key) == (order, "http://a/1") and raw == new.tobytes()
    assert len(store) == 2


def test_a_replaced_signature_keeps_the_bands_it_shares_with_the_old_one(store):
    old = signature(1)
    store.keep("http://a/1", old)
    store.keep("http://a/1", sharing_bands(old, {4}, seed=7))
    assert [key for _, key, _ in store.candidates(sharing_bands(old, {4}, seed=8))] == ["http://a/1"]
    assert store.candidates(sharing_bands(old, {5}, seed=9)) == []


def test_band_keys_are_the_lsh_ones_whatever_the_store(store):
    """A page is a candidate exactly when one of ``lsh.band_keys`` is the same: another banding
    (rows) finds other pages."""
    first = signature(1)
    store.keep("http://a/1", first)
    keys = band_keys(first, PARAMETERS.bands, PARAMETERS.rows)
    other = sharing_bands(first, {3}, seed=4)
    assert len(set(keys) & set(band_keys(other, PARAMETERS.bands, PARAMETERS.rows))) == 1
    assert store.candidates(other)
    shifted = other.copy()
    shifted[3 * PARAMETERS.rows] += 1  # one value of the shared band changed
    assert store.candidates(shifted) == []


def test_parameters_are_claimed_once_and_recorded_again_after_a_clear(make):
    store = make()
    assert store.claim_parameters(PARAMETERS.text) is None
    assert store.claim_parameters("something else") == PARAMETERS.text
    store.keep("http://a/1", signature(1))
    store.clear()
    assert len(store) == 0 and store.candidates(signature(1)) == []
    store.record_parameters("other")
    assert store.claim_parameters(PARAMETERS.text) == "other"
    assert f"scheme={SCHEME}" in PARAMETERS.text


def test_crawls_are_kept_apart(make, kind):
    if kind == "memory":
        pytest.skip("a process's store is its own crawl")
    one, two = make(crawl="one"), make(crawl="two")
    one.keep("http://a/1", signature(1))
    assert two.candidates(signature(1)) == [] and len(two) == 0
    assert len(one) == 1


def test_non_ascii_keys_come_back_as_they_went(store):
    key = "http://ä.example/ü?q=€"
    store.keep(key, signature(1))
    assert [k for _, k, _ in store.candidates(signature(1))] == [key]


class _Index(NearDuplicateIndex):
    """The one algorithm (``MinHashIndex``) over a given store."""

    def __init__(self, store, threshold):
        super().__init__(threshold=threshold)
        self.store = store
        self._short = ExactDuplicateIndex()


@pytest.mark.parametrize("threshold", [0.5, 0.9, 1.0])
def test_the_algorithm_over_the_store_gives_the_in_process_answers(make, threshold):
    store = make(NearParameters(threshold, 128, 5), crawl=f"t{threshold}")
    ours, theirs = _Index(store, threshold), NearDuplicateIndex(threshold=threshold)
    exact_ours, exact_theirs = ExactDuplicateIndex(), ExactDuplicateIndex()
    answers = []
    for key, text in crawl_like_calls(150, seed=int(threshold * 10)):
        answer = exact_ours.find_or_add(key, content_hash(text)) or ours.find_or_add(key, text)
        assert answer == (exact_theirs.find_or_add(key, content_hash(text)) or theirs.find_or_add(key, text))
        answers.append(answer)
    assert any(answers) and len(store) == len(theirs.store)
