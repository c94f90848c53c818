"""The link-reward learner: it learns which links lead to relevant pages, and credits hubs."""
import pytest

from scrapy.settings import Settings

from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.learning import LinkContext, LinkRewardLearner, OnlineLinearRegressor, link_features


def feats(url, anchor, parent_score=0.5, parent="http://a.test/"):
    return link_features(LinkContext(url, anchor, "", parent, parent_score, 2))  # not a seed's link


def test_regressor_fit_moves_predictions_toward_targets():
    model = OnlineLinearRegressor(bits=12)
    x_pos, x_neg = [("w:comet", 1.0), ("bias", 1.0)], [("w:soup", 1.0), ("bias", 1.0)]
    v_pos, v_neg = model.vectorise(x_pos), model.vectorise(x_neg)
    for _ in range(50):
        model.fit_vector(v_pos, 1.0)
        model.fit_vector(v_neg, 0.0)
    assert model.predict_vector(v_pos) > 0.8
    assert model.predict_vector(v_neg) < 0.2
    top = max(model.contributions(x_pos), key=lambda kv: kv[1])
    assert top[0] == "w:comet"


def test_rewarded_links_outrank_punished_links():
    learner = LinkRewardLearner(exploration=0.0)
    good, bad = feats("http://a.test/astro/c.html", "comet watch"), feats("http://a.test/cook/s.html", "soup recipes")
    assert learner.score(good, "http://a.test/astro/c.html") == learner.score(bad, "http://a.test/cook/s.html")
    for i in range(15):
        learner.observe(f"http://a.test/astro/{i}.html", "http://a.test/", good, 0.95, True)
        learner.observe(f"http://a.test/cook/{i}.html", "http://a.test/", bad, 0.0, False)
    fresh_good = feats("http://b.test/astro/new.html", "comet photos")
    fresh_bad = feats("http://b.test/cook/new.html", "soup bowls")
    assert learner.score(fresh_good, "http://b.test/astro/new.html") > learner.score(fresh_bad, "http://b.test/cook/new.html") + 0.2
    assert learner.hosts["a.test"].fetched == 30 and learner.hosts["a.test"].relevant == 15


def test_credit_flows_back_to_the_hub_that_led_to_relevant_pages():
    learner = LinkRewardLearner(exploration=0.0, credit_decay=0.5)
    hub_link = feats("http://a.test/links.html", "useful links")
    learner.observe("http://a.test/links.html", "http://a.test/", hub_link, 0.1, False)
    hub = learner.nodes["http://a.test/links.html"]
    before = hub.value(0.5)
    learner.observe("http://a.test/astro/1.html", "http://a.test/links.html", feats("http://a.test/astro/1.html", "x"), 1.0, True)
    assert hub.children_value == 1.0 and hub.value(0.5) == pytest.approx(before + 0.5)
    # an irrelevant or wasted child does not lower what the hub has shown it can lead to
    learner.observe("http://a.test/cook/1.html", "http://a.test/links.html", feats("http://a.test/cook/1.html", "y"), 0.0, False)
    learner.observe("http://a.test/gone.html", "http://a.test/links.html", feats("http://a.test/gone.html", "y"), -0.2, False, True)
    assert hub.children_value == 1.0
    # a hub that leads to more relevant pages is worth more, up to the hub cap
    for i in range(2, 10):
        learner.observe(f"http://a.test/astro/{i}.html", "http://a.test/links.html", feats(f"http://a.test/astro/{i}.html", "x"),
                        1.0, True)
    assert hub.children_value == 9.0 and hub.value(0.5) == pytest.approx(0.1 + 0.5 * DEFAULTS.hub_cap)
    # credit goes further up: the page that linked to the hub gains too
    assert learner.nodes.get("http://a.test/") is None  # never fetched: nothing to credit
    # a child found to be a duplicate later takes its contribution back
    learner.mark_wasted("http://a.test/astro/9.html")
    assert hub.children_value == 8.0


