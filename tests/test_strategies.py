"""FOCUS_STRATEGY: the classic focused crawlers (bestfirst, shark-search, breadth-first) order the
same frontier as the learner does, and ``learned`` (the default) orders it exactly as before.
The strategies are driven directly, then through a real Frontier and a real FocusScheduler."""

from __future__ import annotations

import pytest
from scrapy import Request

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.learning import LinkRewardLearner, link_context, link_features
from focuscrawl.learning.strategies import (
    SEED_PRIORITY,
    SHARK_BETA,
    SHARK_DELTA,
    SHARK_GAMMA,
    BestFirstStrategy,
    BreadthFirstStrategy,
    LearnedStrategy,
    SharkStrategy,
)
from focuscrawl.meta import LinkMeta, link_parent, request_meta
from focuscrawl.urls import canonicalize, host_key
from tests.test_scheduler import free, link_requests, make_scheduler, opened, release_all


def meta(parent: str | None = None, parent_score: float | None = None, link_score: float | None = None,
         depth: int = 1) -> dict:
    """A request's meta as the spider writes it (a seed: no parent)."""
    return request_meta(LinkMeta(anchor="a link", parent_url=parent, parent_score=parent_score,
                                 link_score=link_score), depth=0 if parent is None else depth)


# --- the strategies alone ----------------------------------------------------------------------

def test_bestfirst_orders_by_the_best_parent_score_and_raises_a_url_found_again_on_a_better_page():
    s = BestFirstStrategy()
    seed = s.score("http://a.test/", meta())
    low = s.score("http://a.test/x", meta("http://a.test/", 0.2))
    high = s.score("http://a.test/y", meta("http://a.test/", 0.7))
    assert seed > high > low
    assert seed == pytest.approx(SEED_PRIORITY) and high == pytest.approx(0.7) and low == pytest.approx(0.2)
    # found again on a worse page: nothing changes; on a better one: its priority rises
    assert not s.refound("http://a.test/x", meta("http://b.test/", 0.1)) and not s.settle()
    version = s.version
    assert s.refound("http://a.test/x", meta("http://b.test/", 0.9))
    assert s.settle() and s.version == version + 1 and not s.settle()
    assert s.priority("http://a.test/x") == pytest.approx(0.9)
    assert s.priority("http://a.test/x") > s.priority("http://a.test/y")
    # re-scoring an entry queued at its old priority gives the new one
    [now] = s.rescore([Entry(low, "http://a.test/x")])
    assert now == s.priority("http://a.test/x")
    # once released, a better link changes nothing (it is no longer queued)
    s.released("http://a.test/y")
    assert not s.refound("http://a.test/y", meta("http://b.test/", 1.0))
    # ties: first come, first served (by discovery, not the frontier's sequence numbers)
    first, second = (s.score(f"http://c.test/{i}", meta("http://c.test/", 0.5)) for i in range(2))
    assert first > second and first == pytest.approx(second)
    assert "bestfirst:best_parent_score" in dict(s.explain("http://a.test/x", meta("http://a.test/", 0.2)))


def shark_value(inherited: float, link_score: float, threshold: float = 0.5) -> float:
    context = 1.0 if link_score >= threshold else link_score
    return SHARK_GAMMA * inherited + (1 - SHARK_GAMMA) * (SHARK_BETA * link_score + (1 - SHARK_BETA) * context)


def test_shark_inheritance_decays_per_hop_and_restarts_at_a_relevant_parent():
    s = SharkStrategy(threshold=0.5)
    s.score("http://a.test/", meta())  # a seed: inherited 1, as if relevant
    path = ["http://a.test/", "http://a.test/1", "http://a.test/2", "http://a.test/3"]
    inherited = []
    for parent, child in zip(path, path[1:]):
        s.score(child, meta(parent, 0.1, link_score=0.2))  # irrelevant pages all along
        inherited.append(s.urls[child].inherited)
    assert inherited == pytest.approx([SHARK_DELTA, SHARK_DELTA ** 2, SHARK_DELTA ** 3])  # decays per hop
    # a relevant parent (score >= the threshold): inheritance restarts from its score
    p = s.score("http://a.test/4", meta("http://a.test/3", 0.9, link_score=0.2))
    assert s.urls["http://a.test/4"].inherited == pytest.approx(SHARK_DELTA * 0.9)
    assert p == pytest.approx(shark_value(SHARK_DELTA * 0.9, 0.2))
    # ... and decays again below it
    s.score("http://a.test/5", meta("http://a.test/4", 0.3, link_score=0.2))
    assert s.urls["http://a.test/5"].inherited == pytest.approx(SHARK_DELTA ** 2 * 0.9)
    # the neighbourhood: an anchor read as relevant counts its context as fully relevant
    q = s.score("http://a.test/6", meta("http://a.test/3", 0.1, link_score=0.8))
    assert q == pytest.approx(shark_value(SHARK_DELTA ** 4, 0.8), abs=1e-9)
    # a parent it never knew (forgotten): nothing inherited
    s.score("http://z.test/1", meta("http://z.test/", 0.1, link_score=0.0))
    assert s.urls["http://z.test/1"].inherited == 0.0
    names = dict(s.explain("http://a.test/4", meta("http://a.test/3", 0.9, link_score=0.2)))
    assert {"shark:inherited", "shark:neighbourhood"} <= set(names)
    assert s.score("http://b.test/", meta()) > p  # seeds first


