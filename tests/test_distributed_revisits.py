"""The shared crawl's revisit plan (``distributed/revisits.py``) on a real redis-server: one worker
holds it, the others' events reach it, a holder that stops is taken over from its snapshot and
the events since, and a stale holder never overwrites its successor's snapshot."""

from __future__ import annotations

import time

import pytest
from scrapy import Request

from focuscrawl.distributed.batch import Scripts, WriteBehind
from focuscrawl.distributed.connection import Keys, connect
from focuscrawl.distributed.revisits import SharedPlanKeeper, read_shared_plan
from focuscrawl.freshness import RevisitPlan
from focuscrawl.scheduling import plan_keepers as events
from focuscrawl.scheduling.revisits import Revisits

LEASE = 0.6


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def build(url, kept, meta):
    return Request(url, meta=meta)


class Worker:
    """One worker's keeper, its commands sent at once (no write-behind: each reply comes back at once)."""

    def __init__(self, redis_url: str, name: str, crawl_id: str, clock: Clock):
        self.client = connect(redis_url)
        self.writes = WriteBehind(self.client, Scripts(self.client, {}), max_age=None)
        self.revisits = Revisits(RevisitPlan(min_interval=10.0), 0.5, clock=clock)
        self.released = 0
        self.keeper = SharedPlanKeeper(self.writes, Keys(crawl_id), name, self.revisits, lease_seconds=LEASE,
                                       crawl_released=lambda: self.released)

    def hold(self, now: float) -> bool:
        return self.keeper.hold(now)


@pytest.fixture
def crawl(redis_server, request):
    redis_server.flush()
    clock = Clock()
    crawl_id = request.node.name
    return clock, (lambda name: Worker(redis_server.url, name, crawl_id, clock))


def test_one_worker_holds_the_plan_and_the_others_events_reach_it(crawl):
    clock, worker = crawl
    a, b = worker("a"), worker("b")
    assert a.hold(0.0) and not b.hold(0.0)
    b.keeper.report(events.visit("http://b.test/", 200, revisit=False, text_hash="h", weight=0.9, at=1000.0))
    assert b.keeper.pages() == 1  # its own events not sent yet keep its crawl open
    b.hold(1.0)  # sent with its sync
    assert a.hold(1.0) and "http://b.test/" in a.revisits.plan
    a.hold(2.0)  # the holder's count of pages goes out with its next renewal
    assert not b.hold(3.0) and b.keeper.pages() == 1  # and is read with the lease
    assert len(b.revisits) == 0  # a worker that does not hold the plan keeps none of it


def test_a_holder_killed_is_taken_over_from_its_snapshot_and_the_events_since(crawl):
    clock, worker = crawl
    a, b = worker("a"), worker("b")
    assert a.hold(0.0)
    for k in range(4):
        a.keeper.report(events.visit(f"http://a.test/{k}", 200, revisit=False, text_hash="h", at=1000.0))
    a.hold(1.0)  # its events out, read back at the next sync
    assert a.hold(2.0) and len(a.revisits) == 4  # and a snapshot written (the first, at once)
    clock.t = 9000.0
    taken = a.revisits.due_requests(3.0, 0, False, build)
    assert len(taken) == 4
    a.keeper.handed_out([url for url, _, _ in taken], a.revisits.taken_at)
    b.keeper.report(events.visit("http://a.test/0", 304, revisit=True, at=9001.0))
    b.keeper.report(events.visit("http://b.test/new", 200, revisit=False, text_hash="n", at=9001.0))
    assert not b.hold(3.0)
    # a dies (no close): its lease runs out, b takes the plan up
    time.sleep(LEASE + 0.2)
    assert b.hold(4.0)
    assert len(b.revisits) == 5 and "http://b.test/new" in b.revisits.plan
    # what a handed out and nobody visited yet is still queued: not handed out again
    queued = {url for url, _, _ in taken} - {"http://a.test/0"}
    assert b.revisits.queued == queued
    assert not {url for url, _, _ in b.revisits.due_requests(5.0, 0, False, build)} & queued
    assert b.keeper.takeovers == 1


def test_a_stale_holder_steps_down_and_never_overwrites_its_successors_snapshot(crawl, redis_server):
    clock, worker = crawl
    a, b = worker("a"), worker("b")
    assert a.hold(0.0)
    time.sleep(LEASE + 0.2)  # a stalls past its lease
    assert b.hold(0.0)
    b.keeper.report(events.visit("http://b.test/", 200, revisit=False, text_hash="h", at=1000.0))
    b.hold(2.0)
    b.hold(6.0)  # its snapshot, with the page
    a.keeper._snapshot(10.0)  # what a stalled holder would write: refused, and it steps down
    assert not a.keeper.leader and not a.hold(10.0)
    with redis_server.client() as client:
        plan = read_shared_plan(client, Keys(b.keeper.leader_key.split("{")[1].split("}")[0]))
    assert plan is not None and "http://b.test/" in plan.plan


def test_a_holder_that_closes_gives_the_plan_up_at_once(crawl):
    clock, worker = crawl
    a, b = worker("a"), worker("b")
    assert a.hold(0.0)
    a.keeper.report(events.visit("http://a.test/", 200, revisit=False, text_hash="h", at=1000.0))
    a.keeper.close()
    assert b.hold(0.0) and "http://a.test/" in b.revisits.plan  # no wait for the lease to run out


def test_a_revisit_in_flight_at_a_worker_gone_is_due_again(crawl, redis_server):
    clock, worker = crawl
    a, b = worker("a"), worker("b")
    workers = a.keeper.workers_key
    with redis_server.client() as client:
        client.zadd(workers, {"a": 1e12, "b": 1e12})  # their heartbeats
        assert a.hold(0.0)
        a.keeper.report(events.visit("http://a.test/", 200, revisit=False, text_hash="h", at=1000.0))
        a.hold(1.0)
        assert a.hold(2.0)
        clock.t = 9000.0
        [(url, _, _)] = a.revisits.due_requests(3.0, 0, False, build)
        a.keeper.handed_out([url], a.revisits.taken_at)
        b.keeper.released(3.0, url)  # b popped it, and is fetching it
        a.hold(4.0)
        assert url in a.revisits.queued  # b is alive: it will tell
        client.zrem(workers, "b")  # b killed: its heartbeat stopped, it was reaped
        a.hold(5.0)
        a.hold(6.0)
    assert url not in a.revisits.queued and a.keeper.lost == 1
