"""The Mercator frontier: global priority among ready hosts, politeness never broken by priority."""

import pickle
import struct

import pytest

from focuscrawl.frontier import Entry, Frontier, SeenSet, mercator, read_stored, rescoring, runs
from focuscrawl.urls import host_key


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


def copied(f: Frontier, version: int = -1) -> Frontier:
    """What a checkpoint keeps of ``f`` loaded into a new frontier: its stored records, and the
    entries it keeps as objects pushed again."""
    g = Frontier(capacity=f.capacity, prune_slack=f.prune_slack, codec=f.codec, deflate_from=f.deflate_from)
    for host, prefix, loose, blocks in f.stored():
        assert g.load(host, prefix, [record for record, _, _ in read_stored(prefix, loose, blocks)], version) == []
    for host, entry in f.rich_entries():
        g.push(host, entry)
    return g


def test_stored_records_load_with_their_order():
    f = Frontier()
    fill(f, [("a", 1), ("a", 3), ("b", 2)])
    g = copied(f)
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


# --- compact storage, O(log n) timing queries -----------------------------------------------------

def drain(f, now=0.0):
    return drain_some(f, None, now)


def drain_some(f, count, now=0.0):
    out = []
    while len(out) != count and (popped := f.pop(now)) is not None:
        host, entry = popped
        out.append((host, entry.priority, entry.url))
        f.release(host, now)
    return out


def test_compact_entries_come_back_equal_with_urls_prices_and_versions():
    f = Frontier()
    urls = ["http://a.example/x?q=1", "https://a.example/other-scheme", "http://a.example:8080/port",
            "http://a.example/caf\u00e9/\ud800", "not a url", "http://a.example"]
    for i, url in enumerate(urls):
        f.push("a.example", Entry(0.1 * i - 0.2, url, None, None, version=i - 1))
    got = []
    while (popped := f.pop(0.0)) is not None:
        got.append(popped[1])
        f.release("a.example", 0.0)
    assert [e.url for e in got] == urls[::-1]
    assert [e.priority for e in got] == [0.1 * i - 0.2 for i in range(len(urls))][::-1]
    assert [e.version for e in got] == [i - 1 for i in range(len(urls))][::-1]
    assert all(e.payload is None and e.features is None for e in got)


def test_equal_priorities_leave_in_arrival_order():
    f = Frontier()
    for i in range(20):
        f.push("h", Entry(1.0, f"http://h/{i}"))
    assert [url for _, _, url in drain(f)] == [f"http://h/{i}" for i in range(20)]


def test_entries_with_payload_or_features_are_handed_back_as_the_same_objects():
    f = Frontier(capacity=3, prune_slack=0.0)
    rich = Entry(5.0, "http://a/r", payload=object(), features=(("x", 1.0),), version=2)
    feats_only = Entry(4.0, "http://a/f", features=(("y", 2.0),))
    f.push("a", rich)
    f.push("a", feats_only)
    f.push("a", Entry(3.0, "http://a/plain"))
    pruned = f.push("a", Entry(1.0, "http://a/low", payload="p"))
    assert len(pruned) == 1 and pruned[0].payload == "p"
    assert [e for _, e in f.entries() if e.payload is not None] == [rich]
    assert f.pop(0.0)[1] is rich
    f.requeue("a", rich)
    f.release("a", 0.0)
    assert f.pop(0.0)[1] is rich
    f.release("a", 0.0)
    assert f.pop(0.0)[1] is feats_only
    assert [(e.priority, e.url) for _, e in f.entries()] == [(3.0, "http://a/plain")]
    assert list(f.rich_entries()) == []


def test_rescoring_reaches_kept_objects_and_compact_entries():
    f = Frontier()
    kept = Entry(1.0, "http://a/kept", payload="req")
    f.push("a", kept)
    f.push("a", Entry(2.0, "http://a/plain"))
    f.version = 1
    assert f.rescore_stale(lambda es: [10.0 if e.payload else 0.5 for e in es]) == 2
    assert kept.priority == 10.0 and kept.version == 1
    host, entry = f.pop(0.0)
    assert entry is kept
    f.release("a", 0.0)
    assert (f.pop(0.0)[1].priority, f.version) == (0.5, 1)


def waiting(f, hosts_ready_at):
    """Pop each host's best entry at time 0 and release the host until its time (a politeness delay)."""
    for _ in hosts_ready_at:
        popped = f.pop(0.0)
        assert popped is not None
        f.release(popped[0], hosts_ready_at[popped[0]])


def test_next_ready_time_follows_busy_waiting_and_dropped_hosts():
    f = Frontier()
    assert f.next_ready_time() is None and f.pop(0.0) is None
    fill(f, [("a", 9), ("a", 1), ("b", 8), ("b", 2), ("c", 7), ("c", 3)])
    waiting(f, {"a": 30.0, "b": 20.0, "c": 10.0})
    assert f.next_ready_time() == 10.0
    assert f.pop(5.0) is None
    assert f.pop(10.0)[0] == "c"  # c is busy and now empty
    assert f.next_ready_time() == 20.0
    f.drop_host("b")
    assert f.next_ready_time() == 30.0
    f.release("c", 12.0)  # nothing queued at c: it does not count
    assert f.next_ready_time() == 30.0
    f.push("c", Entry(1.0, "http://c/again"))
    assert f.next_ready_time() == 12.0
    assert f.pop(12.0)[0] == "c"  # busy: it does not count
    assert f.next_ready_time() == 30.0
    assert f.pop(30.0)[0] == "a"
    assert f.next_ready_time() is None


