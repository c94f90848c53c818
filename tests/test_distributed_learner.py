"""The shared learner: workers' learners merged through a Redis stream (a real redis-server)."""

import logging
import pickle
import random
import time

import numpy as np
import pytest
import redis
from redis.backoff import NoBackoff
from redis.commands.core import Script
from redis.retry import Retry

from focuscrawl.distributed import learner_sync
from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.learner_sync import LearnerSync
from focuscrawl.learning import LinkContext, LinkRewardLearner, link_features
from focuscrawl.learning import delta
from focuscrawl.learning.learner import _Yield

from tests.learners import WORDS, feed, learner, pages

def counts(target: LinkRewardLearner) -> dict:
    return {name: {key: (s.fetched, s.relevant, s.wasted) for key, s in getattr(target, name).items()}
            for name in ("hosts", "prefixes", "children")}


def assert_same_model(a: LinkRewardLearner, b: LinkRewardLearner) -> None:
    np.testing.assert_allclose(a.model.coef_, b.model.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.model.squared_gradients, b.model.squared_gradients, rtol=1e-6)
    assert counts(a) == counts(b)
    assert delta.values(a.new_hosts) == delta.values(b.new_hosts)
    np.testing.assert_allclose(a.words.positive, b.words.positive, atol=1e-4)
    np.testing.assert_allclose(a.words.total, b.words.total, atol=1e-4)
    assert (a.words.is_word == b.words.is_word).all()
    assert a.words.links == pytest.approx(b.words.links)
    assert a.words.positive_links == pytest.approx(b.words.positive_links)


class Counting:
    """A redis client that counts the calls made through it; ``lose_reply``: the next script call
    runs on the server and then fails as a lost reply would."""

    def __init__(self, client):
        self.client = client
        self.calls = 0
        self.lose_reply = False

    def register_script(self, script):
        return Script(self, script)

    def evalsha(self, *args):
        self.calls += 1
        reply = self.client.evalsha(*args)
        if self.lose_reply:
            self.lose_reply = False
            raise redis.exceptions.TimeoutError("Timeout reading from socket")
        return reply

    def __getattr__(self, name):
        attr = getattr(self.client, name)
        if not callable(attr):
            return attr

        def call(*args, **kwargs):
            self.calls += 1
            return attr(*args, **kwargs)
        return call


@pytest.fixture
def worker(redis_url):
    """``worker(name)``: a LearnerSync of one crawl on the test's Redis (a client of its own)."""
    clients = []

    def make(name: str, client=None) -> LearnerSync:
        if client is None:
            client = redis.Redis.from_url(redis_url)
            clients.append(client)
        return LearnerSync(client, Keys("test"), name)
    yield make
    for client in clients:
        client.close()


def test_two_workers_end_with_one_model(worker):
    """Each worker's learning reaches the other: the weights are the prior plus both workers'
    deltas, the yield and word counts what one learner fed every page holds."""
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    sync_a.sync(a)
    sync_b.sync(b)  # joins a's crawl: takes its (equal) starting state over
    prior = a.model.coef_.copy()
    pages_a, pages_b = pages(1, 300, range(0, 30)), pages(2, 300, range(20, 50))  # hosts 20-29 in both
    feed(a, pages_a)
    feed(b, pages_b)
    delta_a, delta_b = a.model.coef_ - prior, b.model.coef_ - prior
    new_hosts = a.new_hosts.fetched + b.new_hosts.fetched
    sync_a.sync(a)
    sync_b.sync(b)
    sync_a.sync(a)
    assert_same_model(a, b)
    np.testing.assert_allclose(a.model.coef_, prior + delta_a + delta_b, rtol=0, atol=1e-12)
    one = learner()
    feed(one, pages_a + pages_b)
    assert counts(a) == counts(one)
    assert a.hosts["h25.test"].fetched == one.hosts["h25.test"].fetched > 0  # a host both fetched
    np.testing.assert_allclose(a.words.positive, one.words.positive, atol=1e-4)
    np.testing.assert_allclose(a.words.total, one.words.total, atol=1e-4)
    assert a.words.links == one.words.links
    # a host new to both workers in the same period is new to each: the prior counts it twice
    assert a.new_hosts.fetched == new_hosts == one.new_hosts.fetched + 10
    assert a.observations == b.observations == 300  # each worker's own: its version cadence