def test_bfs_is_fifo_by_discovery_across_hosts_even_when_the_frontier_renumbers():
    """Through a real Frontier: hosts interleaved, all ready, entries popped in discovery order. A
    URL put back (as after its host's robots.txt: a new sequence number) keeps its place, and so
    does a whole frontier re-scored (new sequence numbers, host by host)."""
    s = BreadthFirstStrategy()
    frontier = Frontier()
    urls = [f"http://h{i % 3}.test/page-{i}" for i in range(12)]
    for url in urls:
        frontier.push(host_key(url), Entry(s.score(url, meta("http://x.test/", 0.5)), url))
    host, first = frontier.pop(0.0)
    assert first.url == urls[0]
    frontier.requeue(host, first)  # e.g. its robots.txt is fetched first
    frontier.release(host, 0.0)
    frontier.version += 1
    assert frontier.rescore_stale(s.rescore, limit=100) == 12
    order = []
    while (popped := frontier.pop(0.0, rescore=s.rescore)) is not None:
        order.append(popped[1].url)
        frontier.release(popped[0], 0.0)
    assert order == urls


def test_learned_is_the_learner_itself():
    learner = LinkRewardLearner()
    s = LearnedStrategy(learner)
    m = meta("http://a.test/", 0.4, link_score=0.3)
    features = link_features(link_context("http://a.test/x", m))
    assert s.score("http://a.test/x", m, learner.vectorise(features)) == learner.score(
        features, "http://a.test/x", "http://a.test/")
    assert s.explain("http://a.test/x", m) == learner.explain(features, "http://a.test/x", "http://a.test/")
    assert not s.refound("http://a.test/x", m) and not s.settle() and s.version == learner.version
    learner.version += 1
    assert s.version == learner.version


def test_the_setting_is_checked():
    assert FocusConfig().strategy == "learned"
    assert FocusConfig.from_settings({"FOCUS_STRATEGY": "shark"}).strategy == "shark"
    with pytest.raises(ConfigError, match="FOCUS_STRATEGY"):
        FocusConfig.from_settings({"FOCUS_STRATEGY": "best"})


# --- in the scheduler --------------------------------------------------------------------------

def link(url: str, parent: str | None, parent_score: float | None, spider, link_score: float | None = None):
    return Request(url, callback=spider.parse, meta=meta(parent, parent_score, link_score))


def test_the_default_learned_strategy_gives_exactly_the_learners_priorities_and_explanations():
    scheduler = make_scheduler()
    assert isinstance(scheduler.strategy, LearnedStrategy) and scheduler.strategy.learner is scheduler.learner
    learner = scheduler.learner
    requests = link_requests(scheduler.spider, 90)
    for request in requests:
        scheduler.enqueue_request(request)
    expected = {}
    for request in requests:
        canonical = canonicalize(request.url)
        features = link_features(link_context(canonical, request.meta))
        expected[canonical] = learner.score(learner.vectorise(features), canonical, link_parent(request.meta))
    queued = {e.url: e.priority for _, e in scheduler.frontier.entries()}
    assert queued == expected  # exactly: the same floats
    for request in release_all(scheduler):
        canonical = canonicalize(request.url)
        assert request.meta["focus_priority"] == round(expected[canonical], 4)
        assert request.meta["focus_explain"] == learner.explain(
            link_features(link_context(canonical, request.meta)), canonical, link_parent(request.meta))


