"""The in-memory host queue (``MemoryHostQueue``): one host's records, best first, in a hot heap and
cold runs, driven through the storage interface the frontier uses (``HostQueue``)."""

import itertools
import random

import pytest

from focuscrawl.frontier import Entry, HostQueue, MemoryHostQueue, read_stored
from focuscrawl.frontier.entries import rich_record
from focuscrawl.frontier.hostqueue import HOT_MAX
from focuscrawl.frontier.records import BLOCK, FLAG, KEY, RICH, VERSION, compact, header, record_priority, \
    record_version, restamp

PREFIX = "https://h.example"
_seq = itertools.count(1)


def record(priority, version=0, blob=None):
    seq = next(_seq)
    return compact(priority, seq, version, f"{PREFIX}/{seq}", PREFIX, blob)


def kept(q, priority, version=0):
    """A rich record: the queue keeps its entry as an object."""
    seq = next(_seq)
    return rich_record(q, Entry(priority, f"{PREFIX}/rich-{seq}", object()), seq, header(priority, seq, version))


def drain(q):
    """Pop every record (each the ``top`` before the pop)."""
    out = []
    while (top := q.top) is not None:
        out.append(q.pop())
        assert out[-1] == top
    return out


def seq_of(record):
    return int.from_bytes(record[8:12], "big")


def restamper(q, version):
    """Re-scoring as the frontier does it: new headers (priority flipped, fresh seq numbers), a
    rich record's entry kept again under its new seq."""
    def restamp_all(records):
        out = []
        for r in records:
            seq, priority = next(_seq), 1.0 - record_priority(r)
            if r[FLAG] == RICH:
                out.append(rich_record(q, q.kept(seq_of(r), forget=True), seq, header(priority, seq, version)))
            else:
                out.append(restamp(r, priority, seq, version))
        return out
    return restamp_all


def test_the_memory_queue_is_a_host_queue():
    q = MemoryHostQueue()
    assert isinstance(q, HostQueue)
    assert (q.top, q.size(), q.cold_size(), list(q.records()), q.stored()) == (None, 0, 0, [], ([], []))


@pytest.mark.parametrize("deflate", [True, False])
def test_pushes_and_pops_come_in_exact_order_across_hot_and_cold(deflate):
    rng = random.Random(1)
    q, model = MemoryHostQueue(), []
    for step in range(6000):
        if rng.random() < 0.7:
            r = record(round(rng.random(), 2), blob=b"\xfe\xff" if step % 3 else None)  # ties: seq order
            q.push(r, deflate)
            model.append(r)
        elif model:
            best = min(model)
            assert q.pop() == best
            model.remove(best)
        assert q.top == (min(model) if model else None) and q.size() == len(model)
    assert q.cold_size() > 0.8 * len(model) and {run.deflated for run in q.cold_runs()} == {deflate}
    assert drain(q) == sorted(model)


def test_a_spill_leaves_the_best_records_hot_and_never_moves_rich_ones():
    q = MemoryHostQueue()
    rich = [kept(q, 0.001 * i) for i in range(10)]  # the worst records: a spill would take them first
    for r in rich:
        q.push(r, True)
    compact_records = [record(0.5 + 0.001 * i) for i in range(HOT_MAX + 1)]
    for r in compact_records:
        q.push(r, True)
    assert q.cold_size() == HOT_MAX + 1 - 8  # all but the best 8 compact ones
    cold = [r for run in q.cold_runs() for r in run.records()]
    assert cold == sorted(compact_records)[8:] and all(r[FLAG] != RICH for r in cold)
    assert len(list(q.kept_entries())) == 10 and q.top == min(compact_records)
    assert drain(q) == sorted(compact_records + rich)


def test_drop_removes_the_worst_keys_from_hot_and_cold():
    rng = random.Random(2)
    q = MemoryHostQueue()
    records = [record(rng.random()) for _ in range(3000)]
    for r in records:
        q.push(r, True)
    for _ in range(60):  # records taken from a run's front: an inflated block
        q.pop()
    left = sorted(records)[60:]
    worst = left[-700:]
    assert sorted(q.drop({r[:KEY] for r in worst})) == worst
    assert q.size() == len(left) - 700 and q.cold_size() > 0
    assert q.drop({r[:KEY] for r in left}) and (q.top, q.size(), q.cold_runs()) == (None, 0, [])


def test_replace_writes_a_host_once_and_keeps_its_objects():
    q = MemoryHostQueue()
    rich = kept(q, 0.2)
    records = [record(0.001 * i) for i in range(500)] + [rich]
    q.push(record(0.9), True)
    q.replace(list(records), True)
    assert q.size() == 501 and len(q.cold_runs()) == 1 and q.cold_size() == 500 - 8  # one run, whole
    assert [e.priority for e in q.kept_entries()] == [0.2]
    assert drain(q) == sorted(records)


@pytest.mark.parametrize("deflate", [True, False])
def test_stored_hands_over_compact_and_packed_records_as_they_are(deflate):
    q = MemoryHostQueue()
    q.prefix = PREFIX
    records = [record(0.001 * i, blob=b"\x00\xfe" if i % 2 else None) for i in range(700)]
    for r in records + [kept(q, 0.5)]:
        q.push(r, deflate)
    popped = [q.pop() for _ in range(30)]  # cold records in use: an inflated front
    loose, blocks = q.stored()
    assert bool(blocks) == deflate
    read_back = list(read_stored(PREFIX, loose, blocks))
    assert sorted(r for r, _, _ in read_back) == sorted(set(records) - set(popped))
    assert all(url.startswith(PREFIX + "/") for _, url, _ in read_back)