def test_next_ready_time_counts_hosts_already_ready():
    f = Frontier()
    fill(f, [("a", 1), ("a", 2), ("b", 3)])
    f.release("a", 4.0)
    assert f.pop(5.0)[0] == "b"  # promotes a as well
    assert f.next_ready_time() == 4.0


def test_best_soon_sees_only_live_waiting_hosts():
    f = Frontier()
    fill(f, [("a", 19), ("a", 9), ("a", 1), ("b", 18), ("b", 5), ("c", 17), ("c", 7), ("c", 6)])
    waiting(f, {"a": 100.0, "b": 4.5, "c": 3.0})
    assert f.best_soon(0.0, 2.0) == float("-inf")
    assert f.best_soon(0.0, 3.5) == 7
    assert f.best_soon(0.0, 5.0) == 7
    assert f.best_soon(0.0, 200.0) == 9
    assert f.pop(3.0)[1].priority == 7  # c is busy
    assert f.best_soon(0.0, 5.0) == 5
    assert f.best_soon(0.0, 5.0, busy_hosts=["c"]) == 6
    f.drop_host("b")
    assert f.best_soon(0.0, 5.0) == float("-inf")


def test_best_soon_looks_at_the_soonest_free_hosts_only_so_its_cost_is_bounded():
    f = Frontier()
    # 200 idle hosts, h000 free first; the best URL sits at the host free last
    for i in range(200):
        f.push(f"h{i:03d}", Entry(10.0, f"http://h{i:03d}/first", None))  # popped by waiting()
        f.push(f"h{i:03d}", Entry(1.0 + (i == 199), f"http://h{i:03d}/", None))
    waiting(f, {f"h{i:03d}": 1.0 + i / 1000 for i in range(200)})
    assert f.best_soon(0.0, 2.0) == 1.0  # h199 is not among the 64 soonest
    assert f.best_soon(0.0, 2.0, limit=200) == 2.0
    f.push("h000", Entry(3.0, "http://h000/better", None))
    assert f.best_soon(0.0, 2.0) == 3.0  # the soonest are


def test_random_operations_match_a_plain_model():
    """Against a brute-force model: the popped entry is the best among ready hosts."""
    import random
    rng = random.Random(11)
    f = Frontier(capacity=10**6)
    model: dict[str, list] = {}
    ready_at: dict[str, float] = {}
    busy: set[str] = set()
    now = 0.0
    for step in range(3000):
        op = rng.random()
        host = f"h{rng.randrange(8)}"
        if op < 0.5:
            p = round(rng.random(), 2)
            url = f"http://{host}/{step}"
            f.push(host, Entry(p, url))
            model.setdefault(host, []).append((p, -step, url))
        elif op < 0.8:
            popped = f.pop(now)
            cands = [(max(q), h) for h, q in model.items() if q and h not in busy and ready_at.get(h, 0.0) <= now]
            if popped is None:
                assert not cands
                continue
            h, entry = popped
            assert entry.priority == max(cands)[0][0]
            best = max(model[h])
            assert (entry.priority, entry.url) == (best[0], best[2])
            model[h].remove(best)
            busy.add(h)
        elif op < 0.95 and busy:
            h = rng.choice(sorted(busy))
            t = now + rng.random() * 3
            f.release(h, t)
            busy.discard(h)
            ready_at[h] = max(ready_at.get(h, 0.0), t)
        else:
            now += rng.random()
        idle = [ready_at.get(h, 0.0) for h, q in model.items() if q and h not in busy]
        assert f.next_ready_time() == (min(idle) if idle else None) or min(idle) <= now
        assert len(f) == sum(len(q) for q in model.values())


# --- hot heap + cold runs: many entries per host ---------------------------------------------------

def many(hosts, per_host, seed=5, ties=False, rich_every=0):
    """Entries with random priorities (rounded when ``ties``), pushed round-robin over ``hosts``."""
    import random
    rng = random.Random(seed)
    rows = []
    for i in range(per_host * len(hosts)):
        host = hosts[i % len(hosts)]
        priority = round(rng.random(), 2) if ties else rng.random()
        payload = ("req", i) if rich_every and i % rich_every == 0 else None
        rows.append((host, Entry(priority, f"https://{host}/section-{i % 37}/page-{i}.html", payload, None, 0)))
    return rows


def queue(f, host):
    return dict(f.queues())[host]


def cold_share(f):
    return sum(q.cold_size() for _, q in f.queues()) / len(f)


def cold_runs(f):
    return [run for _, q in f.queues() for run in q.cold_runs()]


def run_kinds(f):
    """Which of the frontier's cold runs are deflated (True) and which raw (False)."""
    return {run.deflated for run in cold_runs(f)}


def kept_count(f, host=None):
    return sum(host is None or h == host for h, _ in f.rich_entries())


#: deflate_from values: every run deflated, the first runs raw then deflated ones, every run raw
DEFLATE_FROM = [0, 1000, 10**9]


@pytest.mark.parametrize("deflate_from", DEFLATE_FROM)
def test_many_entries_per_host_pop_in_exact_global_order_across_hot_and_cold(deflate_from):
    f = Frontier(deflate_from=deflate_from)
    rows = many(["a.example", "b.example", "c.example"], 700, ties=True, rich_every=10)
    for host, entry in rows:
        f.push(host, entry)
    assert cold_share(f) > 0.8  # most entries are in cold runs
    assert run_kinds(f) == {0: {True}, 1000: {True}, 10**9: {False}}[deflate_from]  # merged past 1000: deflated
    assert max(len(q.cold_runs()) for _, q in f.queues()) <= 5  # merged: ~21 spills each, a few runs
    assert [f.host_size(h) for h in ("a.example", "b.example", "c.example")] == [700, 700, 700]
    # best priority first, equal priorities in arrival order, across hosts
    expected = [(e.priority, e.url) for _, e in sorted(rows, key=lambda row: -row[1].priority)]
    got = []
    while (popped := f.pop(0.0)) is not None:
        host, entry = popped
        got.append((entry.priority, entry.url))
        if entry.payload is not None:
            assert any(entry is e for _, e in rows)
        f.release(host, 0.0)
        assert len(f) == len(rows) - len(got)
    assert got == expected