def test_with_a_link_model_the_links_score_counts_more_than_its_parents():
    """A link model scores the link itself; the parent's relevance mostly vouches for its own
    sub-pages. Without a link model the two start level (the old balance), and a learner that has
    learned keeps its weights when told afterwards."""
    def link(link_score, parent_score):
        return link_features(LinkContext("http://a.test/x.html", "", "", "http://a.test/", parent_score, 2,
                                         link_score=link_score))

    vouched_by_link, vouched_by_parent = link(0.9, 0.1), link(0.1, 0.9)
    learner = LinkRewardLearner(exploration=0.0)
    assert learner.score(vouched_by_link, "http://a.test/x.html") > learner.score(vouched_by_parent, "http://a.test/x.html")
    without = LinkRewardLearner(exploration=0.0, link_model=False)
    assert without.score(vouched_by_link, "http://a.test/x.html") == pytest.approx(
        without.score(vouched_by_parent, "http://a.test/x.html"))
    learner.use_link_model(False)  # told before learning: starts as without
    assert learner.model.coef_.tolist() == without.model.coef_.tolist()
    learner.use_link_model(True)
    learner.observe("http://a.test/x.html", "http://a.test/", vouched_by_link, 1.0, True)
    learned = learner.model.coef_.copy()
    learner.use_link_model(False)
    assert (learner.model.coef_ == learned).all()


def test_exploration_bonus_shrinks_with_evidence():
    learner = LinkRewardLearner(exploration=0.4)
    fresh = learner.bonus("http://new.test/a/x.html", "http://new.test/list.html")
    for i in range(20):
        learner.observe(f"http://old.test/a/{i}.html", "http://old.test/list.html", None, 0.0, False)
    assert learner.bonus("http://old.test/a/y.html", "http://old.test/list.html") < fresh / 3
    # an unseen host keeps most of its bonus (one new host seen so far: little pooled evidence)
    assert (learner.bonus("http://new.test/a/x.html", "http://new.test/list.html")
            > 2 * learner.bonus("http://old.test/a/y.html", "http://old.test/list.html"))


def test_a_page_none_of_whose_links_was_tried_gets_its_links_a_bonus():
    """The page a link was found on is a place too: on one host and prefix, a link from a list
    whose links were tried keeps less of its bonus than one from a list never tried, and the gap
    grows with the tries."""
    learner = LinkRewardLearner(exploration=0.3)
    for i in range(30):
        learner.observe(f"http://a.test/people/{i}.html", "http://a.test/other.html", None, 0.0, False)
    gaps = []
    for i in range(6):
        learner.observe(f"http://a.test/people/l{i}.html", "http://a.test/list.html", None, 0.0, False)
        gaps.append(learner.bonus("http://a.test/people/x.html", "http://a.test/other-list.html")
                    - learner.bonus("http://a.test/people/y.html", "http://a.test/list.html"))
    assert 0 < gaps[0] < gaps[-1] < 0.3
    items = [(learner.vectorise([("bias", 1.0)]), "http://a.test/people/y.html", parent)
             for parent in ("http://a.test/list.html", "http://a.test/other-list.html", None)]
    assert learner.score_many(items) == pytest.approx([learner.score(*item) for item in items], abs=1e-12)


def test_version_moves_as_the_learner_learns():
    learner = LinkRewardLearner(version_every=4)
    for i in range(8):
        learner.observe(f"http://a.test/{i}", None, None, 0.0, False)
    assert learner.version == 2


def test_explain_names_the_strongest_features():
    learner = LinkRewardLearner(exploration=0.0)
    f = feats("http://a.test/astro/c.html", "comet", parent_score=0.9)
    names = [name for name, _ in learner.explain(f, "http://a.test/astro/c.html")]
    assert names[0] == "parent_score"