def test_own_batches_are_not_applied_twice_and_version_moves_on_remote_learning(worker):
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    sync_a.sync(a)
    sync_b.sync(b)
    feed(a, pages(1, 50, range(5)))
    sync_a.sync(a)
    coef, version = a.model.coef_.copy(), a.version
    sync_a.sync(a)  # reads the stream past its own batch
    assert (a.model.coef_ == coef).all() and a.version == version
    assert sync_a.stats["batches_applied"] == 0
    version_b, observations_b = b.version, b.observations
    assert sync_b.maybe_sync(b, now=1e9)
    assert b.version == version_b + 1 and b.observations == observations_b  # another's pages re-score b's frontier
    assert sync_b.stats["observations_applied"] == 50
    assert not sync_b.maybe_sync(b, now=1e9 + sync_b.period)  # nothing new: the version stays
    assert b.version == version_b + 1
    assert_same_model(a, b)
    feed(a, pages(3, 10, range(5)))
    sync_a.close(a)  # a stops: what it learned since its last sync is pushed
    sync_b.sync(b)
    assert_same_model(a, b)


def test_a_sync_not_due_makes_no_redis_call(worker, redis_url):
    client = Counting(redis.Redis.from_url(redis_url))
    sync = worker("a", client)
    target = learner()
    assert not sync.maybe_sync(target, now=100.0)  # joins: the first call is due
    calls = client.calls
    assert calls > 0
    feed(target, pages(1, 20, range(3)))
    started = time.perf_counter()
    for step in range(10_000):
        sync.maybe_sync(target, now=100.0 + step * sync.period / 10_001)
    assert time.perf_counter() - started < 0.1
    assert client.calls == calls
    sync.maybe_sync(target, now=100.0 + sync.period)
    assert client.calls == calls + 1  # a sync is one round trip: push and pull in one script
    client.client.close()


def test_a_late_worker_catches_up_from_the_snapshot_and_the_stream(worker, redis_url, monkeypatch):
    monkeypatch.setattr(learner_sync, "SNAPSHOT_EVERY", 4)
    monkeypatch.setattr(learner_sync, "READ_CHUNK", 3)  # reads in several round trips
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    for round_ in range(8):
        feed(a, pages(10 + round_, 30, range(0, 12)))
        sync_a.sync(a)
        feed(b, pages(100 + round_, 30, range(6, 18)))
        sync_b.sync(b)
    for _ in range(3):
        sync_a.sync(a)
        sync_b.sync(b)
    assert_same_model(a, b)
    assert sync_a.stats["snapshots_written"] + sync_b.stats["snapshots_written"] >= 2
    with redis.Redis.from_url(redis_url) as client:
        assert client.xlen(Keys("test")("learner", "stream")) < 16  # the early batches were trimmed away
    c = learner()
    sync_c = worker("c")
    sync_c.sync(c)
    while sync_c.maybe_sync(c, now=0.0) or sync_c._due == float("-inf"):
        pass  # the tail after the snapshot, READ_CHUNK entries a call
    assert_same_model(a, c)
    assert c.observations == 0 and c.version > 0
    # and c's own learning reaches the others
    feed(c, pages(999, 40, range(30, 33)))
    sync_c.sync(c)
    sync_a.sync(a)
    sync_b.sync(b)
    assert a.hosts["h31.test"].fetched == c.hosts["h31.test"].fetched > 0
    assert_same_model(a, b)
    assert_same_model(a, c)


