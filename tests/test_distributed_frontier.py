"""The shared frontier on a real Redis: global priority across hosts and workers, one holder a host,
delays on the server's clock, leases reaped from dead workers, nothing lost."""

import time

import pytest
import redis
from scrapy import Request

from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.frontier import SharedFrontier
from focuscrawl.frontier import Entry
from focuscrawl.frontier.records import FLAG
from focuscrawl.request_codec import RequestCodec
from focuscrawl.scheduling.requests import RequestSerializer


def vector():
    import numpy as np

    return np.array([1, 2], dtype=np.int32), np.array([0.5, 1.0], dtype=np.float32)


def entry(url, priority, version=0):
    return Entry(priority, url, Request(url), vector(), version)


@pytest.fixture
def make(redis_url):
    clients = []

    def make(worker, crawl="c1", **kwargs):
        client = redis.Redis.from_url(redis_url)
        clients.append(client)
        serializer = RequestSerializer()
        codec = RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: None)
        return SharedFrontier(client, Keys(crawl), codec, serializer, worker=worker, **kwargs)

    yield make
    for client in clients:
        client.close()


def drain(frontier, now=0.0):
    out = []
    while (popped := frontier.pop(now)) is not None:
        host, e = popped
        out.append(e.url)
        frontier.release(host, 0.0)
    return out


def test_priority_is_global_across_hosts_and_one_host_is_held_at_a_time(make):
    a, b = make("a"), make("b")
    a.push("h1", entry("http://h1/low", 0.1))
    a.push("h1", entry("http://h1/high", 0.9))
    b.push("h2", entry("http://h2/mid", 0.5))
    assert a.size() == 3
    host, first = a.pop(0)
    assert (host, first.url) == ("h1", "http://h1/high")
    assert isinstance(first.payload, Request) and first.payload.url == "http://h1/high"
    # h1 is held by a: b gets the best of the others, then nothing
    host, second = b.pop(0)
    assert second.url == "http://h2/mid"
    assert b.pop(0) is None
    a.release("h1", time.monotonic())
    assert b.pop(0)[1].url == "http://h1/low"


def test_a_host_waits_its_delay_after_release_whoever_asks(make):
    a, b = make("a"), make("b")
    a.push("h", entry("http://h/1", 0.5))
    a.push("h", entry("http://h/2", 0.4))
    host, _ = a.pop(0)
    a.release(host, time.monotonic() + 0.4)
    assert b.pop(0) is None
    wait = b.ready.next_wait(time.monotonic()) - time.monotonic()
    assert 0.1 < wait <= 0.45
    assert b.next_ready_time() - time.monotonic() <= 0.25  # a worker looks again soon, whatever waits
    time.sleep(0.45)
    assert b.pop(0)[1].url == "http://h/2"


def test_a_better_url_pushed_refiles_a_ready_host(make):
    a = make("a")
    a.push("h1", entry("http://h1/a", 0.3))
    a.push("h2", entry("http://h2/a", 0.5))
    a.push("h1", entry("http://h1/b", 0.8))
    assert drain(a) == ["http://h1/b", "http://h2/a", "http://h1/a"]


def test_requeue_keeps_the_host_held_and_the_entry_queued(make):
    a, b = make("a"), make("b")
    a.push("h", entry("http://h/1", 0.5))
    host, e = a.pop(0)
    a.requeue(host, e)
    assert a.size() == 1 and b.pop(0) is None
    a.release(host, 0.0)
    assert b.pop(0)[1].url == "http://h/1"


def test_crawls_do_not_mix(make):
    a, other = make("a", crawl="one"), make("b", crawl="two")
    a.push("h", entry("http://h/1", 0.5))
    assert other.pop(0) is None and other.size() == 0