def test_stale_records_are_found_in_the_hot_heap_and_in_the_runs():
    q = MemoryHostQueue()
    for i in range(300):
        q.push(record(0.001 * i, version=1), True)
    assert not q.has_stale(VERSION.pack(1)) and q.has_stale(VERSION.pack(2))
    q.push(record(0.0001, version=0), True)  # the worst: spilled to a run sooner or later
    assert q.has_stale(VERSION.pack(1))


@pytest.mark.parametrize("deflate", [True, False])
def test_a_deep_queue_is_rescored_a_bounded_part_at_a_time(deflate):
    rng = random.Random(3)
    q = MemoryHostQueue()
    records = [record(rng.random()) for _ in range(5000)]
    rich = [kept(q, rng.random()) for _ in range(20)]
    for r in records + rich:
        q.push(r, deflate)
    version = VERSION.pack(1)
    calls, seen = [], []

    def restamp_all(batch):
        seen.extend(r[KEY:] if r[FLAG] != RICH else r for r in batch)
        return restamper(q, 1)(batch)

    while done := q.rescore_part(700, version, restamp_all, deflate):
        calls.append(done)
        assert done <= 700 + BLOCK and q.top == min(q.records())
        assert not q.has_stale(version) or q.size() == 5020
    assert len(calls) >= 7 and sum(calls) == 5020 == len(seen) and q.size() == 5020
    assert any(run.lot for run in q.cold_runs())
    # every record re-scored once, none lost or doubled
    drained = drain(q)
    assert all(record_version(r) == 1 for r in drained)
    assert sorted(record_priority(r) for r in drained) == sorted(1.0 - record_priority(r) for r in records + rich)
    assert len(list(q.kept_entries())) == 20



@pytest.mark.parametrize("deflate", [True, False])
def test_a_deep_queue_reaches_every_stale_record_while_versions_move(deflate):
    """Parts of a deep queue taken while the version moves on between them (a learner update
    between two background passes) reach every record, the worst-stored among them, within about
    size / part calls: each part is the longest-stale records (best first, every part was the same
    best records, stale again, and the worst were never re-scored)."""
    q = MemoryHostQueue()
    records = [record(0.0001 * i, version=1) for i in range(3000)]
    for r in records:
        q.push(r, deflate)
    rescored = set()

    def restamp_all(batch):
        rescored.update(r[FLAG + 1:] for r in batch)  # the URL: what survives a new header
        return [restamp(r, 0.5 + record_priority(r), next(_seq), version) for r in batch]

    for version in range(2, 9):
        done = q.rescore_part(600, VERSION.pack(version), restamp_all, deflate)
        assert 600 <= done <= 600 + BLOCK
    assert rescored == {r[FLAG + 1:] for r in records} and q.size() == 3000


def test_kept_objects_are_handed_back_and_forgotten():
    q = MemoryHostQueue()
    r = kept(q, 0.5)
    seq = seq_of(r)
    entry = q.kept(seq)
    assert q.kept(seq) is entry and list(q.kept_entries()) == [entry]
    assert q.kept(seq, forget=True) is entry and list(q.kept_entries()) == []
    q.keep(seq, entry)
    q.push(r, True)
    q.clear()
    assert (q.top, q.size(), list(q.kept_entries())) == (None, 0, [])


def test_random_operations_match_a_sorted_model():
    rng = random.Random(4)
    q, model = MemoryHostQueue(), []
    version = 0
    for step in range(20000):
        op = rng.random()
        deflate = rng.random() < 0.5
        if op < 0.55:
            r = kept(q, rng.random(), version) if rng.random() < 0.02 else record(round(rng.random(), 3), version)
            q.push(r, deflate)
            model.append(r)
        elif op < 0.85 and model:
            best = min(model)
            assert q.pop() == best
            model.remove(best)
            if best[FLAG] == RICH:
                q.kept(seq_of(best), forget=True)
        elif op < 0.88 and model:
            worst = sorted(model)[-rng.randrange(1, 50):]
            assert sorted(q.drop({r[:KEY] for r in worst})) == worst
            model = sorted(model)[:-len(worst)]
            for r in worst:
                if r[FLAG] == RICH:
                    q.kept(seq_of(r), forget=True)
        elif op < 0.9:
            version += 1
        elif op < 0.95:
            stale = [r for r in model if r[KEY:FLAG] != VERSION.pack(version)]
            taken = []

            def restamp_some(batch):
                taken.extend(batch)
                return restamper(q, version)(batch)

            done = q.rescore_part(rng.choice([10, 100, 1000]), VERSION.pack(version), restamp_some, deflate)
            assert done == len(taken) <= len(stale)
            model = sorted(set(model) - set(taken)) + [r for r in q.records() if r not in set(model)]
        elif op < 0.951:
            q.replace(list(model), deflate)
        assert q.top == (min(model) if model else None) and q.size() == len(model)
        assert step % 97 or sorted(q.records()) == sorted(model)
    assert drain(q) == sorted(model)
    assert len(list(q.kept_entries())) == sum(r[FLAG] == RICH for r in model)