def test_a_duplicate_found_later_counts_as_waste():
    learner = LinkRewardLearner(exploration=0.0)
    f = feats("http://a.test/print/1.html", "printable")
    learner.observe("http://a.test/print/1.html", "http://a.test/", f, 1.0, True)
    before = learner.score(f, "http://a.test/print/2.html", "http://a.test/")
    learner.mark_wasted("http://a.test/print/1.html")  # counted as a hit when observed: no longer
    assert learner.hosts["a.test"].relevant == 0 and learner.hosts["a.test"].wasted == 1
    assert learner.score(f, "http://a.test/print/2.html", "http://a.test/") < before
    # a page that was no hit takes no hit back
    learner.observe("http://a.test/print/3.html", "http://a.test/", f, 1.0, True)
    learner.observe("http://a.test/print/4.html", "http://a.test/", f, 0.2, False)
    learner.mark_wasted("http://a.test/print/4.html")
    assert learner.hosts["a.test"].relevant == 1 and learner.hosts["a.test"].wasted == 2


def test_an_unseen_host_is_judged_by_how_new_hosts_have_paid_off():
    """Empirical-Bayes prior of the host bandit: where links to new hosts are dead (404s), a host
    never fetched is expected to be dead too; where new hosts held relevant pages, it is hopeful."""
    def after(outcome):
        learner = LinkRewardLearner()
        for i in range(30):
            learner.observe(f"http://h{i}.example/", None, None, *outcome)
        return learner.score(feats("http://never.example/x.html", "pictures"), "http://never.example/x.html")
    fresh = LinkRewardLearner().score(feats("http://never.example/x.html", "pictures"), "http://never.example/x.html")
    dead, answered, fruitful = after((-0.2, False, True)), after((0.0, False)), after((1.0, True))
    assert dead < answered < fruitful
    assert dead < fresh - 0.1
    # a host already fetched keeps its own evidence
    learner = LinkRewardLearner()
    learner.observe("http://seen.example/", None, None, 1.0, True)
    for i in range(30):
        learner.observe(f"http://h{i}.example/", None, None, -0.2, False, True)
    assert learner.hosts["seen.example"].rate() > 0.3


def test_score_many_equals_score_one_by_one():
    """The frontier re-scores in batches: the vectorised path must give the same priorities."""
    import numpy as np

    learner = LinkRewardLearner()
    items = []
    for i in range(60):
        url, parent = f"http://h{i % 7}.test/p{i % 3}/x{i}.html", f"http://h{i % 5}.test/"
        features = feats(url, ["cs 101", "research", "home"][i % 3], parent_score=(i % 10) / 10, parent=parent)
        items.append((learner.vectorise(features) if i % 2 else features, url, parent))
        learner.observe(url, parent, features, [1.0, 0.0, -0.2][i % 3], i % 3 == 0, i % 3 == 2)
    items.append(((np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)), "http://z.test/a", None))
    assert learner.score_many(items) == pytest.approx([learner.score(*item) for item in items], abs=1e-12)
    assert learner.score_many([]) == []


def test_a_bad_link_evidence_weight_is_refused_before_the_crawl():
    assert FocusConfig.from_settings(Settings({"FOCUS_LINK_EVIDENCE": "0"})).link_evidence == 0  # the page alone
    with pytest.raises(ConfigError, match="FOCUS_LINK_EVIDENCE must be at least 0"):
        FocusConfig.from_settings(Settings({"FOCUS_LINK_EVIDENCE": "-1"}))
    with pytest.raises(ConfigError, match="FOCUS_LINK_EVIDENCE must be a number"):
        FocusConfig.from_settings(Settings({"FOCUS_LINK_EVIDENCE": "strong"}))