def test_bfs_releases_requests_in_discovery_order():
    scheduler = make_scheduler(FOCUS_STRATEGY="bfs")
    spider = scheduler.spider
    first = [link(f"http://h{i % 3}.test/a{i}", f"http://h{i % 3}.test/", (9 - i) / 10, spider) for i in range(6)]
    for request in first:
        assert scheduler.enqueue_request(request)
    released = [scheduler.next_request()]
    # found while h0.test is busy (its first request in flight): queued behind what came before
    later = [link(f"http://h{i % 3}.test/b{i}", "http://h0.test/a0", 1.0, spider) for i in range(6)]
    for request in later:
        assert scheduler.enqueue_request(request)
    free(scheduler, released[0])
    released += release_all(scheduler)
    assert [r.url for r in released] == [r.url for r in first + later]
    assert all("learn" not in name and not name.startswith(("a:", "u:", "c:"))
               for r in released for name, _ in r.meta["focus_explain"])


def test_bestfirst_in_the_scheduler_raises_a_queued_url_found_again_on_a_better_page():
    scheduler = make_scheduler(FOCUS_STRATEGY="bestfirst")
    spider = scheduler.spider
    for url, score in [("http://a.test/low", 0.2), ("http://a.test/mid", 0.5), ("http://b.test/other", 0.4)]:
        assert scheduler.enqueue_request(link(url, "http://a.test/", score, spider))
    # found again on a better page: admission refuses it as seen, the strategy raises it
    assert not scheduler.enqueue_request(link("http://a.test/low", "http://b.test/hub", 0.95, spider))
    assert scheduler.stats.get_value("focus/strategy/raised") == 1
    released = release_all(scheduler)
    assert [r.url for r in released] == ["http://a.test/low", "http://a.test/mid", "http://b.test/other"]
    assert released[0].meta["focus_priority"] == pytest.approx(0.95, abs=1e-4)
    assert released[0].meta["focus_explain"][0] == ("bestfirst:best_parent_score", 0.95)


def test_shark_in_the_scheduler_queues_by_its_potential_score():
    scheduler = make_scheduler(FOCUS_STRATEGY="shark")
    spider = scheduler.spider
    scheduler.enqueue_request(Request("http://a.test/", callback=spider.parse, meta=meta()))
    seed = scheduler.next_request()
    free(scheduler, seed)
    scheduler.enqueue_request(link("http://a.test/weak", "http://a.test/", 0.1, spider, link_score=0.1))
    scheduler.enqueue_request(link("http://a.test/strong", "http://a.test/", 0.1, spider, link_score=0.9))
    released = release_all(scheduler)
    assert [r.url for r in released] == ["http://a.test/strong", "http://a.test/weak"]
    assert released[0].meta["focus_priority"] == pytest.approx(shark_value(SHARK_DELTA, 0.9), abs=1e-4)


def test_a_classic_strategy_resumes_with_what_it_knew(tmp_path, caplog):
    """A JOBDIR crawl with a classic strategy checkpoints the strategy's state (each URL's best
    value so far and its discovery order): resumed, a URL raised by a better page before the kill
    keeps its rank. Resumed with another strategy, the new one starts afresh, and says so."""
    jobdir = str(tmp_path / "job")
    scheduler = make_scheduler(FOCUS_STRATEGY="bestfirst", JOBDIR=jobdir)
    spider = scheduler.spider
    for url, score in [("http://a.test/low", 0.2), ("http://a.test/mid", 0.5)]:
        assert scheduler.enqueue_request(link(url, "http://a.test/", score, spider))
    assert not scheduler.enqueue_request(link("http://a.test/low", "http://b.test/hub", 0.95, spider))
    scheduler.backend.persistence.checkpoint(scheduler.learner, scheduler.released, scheduler.strategy)
    scheduler.backend.persistence.job.flush()

    resumed = opened(JOBDIR=jobdir, FOCUS_STRATEGY="bestfirst")
    try:
        assert isinstance(resumed.strategy, BestFirstStrategy)
        assert resumed.strategy.priority("http://a.test/low") == pytest.approx(0.95, abs=1e-4)
        assert [r.url for r in release_all(resumed)] == ["http://a.test/low", "http://a.test/mid"]
    finally:
        resumed.close("finished")
    other = opened(JOBDIR=jobdir, FOCUS_STRATEGY="bfs")
    try:
        assert isinstance(other.strategy, BreadthFirstStrategy)
        assert "crawled with FOCUS_STRATEGY=bestfirst" in caplog.text
    finally:
        other.close("finished")
