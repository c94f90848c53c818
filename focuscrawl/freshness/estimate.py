"""How often a page changes: its Poisson change rate λ (changes per second), from its visits.

A page is modelled as changing at the times of a Poisson process of rate λ (Cho & Garcia-Molina,
"Estimating frequency of change", ACM TOIT 3(3), 2003; the model the background reading uses for
freshness and age). A crawler does not see the changes, only its visits: after an interval t it
learns whether the page changed (content hash, ETag, a 304), and sometimes when it last changed
(Last-Modified). Counting the changes seen over the time watched (X/T, the naive estimator) is
badly biased once a page can change twice between visits: it can never exceed one change per
interval. This module has the paper's estimators for both kinds of evidence, and a prior for pages
with little history:

- changed / unchanged at irregular intervals (`rate_from_changes`): the maximum-likelihood
  estimate, the root of

      Σ_changed t_i / (e^{λ t_i} − 1) = Σ_unchanged t_j

  It has no finite root when every interval saw a change (λ = ∞) and is 0 when none did. The
  paper's bias-reduced estimator for regular intervals I, λ = −log((n − X + 0.5)/(n + 0.5)) / I,
  is exactly this equation with half an unchanged interval added to the evidence; for irregular
  intervals we add half an unchanged interval of the history's mean length, which reproduces the
  paper's estimator when the intervals are equal and keeps the estimate finite when all changed.
- Last-Modified times (`rate_from_last_modified`): an interval that saw a change tells when the
  page last changed, s_i seconds before the visit, so the page is known unchanged for s_i of it.
  With X changes in N intervals and T = Σ_unchanged t_j + Σ_changed s_i, the paper's estimator is

      λ = X' / T,   X' = (X − 1) − X / (N log(1 − X/N))

  (X' = X − 1 when every interval changed). It is better than the changed/unchanged estimator:
  it sees change times, not just their existence, so it stays accurate when a page changes many
  times between visits, where the other estimator has little left to go on.

Both take a Gamma prior on λ (`estimate_rate`): with `prior_weight` k it counts as k changes seen
over k / prior_rate seconds (shape 1 + k, rate k / prior_rate: its mode is `prior_rate`), and the
estimate is the posterior mode. A page with no history gets `prior_rate`; one visited twice gets
a finite, positive rate pulled towards it; a history spanning several times k / prior_rate seconds
outweighs it. With Last-Modified times the paper's correction counts a single change as none
(X' = 0 when X = N = 1): the prior carries such a page until it is seen to change again. The
prior's rate comes from the crawl's pool of pages or from a sitemap's `changefreq`
(`changefreq_rate`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator

from scipy.optimize import brentq

#: Intervals a history keeps: enough for a rate within about ±25% (the error falls as 1/√X),
#: little enough for 10^5 pages (8 bytes an interval); older intervals are forgotten, so a page
#: whose rate drifts is followed.
HISTORY_LIMIT = 24

#: The prior counts for this many changes (see `estimate_rate`): enough to keep a page seen twice
#: from λ = 0 or ∞, and weak, because rates differ between pages by orders of magnitude: the
#: prior's pseudo-time is PRIOR_WEIGHT / prior_rate, so a page changing ten times faster than the
#: pool must out-argue half a change in five of its own change intervals.
PRIOR_WEIGHT = 0.5

#: An HTTP date has a resolution of one second: a page "modified at the visit" changed somewhere
#: in the second before, so no Last-Modified evidence counts for less than half a second.
LAST_MODIFIED_RESOLUTION = 0.5

_CHANGED_AT_UNKNOWN_TIME = math.nan  # evidence of an interval that saw a change, time unknown
_UNCHANGED = -1.0  # evidence of an interval that saw no change
_FLOAT32_MAX = 3.0e38
_LARGEST = 1e300
_EXPM1_LIMIT = 700.0  # e^700 is near the largest double; t / (e^z − 1) is 0 to double precision beyond

_HOUR = 3600.0
_DAY = 24 * _HOUR
_YEAR = 365.25 * _DAY
#: Sitemap changefreq words (sitemaps.org protocol) as seconds between changes. "always" (changes
#: every time it is read) becomes once a minute: faster than any revisit can follow, so such a page
#: gets no revisits unless its weight is large; "never" (archived) becomes once a decade, a rate
#: the page's own history overrides if it does change.
_CHANGEFREQ_SECONDS = {
    "always": 60.0,
    "hourly": _HOUR,
    "daily": _DAY,
    "weekly": 7 * _DAY,
    "monthly": _YEAR / 12,
    "yearly": _YEAR,
    "never": 10 * _YEAR,
}


class VisitHistory:
    """The intervals between a page's visits and what each revisit found, oldest first.

    One float32 array of (interval, evidence) pairs: the evidence is -1 (no change seen), NaN (a
    change, time unknown) or the seconds from the page's last modification to the visit (a
    change, time known from Last-Modified). 8 bytes an interval and about 120 bytes of objects;
    at most `limit` intervals are kept (see `add`), oldest forgotten.
    """

    __slots__ = ("_pairs",)

    def __init__(self, visits: Iterable[tuple[float, bool] | tuple[float, bool, float | None]] = (),
                 limit: int = HISTORY_LIMIT):
        """`visits`: (interval, changed) or (interval, changed, since_modified) tuples, oldest first."""
        self._pairs = array("f")
        for visit in visits:
            self.add(*visit, limit=limit)

    def add(self, interval: float, changed: bool, since_modified: float | None = None,
            limit: int = HISTORY_LIMIT) -> bool:
        """Record a revisit `interval` seconds after the previous visit; False when ignored.

        `since_modified`: seconds from the page's last modification (Last-Modified) to this visit,
        for a visit that saw a change. It is dropped when it contradicts the change: a
        modification before the previous visit, or after this one. An interval that is not a
        positive number of seconds says nothing about a rate and is ignored.
        """
        if not (interval > 0 and math.isfinite(interval)):
            return False
        interval = min(interval, _FLOAT32_MAX)
        self._pairs.extend((interval, self._evidence(interval, changed, since_modified)))
        if self._pairs[-2] <= 0:  # below float32's range
            del self._pairs[-2:]
            return False
        excess = len(self._pairs) // 2 - max(1, limit)
        if excess > 0:
            del self._pairs[:2 * excess]
        return True

    @staticmethod
    def _evidence(interval: float, changed: bool, since_modified: float | None) -> float:
        if not changed:
            return _UNCHANGED
        if since_modified is None or not 0 <= since_modified <= interval:
            return _CHANGED_AT_UNKNOWN_TIME
        return since_modified

    def __iter__(self) -> Iterator[tuple[float, bool, float | None]]:
        """(interval, changed, since_modified or None) for each interval, oldest first."""
        pairs = self._pairs
        for i in range(0, len(pairs), 2):
            evidence = pairs[i + 1]
            if evidence == _UNCHANGED:
                yield pairs[i], False, None
            else:
                yield pairs[i], True, None if math.isnan(evidence) else evidence

    def __len__(self) -> int:
        return len(self._pairs) // 2

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, VisitHistory):
            return NotImplemented
        return list(self) == list(other)

    def __repr__(self) -> str:
        return f"VisitHistory({list(self)!r})"

    @property
    def changes(self) -> int:
        """How many intervals saw a change."""
        return sum(1 for evidence in self._pairs[1::2] if evidence != _UNCHANGED)

    @property
    def span(self) -> float:
        """Seconds the history covers."""
        return math.fsum(self._pairs[0::2])

    def changed_intervals(self) -> list[float]:
        """The lengths of the intervals that saw a change."""
        pairs = self._pairs
        return [pairs[i] for i in range(0, len(pairs), 2) if pairs[i + 1] != _UNCHANGED]

    def unchanged_seconds(self) -> float:
        """The total length of the intervals that saw no change."""
        pairs = self._pairs
        return math.fsum(pairs[i] for i in range(0, len(pairs), 2) if pairs[i + 1] == _UNCHANGED)

    @property
    def modification_times_known(self) -> bool:
        """Every change it saw came with a usable Last-Modified time (and it saw at least one)."""
        changes = [evidence for evidence in self._pairs[1::2] if evidence != _UNCHANGED]
        return bool(changes) and not any(math.isnan(evidence) for evidence in changes)


def estimate_rate(history: VisitHistory, prior_rate: float, prior_weight: float = PRIOR_WEIGHT) -> float:
    """The page's change rate (changes per second): the posterior mode under a Gamma prior.

    Uses `rate_from_last_modified` when every change in the history came with a Last-Modified
    time, else `rate_from_changes`: a page whose Last-Modified once failed to account for a change
    is judged on the changes alone. The prior (mode `prior_rate`, worth `prior_weight` changes) is
    ignored when either is not a positive number. Returns `prior_rate` (or 0) for an empty history;
    always a finite number ≥ 0.

    >>> history = VisitHistory([(3600.0, True), (3600.0, False)])
    >>> round(estimate_rate(history, prior_rate=1 / 3600, prior_weight=0) * 3600, 3)  # −log(1.5/2.5)
    0.511
    """
    prior_changes, prior_seconds = _prior(prior_rate, prior_weight)
    if not len(history) or not math.isfinite(prior_seconds):
        return prior_rate if prior_rate > 0 and math.isfinite(prior_rate) else 0.0
    if history.modification_times_known:
        return rate_from_last_modified(history, prior_changes, prior_seconds)
    return rate_from_changes(history, prior_changes, prior_seconds)


def _prior(prior_rate: float, prior_weight: float) -> tuple[float, float]:
    """(changes, seconds) the Gamma prior counts for; (0, 0) for no prior."""
    if not (prior_rate > 0 and math.isfinite(prior_rate) and prior_weight > 0 and math.isfinite(prior_weight)):
        return 0.0, 0.0
    return prior_weight, prior_weight / prior_rate


def rate_from_changes(history: VisitHistory, prior_changes: float = 0.0, prior_seconds: float = 0.0) -> float:
    """The change rate from changed/unchanged evidence only (Cho & Garcia-Molina 2003, irregular access).

    Solves, for λ > 0 (decreasing in λ, so one root):

        Σ_changed t_i / (e^{λ t_i} − 1) + k / λ = Σ_unchanged t_j + t̄ / 2 + k / λ₀

    the likelihood of "changed" (1 − e^{−λ t_i}) and "unchanged" (e^{−λ t_j}) intervals, half an
    unchanged interval of the mean length t̄ (the paper's bias reduction, see the module), and the
    prior's k changes over k / λ₀ seconds. With no change and no prior the answer is 0. Last-Modified
    times in the history are not used (see `rate_from_last_modified`).
    """
    changed = history.changed_intervals()
    if not changed and prior_changes <= 0:
        return 0.0
    pseudo_unchanged = history.span / (2 * len(history)) if len(history) else 0.0
    known = history.unchanged_seconds() + pseudo_unchanged + prior_seconds
    if not 0 < known < math.inf:  # no evidence at all, or a prior beyond the double range
        return 0.0
    if not changed:  # the prior's changes over all the unchanged time
        return prior_changes / known

    def excess(log_rate: float) -> float:
        rate = math.exp(log_rate)
        value = prior_changes / rate - known
        for interval in changed:  # Σ t / (e^{λt} − 1); 1/λ as λt → 0, 0 beyond e^700
            z = rate * interval
            if z < _EXPM1_LIMIT:
                value += interval / math.expm1(z) if z > 0 else 1.0 / rate
        return min(value, _LARGEST)  # 1/λ overflows for a λ near the double range: keep Brent finite

    # 1/λ − t/2 < t / (e^{λt} − 1) < 1/λ brackets the root between these two rates.
    evidence = len(changed) + prior_changes
    low_rate = evidence / (known + math.fsum(changed) / 2)
    if low_rate <= 0:
        return 0.0
    low = math.log(low_rate)
    high = math.log(evidence / known)
    if not excess(low) > 0:  # at the ends of the double range the bracket may touch the root
        return math.exp(low)
    if not excess(high) < 0:
        return math.exp(high)
    return math.exp(brentq(excess, low, high, xtol=1e-12, rtol=1e-12, maxiter=200))


def rate_from_last_modified(history: VisitHistory, prior_changes: float = 0.0, prior_seconds: float = 0.0) -> float:
    """The change rate when each change came with its Last-Modified time (Cho & Garcia-Molina 2003).

        λ = (X' + k) / (T + k / λ₀),   X' = (X − 1) − X / (N log(1 − X/N)),
        T = Σ_unchanged t_j + Σ_changed s_i

    N intervals, X of them changed, s_i the seconds from the last modification to the visit (no
    less than half a second: the resolution of an HTTP date), X' the paper's bias-corrected count
    (X − 1 when every interval changed). Better than `rate_from_changes`: the time a change
    happened says how long the page stayed unchanged, so several changes between visits do not
    hide the rate. A changed interval without a time counts as a change at an unknown point,
    i.e. no unchanged seconds from it.
    """
    intervals = len(history)
    changes = 0
    seconds_unchanged = 0.0
    for interval, changed, since_modified in history:
        if changed:
            changes += 1
            if since_modified is not None:
                seconds_unchanged += max(since_modified, LAST_MODIFIED_RESOLUTION)
        else:
            seconds_unchanged += interval
    corrected = _corrected_changes(changes, intervals) + prior_changes
    seconds = seconds_unchanged + prior_seconds
    if corrected <= 0 or seconds <= 0:
        return 0.0
    return corrected / seconds


def _corrected_changes(changes: int, intervals: int) -> float:
    """X' = (X − 1) − X / (N log(1 − X/N)): from X (few changes) down to X − 1 (all changed)."""
    if changes <= 0:
        return 0.0
    if changes >= intervals:
        return changes - 1.0
    return (changes - 1.0) - changes / (intervals * math.log1p(-changes / intervals))


def naive_rate(history: VisitHistory) -> float:
    """X / T: changes seen over the time watched; the biased baseline the estimators improve on."""
    span = history.span
    return history.changes / span if span > 0 else 0.0


def changefreq_rate(value: str | None) -> float | None:
    """A sitemap `<changefreq>` word as changes per second; None for a missing or unknown word.

    >>> round(changefreq_rate("daily") * 86400, 9)
    1.0
    """
    if not value:
        return None
    seconds = _CHANGEFREQ_SECONDS.get(value.strip().lower())
    return None if seconds is None else 1.0 / seconds