def test_any_url_survives_the_cold_runs():
    f = Frontier()
    odd = ["http://a.example", "http://a.example/caf\u00e9/\ud800?q=\U0001f600", "not a url",
           "https://other.example/x", "http://a.example/" + "long/" * 80, "http://a.example/\x00\x7f"]
    urls = [odd[i % len(odd)] + ("" if i < len(odd) else f"#{i}") for i in range(300)]
    for i, url in enumerate(urls):
        f.push("a.example", Entry(i / 1000, url, None, None, version=i % 3 - 1))
    assert cold_share(f) > 0.8
    got = [entry for _, entry in f.entries()]
    assert sorted((e.priority, e.url, e.version) for e in got) == [(i / 1000, u, i % 3 - 1) for i, u in enumerate(urls)]
    assert [u for _, _, u in drain(f)] == urls[::-1]


def interleave_against_model(f: Frontier, seed: int, steps: int, make_entry) -> dict[str, list]:
    """Random pushes (``make_entry(step, host, priority)``) and pops on two hosts, each pop checked
    against a plain model: the best (priority, then FIFO) of what is queued, equal in every field."""
    import random
    rng = random.Random(seed)
    model: dict[str, list] = {"x": [], "y": []}  # (priority, -step, entry) per host
    for step in range(steps):
        host = rng.choice("xy")
        if rng.random() < 0.65:
            entry = make_entry(step, host, round(rng.random(), 3))
            f.push(host, entry)
            model[host].append((entry.priority, -step, entry))
        else:
            popped = f.pop(0.0)
            if popped is None:
                assert not any(model.values())
                continue
            h, entry = popped
            best = max((row for q in model.values() for row in q), key=lambda row: row[:2])
            assert h in model and best in model[h]
            want = best[2]
            assert (entry.priority, entry.url, entry.payload, entry.features) == (
                want.priority, want.url, want.payload, want.features)
            model[h].remove(best)
            f.release(h, 0.0)
        assert f.host_size(host) == len(model[host])
    return model


@pytest.mark.parametrize("deflate_from", DEFLATE_FROM)
def test_pushes_and_pops_interleaved_match_a_plain_model_with_deep_host_queues(deflate_from):
    f = Frontier(deflate_from=deflate_from)
    model = interleave_against_model(f, 2, 6000, lambda step, host, p: Entry(p, f"http://{host}/{step}"))
    assert len(f) == sum(map(len, model.values())) > 1000 and cold_share(f) > 0.5


@pytest.mark.parametrize("deflate_from", [0, 10**9])
def test_no_push_rewrites_more_than_a_bounded_share_of_a_deep_host(deflate_from, monkeypatch):
    """Spills and the merges of the spills' runs write at most MERGE_MAX records: a size-tiered
    merge through a deep host made single pushes take seconds (3.3 s at 3 x 10^5 URLs in one
    host), and a deep host's spills (all but 8 of a hot heap of 1/32 of the host) were as big.
    Pops stay exact against a plain model, interleaved with pushes and with background re-scoring
    that leaves runs part taken; a resumed host is written once, whole."""
    monkeypatch.setattr(runs, "MERGE_MAX", 256)
    monkeypatch.setattr(runs, "LOT_MAX", 128)  # lots merge within their own cap, under this one
    monkeypatch.setattr(runs, "MAX_LOTS", 3)  # and past it the two smallest stale ones, often
    writes = []
    merged = runs.merged

    def counting(a, b, deflate, lot=False):
        writes.append((a.size + b.size, lot))
        return merged(a, b, deflate, lot)

    monkeypatch.setattr(runs, "merged", counting)
    f = Frontier(deflate_from=deflate_from)
    model = interleave_against_model(f, 7, 12000, lambda step, host, p: Entry(p, f"http://{host}/{step}"))
    assert len(f) > 3000 and cold_share(f) > 0.9
    spills = [size for size, lot in writes if not lot]
    assert spills and max(spills) <= 256  # without the cap the last merges wrote ~thousands
    assert len(cold_runs(f)) > 8 and all(run.size <= 256 for run in cold_runs(f))
    for version in range(1, 5):  # learner updates: each pass leaves lots the next one finds stale
        f.version = version
        while f.rescore_stale(lambda entries: [e.priority for e in entries], limit=300):
            pass
    for step in range(2000):  # and more pushes after runs were taken in part
        f.push("x", Entry(0.5, f"http://x/late-{step}", version=4))
    assert max(size for size, lot in writes) <= 256 and any(lot for _, lot in writes)
    left = drain_entries(f)
    assert len(left) == sum(map(len, model.values())) + 2000
    assert [e.priority for e in left] == sorted((e.priority for e in left), reverse=True)
    # a deep host's hot heap keeps its best records (1/32 of the host): a spill writes only its
    # worst ones, at most half the cap
    g = Frontier(deflate_from=deflate_from)
    hot_sizes = []
    for step in range(8000):
        g.push("deep", Entry((step * 7919 % 8000) / 8000, f"http://deep/{step}"))
        deep = queue(g, "deep")
        hot_sizes.append(deep.size() - deep.cold_size())
    assert min(hot_sizes[6000:]) > 32 and all(run.size <= 256 for run in cold_runs(g))
    assert [e.priority for e in drain_entries(g)] == sorted(((s * 7919 % 8000) / 8000 for s in range(8000)),
                                                             reverse=True)