def test_a_dead_workers_lease_is_reaped_and_its_request_queued_again(make):
    a = make("a", worker_timeout=0.3)
    b = make("b")
    a.push("h", entry("http://h/1", 0.5))
    assert a.pop(0)[1].url == "http://h/1"
    assert b.pop(0) is None  # held by a, which dies here (never renews, never releases)
    time.sleep(0.4)
    reaped, _requeued, _gone = b.heartbeat()
    assert reaped == 1
    assert b.pop(0)[1].url == "http://h/1"
    assert b.stats()["leases_reaped"] == 1
    # a's late release is refused and counted: the host is b's now
    a.release("h", 0.0)
    assert b.stats()["lost_releases"] == 1


def test_a_page_not_done_by_a_dead_worker_is_queued_again(make):
    a, b = make("a", worker_timeout=0.3), make("b")
    a.push("h", entry("http://h/1", 0.5))
    a.push("h", entry("http://h/2", 0.4))
    a.heartbeat()
    host, e = a.pop(0)
    a.fetching(host, e.url)
    a.release(host, 0.0)  # fetched; its links not yet queued when a dies
    host, e2 = b.pop(0)
    b.fetching(host, e2.url)
    b.release(host, 0.0)
    b.done([e2.url])
    time.sleep(0.4)
    _reaped, requeued, gone = b.heartbeat()
    assert (requeued, gone) == (1, 1)
    assert drain(b) == ["http://h/1"]


def test_a_page_done_is_never_queued_again(make):
    a, b = make("a", worker_timeout=0.2), make("b")
    a.push("h", entry("http://h/1", 0.5))
    a.heartbeat()
    host, e = a.pop(0)
    a.fetching(host, e.url)
    a.release(host, 0.0)
    a.done([e.url])
    time.sleep(0.3)
    assert b.heartbeat()[1] == 0 and b.pop(0) is None and b.size() == 0


def test_stale_entries_are_rescored_when_their_host_is_popped(make):
    a = make("a")
    for i, p in enumerate([0.9, 0.5, 0.1]):
        a.push("h", entry(f"http://h/{i}", p))
    a.version = 1
    # the rescorer reverses the order: the worst becomes the best
    rescore = lambda entries: [1.0 - e.priority for e in entries]  # noqa: E731
    host, e = a.pop(0, rescore=rescore)
    assert e.url == "http://h/2" and e.version == 1 and e.priority == pytest.approx(0.9)
    a.release(host, 0.0)
    assert drain(a) == ["http://h/1", "http://h/0"]
    assert a.size() == 0


def test_the_scripts_read_records_as_the_frontier_writes_them():
    from focuscrawl.distributed import scripts
    from focuscrawl.frontier import records

    assert (scripts.KEY_BYTES, scripts.HEAD_BYTES) == (records.KEY, records.FLAG)


def test_background_rescoring_sends_headers_and_keeps_what_another_worker_changed(make):
    a, b = make("a"), make("b")
    for i in range(4):
        a.push("h", entry(f"http://h/{i}", 0.1 * (i + 1)))
    a.version = 1
    popped = []

    def racing(entries):  # b pops the host's best while a re-scores what it read
        if not popped:
            popped.append(b.pop(0))
        return [1.0 - e.priority for e in entries]

    assert a.rescore_stale(racing) == 4
    assert popped[0][1].url == "http://h/3"
    a.flush()
    queued = a.queued("h")
    # the record b took is not put back; the others carry their new headers ...
    assert [(e.url, round(e.priority, 2), e.version) for e in queued] == [
        ("http://h/0", 0.9, 1), ("http://h/1", 0.8, 1), ("http://h/2", 0.7, 1)]
    # ... and their URLs and requests untouched
    assert all(e.payload.url == e.url and e.features is not None for e in queued)
    assert a.size() == 3


