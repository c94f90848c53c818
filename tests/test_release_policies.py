"""Release policies: Patience (hold a request when a clearly better URL's host is free soon) and
HeadCheck (a HEAD first for URLs whose extension does not say "page")."""

import pytest
from scrapy import Request, Spider
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from focuscrawl import meta as M
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.politeness import DelayPolicy
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.load import CrawlerLoad, runnable_time
from focuscrawl.scheduling.policies import HeadCheck, Patience
from focuscrawl.urls import canonicalize

NOW = 100.0


# --- Patience -----------------------------------------------------------------------------------

class WorkClock:
    """The crawler's seconds of work so far, set by the test."""

    def __init__(self):
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def load(policy: Patience, cost: float, busy: float, requests: int = 16) -> None:
    """``requests`` released before NOW by a crawler that worked ``cost`` seconds on each and was
    busy for the share ``busy`` of the time."""
    for k in range(requests + 1):
        policy.work.seconds = k * cost
        policy.released("a.test", None, None, NOW - (requests - k) * cost / busy)


def patience(horizon: float = 2.0, margin: float = 0.25, cost: float = 1.0, busy: float = 0.95):
    """A real frontier and host gate (a one-second delay), and Patience over them, with a crawler
    that has been busy (by default so busy that any wait up to ``horizon`` costs nothing)."""
    frontier = Frontier()
    gate = HostGate(DelayPolicy(minimum=1.0, adaptive_factor=0.0), agent="focuscrawl", obey_robots=False)
    policy = Patience(frontier, gate, horizon, margin, work=WorkClock())
    load(policy, cost, busy)
    return frontier, gate, policy


def push(frontier: Frontier, host: str, priority: float, name: str, depth: int = 1) -> None:
    url = f"http://{host}/{name}"
    frontier.push(host, Entry(priority, url, Request(url, meta={"depth": depth})))


def popped(frontier: Frontier, url: str):
    host, entry = frontier.pop(NOW)
    assert entry.url == url
    return host, entry


def review(policy, host, entry):
    return policy.review(host, entry, entry.payload, NOW)


def busy_host_with_a_better_url(frontier, gate, poor: float = 1.0, depth: int = 1):
    """a.test has a request in flight and a URL of 4.0 queued; b.test's URL (``poor``) is popped."""
    push(frontier, "a.test", 5.0, "best")
    push(frontier, "a.test", 4.0, "next")
    push(frontier, "b.test", poor, "poor", depth)
    _, best = popped(frontier, "http://a.test/best")
    gate.start("a.test", best.payload)
    return popped(frontier, "http://b.test/poor")


def test_a_worse_url_is_held_while_a_clearly_better_ones_busy_host_is_free_within_the_horizon():
    frontier, gate, policy = patience()
    host, entry = busy_host_with_a_better_url(frontier, gate)
    assert review(policy, host, entry) is None


def test_a_busy_host_free_only_beyond_the_horizon_is_not_waited_for():
    frontier, gate, policy = patience()
    host, entry = busy_host_with_a_better_url(frontier, gate)
    gate.delays.set_crawl_delay(gate.timing_of("a.test"), 10.0)
    assert review(policy, host, entry) is entry.payload
    # the same with the one-second delay and a shorter horizon
    frontier, gate, policy = patience(horizon=0.5)
    host, entry = busy_host_with_a_better_url(frontier, gate)
    assert review(policy, host, entry) is entry.payload


@pytest.mark.parametrize(("ready_in", "held"), [(1.5, True), (2.0, True), (3.0, False)])
def test_a_host_waiting_out_its_delay_is_waited_for_only_within_the_horizon(ready_in, held):
    frontier, gate, policy = patience()
    push(frontier, "a.test", 5.0, "best")
    push(frontier, "a.test", 4.0, "next")
    push(frontier, "b.test", 1.0, "poor")
    popped(frontier, "http://a.test/best")
    frontier.release("a.test", NOW + ready_in)  # its response is in: free again after its delay
    host, entry = popped(frontier, "http://b.test/poor")
    assert (review(policy, host, entry) is None) == held


@pytest.mark.parametrize(("poor", "held"), [(3.7, True), (3.8, False), (3.9, False)])
def test_only_a_url_better_by_more_than_the_margin_is_waited_for(poor, held):
    frontier, gate, policy = patience(margin=0.25)
    host, entry = busy_host_with_a_better_url(frontier, gate, poor=poor)
    assert (review(policy, host, entry) is None) == held


def test_nothing_better_nothing_held():
    frontier, gate, policy = patience()
    push(frontier, "a.test", 1.0, "best")
    push(frontier, "a.test", 0.5, "next")
    push(frontier, "b.test", 0.9, "poor")
    _, best = popped(frontier, "http://a.test/best")
    gate.start("a.test", best.payload)
    host, entry = popped(frontier, "http://b.test/poor")
    assert review(policy, host, entry) is entry.payload