def test_cold_entries_are_rescored_at_the_top_and_in_the_background():
    def demote(entries):  # never raises a priority: lazy re-scoring then pops in the exact new order
        return [e.priority - 1.0 if "/section-3/" in e.url else e.priority for e in entries]

    def flip(entries):
        return [1.0 - e.priority for e in entries]

    # at the top: stale entries are re-scored as they reach the top, cold ones included
    f = Frontier()
    for host, entry in many(["h.example"], 500):
        f.push(host, entry)
    f.version = 1
    order = []
    while (popped := f.pop(0.0, rescore=demote)) is not None:
        order.append(popped[1])
        f.release("h.example", 0.0)
    assert f.rescored == 500 and all(e.version == 1 for e in order)
    assert [e.priority for e in order] == sorted(demote([e for _, e in many(["h.example"], 500)]), reverse=True)

    # in the background: whole hosts, hot and cold; fresh runs are skipped next time
    g = Frontier()
    for host, entry in many(["a", "b"], 300):
        g.push(host, entry)
    g.version = 1
    assert g.rescore_stale(flip, limit=10**6) == 600
    assert g.rescore_stale(flip, limit=10**6) == 0
    drained = drain(g)
    assert [p for _, p, _ in drained] == sorted((1.0 - e.priority for _, e in many(["a", "b"], 300)), reverse=True)

    # stale entries only in the cold runs, fresh ones hot: still found
    h = Frontier()
    for host, entry in many(["a"], 300):
        h.push(host, entry)
    h.version = 1
    for i in range(100):
        h.push("a", Entry(2.0 + i, f"https://a/fresh-{i}", version=1))
    a = queue(h, "a")
    assert all(r[12:16] == b"\x00\x00\x00\x01" for r in a.heap)  # the hot records are all fresh
    assert h.rescore_stale(flip, limit=10**6) == 300


def test_prune_drop_host_and_load_with_cold_runs():
    rows = many(["a", "b", "c"], 400, ties=True, rich_every=7)
    f = Frontier()
    for host, entry in rows:
        f.push(host, entry)
    ranked = sorted(rows, key=lambda row: -row[1].priority)  # stable: ties keep arrival order
    assert [p for _, p, _ in drain_some(f, 90)] == [e.priority for _, e in ranked[:90]]  # cold blocks in use
    ranked = ranked[90:]
    f.capacity = 150
    pruned = f.prune()  # deep: whole runs go, down to their inflated fronts
    # the lowest priorities go; among equal ones, the newest first
    assert sorted((e.priority, e.url) for e in pruned) == sorted((e.priority, e.url) for _, e in ranked[150:])
    assert len(f) == 150 and f.pruned == 960

    g = copied(f)
    assert len(g) == 150 and [g.host_size(h) for h in "abc"] == [f.host_size(h) for h in "abc"]
    drained = drain(g)
    assert [p for _, p, _ in drained] == [e.priority for _, e in ranked[:150]]
    kept = {e.url for _, e in f.rich_entries()}  # pushed again after the stored records were loaded
    assert kept and sorted(u for _, _, u in drained) == sorted(e.url for _, e in ranked[:150])
    for host in "abc":  # equal priorities keep their order within a host
        assert [u for h, _, u in drained if h == host and u not in kept] == [
            e.url for h, e in ranked[:150] if h == host and e.url not in kept]

    dropped = f.drop_host("b")
    assert sorted(e.url for e in dropped) == sorted(e.url for h, e in ranked[:150] if h == "b")
    assert f.host_size("b") == 0 and len(f) == 150 - len(dropped)
    f.push("b", Entry(2.0, "https://b/again"))
    assert drain(f)[0] == ("b", 2.0, "https://b/again")


# --- packed entries: a codec turns payload and features into bytes ----------------------------------

class BytesCodec:
    """A toy codec: a bytes payload (any bytes, b"\\xfe" and b"\\xff" included) and a tuple of floats,
    behind the URL, which ``unpack`` checks it is given. Declines payload b"keep"."""

    def pack(self, entry):
        if entry.payload == b"keep":
            return None
        url = entry.url.encode("utf-8", "surrogatepass")
        feats = entry.features
        head = struct.pack("<HH", len(url), 0xFFFF if feats is None else len(feats))
        return head + url + struct.pack(f"<{len(feats or ())}d", *(feats or ())) + entry.payload

    def unpack(self, url, blob):
        n_url, n_feats = struct.unpack_from("<HH", blob)
        assert blob[4:4 + n_url].decode("utf-8", "surrogatepass") == url
        start = 4 + n_url
        if n_feats == 0xFFFF:
            return blob[start:], None
        return blob[start + 8 * n_feats:], struct.unpack_from(f"<{n_feats}d", blob, start)


def packable(hosts, per_host, seed=5, ties=False, keep_every=0):
    """``many`` with a payload (odd bytes) and features on every entry; every ``keep_every``-th
    payload is declined by the codec."""
    rows = many(hosts, per_host, seed, ties)
    for i, (_, entry) in enumerate(rows):
        entry.payload = b"keep" if keep_every and i % keep_every == 0 else bytes([0xFE, 0xFF, i % 256, 0xFF, 0xFE])
        entry.features = None if i % 5 == 0 else (entry.priority, float(i))
    return rows


