"""The budget's price of a wait (``scheduling.budget`` and ``Patience`` priced 'budget'): a ready
URL among the best the rest of the budget can buy is sent, one below it is held while a URL at or
above it is at a host free within FOCUS_PATIENCE."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request

from focuscrawl.frontier import Entry, Frontier
from focuscrawl.frontier.sampling import queue_priority_sample
from focuscrawl.politeness import DelayPolicy
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.budget import SAMPLE_EVERY, BudgetCounts, BudgetCut, bought_share, cut_of
from focuscrawl.scheduling.policies import Patience

NOW = 100.0


# --- the share and its cut ----------------------------------------------------------------------

@pytest.mark.parametrize(("remaining", "queued", "rate", "share"), [
    (100, 1000, 0.0, 0.1),     # a closed web: the best 100 of 1,000
    (100, 500, 5.0, 0.1),      # 500 more to be found on the way
    (500, 400, 0.0, 1.0),      # the budget covers the frontier: everything is bought
    (0, 400, 1.0, 0.0),        # nothing left
])
def test_the_share_the_rest_of_a_budget_buys(remaining, queued, rate, share):
    assert bought_share(remaining, queued, rate) == pytest.approx(share)


@given(st.integers(1, 10_000), st.integers(0, 10**6), st.floats(0, 100))
def test_the_share_is_a_share_and_falls_as_the_frontier_grows(remaining, queued, rate):
    share = bought_share(remaining, queued, rate)
    assert 0 < share <= 1
    assert bought_share(remaining, queued + 1000, rate) <= share


def test_the_cut_is_the_lowest_priority_of_the_best_share():
    best_first = [float(p) for p in range(99, -1, -1)]  # 99 .. 0
    assert cut_of(best_first, 0.1) == 89.0   # the 10 best are 99 .. 90: below 90 is not bought
    assert cut_of(best_first, 0.001) == 99.0  # less than one sampled URL's worth: the best
    assert cut_of(best_first, 1.0) == float("-inf")
    assert cut_of([], 0.1) == float("-inf")


def test_the_discovery_rate_is_measured_over_the_recent_requests():
    cut = BudgetCut(1000, window=2)
    cut.resample([1.0], released=0, admitted=4)  # the seeds
    assert cut.rate() == 0.0
    cut.resample([1.0], released=16, admitted=4 + 160)
    assert cut.rate() == pytest.approx(160 / 16)
    cut.resample([1.0], released=32, admitted=164 + 16)
    assert cut.rate() == pytest.approx((180 - 4) / 32)
    cut.resample([1.0], released=48, admitted=180)  # nothing new any more
    assert cut.rate() == pytest.approx(16 / 32)


def test_the_sample_is_drawn_again_every_few_requests_and_less_often_for_a_big_frontier():
    cut = BudgetCut(1000)
    assert cut.due(0, 10)
    cut.resample([1.0], 0, 0)
    assert not cut.due(SAMPLE_EVERY - 1, 10) and cut.due(SAMPLE_EVERY, 10)
    assert not cut.due(SAMPLE_EVERY, 10**6) and cut.due(10**6 // 4096, 10**6)


def sample_cut(frontier: Frontier, remaining: int, rng: random.Random) -> float:
    cut = BudgetCut(10_000)
    cut.resample(queue_priority_sample(frontier.queues(), 256, rng), 0, 0)
    return cut.cut(remaining, len(frontier))


class UrlCodec:
    """Packs an entry whose payload is its URL (compact records: they spill to cold runs)."""

    def pack(self, entry):
        return b""

    def unpack(self, url, blob):
        return url, None


def fill(frontier: Frontier, priorities, hosts: int = 7) -> None:
    for i, p in enumerate(priorities):
        host = f"h{i % hosts}.test"
        frontier.push(host, Entry(p, f"http://{host}/{i}", None))


def test_the_cut_tracks_a_moving_frontier():
    """Read from a sample of a frontier whose pages spill to cold runs, the cut of the best 10%
    lands near the true one, and follows the frontier when its best are fetched and worse come."""
    rng = random.Random(1)
    frontier = Frontier(codec=UrlCodec(), deflate_from=5_000)
    fill(frontier, [rng.random() for _ in range(20_000)])
    assert any(q.cold_size() for _, q in frontier.queues())  # the sample reads cold runs too
    assert sample_cut(frontier, 2_000, rng) == pytest.approx(0.9, abs=0.04)
    for _ in range(10_000):  # the best half fetched
        host, entry = frontier.pop(NOW)
        frontier.release(host, NOW)
    fill(frontier, [0.5 * rng.random() for _ in range(10_000)])  # worse links found meanwhile
    # 20,000 queued, half in [0, 0.5), half in [0, 0.5): the best 10% are above ~0.45
    assert sample_cut(frontier, 2_000, rng) == pytest.approx(0.45, abs=0.03)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=1, max_size=300), st.integers(1, 400), st.randoms(use_true_random=False))
def test_a_sample_holds_only_priorities_queued(priorities, k, rng):
    frontier = Frontier()
    fill(frontier, priorities, hosts=3)
    queued = {round(p, 3) for p in priorities}
    drawn = queue_priority_sample(frontier.queues(), k, rng)
    assert len(drawn) == k and {round(p, 3) for p in drawn} <= queued


# --- Patience priced by the budget ---------------------------------------------------------------

class Counts:
    def __init__(self, budget=1000, released=100, admitted=1000):
        self.budget, self.released, self.admitted = budget, released, admitted

    def counts(self) -> BudgetCounts:
        return BudgetCounts(self.budget, lambda: self.released, lambda: self.admitted, lambda: self.released)


def budget_patience(counts: Counts, price: str = "budget", patience: float = 2.0):
    """Patience over a real frontier and gate (one-second delays) whose crawler is idle: a wait
    costs time, so only the budget's price holds."""
    frontier = Frontier()
    gate = HostGate(DelayPolicy(minimum=1.0, adaptive_factor=0.0), agent="focuscrawl", obey_robots=False)
    policy = Patience(frontier, gate, patience, 0.25, work=lambda: 0.0, price=price, budget=counts.counts(),
                      sample=lambda k, rng: queue_priority_sample(frontier.queues(), k, rng))
    return frontier, gate, policy