def test_hub_cap_is_a_setting():
    assert FocusConfig.from_settings(Settings({"FOCUS_HUB_CAP": "4"})).hub_cap == 4.0
    assert LinkRewardLearner().hub_cap == DEFAULTS.hub_cap == FocusConfig.from_settings(Settings()).hub_cap
    with pytest.raises(ConfigError, match="FOCUS_HUB_CAP must be at least 0"):
        FocusConfig.from_settings(Settings({"FOCUS_HUB_CAP": "-1"}))
    learner = LinkRewardLearner(hub_cap=0.0)  # 0: only a page's own reward counts
    learner.observe("http://a.test/hub.html", None, feats("http://a.test/hub.html", "x"), 0.1, False)
    learner.observe("http://a.test/1.html", "http://a.test/hub.html", feats("http://a.test/1.html", "x"), 1.0, True)
    assert learner.nodes["http://a.test/hub.html"].value(0.5, learner.hub_cap) == pytest.approx(0.1)


def test_learning_rate_is_a_setting_and_sets_the_step_of_a_first_update():
    assert LinkRewardLearner().model.learning_rate == DEFAULTS.learning_rate
    assert FocusConfig.from_settings(Settings({"FOCUS_LEARNING_RATE": "0.2"})).learning_rate == 0.2
    with pytest.raises(ConfigError, match="FOCUS_LEARNING_RATE must be a number"):
        FocusConfig.from_settings(Settings({"FOCUS_LEARNING_RATE": "fast"}))
    # AdaGrad: a word's first update moves its weight by less than the step, in proportion to it
    weights = []
    for rate in (0.05, 0.2):
        learner = LinkRewardLearner(exploration=0.0, learning_rate=rate)
        learner.observe("http://a.test/x.html", "http://a.test/", feats("http://a.test/x.html", "zyzzyva"), -0.2, False,
                        True)
        weights.append(learner.model.coef_[learner.model.index("a:zyzzyva")])
        assert -rate < weights[-1] < 0
    assert weights[1] == pytest.approx(4 * weights[0])


def test_links_on_a_seed_page_start_above_the_same_links_deeper():
    learner = LinkRewardLearner(exploration=0.0)
    on_seed = link_features(LinkContext("http://a.test/courses.html", "courses", "", "http://a.test/", 0.1, 1))
    deeper = link_features(LinkContext("http://a.test/courses.html", "courses", "", "http://a.test/", 0.1, 3))
    url = "http://a.test/courses.html"
    assert learner.score(on_seed, url, "http://a.test/") > learner.score(deeper, url, "http://a.test/") + 0.4


def test_a_found_pages_parts_are_a_feature_whose_start_the_topic_model_sets():
    """``part_of_hit``: a link from a page the learner counted as found (hops 0) into that page's
    own directory. Its starting weight comes from the topic model (measured on its training web:
    a course's homework is no course page, a section's articles are on its topic)."""
    def names(url, parent, hops):
        return {name for name, _ in link_features(LinkContext(url, "", "", parent, 0.9, 2, hops, 0.5))}

    course = "http://cs.test/cs537/index.html"
    assert "part_of_hit" in names("http://cs.test/cs537/hw1.html", course, 0)
    assert "part_of_hit" not in names("http://cs.test/cs537/hw1.html", course, 1)  # parent not found
    assert "part_of_hit" not in names("http://cs.test/people/ann.html", course, 0)  # not below it
    assert "part_of_hit" not in names("http://other.test/cs537/hw1.html", course, 0)
    part = link_features(LinkContext("http://cs.test/cs537/hw1.html", "", "", course, 0.9, 2, 0, 0.5))
    plain = LinkRewardLearner(exploration=0.0)
    told = LinkRewardLearner(exploration=0.0)
    told.use_link_model(True, {"part_of_hit": -0.3})
    assert told.score(part, "http://cs.test/cs537/hw1.html") == pytest.approx(
        plain.score(part, "http://cs.test/cs537/hw1.html") - 0.3, abs=1e-6)
    told.observe("http://cs.test/cs537/hw1.html", course, part, 0.0, False)
    learned = told.model.coef_.copy()
    told.use_link_model(True, {"part_of_hit": 0.5})  # a learner that has learned keeps its weights
    assert (told.model.coef_ == learned).all()