def drain_entries(f, now=0.0):
    out = []
    while (popped := f.pop(now)) is not None:
        out.append(popped[1])
        f.release(popped[0], now)
    return out


def same(a, b):
    return (a.priority, a.url, a.payload, a.features, a.version) == (b.priority, b.url, b.payload, b.features, b.version)


def test_packed_entries_go_cold_and_come_back_equal_in_exact_global_order():
    f = Frontier(codec=BytesCodec())
    rows = packable(["a.example", "b.example", "c.example"], 700, ties=True, keep_every=50)
    odd = Entry(9.0, "http://elsewhere.example/caf\u00e9/\ud800", b"\xfe\xff\xfe", (1.0,), version=3)
    for host, entry in rows + [("a.example", odd)]:
        f.push(host, entry)
    assert cold_share(f) > 0.8
    assert kept_count(f) == len(rows) // 50  # only the declined ones
    assert queue(f, "a.example").top[16] == 5  # packed, URL in full (not under the host's prefix)
    expected = [odd] + [e for _, e in sorted(rows, key=lambda row: -row[1].priority)]
    got = drain_entries(f)
    assert len(got) == len(expected) and all(same(g, e) for g, e in zip(got, expected))
    # packed ones are new objects; declined ones (kept as objects) the same
    assert all((g is e) == (e.payload == b"keep") for g, e in zip(got, expected))


def test_packed_entries_interleaved_with_pops_match_a_plain_model():
    def make_entry(step, host, p):
        payload = b"keep" if step % 97 == 0 else bytes([step % 256, 0xFF])
        return Entry(p, f"http://{host}/{step}", payload, (p,))

    for deflate_from in DEFLATE_FROM:
        f = Frontier(codec=BytesCodec(), deflate_from=deflate_from)
        interleave_against_model(f, 4, 5000, make_entry)
        assert cold_share(f) > 0.5


def test_packed_entries_are_rescored_with_their_features_at_the_top_and_in_the_background():
    def rescorer(seen):
        def rescore(entries):
            seen.extend(entries)
            assert all(e.payload is not None for e in entries)
            return [-e.priority if e.features is None else e.features[0] - 1.0 for e in entries]
        return rescore

    rows = packable(["h.example"], 500, keep_every=9)
    originals = {e.url: Entry(e.priority, e.url, e.payload, e.features, e.version) for _, e in rows}
    f = Frontier(codec=BytesCodec())
    for host, entry in rows:
        f.push(host, entry)
    f.version = 1
    seen = []
    order = []
    while (popped := f.pop(0.0, rescore=rescorer(seen))) is not None:
        order.append(popped[1])
        f.release("h.example", 0.0)
    assert f.rescored == 500 and sorted(e.url for e in seen) == sorted(originals)
    assert all(e.payload == originals[e.url].payload and e.features == originals[e.url].features for e in seen)
    assert [e.priority for e in order] == sorted(rescorer([])(list(originals.values())), reverse=True)
    assert all(e.version == 1 and e.payload == originals[e.url].payload for e in order)

    rows = packable(["a", "b"], 300, keep_every=9)
    expected = sorted(rescorer([])([e for _, e in rows]), reverse=True)
    originals = sorted((e.url, e.payload, e.features) for _, e in rows)
    g = Frontier(codec=BytesCodec())
    for host, entry in rows:
        g.push(host, entry)
    g.version = 1
    seen = []
    assert g.rescore_stale(rescorer(seen), limit=10**6) == 600 and len(seen) == 600
    assert g.rescore_stale(rescorer(seen), limit=10**6) == 0
    assert cold_share(g) > 0.8 and kept_count(g) == 600 // 9 + 1
    drained = drain_entries(g)
    assert [e.priority for e in drained] == expected
    assert sorted((e.url, e.payload, e.features) for e in drained) == originals


def test_packed_entries_prune_drop_and_load_with_their_codec():
    rows = packable(["a", "b", "c"], 400, ties=True, keep_every=7)
    f = Frontier(codec=BytesCodec())
    for host, entry in rows:
        f.push(host, entry)
    ranked = [e for _, e in sorted(rows, key=lambda row: -row[1].priority)]
    assert sorted((e.url, e.payload, e.features) for _, e in f.entries()) == sorted(
        (e.url, e.payload, e.features) for e in ranked)
    f.capacity = 150
    pruned = f.prune()
    assert sorted((e.priority, e.url, e.payload, e.features) for e in pruned) == sorted(
        (e.priority, e.url, e.payload, e.features) for e in ranked[150:])
    assert len(f) == 150

    g = copied(f, version=0)
    assert cold_share(g) > 0.5
    drained = drain_entries(g)
    assert [d.priority for d in drained] == [e.priority for e in ranked[:150]]
    assert sorted((e.url, e.payload, e.features) for e in drained) == sorted(
        (e.url, e.payload, e.features) for e in ranked[:150])
    for host in "abc":  # equal priorities keep their order within a host (kept objects are pushed again)
        mine = [e for e in ranked[:150] if e.url.startswith(f"https://{host}/") and e.payload != b"keep"]
        got = [d for d in drained if d.url.startswith(f"https://{host}/") and d.payload != b"keep"]
        assert len(got) == len(mine) and all(same(d, e) for d, e in zip(got, mine))

    assert kept_count(f, "b")
    dropped = f.drop_host("b")
    kept = [e for e in ranked[:150] if e.url.startswith("https://b/")]
    assert sorted((e.url, e.payload, e.features) for e in dropped) == sorted((e.url, e.payload, e.features) for e in kept)
    assert f.host_size("b") == 0 and not kept_count(f, "b")