def test_a_seed_is_never_held():
    frontier, gate, policy = patience()
    host, entry = busy_host_with_a_better_url(frontier, gate, depth=0)
    assert entry.payload.meta["depth"] == 0
    assert review(policy, host, entry) is entry.payload


# --- what a wait costs ---------------------------------------------------------------------------

def test_the_load_measures_the_crawlers_work_per_request_and_its_busy_share():
    frontier, gate, policy = patience(cost=0.02, busy=0.5)
    assert policy.load.measure(NOW, policy.work()) == pytest.approx((0.02, 0.5))
    # idle since: the same work over a longer span
    assert policy.load.measure(NOW + 0.64, policy.work()) == pytest.approx((0.02, 0.25))
    assert CrawlerLoad().measure(NOW, 1.0) == (0.0, 0.0)  # nothing released yet: no measure
    assert CrawlerLoad().sojourn(NOW, 1.0) == 0.0


@pytest.mark.parametrize(("cost", "busy", "wait"), [
    (0.02, 0.5, 0.04),       # half busy: a request is through after twice its work
    (0.02, 0.9, 0.2),        # a fast server: the crawler's work the bottleneck
    (0.02, 0.1, 0.02 / 0.9),  # a real web: about one request's work
    (0.02, 1.0, 0.4),        # flat out: busy capped at 0.95
])
def test_a_wait_costs_nothing_within_a_requests_sojourn_through_the_crawler(cost, busy, wait):
    frontier, gate, policy = patience(cost=cost, busy=busy)
    assert policy.horizon(NOW) == pytest.approx(wait)


def test_the_horizon_never_passes_the_patience_setting():
    frontier, gate, policy = patience(horizon=0.5)
    assert policy.horizon(NOW) == 0.5


def waiting_host_with_a_better_url(frontier, ready_in: float):
    """a.test's response is in, a URL of 4.0 queued, free in ``ready_in`` s; b.test's URL of 1.0 popped."""
    push(frontier, "a.test", 5.0, "best")
    push(frontier, "a.test", 4.0, "next")
    push(frontier, "b.test", 1.0, "poor")
    popped(frontier, "http://a.test/best")
    frontier.release("a.test", NOW + ready_in)
    return popped(frontier, "http://b.test/poor")


@pytest.mark.parametrize(("ready_in", "held"), [(0.01, True), (0.19, True), (0.21, False), (1.0, False)])
def test_a_busy_crawler_waits_for_a_good_host_free_within_the_sojourn(ready_in, held):
    # 20 ms of the crawler's work a request, busy 90% of the time: through after 200 ms
    frontier, gate, policy = patience(cost=0.02, busy=0.9)
    host, entry = waiting_host_with_a_better_url(frontier, ready_in)
    assert (review(policy, host, entry) is None) == held


def test_a_mostly_idle_crawler_does_not_wait_out_a_hosts_delay():
    # a real web: the hosts' delays are the bottleneck, the crawler works 3% of the time: ~10 ms
    frontier, gate, policy = patience(cost=0.01, busy=0.03)
    host, entry = busy_host_with_a_better_url(frontier, gate)  # a.test in flight: free in 1 s
    assert review(policy, host, entry) is entry.payload
    for ready_in, held in ((0.3, False), (0.005, True)):
        frontier, gate, policy = patience(cost=0.01, busy=0.03)
        host, entry = waiting_host_with_a_better_url(frontier, ready_in)
        assert (review(policy, host, entry) is None) == held


def test_a_crawl_that_pays_per_request_waits_out_a_hosts_delay_whatever_its_load():
    """FOCUS_PATIENCE_PRICE = "request": a request is the price, not time; the idle crawler of the
    test above holds its poor request for the better URL free within FOCUS_PATIENCE."""
    frontier = Frontier()
    gate = HostGate(DelayPolicy(minimum=1.0, adaptive_factor=0.0), agent="focuscrawl", obey_robots=False)
    policy = Patience(frontier, gate, 2.0, 0.25, work=WorkClock(), price="request")
    load(policy, cost=0.01, busy=0.03)
    host, entry = busy_host_with_a_better_url(frontier, gate)  # a.test in flight: free in 1 s
    assert policy.horizon(NOW) == 2.0
    assert review(policy, host, entry) is None


def test_holding_lowers_the_measured_load_so_the_crawl_cannot_stall():
    # the crawler stops working while it holds: the wait that costs nothing shrinks
    frontier, gate, policy = patience(cost=0.02, busy=0.9)
    host, entry = waiting_host_with_a_better_url(frontier, 0.19)
    assert review(policy, host, entry) is None
    later = NOW + 0.1  # 100 ms without a request released or any work done; a.test 90 ms away
    assert policy.horizon(later) < 0.09
    assert policy.review(host, entry, entry.payload, later) is entry.payload


