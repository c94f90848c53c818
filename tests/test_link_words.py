"""The link model the crawl learns from its own links: naive Bayes over a link's words, with the
link's prior score as the prior odds."""
import pickle

import numpy as np
import pytest

from focuscrawl.learning import LinkContext, LinkRewardLearner, link_features
from focuscrawl.learning.link_words import MAX_SHIFT, LinkWordCounts


def person_link(url, anchor, link_score=0.1):
    return link_features(LinkContext(url, anchor, "", "http://a.test/people.html", 0.2, 2, hops_since_relevant=1,
                                     link_score=link_score))


def test_words_of_links_that_led_to_relevant_pages_lift_new_links_with_them():
    """A few dozen relevant pages reached by links whose words the topic model cannot read
    (a person's name, "~user") already change the order: a new link with those words goes above a
    link the topic model rates higher."""
    learner = LinkRewardLearner(exploration=0.0, link_model=False)
    for i in range(24):
        url = f"http://a.test/~prof{i}/"
        learner.observe(url, "http://a.test/people.html", person_link(url, f"Prof Person{i} (home)"), 1.0, True)
        other = f"http://a.test/news/{i}.html"
        learner.observe(other, "http://a.test/index.html", person_link(other, f"news item {i}", 0.3), 0.05, False)
    fresh = "http://b.test/~newprof/"
    plain = "http://b.test/events/today.html"
    lifted = learner.score(person_link(fresh, "Dr Someone (home)", 0.1), fresh)
    rated_higher = learner.score(person_link(plain, "events today", 0.3), plain)
    assert lifted > rated_higher
    # without any evidence the link's score alone decides: the learned part is zero
    fresh_learner = LinkRewardLearner(exploration=0.0, link_model=False)
    assert fresh_learner.score(person_link(fresh, "Dr Someone (home)", 0.1), fresh) < fresh_learner.score(
        person_link(plain, "events today", 0.3), plain)
    names = [name for name, _ in learner.explain(person_link(fresh, "Dr Someone (home)", 0.1), fresh, top=20)]
    assert "link words" in names


def test_batch_and_single_scores_agree_and_survive_pickling():
    learner = LinkRewardLearner(exploration=0.3, link_model=False)
    for i in range(10):
        url = f"http://a.test/c/{i}.html"
        learner.observe(url, "http://a.test/", person_link(url, "course cs%d" % i), 1.0 if i % 2 else 0.0, bool(i % 2))
    items = [(learner.vectorise(person_link(f"http://a.test/c/x{i}.html", "course syllabus")), f"http://a.test/c/x{i}.html",
              "http://a.test/") for i in range(5)]
    batch = learner.score_many(items)
    single = [learner.score(v, u, p) for v, u, p in items]
    assert batch == pytest.approx(single)
    restored = pickle.loads(pickle.dumps(learner))
    assert restored.score_many(items) == pytest.approx(batch)


def test_credit_moves_a_hubs_words_and_counts_stay_consistent():
    learner = LinkRewardLearner(exploration=0.0, link_model=False, credit_decay=0.5)
    hub = "http://a.test/list.html"
    learner.observe(hub, "http://a.test/", person_link(hub, "webs"), 0.0, False)
    total_before = learner.words.positive_links
    for i in range(3):
        url = f"http://a.test/course{i}.html"
        learner.observe(url, hub, person_link(url, f"cs{i}"), 1.0, True)
    # the hub's link is now counted with its value: a child's worth, capped at one link
    node = learner.nodes[hub]
    assert node.counted == pytest.approx(min(1.0, node.value(0.5, learner.hub_cap)))
    assert learner.words.positive_links == pytest.approx(total_before + 3 + node.counted)
    assert learner.words.links == 4


def test_shifts_are_bounded_and_zero_without_evidence():
    counts = LinkWordCounts(64)
    counts.mark_words([("a:x", 1.0), ("bias", 1.0), ("u:y", 1.0)], [1, 2, 3])
    vector = (np.array([1, 2, 3], dtype=np.int32), np.array([1.0, 1.0, 1.0], dtype=np.float32))
    assert counts.evidence(*vector).sum() == 0.0  # nothing counted yet
    assert counts.probabilities(np.array([0.3]), np.array([0.0]))[0] == pytest.approx(0.3)
    for _ in range(200):
        counts.add(vector, 1.0)
        counts.add((np.array([2], dtype=np.int32), np.array([1.0], dtype=np.float32)), 0.0)
    summed = counts.evidence(*vector).sum()
    assert summed > MAX_SHIFT
    bounded = 1.0 / (1.0 + np.exp(-MAX_SHIFT))  # even prior odds moved by MAX_SHIFT at most
    assert counts.probabilities(np.array([0.5]), np.array([summed]))[0] == pytest.approx(bounded)
    assert counts.positive[2] == 0  # "bias" is not a word: never counted


def test_with_a_link_model_the_crawl_keeps_its_scores_as_they_are():
    """A link model learned offline from a labelled web scores links; the crawl's few examples
    do not correct it (they made it worse), so its priorities are the learner's alone."""
    with_model = LinkRewardLearner(exploration=0.0, link_model=True)
    for i in range(24):
        url = f"http://a.test/~prof{i}/"
        with_model.observe(url, "http://a.test/people.html", person_link(url, f"Prof Person{i}"), 1.0, True)
    assert with_model.words.links == 0
    fresh = "http://b.test/~newprof/"
    names = [name for name, _ in with_model.explain(person_link(fresh, "Dr Someone"), fresh, top=30)]
    assert "link words" not in names
    told = LinkRewardLearner(exploration=0.0)
    told.use_link_model(False)  # the spider's model has none: the crawl learns its links' words
    assert told.learn_words


def test_the_scheduler_learns_its_links_words_when_the_spiders_model_has_no_link_model():
    """The crawl's topic model decides, when the spider opens: trained from example pages (no
    link model), the learner's online link model is on; with a link model, it is off."""
    from types import SimpleNamespace

    from tests.test_scheduler import LinkSpider, opened

    for link_pipeline, learns in ((None, True), (object(), False)):
        spider = LinkSpider()
        spider.model = SimpleNamespace(link_pipeline=link_pipeline, learner_priors={})
        scheduler = opened(spider)
        try:
            assert scheduler.learner.learn_words is learns
        finally:
            scheduler.close("finished")