def test_a_packed_entry_requeued_goes_back_as_its_record_without_packing_again():
    class Counting(BytesCodec):
        packed = 0

        def pack(self, entry):
            Counting.packed += 1
            return super().pack(entry)

    f = Frontier(codec=Counting())
    for host, entry in packable(["a", "b"], 100):
        f.push(host, entry)
    assert Counting.packed == 200
    host, entry = f.pop(0.0)
    first = (entry.url, entry.payload, entry.features)
    entry.priority = -1.0  # priority and version as they are at requeue
    f.requeue(host, entry)
    f.release(host, 0.0)
    assert Counting.packed == 200 and len(f) == 200
    host2, other = f.pop(0.0)
    f.requeue(host2, Entry(other.priority, other.url, other.payload, other.features))  # not the popped object
    assert Counting.packed == 201
    f.release(host2, 0.0)
    drained = drain_entries(f)
    assert (drained[-1].priority, drained[-1].url, drained[-1].payload, drained[-1].features) == (-1.0, *first)
    assert len(drained) == 200 and Counting.packed == 201


def test_a_packed_entry_put_back_and_popped_next_is_not_unpacked_again():
    """A request held back (popped, put back, popped again: patience, robots.txt) comes back as
    the same object, not unpacked again; once another entry was popped in between, as an equal one."""
    class Counting(BytesCodec):
        unpacked = 0

        def unpack(self, url, blob):
            Counting.unpacked += 1
            return super().unpack(url, blob)

    f = Frontier(codec=Counting())
    for host, entry in packable(["a", "b"], 50):
        f.push(host, entry)
    host, entry = f.pop(0.0)
    for _ in range(3):
        f.requeue(host, entry)
        f.release(host, 0.0)
        assert f.pop(0.0) == (host, entry)
    assert Counting.unpacked == 1
    f.requeue(host, entry)  # the host stays busy: another host's entry is popped first
    other_host, other = f.pop(0.0)
    assert other_host != host and Counting.unpacked == 2
    f.release(other_host, 1.0)
    f.release(host, 0.0)
    host_again, again = f.pop(0.0)
    assert host_again == host and again is not entry and same(again, entry) and Counting.unpacked == 3


def test_background_rescoring_scores_small_hosts_together_with_the_same_outcome(monkeypatch):
    """Many small hosts are re-scored in one call of the rescorer (a call costs the learner more
    than a few entries), and the records, sequence numbers and order are those that re-scoring
    one entry at a time gives."""
    rows = packable([f"h{i}.example" for i in range(200)], 3, ties=True, keep_every=9)
    rows += [("big.example", Entry(0.5 + i / 1000, f"http://big.example/{i}")) for i in range(300)]

    def rescored(batch):
        frontier, calls = Frontier(codec=BytesCodec()), []
        for host, entry in rows:
            frontier.push(host, Entry(entry.priority, entry.url, entry.payload, entry.features, entry.version))
        frontier.version = 1
        monkeypatch.setattr(rescoring, "RESCORE_BATCH", batch)
        done = frontier.rescore_stale(lambda es: calls.append(len(es)) or [round(1 - e.priority, 3) for e in es],
                                      limit=10**6)
        # the records as stored (their headers: priorities, seq numbers, versions), and the order
        stored = [(host, prefix, sorted(loose), blocks) for host, prefix, loose, blocks in frontier.stored()]
        return done, calls, stored, frontier.next_ready_time(), drain_entries(frontier)

    together, one_by_one = rescored(1024), rescored(1)
    assert together[0] == one_by_one[0] == 900
    assert together[1] == [900] and len(one_by_one[1]) == 900
    assert together[2:4] == one_by_one[2:4]
    assert [(e.url, e.priority) for e in together[4]] == [(e.url, e.priority) for e in one_by_one[4]]