def test_nothing_is_held_before_the_crawler_has_a_measure():
    frontier = Frontier()
    gate = HostGate(DelayPolicy(minimum=1.0, adaptive_factor=0.0), agent="focuscrawl", obey_robots=False)
    policy = Patience(frontier, gate, 2.0, 0.25, work=WorkClock())
    host, entry = busy_host_with_a_better_url(frontier, gate)
    assert review(policy, host, entry) is entry.payload


def test_the_crawlers_work_clock_moves_with_its_work():
    before = runnable_time()
    sum(i * i for i in range(200_000))
    assert runnable_time() > before


# --- HeadCheck ----------------------------------------------------------------------------------

class Checked:
    """A HeadCheck with what it refuses and drops recorded."""

    def __init__(self):
        self.stats = get_crawler(Spider).stats
        self.refused, self.dropped = [], []
        self.policy = HeadCheck(self.stats, lambda request, reason: self.refused.append((request, reason)),
                                self.dropped.append)

    def review(self, request: Request):
        return self.policy.review("a.test", Entry(1.0, request.url, request), request, NOW)

    def head(self, url: str = "http://a.test/data?b=2&a=1"):
        get = Request(url, meta={"depth": 2})
        head = self.review(get)
        assert head is not get and head.method == "HEAD"
        return get, head


@pytest.mark.parametrize("url", [
    "http://a.test/data", "http://a.test/report.xyz", "http://a.test/paper.PDF", "http://a.test/feed.json?x=1",
])
def test_a_url_whose_extension_does_not_say_page_gets_a_head_first(url):
    checked = Checked()
    get = Request(url, meta={"depth": 2})
    head = checked.review(get)
    assert head.method == "HEAD" and head.url == get.url
    assert head.callback == checked.policy.head_checked and head.errback == checked.policy.head_failed
    assert head.meta[M.HEAD_FOR] is get and head.meta["depth"] == 2
    assert M.HEAD_FOR not in get.meta and get.method == "GET"
    assert checked.stats.get_value("focus/head/requests") == 1


@pytest.mark.parametrize(("url", "meta", "method"), [
    ("http://a.test/", {}, "GET"),
    ("http://a.test/courses/", {}, "GET"),
    ("http://a.test/index.html", {}, "GET"),
    ("http://a.test/INDEX.HTM", {}, "GET"),
    ("http://a.test/page.php?id=3", {}, "GET"),
    ("http://a.test/list.aspx", {}, "GET"),
    ("http://a.test/sitemap.xml.gz", {M.SITEMAP: True}, "GET"),
    ("http://a.test/data", {M.HEAD_CHECKED: True}, "GET"),
    ("http://a.test/data", {}, "POST"),
])
def test_no_head_for_pages_directories_sitemaps_or_urls_already_checked(url, meta, method):
    checked = Checked()
    request = Request(url, method=method, meta=meta)
    assert checked.review(request) is request
    assert not checked.stats.get_value("focus/head/requests")


@pytest.mark.parametrize("content_type", [b"application/pdf", b"image/png", b"application/json; charset=utf-8"])
def test_a_head_answer_that_is_not_html_refuses_the_url_and_forgets_it(content_type):
    checked = Checked()
    get, head = checked.head()
    response = Response(head.url, status=200, headers={"Content-Type": content_type}, request=head)
    assert head.callback(response) is None
    assert checked.refused == [(get, "head_not_html")]
    assert checked.dropped == [canonicalize(get.url)] == ["http://a.test/data?a=1&b=2"]
    assert checked.stats.get_value("focus/head/not_html") == 1
    assert M.HEAD_CHECKED not in get.meta


@pytest.mark.parametrize(("status", "headers"), [
    (200, {"Content-Type": "text/html; charset=utf-8"}),
    (200, {"Content-Type": "application/xhtml+xml"}),
    (200, {}),  # no type: fetch and see
    (405, {"Content-Type": "application/json"}),  # the server does not answer HEAD: fetch and see
])
def test_an_html_or_unclear_head_answer_gives_the_get_back_marked_checked(status, headers):
    checked = Checked()
    get, head = checked.head()
    response = Response(head.url, status=status, headers=headers, request=head)
    assert head.callback(response) == [get]
    assert get.meta[M.HEAD_CHECKED] is True and get.dont_filter  # admitted once already: past the seen set
    assert checked.refused == [] and checked.dropped == []
    assert checked.review(get) is get  # not checked again


def test_a_failed_head_gives_the_get_back_marked_checked():
    checked = Checked()
    get, head = checked.head()
    failure = Failure(ConnectionRefusedError("no"))
    failure.request = head
    assert head.errback(failure) == [get]
    assert get.meta[M.HEAD_CHECKED] is True and get.dont_filter
    assert checked.refused == [] and checked.dropped == []
    assert checked.review(get) is get
