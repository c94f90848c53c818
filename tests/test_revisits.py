"""The scheduler's side of revisits (focuscrawl/scheduling/revisits.py): pacing the revisit plan's
due pages into a share of the requests, and what each visit tells the plan."""

import math
import pickle

import pytest
from scrapy import Request

from focuscrawl import meta as M
from focuscrawl.freshness import RevisitPlan
from focuscrawl.scheduling.revisits import Revisits, http_date, revisit_meta


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def make(share=0.25, min_interval=10.0, clock=None):
    clock = clock or Clock()
    return Revisits(RevisitPlan(min_interval=min_interval), share, reallocate_every=1.0, clock=clock), clock


def build(url, kept, meta):
    return Request(url, headers=meta[M.REVISIT_HEADERS] or None, meta=meta, dont_filter=True)


def track(revisits, n, weight=0.9, released=0):
    urls = [f"http://h{i % 3}.test/p{i}.html" for i in range(n)]
    for url in urls:
        revisits.record(url, 200, revisit=False, text_hash=f"v0-{url}", weight=weight, etag=f'"{url}-0"',
                        last_modified="Wed, 25 Nov 2026 10:00:00 GMT", released=released)
    return urls


def test_revisits_take_at_most_their_share_while_discovery_is_left():
    revisits, clock = make(share=0.25)
    track(revisits, 40)
    for second in range(1, 200):  # a request a second: every page comes due
        clock.now += 1.0
        revisits.released_one(float(second), revisit=False)
    sent = 0
    for released in range(1, 101):
        for url, _request, _value in revisits.due_requests(float(released), released, True, build):
            revisits.released_one(float(released), revisit=True)
            revisits.left(url)
            sent += 1
    assert 20 <= sent <= 26  # a quarter of 100 requests (the first revisit counted from tracking)


def test_without_discovery_revisits_fill_the_queue_and_carry_validators():
    revisits, clock = make()
    urls = track(revisits, 5)
    clock.now += 3600
    requests = [request for _, request, _ in revisits.due_requests(100.0, 0, False, build)]
    assert {r.url for r in requests} == set(urls)  # early: nothing else to spend requests on
    request = requests[0]
    assert request.headers.get(b"If-None-Match").decode() == f'"{request.url}-0"'
    assert request.headers.get(b"If-Modified-Since") == b"Wed, 25 Nov 2026 10:00:00 GMT"
    assert request.meta[M.REVISIT] and request.meta["handle_httpstatus_list"] == [304]
    assert revisits.due_requests(100.0, 0, False, build) == []  # queued: not handed out twice


def test_a_304_and_the_same_text_are_no_change_a_new_text_is():
    revisits, clock = make()
    url, = track(revisits, 1)
    clock.now += 100
    assert revisits.record(url, 304, revisit=True) is False
    clock.now += 100
    assert revisits.record(url, 200, revisit=True, text_hash=f"v0-{url}", weight=0.9) is False
    clock.now += 100
    assert revisits.record(url, 200, revisit=True, text_hash="v1", weight=0.9, etag='"v1"') is True
    assert revisits.plan.validators(url)["If-None-Match"] == '"v1"'
    clock.now += 100
    assert revisits.record(url, 200, revisit=True, text_hash="v1", weight=0.9) is False  # v1 is what it has now


def test_a_page_gone_or_no_longer_relevant_is_no_longer_revisited():
    revisits, clock = make()
    gone, faded, moved, failing = track(revisits, 4)
    clock.now += 100
    revisits.record(gone, 404, revisit=True)
    revisits.record(faded, 200, revisit=True, text_hash="new", weight=0.01)
    revisits.record(moved, 301, revisit=True)
    revisits.record(failing, 503, revisit=True)  # says nothing about change: still kept
    assert revisits.explain(gone) is None and revisits.explain(faded) is None
    assert revisits.explain(moved) is None
    assert revisits.explain(failing) is not None
    assert len(revisits) == 1


def test_a_feed_entry_newer_than_the_last_visit_makes_the_page_due_now():
    revisits, clock = make(min_interval=3600)
    url, other = track(revisits, 2)
    revisits.plan.reallocate(0.001)
    clock.now += 5
    assert revisits.hint(url, changed_at=clock.now - 1)
    assert not revisits.hint(other, changed_at=clock.now - 3600)  # before its last visit
    [(_url, request, value)] = revisits.due_requests(1.0, 10, True, build)
    assert request.url == url and value == pytest.approx(0.9)  # a known change: worth its weight


def test_a_refused_revisit_is_dropped_and_the_plan_survives_a_checkpoint():
    revisits, clock = make()
    urls = track(revisits, 3)
    clock.now += 3600
    requests = [request for _, request, _ in revisits.due_requests(1.0, 0, False, build)]
    revisits.dropped(requests[0].url)  # robots.txt now disallows it
    assert len(revisits) == 2
    restored = pickle.loads(pickle.dumps(revisits))
    assert restored.queued == set()  # a resumed frontier holds none of them
    fresh, _ = make()
    fresh.adopt(restored)
    assert len(fresh) == 2 and {u for u in urls if fresh.explain(u)} == set(urls) - {requests[0].url}


def test_revisit_meta_keeps_the_depth_and_never_respells():
    meta = revisit_meta("why", type("K", (), {"text_hash": "h", "depth": 3, "kind": "page"})(), {})
    assert meta[M.DEPTH] == 3 and meta[M.AS_LINKED] and meta[M.HEAD_CHECKED]


@pytest.mark.parametrize("value, expected", [
    ("Wed, 25 Nov 2026 10:00:00 GMT", 1795600800.0), (b"Wed, 25 Nov 2026 10:00:00 GMT", 1795600800.0),
    ("yesterday", None), ("", None), (None, None)])
def test_http_date(value, expected):
    assert http_date(value) == expected


def test_a_revisit_is_worth_the_weight_of_a_page_times_the_chance_it_changed():
    plan = RevisitPlan(min_interval=1.0)
    plan.record_visit("http://h.test/a", 0.0, None, weight=0.8)
    assert plan.value("http://h.test/a", 0.0) == 0.0
    rate = plan.rate("http://h.test/a")
    assert plan.value("http://h.test/a", 3600.0) == pytest.approx(0.8 * (1 - math.exp(-rate * 3600)))
    assert plan.value("http://h.test/a", 1e9) == pytest.approx(0.8)
    assert plan.value("http://h.test/nothing", 10.0) == 0.0
