"""Calibrating a classifier trained on positive and unlabelled data (Elkan & Noto, 2008), on
synthetic data where the truth is known."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.special import expit, logit
from sklearn.linear_model import LogisticRegression

from focuscrawl.relevance import Example, TrainingError, train_topic_model
from focuscrawl.relevance.background import load_background
from focuscrawl.relevance.calibration import (
    calibrated,
    even_odds_logit,
    held_out_positive_scores,
    labelling_propensity,
    unbalanced,
)


def categories(c: float, n: int = 12000, seed: int = 0):
    """Pages of twelve kinds (one-hot, so a logistic regression can give each kind its own
    probability: the model is right for any truth): kinds 0-3 are on topic, 4-10 off topic, kind 11
    half and half; each on-topic page is labelled (picked) with probability ``c`` (Elkan & Noto's
    "selected completely at random"). Returns features, truth, labels and each kind's true
    P(on topic)."""
    rng = np.random.default_rng(seed)
    kind = rng.integers(0, 12, n)
    truth = np.where(kind < 4, 1, np.where(kind < 11, 0, (rng.random(n) < 0.5).astype(int)))
    s = ((truth == 1) & (rng.random(n) < c)).astype(int)
    x = np.eye(12)[kind]
    posterior = np.array([1.0] * 4 + [0.0] * 7 + [0.5])
    return x, truth, s, posterior


def balanced():
    return LogisticRegression(class_weight="balanced", C=1e6, max_iter=2000)


def test_undoing_the_balance_gives_the_unweighted_classifiers_probabilities():
    """Where P(s | x) is logistic (the model is right), balancing moves only the intercept, by the
    log of the classes' ratio."""
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 2.0, 8000).reshape(-1, 1)
    s = (rng.random(8000) < expit(2 * x[:, 0] - 3)).astype(int)
    n_l, n_u = int(s.sum()), int(len(s) - s.sum())
    weighted = balanced().fit(x, s).predict_proba(x)[:, 1]
    plain = LogisticRegression(C=1e6, max_iter=1000).fit(x, s).predict_proba(x)[:, 1]
    assert np.abs(unbalanced(weighted, n_l, n_u) - plain).max() < 0.01
    assert np.abs(weighted - plain).max() > 0.2  # balancing moved them a long way


@pytest.mark.parametrize("c_true", [0.1, 0.3, 0.6])
def test_the_held_out_positives_estimate_the_labelling_propensity(c_true):
    x, _, s, _ = categories(c_true, seed=1)
    scores = held_out_positive_scores(balanced(), list(x), s, folds=5)
    assert scores.shape == (int(s.sum()),)
    assert labelling_propensity(scores) == pytest.approx(c_true, abs=0.03)


def test_calibrated_probabilities_match_the_truth_and_even_odds_is_one_half():
    x, truth, s, posterior = categories(0.2, seed=2)
    n_l, n_u = int(s.sum()), int(len(s) - s.sum())
    model = balanced().fit(x, s)
    c = labelling_propensity(held_out_positive_scores(balanced(), list(x), s, folds=5))
    raw = model.predict_proba(np.eye(12))[:, 1]
    got = calibrated(raw, c, n_l, n_u)
    assert np.abs(got - posterior).max() < 0.1
    # read at 0.5, the classifier of picked pages counts no on-topic page it did not pick as found
    assert (unbalanced(raw, n_l, n_u) >= 0.5).sum() == 0
    assert list(got >= 0.5) == [True] * 4 + [False] * 7 + [got[11] >= 0.5]
    z = even_odds_logit(c, n_l, n_u)
    assert calibrated(expit([z]), c, n_l, n_u)[0] == pytest.approx(0.5, abs=1e-6)
    assert z == pytest.approx(logit(c / 2) + np.log(n_u / n_l))


def test_estimating_c_needs_two_positives_and_something_else():
    with pytest.raises(ValueError):
        held_out_positive_scores(balanced(), [[0.0], [1.0], [2.0]], [1, 1, 0])
    with pytest.raises(ValueError):
        held_out_positive_scores(balanced(), [[0.0], [1.0]], [1, 1])
    with pytest.raises(ValueError):
        labelling_propensity([])


# --- the topic model trained against unlabelled pages -------------------------------------------

TOPIC = "syllabus lecture homework exam assignment midterm grading textbook".split()
SITE = "university department computer science faculty staff news seminar".split()


def _page(words, rng, n=60):
    return " ".join(rng.choice(words) for _ in range(n))


def test_a_model_trained_against_unlabelled_pages_is_calibrated_and_says_how():
    """Ten on-topic pages against 60 pages of their sites, a sixth of them on topic: uncalibrated,
    the classifier would count none of the unpicked on-topic pages as found; calibrated, it counts
    them and not the site's other pages."""
    rng = random.Random(0)
    picked = [Example(f"http://u/c{i}", "course", _page(TOPIC + SITE, rng), "course") for i in range(10)]
    hidden = [Example(f"http://u/h{i}", "course", _page(TOPIC + SITE, rng), "site") for i in range(10)]
    others = [Example(f"http://u/s{i}", "news", _page(SITE, rng), "site") for i in range(50)]
    model, report = train_topic_model(picked, ["course"], cv_folds=5, unlabelled=hidden + others)
    unlabelled = report["off_topic"]["unlabelled"]
    assert report["off_topic"]["kind"] == "background" and unlabelled["pages"] == 60
    assert 0 < unlabelled["c"] < 1 and unlabelled["folds"] == 10 and unlabelled["held_out"] == 10
    assert "Elkan & Noto" in unlabelled["method"]
    assert report["examples_per_class"]["unlabelled"] == 60
    assert report["n_negative"] == len(load_background()) + 60
    assert report["cv"] is None and model.even_odds_score == 0.5
    new_topic = [model.score("course", _page(TOPIC + SITE, rng)) for _ in range(20)]
    new_site = [model.score("news", _page(SITE, rng)) for _ in range(20)]
    assert np.mean(np.array(new_topic) >= 0.5) >= 0.6
    assert np.mean(np.array(new_site) >= 0.5) <= 0.1
    # the model is the classifier with its even odds moved: ranks are the same
    raw = expit(logit(np.array(new_topic)) + unlabelled["even_odds_logit"])
    assert np.array_equal(np.argsort(raw), np.argsort(new_topic))


def test_unlabelled_pages_are_for_on_topic_examples_alone():
    rng = random.Random(1)
    examples = [Example(f"http://u/{i}", "t", _page(TOPIC, rng), "course" if i < 5 else "other") for i in range(10)]
    with pytest.raises(TrainingError, match="on-topic examples alone"):
        train_topic_model(examples, ["course"], cv_folds=0, unlabelled=examples[:2])
    one = [Example("http://u/1", "t", _page(TOPIC, rng), "course")]
    with pytest.raises(TrainingError, match="at least two"):
        train_topic_model(one, ["course"], cv_folds=0, unlabelled=examples[5:])