def test_background_rescoring_takes_the_hosts_in_turn():
    """Each learner update makes every entry stale and re-scores up to half the frontier: the next
    call goes on after the hosts the last one reached, so every host is refreshed every other
    update, the big ones as often as the small (the cursor used to move one host a call, so the
    hosts just after it were re-scored each time and the rest waited)."""
    f = Frontier()
    sizes = {"a.example": 40, "b.example": 10, "c.example": 10, "d.example": 40}
    for host, n in sizes.items():
        for i in range(n):
            f.push(host, Entry(0.5, f"http://{host}/{i}", features=((0,), (1.0,))))
    refreshed = {host: 0 for host in sizes}

    def rescore(entries):
        for e in entries:
            refreshed[host_key(e.url)] += 1
        return [0.5] * len(entries)

    for _ in range(6):
        f.version += 1  # a learner update: every entry is stale
        f.rescore_stale(rescore, limit=len(f) // 2)
    assert {host: n // sizes[host] for host, n in refreshed.items()} == {host: 3 for host in sizes}



@pytest.mark.parametrize("deflate_from", [0, 10**9])
def test_background_rescoring_reaches_every_entry_of_a_deep_host(deflate_from):
    """A host bigger than a pass (here 3000 of 3200 entries, a pass of half the frontier per learner
    update) is re-scored a part at a time, its longest-stale entries first, and its partial turn is
    a turn: the hosts after it are re-scored too. So no entry stays stale for more than a few
    updates, and one queued when the learner thought little of it surfaces once it is worth more.
    (Best first re-scored the same top half of the deep host on every update, the cursor stayed on
    it, and its worst entries and every host after it kept their old priorities for good.)"""
    f = Frontier(codec=BytesCodec(), deflate_from=deflate_from)
    rows = [("deep.example", Entry(i / 3000, f"http://deep.example/{i}", b"\x01", (float(i),))) for i in range(3000)]
    rows += [(host, Entry(0.5, f"http://{host}/{i}", b"\x01", (0.5,))) for host in ("a.example", "b.example")
             for i in range(100)]
    for host, entry in rows:
        f.push(host, entry)
    assert queue(f, "deep.example").cold_size() > 2000
    last = {}  # url -> the update it was last re-scored at
    update = 0

    def rescore(entries):
        for e in entries:
            last[e.url] = update
        # the deep host's worst entries are now worth the most
        return [1.5 - e.features[0] / 3000 if e.url.startswith("http://deep") else 0.5 for e in entries]

    for update in range(1, 9):
        f.version = update  # a learner update: every entry is stale
        f.rescore_stale(rescore, limit=len(f) // 2)
        if update >= 3:
            assert len(last) == len(rows) and min(last.values()) >= update - 2, update
    best = drain_entries(f)[:10]
    assert [e.url for e in best] == [f"http://deep.example/{i}" for i in range(10)]


def test_raw_runs_never_hold_more_records_than_deflate_from():
    """Runs written below ``deflate_from`` entries stay raw; once the frontier is past it, every
    run written (spills, merges, prunes, background re-scoring) is deflated, and the raw records
    left never add up to ``deflate_from``."""
    f = Frontier(deflate_from=500, capacity=3000, prune_slack=0.0)
    kinds = set()
    for host, entry in many(["a.example", "b.example", "c.example"], 1000):
        f.push(host, entry)
        raw = sum(run.size for run in cold_runs(f) if not run.deflated)
        assert raw < 500
        kinds |= run_kinds(f)
    assert kinds == {True, False}
    f.version = 1
    f.rescore_stale(lambda entries: [e.priority for e in entries], limit=10**6)  # rewrites every host
    assert run_kinds(f) == {True} and len(f) == 3000


def lots_within(host, max_lots, version):
    """At most ``max_lots`` lots, or past it only lots of the current version (not merged yet)."""
    lots = [run for run in host.cold_runs() if run.lot]
    return len(lots) <= max_lots or sum(run.version != struct.pack(">i", version) for run in lots) <= 1


@pytest.mark.parametrize("max_lots", [runs.MAX_LOTS, 3])
@pytest.mark.parametrize("deflate_from", [0, 10**9])
def test_a_deep_host_is_rescored_a_bounded_part_at_a_time(deflate_from, max_lots, monkeypatch):
    """A host bigger than a call's limit is not re-scored whole in one call (a host with 10^5 queued
    URLs held the reactor ~5 s on every learner update): each call takes its longest-stale entries
    (a block more at most), the next calls go on with it. Pops and pushes between the calls keep exact
    priority order, rich and packed entries come through whole, and no entry is lost or doubled."""
    monkeypatch.setattr(runs, "MAX_LOTS", max_lots)  # 3: the cap on lots is reached often
    f = Frontier(codec=BytesCodec(), deflate_from=deflate_from)
    rows = packable(["deep.example"], 3000, keep_every=50) + packable(["small.example"], 40, seed=9)
    before = {e.url: (e.priority, e.payload, e.features) for _, e in rows}  # kept objects are re-scored in place
    for host, entry in rows:
        f.push(host, entry)
    deep = queue(f, "deep.example")
    assert deep.cold_size() > 2000 and len(deep.cold_runs()) >= 1
    f.version = 1
    seen = []

    def flip(entries):
        seen.extend(e.url for e in entries)
        return [1.0 - e.priority for e in entries]

    calls = []
    while done := f.rescore_stale(flip, limit=500):
        calls.append(done)
        assert done <= 500 + 16  # the limit, a block more at most
        if len(calls) == 2:  # the crawl goes on between calls: pops and a push
            drain_some(f, 25)
            f.push("deep.example", Entry(0.99, "https://deep.example/new", b"\xfe\x01", (0.5,), version=1))
    assert len(calls) >= 6 and sum(calls) == len(seen) == len(set(seen)) >= 3040 - 25  # each once at most
    # re-scored lots are runs of their own before the spills' runs, which keep their LSM shape (a
    # spill through many small lots would rewrite the whole host)
    spills = [run.size for run in deep.cold_runs() if not run.lot]
    assert spills == sorted(spills, reverse=True) and all(run.lot for run in deep.cold_runs()[:-len(spills) or None])
    # learner updates keep coming while the deep host is part done: every call stays bounded, the
    # lots stay within their cap, and fresh records never go back into stale runs (they were taken
    # out and put back for ever)
    for version in range(2, 12):
        f.version = version
        for _ in range(3):
            done = f.rescore_stale(lambda entries: [e.priority for e in entries], limit=500)
            assert 0 < done <= 500 + 16 and lots_within(deep, max_lots, version)
            for _ in range(20):  # and the crawl pushes new links
                f.push("deep.example", Entry(0.5, f"https://deep.example/v{version}-{len(f)}", b"\x01", (0.1,),
                                             version=version))
    f.version = 12
    while f.rescore_stale(flip, limit=500):
        assert lots_within(deep, max_lots, 12)
    left = drain_entries(f)
    assert [e.priority for e in left] == sorted((e.priority for e in left), reverse=True)  # exact order
    assert all(e.version == 12 for e in left) and len(left) == 3040 - 25 + 1 + 600
    for e in left:
        if e.url in before:
            priority, payload, features = before[e.url]
            assert (e.payload, e.features) == (payload, features)
            assert e.priority == pytest.approx(priority)  # flipped twice


# --- checkpoints: records as they are stored ---------------------------------------------------------

class CountingCodec(BytesCodec):
    """BytesCodec that counts its calls."""

    def __init__(self):
        self.calls = {"pack": 0, "unpack": 0}

    def pack(self, entry):
        self.calls["pack"] += 1
        return super().pack(entry)

    def unpack(self, url, blob):
        self.calls["unpack"] += 1
        return super().unpack(url, blob)


def stored_frontier(deflate_from=0):
    """Packed entries in hot heaps, cold runs (some in use: a front inflated), and a few kept as
    objects; equal priorities within and across hosts."""
    f = Frontier(codec=CountingCodec(), deflate_from=deflate_from)
    for host, entry in packable(["a", "b", "c"], 300, ties=True, keep_every=13):
        f.push(host, entry)
    drain_some(f, 40)
    f.version = 2
    return f


def per_host(entries):
    """(priority, url, payload, features) of each entry, host by host in their order."""
    out: dict[str, list] = {}
    for e in entries:
        out.setdefault(host_key(e.url), []).append((e.priority, e.url, e.payload, e.features))
    return out


@pytest.mark.parametrize("deflate_from", DEFLATE_FROM)
def test_stored_records_pickle_as_they_are_and_keep_their_order(deflate_from):
    """A checkpoint pickles what ``stored`` hands over (bytes and lists of them): nothing is
    unpacked or packed, on the way out or back in, and each host's records keep their order."""
    f = stored_frontier(deflate_from)
    calls = dict(f.codec.calls)
    stored = pickle.loads(pickle.dumps(f.stored(), protocol=pickle.HIGHEST_PROTOCOL))
    assert stored == f.stored() and f.codec.calls == calls
    g = Frontier(codec=f.codec)
    for host, prefix, loose, blocks in stored:
        g.load(host, prefix, [record for record, _, _ in read_stored(prefix, loose, blocks)], version=-1)
    assert f.codec.calls == calls
    rich = {e.url for _, e in f.rich_entries()}
    assert rich and len(g) == len(f) - len(rich) == 860 - len(rich)
    mine = [e for e in drain_entries(f) if e.url not in rich]
    assert per_host(drain_entries(g)) == per_host(mine)


@pytest.mark.parametrize("deflate_from", DEFLATE_FROM)
def test_stored_records_load_into_another_frontier_as_they_are(deflate_from):
    f = stored_frontier(deflate_from)
    unpacked = f.codec.calls["unpack"]
    g = Frontier(codec=CountingCodec())
    g.push("a", Entry(5.0, "http://a/other-scheme", b"x", None))  # a's prefix here is not f's ("https://a")
    for host, prefix, loose, blocks in f.stored():
        read = list(read_stored(prefix, loose, blocks))
        assert all(url.startswith(f"https://{host}/") and blob is not None for _, url, blob in read)
        assert g.load(host, prefix, [record for record, _, _ in read], version=-1) == []
    assert g.codec.calls == {"pack": 1, "unpack": 0} and f.codec.calls["unpack"] == unpacked
    rich = {e.url for _, e in f.rich_entries()}  # kept as objects: not stored
    assert rich and len(g) == len(f) - len(rich) + 1
    assert g.pop(0.0)[1].url == "http://a/other-scheme"
    g.release("a", 0.0)
    expected = [e for e in drain_entries(f) if e.url not in rich]
    got = drain_entries(g)
    assert [e.priority for e in got] == [e.priority for e in expected] and all(e.version == -1 for e in got)
    for host in "abc":  # equal priorities keep their order within a host
        mine = [e for e in expected if e.url.startswith(f"https://{host}/")]
        theirs = [e for e in got if e.url.startswith(f"https://{host}/")]
        assert [(e.url, e.payload, e.features) for e in theirs] == [(e.url, e.payload, e.features) for e in mine]


def _crawl_like(frontier, steps, seed=7):
    """Pops, new links of random value to random hosts, releases with a delay, now and then a host's
    top re-scored: what a crawl does to the ready heap. Returns the URLs in the order popped."""
    import random

    rng = random.Random(seed)
    hosts = [f"h{i}" for i in range(150)]
    for h in hosts:
        frontier.push(h, Entry(rng.random(), f"http://{h}/seed"))
    popped, t = [], 0.0
    for step in range(steps):
        t += 0.01
        got = frontier.pop(t)
        if got is not None:
            host, entry = got
            popped.append(entry.url)
            for k in range(3):
                h = rng.choice(hosts)
                frontier.push(h, Entry(rng.random(), f"http://{h}/{step}-{k}"))
            frontier.release(host, t + 0.5)
        if step % 50 == 0:  # a re-scored top re-files its host, as background re-scoring does
            frontier.rescore_stale(lambda entries: [rng.random() for _ in entries], limit=100)
            frontier.version += 1
        assert len(frontier._ready) <= 2 * len(frontier._hosts) + mercator.READY_HEAP_SLACK
    return popped


def test_the_ready_heap_is_bounded_by_the_hosts_not_by_the_re_files(monkeypatch):
    # a host re-filed under a new best left its old item in the ready heap, and one worse than
    # every live item was never popped: bench/soak.py saw the heap grow with every re-file
    monkeypatch.setattr(mercator, "READY_HEAP_SLACK", 64)
    compacted = _crawl_like(Frontier(), 6000)
    monkeypatch.setattr(mercator, "READY_HEAP_SLACK", 10**9)  # never rebuilt: the order must not change
    never = Frontier()
    monkeypatch.setattr(mercator.Frontier, "_compact_ready", lambda self: None)
    assert _crawl_like(never, 6000) == compacted
    assert len(never._ready) > 2 * len(never._hosts) + 64  # without rebuilds it does grow
