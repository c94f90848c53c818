"""Which scored pages count as found for the link learner: those the topic model scores at its
threshold, and the best few of the pages this crawl has scored so far.

A topic model is trained on other sites than the ones it crawls. Where their pages read like its
examples, a relevant page scores past even odds and the threshold tells it apart. Where they do not
(a model trained on Octave's and Postfix's manuals reading CMake's ``ctest_*`` pages), every page
scores below it, nothing counts as found, and the learner, whose rewards are all near zero, learns
nothing while a best-first crawl still follows the pages that score highest, however low. The
model's order of pages transfers better than its scale: so a page also counts as found when it
ranks among the best ``top`` share of the pages the crawl has scored so far. Where the threshold
already finds more than that share, the rank adds nothing; where it finds none, the crawl's own
best pages lead it.

The scores seen are kept as a histogram over log-odds (fixed memory, however long the crawl).
"""

from __future__ import annotations

import math

import numpy as np

#: Pages scored before a rank means anything: the first are judged by the threshold alone.
LEAST_PAGES = 20
#: The histogram: BINS bins of log-odds over [-SPAN, SPAN] (scores past it fall in the end bins).
BINS = 480
SPAN = 24.0


def _bin(score: float) -> int:
    p = min(max(float(score), 1e-12), 1.0 - 1e-12)
    logit = math.log(p / (1.0 - p))
    return min(BINS - 1, max(0, int((logit + SPAN) / (2 * SPAN) * BINS)))


class Hits:
    """Judges each scored page once, in the order the crawl scores them: ``judge(score)`` is True
    when ``score`` >= ``threshold``, or when, after ``least`` pages, fewer than a ``top`` share of
    the pages scored before it scored higher (pages in its own bin count half). ``top`` 0: the
    threshold alone."""

    def __init__(self, threshold: float, top: float, least: int = LEAST_PAGES):
        if not 0.0 <= top < 1.0:
            raise ValueError(f"top must be in [0, 1), not {top!r}")
        self.threshold = threshold
        self.top = top
        self.least = least
        self.counts = np.zeros(BINS, dtype=np.int64)
        self.scored = 0

    def higher_share(self, score: float) -> float:
        """The share of the pages scored so far that scored higher than ``score`` (half of those
        in its bin); 1.0 before any."""
        if not self.scored:
            return 1.0
        at = _bin(score)
        return (int(self.counts[at + 1:].sum()) + 0.5 * int(self.counts[at])) / self.scored

    def judge(self, score: float) -> bool:
        """Whether a page scoring ``score`` counts as found; the score is then counted."""
        hit = score >= self.threshold or (self.top > 0 and self.scored >= self.least
                                          and self.higher_share(score) < self.top)
        self.counts[_bin(score)] += 1
        self.scored += 1
        return hit