def url(frontier, host, priority, name, depth=1):
    u = f"http://{host}/{name}"
    frontier.push(host, Entry(priority, u, Request(u, meta={"depth": depth})))


def junk_ready_and_a_good_url_soon(frontier, gate, junk: float = 0.0, depth: int = 1, good_in: float = 1.0):
    """good.test (free in ``good_in`` s) holds the best URLs, 1,000 junk ones of 0-1 wait at
    other hosts (not free for a minute); a junk URL (``junk``) is popped."""
    url(frontier, "good.test", 9.0, "first")
    for i in range(50):
        url(frontier, "good.test", 5.0 + i / 100, f"good{i}")
    for i in range(1000):
        url(frontier, f"j{i % 20}.test", i / 1000, f"junk{i}")
    url(frontier, "ready.test", junk, "poor", depth)
    host, first = frontier.pop(NOW)
    assert first.url == "http://good.test/first"
    gate.start(host, first.payload)
    gate.delays.set_crawl_delay(gate.timing_of(host), good_in)
    while True:  # the junk hosts' URLs stay queued: take ready.test's
        host, entry = frontier.pop(NOW)
        if host == "ready.test":
            return host, entry
        frontier.requeue(host, entry)
        frontier.release(host, NOW + 60)


def test_junk_is_held_while_a_url_the_budget_buys_is_soon():
    # 900 requests left, 1,051 queued and one new URL a request: the best ~46% are bought, 0.0 is not
    counts = Counts(budget=1000, released=100, admitted=100)
    frontier, gate, policy = budget_patience(counts)
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate)
    assert policy.budget_cut() > 0.0
    assert policy.review(host, entry, entry.payload, NOW) is None
    # priced by time, the idle crawler sends it
    frontier, gate, policy = budget_patience(counts, price="time")
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate)
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_a_url_the_budget_buys_anyway_is_sent():
    counts = Counts(budget=1000, released=100, admitted=100)
    frontier, gate, policy = budget_patience(counts)
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate, junk=0.9)  # among the good ones
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_a_seed_is_never_held_by_the_budget():
    frontier, gate, policy = budget_patience(Counts())
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate, depth=0)
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_nothing_bought_soon_nothing_held():
    """The good host is behind a Crawl-delay past FOCUS_PATIENCE: what is ready goes."""
    frontier, gate, policy = budget_patience(Counts())
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate, good_in=5.0)
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_a_budget_that_covers_the_frontier_holds_nothing():
    # nothing new found any more, and 99,900 requests left for 1,051 queued: everything is bought
    counts = Counts(budget=100_000, released=100, admitted=0)
    frontier, gate, policy = budget_patience(counts)
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate)
    assert policy.budget_cut() == float("-inf")
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_without_a_budget_the_budget_price_is_the_time_price():
    frontier = Frontier()
    gate = HostGate(DelayPolicy(minimum=1.0, adaptive_factor=0.0), agent="focuscrawl", obey_robots=False)
    policy = Patience(frontier, gate, 2.0, 0.25, work=lambda: 0.0, price="budget", budget=None)
    assert policy.cut is None and policy.budget_cut() == float("-inf")
    host, entry = junk_ready_and_a_good_url_soon(frontier, gate)
    assert policy.review(host, entry, entry.payload, NOW) is entry.payload


def test_an_unknown_price_is_refused():
    with pytest.raises(ValueError):
        Patience(Frontier(), None, 2.0, 0.25, price="money")
