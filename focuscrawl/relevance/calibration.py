"""Calibrating a classifier trained on positive and unlabelled pages (Elkan & Noto, 2008).

A user who picked a few on-topic pages from some sites has the sites' other pages too: pages she
did not pick, most of them off topic, some (a tenth, on the documentation webs) on topic. Training
the picked pages against them teaches the classifier what tells the topic from its sites, but it
learns P(picked | page), not P(on topic | page): an on-topic page nobody picked looks, to it, like
a page that was not picked, and its scores are far below even odds.

Elkan and Noto ("Learning classifiers from only positive and unlabeled data", KDD 2008) show that
when the picked pages are a random sample of the on-topic ones, the two differ by a constant:
with g(x) = P(picked | x), c = P(picked | on topic) = E[g(x) | x on topic], and
P(on topic | x) = g(x) / c. c is estimated as the mean of g over on-topic pages the classifier did
not see: here each picked page scored by a model trained without it (cross-validation over the
picked pages). A page is as likely on topic as not when g(x) = c / 2.

The topic model is trained class-balanced (``model.build_pipeline``), as if half of all pages
were picked, so its score is g's odds times (not picked / picked): ``unbalanced`` undoes that
before c is taken, and ``even_odds_logit`` says where c / 2 falls on the model's own scale, so
the model can be shifted to score 0.5 there (an intercept moved, the classifier otherwise as
trained: P(on topic) is exact at even odds, where the crawl decides, and a logistic curve through
it elsewhere).

scikit-learn's ``CalibratedClassifierCV`` fits a score to known labels, which unlabelled pages
are not; ``pulearn`` (BSD) implements the method for numeric feature matrices, estimating c on
one random hold-out of a tenth of all rows (one of ten picked pages, when there are ten), so the
few lines are written here.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold

#: at most this many folds over the picked pages: each held out once, ten pages one at a time
MAX_FOLDS = 10
#: c below this is no calibration (the held-out pages score as nothing does): refused
MIN_PROPENSITY = 1e-4
_EPS = 1e-9


def _logit(p: float) -> float:
    p = min(max(float(p), _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


def unbalanced(p_balanced, n_positive: int, n_negative: int):
    """A class-balanced classifier's probability as the unweighted one's: balancing weighs each
    positive ``n_negative / n_positive`` times each negative, which multiplies the odds by that
    ratio (exactly for the intercept of a logistic regression)."""
    p = np.clip(np.asarray(p_balanced, dtype=float), _EPS, 1.0 - _EPS)
    odds = p / (1.0 - p) * (n_positive / n_negative)
    return odds / (1.0 + odds)


def labelling_propensity(held_out_scores) -> float:
    """c = P(picked | on topic): the mean of g (``unbalanced``) over picked pages each scored by a
    model that did not see them (Elkan & Noto's e1 estimator)."""
    scores = np.asarray(held_out_scores, dtype=float)
    if scores.size == 0:
        raise ValueError("no held-out positive score to estimate c from")
    return float(min(max(scores.mean(), 0.0), 1.0))


def even_odds_logit(c: float, n_positive: int, n_negative: int) -> float:
    """The log-odds, on a class-balanced classifier's scale, at which g(x) = c / 2, i.e.
    P(on topic | x) = g(x) / c = 1/2."""
    return _logit(c / 2.0) + math.log(n_negative / n_positive)


def calibrated(p_balanced, c: float, n_positive: int, n_negative: int):
    """P(on topic | x) = min(1, g(x) / c) for a class-balanced classifier's probabilities."""
    return np.minimum(1.0, unbalanced(p_balanced, n_positive, n_negative) / c)


def held_out_positive_scores(estimator, docs: list, y, folds: int = MAX_FOLDS, random_state: int = 0) -> np.ndarray:
    """Each positive of ``docs`` (``y`` 1) scored, as g (the unweighted scale, ``unbalanced``, with
    that fit's own counts), by a clone of ``estimator`` (class-balanced, ``predict_proba``) fitted
    on the other folds. The folds are stratified over every document, ``min(folds, positives)`` of
    them (ten positives: one in each), so each fit sees the positives and the rest in the same
    proportion as the model trained on all: held out of the positives alone, the picked pages'
    share would shrink and c with it (Elkan & Noto hold out a random part of all the data)."""
    y = np.asarray(y, dtype=int)
    positives = np.flatnonzero(y == 1)
    k = min(int(folds), positives.size, int((y == 0).sum()))
    if k < 2:
        raise ValueError("estimating c needs at least two positives and two other documents")
    scores = np.full(y.size, np.nan)
    for train, held in StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state).split(np.zeros(y.size), y):
        held = held[y[held] == 1]
        fitted = clone(estimator).fit([docs[i] for i in train], y[train])
        p = fitted.predict_proba([docs[i] for i in held])[:, 1]
        n_pos = int(y[train].sum())
        scores[held] = unbalanced(p, n_pos, train.size - n_pos)
    return scores[positives]