def test_a_worker_whose_place_was_trimmed_recovers_from_the_snapshot(worker, monkeypatch, caplog):
    monkeypatch.setattr(learner_sync, "SNAPSHOT_EVERY", 3)
    monkeypatch.setattr(learner_sync, "MAX_ENTRIES", 6)
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    sync_a.sync(a)
    sync_b.sync(b)
    pages_b = pages(50, 40, range(0, 10))
    feed(b, pages_b[:20])
    sync_b.sync(b)  # then b stalls while a goes on, far past the stream's length
    pages_a = [pages(60 + i, 15, range(5, 15)) for i in range(12)]
    for part in pages_a:
        feed(a, part)
        sync_a.sync(a)
    feed(b, pages_b[20:])  # learned while stalled, not pushed yet
    with caplog.at_level(logging.WARNING):
        sync_b.sync(b)
    assert "starting again from its snapshot" in caplog.text
    assert sync_b.stats["joins"] == 2
    sync_a.sync(a)
    assert_same_model(a, b)
    one = learner()
    feed(one, pages_b + [p for part in pages_a for p in part])
    assert counts(b) == counts(one)  # nothing lost, nothing counted twice


def test_a_failed_sync_is_retried_and_its_batch_applied_once(worker, redis_url, caplog):
    client = Counting(redis.Redis.from_url(redis_url))
    a, b = learner(), learner()
    sync_a, sync_b = worker("a", client), worker("b")
    sync_a.maybe_sync(a, now=0.0)
    sync_b.maybe_sync(b, now=0.0)
    feed(a, pages(1, 40, range(4)))
    client.lose_reply = True  # the batch reaches Redis, the reply does not
    with caplog.at_level(logging.WARNING):
        assert not sync_a.maybe_sync(a, now=10.0)
    assert "learner sync with Redis failed" in caplog.text and sync_a.stats["failed"] == 1
    assert sync_a.maybe_sync(a, now=10.0) is False  # not due: the retry waits a period
    sync_a.maybe_sync(a, now=10.0 + sync_a.period)  # sends the same batch again
    with redis.Redis.from_url(redis_url) as plain:
        assert plain.xlen(Keys("test")("learner", "stream")) == 2
    sync_b.maybe_sync(b, now=10.0)
    assert sync_b.stats["batches_applied"] == 1
    assert_same_model(a, b)
    client.client.close()


def test_redis_down_leaves_the_local_learner_learning(caplog):
    client = redis.Redis(port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0))  # nothing listens there
    sync = LearnerSync(client, Keys("test"), "a")
    target = learner()
    with caplog.at_level(logging.WARNING):
        assert not sync.maybe_sync(target, now=0.0)
    assert "learner sync with Redis failed" in caplog.text
    assert not sync.maybe_sync(target, now=sync.period / 2)  # not before the retry is due
    assert not sync.maybe_sync(target, now=sync.period)
    assert sync.stats["failed"] == 2 and sync._due == sync.period * 3  # failing again: waits twice as long
    feed(target, pages(1, 20, range(3)))
    assert target.observations == 20 and sum(s.fetched for s in target.hosts.values()) == 20


def test_the_first_worker_brings_what_it_learned_before_joining(worker):
    """No shared learner yet: the first worker's, learning and all, becomes the crawl's, and the
    places it had counted keep being shared."""
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    feed(a, pages(1, 40, range(3)))  # a resumed worker, say
    sync_a.sync(a)
    feed(a, pages(2, 40, range(3)))  # the same hosts again
    sync_a.sync(a)
    sync_b.sync(b)
    assert_same_model(a, b)
    one = learner()
    feed(one, pages(1, 40, range(3)) + pages(2, 40, range(3)))
    assert counts(b) == counts(one)