def test_background_rescoring_surfaces_a_record_deep_in_its_host(make):
    """As the in-process pass takes whole hosts: a URL queued low whose value rose is found far
    below the few records a pop re-scores."""
    from focuscrawl.distributed.frontier import RESCORE_TOP

    a = make("a")
    for i in range(RESCORE_TOP * 3):
        a.push("h", entry(f"http://h/{i}", 0.5 - i / 1000))
    a.push("h2", entry("http://h2/a", 0.45))
    a.version = 1
    deepest = f"http://h/{RESCORE_TOP * 3 - 1}"
    rescore = lambda entries: [0.99 if e.url == deepest else e.priority for e in entries]  # noqa: E731
    assert a.rescore_stale(rescore, limit=1000) == RESCORE_TOP * 3 + 1
    host, e = a.pop(0)
    assert e.url == deepest and e.priority == pytest.approx(0.99)


def test_background_rescoring_goes_on_where_a_bounded_call_stopped(make):
    a = make("a")
    hosts = [f"h{i}" for i in range(10)]
    for h in hosts:  # ten hosts: one HSCAN step returns them all
        for j in range(3):
            a.push(h, entry(f"http://{h}/{j}", 0.1 * (j + 1)))
    a.version = 1
    same = lambda entries: [e.priority for e in entries]  # noqa: E731
    done = [a.rescore_stale(same, limit=4) for _ in range(9)]
    # four records a call; the last host of a call, taken in part, has had its turn: the next call
    # goes on with the hosts after it, and the next round over the hosts takes the rest (these
    # calls keep the version, so the rest is all a host has stale): every record once, then nothing
    assert done == [4, 4, 4, 4, 4, 4, 4, 2, 0] and a.rescored == 30
    a.flush()
    for h in hosts:
        assert [e.version for e in a.queued(h)] == [1, 1, 1]


def test_a_host_taken_in_part_gives_its_longest_stale_records_and_has_had_its_turn(make):
    a = make("a")
    # (priority, version): the stale ones scored under the oldest version first, then the best of
    # the next version; the fresh one and the best stale one, scored the latest, wait
    for name, priority, version in [("a", 0.9, 2), ("b", 0.8, 0), ("c", 0.7, 1), ("d", 0.6, 0), ("e", 0.5, 3),
                                    ("f", 0.4, 1)]:
        a.push("deep", entry(f"http://deep/{name}", priority, version))
    a.push("next", entry("http://next/a", 0.5))
    for _ in range(3):
        a.version += 1  # three learner updates: version 3
    a.flush()
    seen = []

    def rescore(entries):
        seen.append(sorted(e.url.removeprefix("http://") for e in entries))
        return [e.priority for e in entries]

    assert a.rescore_stale(rescore, limit=3) == 3
    assert seen == [["deep/b", "deep/c", "deep/d"]]
    # the deep host had its turn: the next call re-scores the host after it, then comes back
    assert a.rescore_stale(rescore, limit=3) == 1 and seen[-1] == ["next/a"]
    assert a.rescore_stale(rescore, limit=3) == 2 and seen[-1] == ["deep/a", "deep/f"]
    a.flush()
    assert sorted(e.version for e in a.queued("deep")) == [3] * 6


