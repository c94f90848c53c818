"""Learners shared through their deltas (focuscrawl.learning.delta), with no Redis in between: what a
shared crawl's learner sync sends and applies, driven by hand."""

import pickle

import numpy as np

from focuscrawl.learning import LinkRewardLearner
from focuscrawl.learning.delta import values

from tests.learners import feed, learner, pages

def shared(target: LinkRewardLearner) -> dict:
    return {"counts": {name: {key: values(s) for key, s in getattr(target, name).items()}
                       for name in ("hosts", "prefixes", "children")},
            "new_hosts": values(target.new_hosts), "links": round(target.words.links, 9),
            "positive_links": round(target.words.positive_links, 9)}


def test_two_learners_that_swap_their_deltas_count_what_one_fed_every_page_counts():
    """Each fetches its own hosts (a host both fetch first counts as new for each: see
    distributed.learner_sync)."""
    a, b, one = learner(), learner(), learner()
    a.track_changes()
    b.track_changes()
    feed(a, pages(1, 60, range(4)))
    feed(b, pages(2, 60, range(4, 8)))
    feed(one, pages(1, 60, range(4)) + pages(2, 60, range(4, 8)))
    from_a, from_b = a.changes.take(), b.changes.take()
    assert from_a.observations == from_b.observations == 60
    a.changes.merge(from_b)
    b.changes.merge(from_a)
    assert shared(a) == shared(b) == shared(one)
    np.testing.assert_allclose(a.model.coef_, b.model.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(a.words.total, one.words.total, atol=1e-4)
    # what was merged is not sent back: nothing changed since
    assert a.changes.take() is None and b.changes.take() is None


def test_a_learner_takes_anothers_state_over():
    a, late = learner(), learner()
    a.track_changes()
    feed(a, pages(3, 80, range(4)))
    late.track_changes()
    version = late.version
    late.changes.replace(a.changes.state())
    assert shared(late) == shared(a) and late.version == version + 1
    np.testing.assert_allclose(late.model.coef_, a.model.coef_, rtol=0, atol=1e-12)
    np.testing.assert_allclose(late.model.squared_gradients, a.model.squared_gradients, rtol=1e-6)
    assert (late.words.is_word == a.words.is_word).all()
    assert late.changes.take() is None  # taken over, not learned: nothing to send


def test_a_page_taken_back_as_waste_travels_as_a_negative_count():
    a, b = learner(), learner()
    a.track_changes()
    b.track_changes()
    url = "http://h1.test/course/1.html"
    a.observe(url, None, [("bias", 1.0)], 1.0, True)
    b.changes.merge(a.changes.take())
    a.mark_wasted(url)  # a near-duplicate after all
    b.changes.merge(a.changes.take())
    assert values(b.hosts["h1.test"]) == values(a.hosts["h1.test"]) == (1, 0, 1)


def test_a_tracked_learner_pickles_without_its_change_log():
    a = learner()
    a.track_changes()
    feed(a, pages(4, 10, range(4)))
    restored = pickle.loads(pickle.dumps(a))
    assert a.changes is not None and restored.changes is None
    assert shared(restored) == shared(a)
