"""What the rest of a request budget can still buy: the price of a wait in a crawl with
FOCUS_BUDGET (``policies.Patience``). Pure: the frontier's sample and the counts are passed in.

A crawl with ``R`` requests left chooses them among the ``F`` URLs queued now and the ``g * R``
it will find on the way (``g``: the new URLs it admits per request, measured over its recent
requests), and fetches about the best ``R`` of them. Sending a ready URL that is among those costs
nothing: the crawl would spend a request on it anyway, now or later. Sending one below them spends
a request that one of them would have had. So the score the budget can still buy is the priority
above which lies the best share ``R / (F + g R)`` of the frontier (the URLs not found yet taken to
score as the queued ones do), read from a sample of the frontier's priorities. Nothing in it
depends on the machine's speed or the web's latency, and nothing is fitted to a web: ``g`` and the
priorities are the crawl's own.

The sample is drawn now and then (``BudgetCut.due``: every ``every`` requests, fewer as the
frontier grows, so that drawing it costs O(1) a request however big the frontier); the share is
worked out at every decision from the counts of the moment.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

#: priorities read for an estimate: the cut of the best 1% of the frontier is then read from ~2.5
#: sampled URLs, of the best 10% from ~25 (a standard error of ~2% of the frontier either way)
SAMPLE_SIZE = 256
#: requests between two samples, at least: the frontier's priorities move with every learner
#: version (one per 16 pages) and the background re-scoring that follows it
SAMPLE_EVERY = 16
#: queued URLs per request between two samples past ``SAMPLE_EVERY``'s: a sample reads every host's
#: size, so a frontier of 10**6 URLs is sampled every ~250 requests
QUEUED_PER_REQUEST = 4096
#: samples over which the discovery rate is measured (the last ~128 requests of a small frontier)
RATE_WINDOW = 8


@dataclass(frozen=True)
class BudgetCounts:
    """The counts a budget's price reads: the budget, and how many requests this process released
    and new URLs it admitted (the discovery rate), and how many the whole crawl released (what
    the budget counts: a shared crawl's every worker)."""

    budget: int
    released: Callable[[], int]
    admitted: Callable[[], int]
    crawl_released: Callable[[], int]


def bought_share(remaining: int, queued: int, rate: float) -> float:
    """The share of the URLs a crawl can still choose among that its ``remaining`` requests fetch:
    ``R / (F + g R)``, at most 1 (the budget covers them all)."""
    if remaining <= 0:
        return 0.0
    pool = max(0, queued) + max(0.0, rate) * remaining
    return 1.0 if pool <= remaining else remaining / pool


def cut_of(best_first: list[float], share: float) -> float:
    """The priority above which lies the best ``share`` of a sample sorted best first: -inf when
    the share is all of it (or there is no sample), the sample's best when the share is less than
    one sampled URL's worth (the estimate then errs towards sending)."""
    if not best_first or share >= 1.0:
        return float("-inf")
    return best_first[min(len(best_first) - 1, int(share * len(best_first)))]


class BudgetCut:
    """The score the rest of a budget can buy, from a sample of the frontier's priorities drawn now
    and then and the crawl's counts."""

    def __init__(self, budget: int, window: int = RATE_WINDOW):
        if budget <= 0:
            raise ValueError("a budget cut needs a budget")
        self.budget = budget
        self._best_first: list[float] = []
        self._sampled_at: int | None = None  # requests released when the sample was drawn
        self._marks: deque[tuple[int, int]] = deque([(0, 0)], maxlen=window + 1)  # (released, admitted)

    def due(self, released: int, queued: int) -> bool:
        """Whether the sample is to be drawn again now, ``released`` requests into the crawl with
        ``queued`` URLs in the frontier."""
        if self._sampled_at is None:
            return True
        every = max(SAMPLE_EVERY, queued // QUEUED_PER_REQUEST)
        return released - self._sampled_at >= every

    def resample(self, priorities: list[float], released: int, admitted: int) -> None:
        """A fresh sample of the frontier's priorities, drawn ``released`` requests into the crawl
        (this process's) when it had admitted ``admitted`` new URLs."""
        self._best_first = sorted(priorities, reverse=True)
        self._sampled_at = released
        if released > self._marks[-1][0]:
            self._marks.append((released, admitted))
        else:
            self._marks[-1] = (released, admitted)

    def rate(self) -> float:
        """New URLs admitted per request released over the last samples' span (from the crawl's
        start until there are two samples: the seeds count then, which errs towards holding while
        the crawl knows little)."""
        (r0, a0), (r1, a1) = self._marks[0], self._marks[-1]
        return (a1 - a0) / (r1 - r0) if r1 > r0 else 0.0

    def cut(self, remaining: int, queued: int) -> float:
        """The lowest priority among the best the ``remaining`` requests can buy with ``queued``
        URLs in the frontier: a ready URL below it is worth holding for a better one. -inf when
        the budget covers everything, or before a sample."""
        return cut_of(self._best_first, bought_share(remaining, queued, self.rate()))

    @property
    def sample_size(self) -> int:
        return len(self._best_first)


__all__ = ["QUEUED_PER_REQUEST", "RATE_WINDOW", "SAMPLE_EVERY", "SAMPLE_SIZE", "BudgetCounts", "BudgetCut", "bought_share",
           "cut_of"]