def test_a_word_count_that_moved_alone_reaches_the_others(worker, monkeypatch):
    """Word counts are compared where the weights moved; one that moved where no weight did (a
    link's label changed while its weight stood still) goes with the next full comparison."""
    monkeypatch.setattr(delta, "FULL_DIFF_EVERY", 3)
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    sync_a.sync(a)
    sync_b.sync(b)
    a.words.positive[12345] += 0.5
    a.words.total[12345] += 1.0
    sync_a.sync(a)
    sync_b.sync(b)
    assert b.words.total[12345] == 0.0
    for _ in range(2):
        sync_a.sync(a)
    sync_b.sync(b)
    assert b.words.positive[12345] == 0.5 and b.words.total[12345] == 1.0


def test_a_synced_learner_pickles_as_a_plain_one(worker):
    target = learner()
    sync = worker("a")
    sync.sync(target)
    feed(target, pages(1, 30, range(3)))
    sync.sync(target)
    feed(target, pages(2, 10, range(3)))  # places new since the last sync, not settled yet
    restored = pickle.loads(pickle.dumps(target))
    assert type(restored.hosts) is dict and type(restored.new_hosts) is _Yield
    assert {type(s) for s in restored.children.values()} == {_Yield}
    assert counts(restored) == counts(target)


def test_a_hub_is_credited_for_the_children_another_worker_fetched(worker):
    """Credit flows back along a path whose pages two workers fetched: a hub fetched by a, its
    sub-hub by b, their relevant children by a and b. After the syncs, every page of the path is
    valued as one learner that fetched them all values it, and the hub's link was trained by it."""
    a, b = learner(), learner()
    sync_a, sync_b = worker("a"), worker("b")
    sync_a.sync(a)
    sync_b.sync(b)
    rng = random.Random(7)

    def page(url, parent, relevant):
        feats = link_features(LinkContext(url, " ".join(rng.sample(WORDS, 2)), " ".join(rng.sample(WORDS, 4)),
                                          parent or "http://h.test/", 0.5, 2, link_score=0.5))
        return url, parent, feats, 1.0 if relevant else 0.1, relevant, False

    hub = page("http://h.test/courses/", "http://h.test/", False)
    sub = page("http://h.test/courses/ai/", hub[0], False)
    mine = [page(f"http://h.test/courses/{i}.html", hub[0], True) for i in range(3)]
    theirs = [page(f"http://h.test/courses/ai/{i}.html", sub[0], True) for i in range(4)]
    feed(a, [hub])
    sync_a.sync(a)
    sync_b.sync(b)
    feed(b, [sub])
    sync_b.sync(b)
    sync_a.sync(a)
    feed(a, mine)
    feed(b, theirs)  # b holds sub: credit for sub's children stays in b, sub's own goes to a
    assert a.nodes[hub[0]].children_value > 0  # a's own children of the hub
    before = a.nodes[hub[0]].children_value
    sync_b.sync(b)  # pushes what the hub is owed
    sync_a.sync(a)  # a holds the hub: applies it
    one = learner()
    feed(one, [hub, sub, *mine, *theirs])
    # twice: for the sub-hub's own worth, then for its children's
    assert sync_a.stats["credit_applied"] == 2 and sync_b.stats["credit_applied"] == 0
    assert a.nodes[hub[0]].children_value > before
    assert a.nodes[hub[0]].children_value == pytest.approx(one.nodes[hub[0]].children_value)
    assert b.nodes[sub[0]].children_value == pytest.approx(one.nodes[sub[0]].children_value)
    # the training the credit caused in a reaches b with a's next batch
    sync_a.sync(a)
    sync_b.sync(b)
    np.testing.assert_allclose(a.model.coef_, b.model.coef_, rtol=0, atol=1e-12)


def test_a_lone_learner_drops_credit_for_pages_it_does_not_hold():
    target = learner()
    target.observe("http://h.test/a.html", "http://h.test/gone/", None, 1.0, True)
    assert target.credit_elsewhere is None
    assert not target.credit("http://h.test/gone/", 1.0, 3)