def test_background_rescoring_reaches_every_record_of_a_deep_host(make):
    """As the in-process frontier's pass (``test_frontier.py``): a host bigger than a call (here
    600 of 800 records, a call of half the frontier per learner update) gives its longest-stale
    records first, and its partial turn is a turn: the hosts after it are re-scored too. So no
    record in a host's window stays stale for more than a few updates, and one queued when the
    learner thought little of it surfaces once it is worth more. (Best first re-scored the same
    top part of the deep host on every update, the cursor stayed on it, and its worst records and
    every host after it kept their old priorities for good.)"""
    from focuscrawl.distributed.frontier import RESCORE_DEPTH

    a = make("a")
    deep = [f"http://deep/{i}" for i in range(600)]
    assert len(deep) < RESCORE_DEPTH  # all in the host's window
    for i, url in enumerate(deep):
        a.push("deep", entry(url, i / 600))
    urls = list(deep)
    for h in ("h1", "h2"):
        for i in range(100):
            a.push(h, entry(f"http://{h}/{i}", 0.5))
            urls.append(f"http://{h}/{i}")
    a.flush()
    last = {}  # url -> the update it was last re-scored at
    update = 0

    def rescore(entries):
        for e in entries:
            last[e.url] = update
        # the deep host's worst records are now worth the most
        return [1.5 - int(e.url.rsplit("/", 1)[1]) / 600 if e.url.startswith("http://deep/") else 0.5
                for e in entries]

    for update in range(1, 13):
        a.version = update  # a learner update: every record is stale
        a.rescore_stale(rescore, limit=len(urls) // 2)
        a.flush()
        if update >= 4:
            assert len(last) == len(urls) and min(last.values()) >= update - 3, update
    assert a.size() == len(urls)
    assert drain(a)[:10] == [f"http://deep/{i}" for i in range(10)]


def test_background_rescoring_refiles_the_best_hosts(make):
    a = make("a")
    a.push("h1", entry("http://h1/a", 0.9))
    a.push("h2", entry("http://h2/a", 0.5))
    a.version = 1
    assert a.rescore_stale(lambda entries: [1.0 - e.priority for e in entries]) == 2
    assert drain(a) == ["http://h2/a", "http://h1/a"]


def test_capacity_prunes_the_crawls_worst_entries(make):
    a = make("a", capacity=4, prune_slack=0.0)
    pruned = []
    for i in range(6):
        pruned += a.push(f"h{i % 2}", entry(f"http://h{i % 2}/{i}", i / 10))
    assert sorted(e.url for e in pruned) == ["http://h0/0", "http://h1/1"]
    assert a.size() == 4
    assert sorted(drain(a)) == ["http://h0/2", "http://h0/4", "http://h1/3", "http://h1/5"]


def test_requests_the_codec_cannot_pack_travel_as_dicts(make):
    from focuscrawl import meta as M

    a, b = make("a"), make("b")
    robots = Request("http://h/robots.txt", meta={M.ROBOTS_FOR: "h"})
    a.push("h", Entry(float("inf"), robots.url, robots))
    host, e = b.pop(0)
    assert e.payload.url == "http://h/robots.txt" and e.payload.meta[M.ROBOTS_FOR] == "h"


def test_a_priority_sample_reads_every_workers_queued_records_by_host_size(make):
    """What the budget's price of a wait reads (Patience): priorities drawn from the crawl's
    queues, a host in proportion to its records, another worker's pushes included."""
    import random

    from focuscrawl.distributed.sampling import shared_priority_sample

    a, b = make("a"), make("b")
    assert shared_priority_sample(a.client, a.keys, 16, random.Random(0)) == []
    for i in range(90):
        a.push("big", entry(f"http://big/{i}", 0.25))
    for i in range(10):
        b.push("small", entry(f"http://small/{i}", 0.75))
    b.flush()
    a.flush()
    drawn = shared_priority_sample(a.client, a.keys, 400, random.Random(1))
    assert len(drawn) == 400 and set(drawn) == {0.25, 0.75}
    assert 0.05 < drawn.count(0.75) / 400 < 0.17  # ~10% of the records are small's


def test_drop_host_empties_its_queue(make):
    a = make("a")
    a.push("h", entry("http://h/1", 0.5))
    a.push("g", entry("http://g/1", 0.5))
    assert [e.url for e in a.drop_host("h")] == ["http://h/1"]
    assert drain(a) == ["http://g/1"]


def test_many_workers_never_hold_one_host_twice(make):
    """Four workers popping concurrently from threads: a host is never held by two at once."""
    import threading

    workers = [make(f"w{i}") for i in range(4)]
    for i in range(200):
        workers[0].push(f"h{i % 10}", entry(f"http://h{i % 10}/{i}", (i % 7) / 7))
    held: dict[str, str] = {}
    lock = threading.Lock()
    fetched, errors = [], []

    def work(frontier):
        idle = 0
        while idle < 50:
            popped = frontier.pop(0)
            if popped is None:
                idle += 1
                time.sleep(0.002)
                continue
            idle = 0
            host, e = popped
            with lock:
                if host in held:
                    errors.append((host, held[host], frontier.worker))
                held[host] = frontier.worker
                fetched.append(e.url)
            time.sleep(0.001)
            with lock:
                del held[host]
            frontier.release(host, 0.0)

    threads = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(fetched) == sorted(f"http://h{i % 10}/{i}" for i in range(200))


def shared_queue():
    from focuscrawl.distributed.shared_records import QUEUE

    return QUEUE


def test_a_record_another_worker_rescored_meanwhile_is_not_fetched_twice(make):
    """A holder re-scoring the top of its host while another worker's background pass re-scores
    the same records: each URL still leaves the frontier once."""
    a, b = make("a"), make("b")
    for i, p in enumerate([0.9, 0.5, 0.4, 0.1]):
        a.push("h", entry(f"http://h/{i}", p))
    a.version, b.version = 1, 2
    reverse = lambda entries: [1.0 - e.priority for e in entries]  # noqa: E731
    calls = []

    def racing(entries):
        if not calls:  # after a's look at its queue, b's background pass re-scores the same records
            calls.append(1)
            queued = b.client.zrange(b.keys("q", "h"), 0, -1)
            heads = b._restamper(reverse).once([shared_queue()] * len(queued), b.records.link_blobs(queued))
            fresh = [head[:FLAG] + r[FLAG:] for head, r in zip(heads, queued)]
            assert b._run("SWAP", "h", "", *[x for pair in zip(queued, fresh) for x in pair]) == len(queued)
        return reverse(entries)

    host, first = a.pop(0, rescore=racing)
    a.release(host, 0.0)
    urls = [first.url] + drain(a)
    assert sorted(urls) == [f"http://h/{i}" for i in range(4)]


def test_best_soon_sees_hosts_soon_free_and_the_callers_own(make):
    a, b = make("a"), make("b")
    a.push("soon", entry("http://soon/1", 0.8))
    a.push("mine", entry("http://mine/1", 0.6))
    a.push("late", entry("http://late/1", 0.95))
    host, _ = a.pop(0)  # late: the best
    a.release(host, time.monotonic() + 30)  # free only in 30 s
    host, _ = a.pop(0)  # soon
    a.release(host, time.monotonic() + 0.5)
    host, _ = b.pop(0)  # mine, held by b
    assert host == "mine"
    a.push("soon", entry("http://soon/2", 0.7))
    a.push("late", entry("http://late/2", 0.99))
    b.push("mine", entry("http://mine/2", 0.9))
    assert a.best_soon(0, 2.0) == pytest.approx(0.7)  # 'late' is not soon, 'mine' is b's
    assert b.best_soon(0, 2.0, ["mine"]) == pytest.approx(0.9)
    assert a.best_soon(0, 0.1) == float("-inf")


def test_best_soon_sees_a_host_another_worker_expects_free(make):
    a, b = make("a"), make("b")
    a.heartbeat(), b.heartbeat()
    a.push("h", entry("http://h/1", 0.5))
    a.push("h", entry("http://h/2", 0.9))
    host, _ = b.pop(0)
    assert b.best_soon(0, 2.0) == float("-inf") and a.best_soon(0, 2.0) == float("-inf")
    b.expect_free(host, 1.0)  # b's response and delay: free in about a second
    assert a.best_soon(0, 2.0) == pytest.approx(0.5)
    assert a.best_soon(0, 0.2) == float("-inf")
    b.release(host, time.monotonic() + 5)  # released (for 5 s): no longer expected by its holder
    assert a.best_soon(0, 2.0) == float("-inf")
