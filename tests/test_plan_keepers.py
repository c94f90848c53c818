"""The revisit plan's events and the keeper of a crawl of its own (``scheduling/plan_keepers.py``),
and what a shared crawl's holder of the plan needs of ``Revisits``: a snapshot that keeps the
revisits queued, hand-outs replayed, the crawl's request rate."""

from __future__ import annotations

import json
import pickle

from scrapy import Request

from focuscrawl.freshness import RevisitPlan
from focuscrawl.scheduling import plan_keepers as events
from focuscrawl.scheduling.plan_keepers import LocalKeeper, apply
from focuscrawl.scheduling.revisits import Revisits


class Clock:
    def __init__(self, t: float = 1000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


def revisits(clock=None) -> Revisits:
    return Revisits(RevisitPlan(min_interval=10.0), 0.5, clock=clock or Clock())


def build(url, kept, meta):
    return Request(url, meta=meta)


def wire(event):
    """An event as it comes out of the shared crawl's stream."""
    return json.loads(json.dumps([event]))[0]


def test_events_change_the_plan_as_the_calls_they_stand_for():
    clock = Clock()
    direct, replayed = revisits(clock), revisits(Clock(5.0))  # the event's own time, not the clock's
    direct.record("http://a.test/", 200, revisit=False, text_hash="h1", weight=0.8, etag='"1"', depth=2)
    clock.t = 1100.0
    direct.record("http://a.test/", 200, revisit=True, text_hash="h2", weight=0.7)
    direct.hint("http://a.test/", changed_at=1150.0)
    for event in (events.visit("http://a.test/", 200, revisit=False, text_hash="h1", weight=0.8, etag=b'"1"',
                               depth=2, at=1000.0),
                  events.visit("http://a.test/", 200, revisit=True, text_hash="h2", weight=0.7, at=1100.0),
                  events.hint("http://a.test/", changed_at=1150.0, at=1100.0)):
        apply(replayed, wire(event))
    clock.t = replayed.clock.t = 1200.0
    assert replayed.explain("http://a.test/") == direct.explain("http://a.test/")
    assert replayed.plan.validators("http://a.test/") == direct.plan.validators("http://a.test/")
    assert replayed.plan.rate("http://a.test/") == direct.plan.rate("http://a.test/")


def test_an_event_of_an_unknown_kind_is_skipped():
    plan = revisits()
    apply(plan, ["z", "from a newer version"])
    assert len(plan) == 0


def test_the_local_keeper_applies_each_event_at_once_and_always_holds_the_plan():
    plan = revisits()
    keeper = LocalKeeper(plan)
    assert keeper.keeps_state and keeper.hold(0.0) and keeper.pages() == 0
    keeper.report(events.visit("http://a.test/", 200, revisit=False, text_hash="h", at=1000.0))
    assert keeper.pages() == 1
    keeper.released(1.0, "http://a.test/")
    keeper.released(1.0, None)
    assert plan.released == 1


def test_a_page_handed_out_is_not_handed_out_again_by_the_next_holder():
    clock = Clock()
    holder = revisits(clock)
    for k in range(3):
        holder.record(f"http://a.test/{k}", 200, revisit=False, text_hash="h")
    clock.t = 5000.0
    taken = holder.due_requests(1.0, 0, False, build)
    assert len(taken) == 3 and holder.taken_at == 5000.0
    snapshot = pickle.loads(pickle.dumps(holder.snapshot()))
    assert snapshot["queued"] == {url for url, _, _ in taken}

    # the next holder from the snapshot: still queued, none due again
    heir = revisits(clock)
    heir.take_up(snapshot)
    assert heir.due_requests(2.0, 0, False, build) == []
    # from a snapshot older than the hand-outs, with the hand-outs replayed: the same
    late = revisits(clock)
    late.take_up(pickle.loads(pickle.dumps({**holder.snapshot(), "queued": set()})))
    for url, _, _ in taken:
        apply(late, wire(events.handed(url, 5000.0)))
    assert late.queued == heir.queued and late.due_requests(2.0, 0, False, build) == []
    # a revisit that left the downloader and was visited: no longer queued, its visit recorded
    apply(late, events.left("http://a.test/0"))
    apply(late, events.visit("http://a.test/0", 304, revisit=True, at=5001.0))
    assert "http://a.test/0" not in late.queued
    assert "last visit 0 s ago" in late.plan.explain("http://a.test/0", 5001.0)


def test_taking_up_nothing_starts_an_empty_plan():
    plan = revisits()
    plan.record("http://a.test/", 200, revisit=False, text_hash="h")
    plan.take_up(None)
    assert len(plan) == 0 and plan.queued == set() and plan.released == 0


def test_the_revisit_rate_follows_the_whole_crawls_requests():
    plan = revisits()
    plan.crawl_released(0.0, 500)  # the first reading: the crawl's count so far, no rate yet
    assert plan.rate.per_second(0.0) == 0.0
    plan.crawl_released(1.0, 510)  # ten requests released by the crawl's workers in a second
    plan.crawl_released(2.0, 520)
    plan.crawl_released(2.5, 520)  # the count read again: nothing new
    assert abs(plan.rate.per_second(2.0) - 10.0) < 1e-9
    apply(plan, events.released())
    assert plan.released == 1


def test_a_dropped_revisit_leaves_the_plan():
    clock = Clock()
    plan = revisits(clock)
    plan.record("http://a.test/", 200, revisit=False, text_hash="h")
    clock.t = 9000.0
    [(url, _, _)] = plan.due_requests(1.0, 0, False, build)
    apply(plan, wire(events.dropped(url)))
    assert len(plan) == 0


def test_a_revisit_that_left_the_downloader_is_not_handed_out_again_before_its_visit_is_told():
    """The visit is told after the spider parsed the page (from another process: a sync later);
    meanwhile the page must not look due because its interval passed since it was handed out."""
    clock = Clock()
    plan = revisits(clock)
    plan.record("http://a.test/", 200, revisit=False, text_hash="h")
    clock.t = 5000.0
    [(url, _, _)] = plan.due_requests(1.0, 0, False, build)
    clock.t = 5000.0 + 10 * plan.plan.interval(url)  # it waited at its host for ten intervals
    apply(plan, wire(events.left(url, at=clock.t)))
    clock.t += 1.0
    assert plan.due_requests(2.0, 0, False, build) == []
    apply(plan, wire(events.visit(url, 304, revisit=True, at=clock.t)))
    assert plan.plan.explain(url, clock.t).startswith("revisit every")
