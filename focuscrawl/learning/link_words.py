"""Which words of a link lead to relevant pages, counted from the crawl's own links.

Trained from example pages alone, the crawl values a link by the topic model reading the link's
few words: a page classifier, not a link classifier. People's names, "(Personal)", ``~user`` or
``/courses/`` say little to it, and a link model learned offline from a labelled web is what made
the crawl strong. This module learns that link model online, from the links the crawl has
followed (as ACHE retrains its link classifier from the links that led to relevant pages):

- every fetched page labels the link that led to it by its value to the learner, a soft label in
  [0, 1]: 1 for a page counted as found, the value of what its children led to for a hub (the
  decayed credit of ``LinkRewardLearner``'s paths, as in Diligenti's context graphs), near 0 for
  waste; when credit later changes a page's value, its link's counts move by the difference;
- the counts are per word of the link (anchor, words around it, URL words: the learner's hashed
  ``a:``, ``c:`` and ``u:`` features), so they are kept in two arrays indexed like the learner's
  weights and read straight from the vectors the frontier stores: a queued link is re-scored from
  them without keeping its words;
- a link's probability is naive Bayes over its words, started from the link's prior score (the
  topic model's, or an offline link model's, reading of the link) as the prior odds. Naive Bayes
  learns from a handful of examples per word, which a gradient step per link does not: the first
  few dozen relevant pages move the words they share. Each word's evidence is smoothed toward "no
  evidence" by ``strength`` pseudo-links at the crawl's base rate, and the sum is bounded, since
  words of one link are not independent.
"""

from __future__ import annotations

import math

import numpy as np

from focuscrawl.learning.regressor import per_link

#: Feature-name prefixes of a link's words (``features.link_features``): anchor, context, URL.
WORD_PREFIXES = ("a:", "c:", "u:")
#: Pseudo-links of smoothing per word, at the base rate: a word seen on one relevant link out of
#: one moves the odds by about ``1 / strength`` of what a word seen on many would.
STRENGTH = 4.0
#: Bound on the log-odds the words of one link may add or take away (a factor of 20 in odds).
MAX_SHIFT = 3.0
#: Probabilities are kept off 0 and 1, where log-odds are infinite.
EDGE = 0.01


def logit(p: np.ndarray | float):
    p = np.clip(p, EDGE, 1.0 - EDGE)
    return np.log(p / (1.0 - p))


class LinkWordCounts:
    """Soft counts of relevant and other links per hashed word, and what they say about a link.

    ``size`` and the indices are the learner's hashed feature space; ``mark_words`` tells which
    indices are words (the rest of a link's features, such as its depth or its parent's score,
    are the learner's own business)."""

    def __init__(self, size: int, strength: float = STRENGTH, max_shift: float = MAX_SHIFT):
        self.strength = strength
        self.max_shift = max_shift
        self.is_word = np.zeros(size, dtype=bool)
        self.positive = np.zeros(size, dtype=np.float32)
        self.total = np.zeros(size, dtype=np.float32)
        self.links = 0.0  # links counted, and their positive mass
        self.positive_links = 0.0

    def mark_words(self, features, indices) -> None:
        """Note which of a link's hashed ``indices`` (one per named feature) are its words."""
        for (name, _), index in zip(features, indices):
            if name.startswith(WORD_PREFIXES):
                self.is_word[index] = True

    def add(self, vector, positive: float, links: float = 1.0) -> None:
        """Count a link (``links`` 1, or 0 to move only its label) with ``positive`` of its mass
        labelled relevant; negative amounts take counts back."""
        idx, val = vector
        words = self.is_word[idx]
        if words.any():
            np.add.at(self.positive, idx[words], positive * val[words])
            np.add.at(self.total, idx[words], links * val[words])
        self.links += links
        self.positive_links += positive

    def base_rate(self) -> float:
        return (self.positive_links + 1.0) / (self.links + 2.0)

    def evidence(self, idx: np.ndarray, val: np.ndarray) -> np.ndarray:
        """The log-odds each hashed feature (``idx``, weighted by ``val``) adds to its link's prior:
        a word's smoothed likelihood ratio, 0 for a feature that is not a word or a word never
        counted. A link's evidence is the sum over its features (``probabilities`` bounds it)."""
        if not len(idx) or not self.links:
            return np.zeros(len(idx))
        rate = self.base_rate()
        pos = self.positive[idx].astype(np.float64)
        neg = self.total[idx].astype(np.float64) - pos
        a = self.strength
        evidence = np.log((pos + a * rate) / (np.maximum(neg, 0.0) + a * (1.0 - rate))) - math.log(rate / (1.0 - rate))
        return evidence * (self.is_word[idx] * val)

    def probabilities(self, priors: np.ndarray, evidence: np.ndarray) -> np.ndarray:
        """Each link's probability of leading somewhere worthwhile: its prior with its words'
        summed evidence, bounded to ``max_shift`` (words of one link are not independent)."""
        shifts = np.clip(evidence, -self.max_shift, self.max_shift)
        return 1.0 / (1.0 + np.exp(-(logit(priors) + shifts)))

    def values(self, sizes, idx: np.ndarray, val: np.ndarray, score_index: int, weight: float) -> np.ndarray:
        """What the crawl has learned about each link's words: the link's score (the feature at
        ``score_index``: the topic model's or an offline link model's reading of the link) moved by
        the evidence of its words, at ``weight``, the learner's weight of the link's score. Link i's
        hashed features are the next ``sizes[i]`` of ``idx`` and ``val``."""
        if not len(idx) or not self.links:
            return np.zeros(len(sizes))
        is_score = idx == score_index
        has_score = per_link(sizes, is_score) > 0
        prior = per_link(sizes, np.where(is_score, val, 0.0))
        learned = self.probabilities(prior, per_link(sizes, self.evidence(idx, val)))
        return np.where(has_score, weight * (learned - prior), 0.0)

    def __getstate__(self):
        # most words are never seen: keep only the indices that were
        state = dict(self.__dict__)
        size = len(self.total)
        marked, counted = np.flatnonzero(self.is_word), np.flatnonzero(self.total)
        state["is_word"] = (size, marked)
        state["positive"] = (counted, self.positive[counted])
        state["total"] = (counted, self.total[counted])
        return state

    def __setstate__(self, state):
        size, marked = state.pop("is_word")
        counted, positive = state.pop("positive")
        _, total = state.pop("total")
        self.__dict__.update(state)
        self.is_word = np.zeros(size, dtype=bool)
        self.is_word[marked] = True
        self.positive = np.zeros(size, dtype=np.float32)
        self.total = np.zeros(size, dtype=np.float32)
        self.positive[counted], self.total[counted] = positive, total
