"""The Mercator frontier: global priority among ready hosts, politeness never broken by priority."""

import pickle

import pytest

from focuscrawl.frontier import Entry, Frontier, SeenSet


def fill(frontier, rows):
    for host, priority in rows:
        frontier.push(host, Entry(priority, f"http://{host}/{priority}"))


def test_best_entry_across_ready_hosts_comes_first():
    f = Frontier()
    fill(f, [("a", 1), ("a", 5), ("b", 3), ("c", 4), ("c", 0.5)])
    order = []
    while (popped := f.pop(0.0)) is not None:
        host, entry = popped
        order.append((host, entry.priority))
    # one per host while each host is busy: a's best, c's best, b's best; then nothing is ready
    assert order == [("a", 5), ("c", 4), ("b", 3)]


def test_a_busy_or_waiting_host_is_never_handed_out_whatever_its_priority():
    f = Frontier()
    fill(f, [("hot", 100), ("hot", 99), ("cold", 1)])
    assert f.pop(0.0)[0] == "hot"
    assert f.pop(0.0)[0] == "cold"  # hot is busy, its 99 must wait
    assert f.pop(0.0) is None
    f.release("hot", ready_at=10.0)
    assert f.pop(9.99) is None  # not before its delay
    assert f.next_ready_time() == 10.0
    host, entry = f.pop(10.0)
    assert (host, entry.priority) == ("hot", 99)


def test_delay_host_pushes_back_a_waiting_host():
    f = Frontier()
    fill(f, [("a", 1)])
    f.delay_host("a", 50.0)
    assert f.pop(49.0) is None
    assert f.pop(50.0)[0] == "a"


def test_lazy_rescoring_reorders_stale_entries_when_they_reach_the_top():
    f = Frontier()
    fill(f, [("a", 9), ("a", 8), ("b", 5)])
    f.version += 1  # the learner changed its mind: a's URLs are now worth little
    calls = []

    def rescore(entries):
        calls.append(len(entries))
        return [0.1 if "http://a/" in e.url else e.priority for e in entries]

    host, entry = f.pop(0.0, rescore=rescore)
    assert host == "b"
    assert sum(calls) <= 3  # only what reached the top was re-scored, not a full scan
    host, entry = f.pop(0.0, rescore=rescore)
    assert host == "a" and entry.priority == pytest.approx(0.1)


def test_background_rescoring_is_bounded():
    f = Frontier()
    for i in range(100):
        f.push(f"h{i % 10}", Entry(1.0, f"http://h{i % 10}/{i}"))
    f.version += 1
    done = f.rescore_stale(lambda es: [2.0] * len(es), limit=25)
    assert 25 <= done <= 35  # whole host queues at a time, stopping past the limit
    assert f.rescored == done


def test_capacity_prunes_the_lowest_priorities():
    f = Frontier(capacity=10, prune_slack=0.0)
    pruned = []
    for i in range(15):
        pruned += f.push(f"h{i % 3}", Entry(float(i), f"http://h{i % 3}/{i}"))
    assert len(f) == 10
    assert sorted(e.priority for e in pruned) == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert f.pruned == 5


def test_drop_host_and_requeue():
    f = Frontier()
    fill(f, [("a", 1), ("a", 2), ("b", 3)])
    host, entry = f.pop(0.0)
    assert host == "b"
    f.requeue("b", entry)  # popped but not fetched: back in, host still busy
    assert f.pop(0.0)[0] == "a"
    assert f.pop(0.0) is None
    assert len(f.drop_host("a")) == 1
    assert len(f) == 1


def test_frontier_pickles_with_its_order():
    f = Frontier()
    fill(f, [("a", 1), ("a", 3), ("b", 2)])
    g = pickle.loads(pickle.dumps(f))
    assert len(g) == 3
    assert [g.pop(0.0)[1].priority, g.pop(0.0)[1].priority] == [3, 2]


def test_seen_set_merges_and_answers():
    s = SeenSet(min_buffer=8)
    added = [s.add(f"http://x/{i % 50}") for i in range(200)]
    assert added.count(True) == 50
    assert len(s) == 50
    assert "http://x/7" in s and "http://x/77" not in s
    t = pickle.loads(pickle.dumps(s))
    assert "http://x/49" in t and len(t) == 50
    assert s.memory_bytes() < 50 * 100
