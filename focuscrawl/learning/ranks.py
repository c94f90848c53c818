"""Where a page's score ranks among the pages this crawl has scored: the scale the learner's reward
for a page not counted as found is read on.

A topic model is trained on other sites than the ones it crawls. Where their pages read like its
examples, its scores mean what they say; where they do not (a model trained on Octave's and
Postfix's manuals reading CMake's ``ctest_*`` pages), every page scores near zero, and a reward
proportional to the score teaches the learner nothing, while a best-first crawl still follows the
pages that score highest, however low. The model's order of pages transfers better than its scale,
so a page's rank among the crawl's own pages carries what its score does not.

The scores are kept as a histogram over log-odds (fixed memory, however long the crawl).
"""

from __future__ import annotations

import math

import numpy as np

#: The histogram: BINS bins of log-odds over [-SPAN, SPAN] (scores past it fall in the end bins).
BINS = 480
SPAN = 24.0
#: What the best page not counted as found is worth (``ScoreRanks.reward``): a quarter of a found
#: page, as the score-scaled reward it replaces gave a page at a score of 1.
RANK_REWARD = 0.25


def _bin(score: float) -> int:
    p = min(max(float(score), 1e-12), 1.0 - 1e-12)
    logit = math.log(p / (1.0 - p))
    return min(BINS - 1, max(0, int((logit + SPAN) / (2 * SPAN) * BINS)))


class ScoreRanks:
    """The scores of the pages a crawl has scored, and the rank of a new one among them."""

    def __init__(self) -> None:
        self.counts = np.zeros(BINS, dtype=np.int64)
        self.scored = 0

    def rank(self, score: float) -> float:
        """The share of the pages scored so far that scored lower than ``score``, those in its own
        bin counted half, and ``score`` itself counted as one more page at its own rank: 0.5 before
        any page, near 1 for the best of many, near 0 for the worst."""
        at = _bin(score)
        lower = int(self.counts[:at].sum()) + 0.5 * int(self.counts[at])
        return (lower + 0.5) / (self.scored + 1)

    def add(self, score: float) -> float:
        """Count a scored page; returns its rank among the pages scored before it (``rank``)."""
        rank = self.rank(score)
        self.counts[_bin(score)] += 1
        self.scored += 1
        return rank

    def reward(self, score: float) -> float:
        """What a page not counted as found is worth to the learner: ``RANK_REWARD`` times its rank
        among the pages scored before it (``add``: it is counted among them)."""
        return RANK_REWARD * self.add(score)
