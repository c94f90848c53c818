"""Revisit intervals that keep a weighted collection freshest for a given number of revisits.

A page changing as a Poisson process of rate λ and revisited every I seconds is, averaged over
time (Cho & Garcia-Molina, "Effective page refresh policies for Web crawlers", ACM TODS 28(4),
2003; "Synchronizing a database to improve freshness", SIGMOD 2000), with x = λI:

    freshness  F(λ, I) = (1 − e^{−x}) / x                       (share of the time the copy is current)
    age        A(λ, I) = I/2 − 1/λ + (1 − e^{−x}) / (λ² I)      (mean seconds since the copy went stale)

With weights w_i (how much a page matters: its relevance probability) and a budget of R revisits
a second, the best schedule maximises Σ w_i F(λ_i, I_i) subject to Σ 1/I_i = R. Its Lagrange
(Karush-Kuhn-Tucker) condition is, for every page revisited,

    (w_i / λ_i) · g(x_i) = μ,   g(x) = 1 − (1 + x) e^{−x}       (g rises from 0 to 1)

and pages with w_i / λ_i ≤ μ are not revisited at all: a page changing much faster than it can be
revisited is stale almost always whatever is spent on it, so the budget buys more freshness
elsewhere (the papers' result that the fastest-changing pages should not be revisited most). μ is
found by a safeguarded Newton search on log μ (the total frequency falls as μ rises), and each
page's x_i by inverting g (a series or an asymptote, then Newton steps), vectorised over the pages.

The two baselines the papers compare with: `uniform_intervals` (every page alike) and
`proportional_intervals` (revisits in proportion to λ), which is never better than uniform.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_NEWTON_STEPS = 3  # from a guess within ~10%: the error squares each step, ~1e-12 after 3
_EXACT_SERIES_BELOW = 1e-3  # √(2g): below it, x's series is exact to double precision
_ASYMPTOTIC_FROM = 0.5  # g: from here the guess for x is the large-x one
_BELOW_ONE = float(np.nextafter(1.0, 0.0))
_SERIES_BELOW = 1e-2  # x: the age's bracket by its series below this
_SEARCH_STEPS = 200
_SEARCH_TOLERANCE = 1e-13  # |log(Σ 1/I) − log R|
#: A budget this many times the fastest page's rate is the R → ∞ limit (x ≈ √(2μλ/w) to within
#: 10^-50 for any weight above 10^-100 of the largest).
_LIMIT_BUDGET = 1e100
_TINY = float(np.finfo(float).tiny)
_HUGE = float(np.finfo(float).max)


class Allocation(NamedTuple):
    """`intervals`: seconds between revisits, one a page (inf: not revisited). `multiplier`: μ,
    the Lagrange multiplier (a page is revisited when w/λ > μ; 0 when every useful page is at the
    minimum interval, inf when there is nothing to revisit)."""

    intervals: np.ndarray
    multiplier: float


def optimal_intervals(rates, weights, revisit_rate: float, *, min_interval: float = 0.0,
                      multiplier_hint: float | None = None) -> Allocation:
    """The intervals maximising Σ w_i F(λ_i, I_i) with Σ 1/I_i = `revisit_rate` (revisits a second).

    Args:
        rates: λ_i, changes per second (≥ 0; 0: never changes, so never revisited; inf: changes
            continuously, so no revisit keeps it fresh).
        weights: w_i ≥ 0; a page of weight 0 is not revisited.
        revisit_rate: R, the revisits a second to spend (≤ 0: none).
        min_interval: no page is revisited more often than this (politeness, and the point past
            which a revisit finds nothing new). When even that spends less than R, every useful
            page gets it and the rest of the budget is left unspent (multiplier 0).
        multiplier_hint: μ from the previous allocation; the search starts there (fewer steps
            when rates and weights moved little).

    Returns an `Allocation`. Each step of the search for μ is O(n) numpy work; a search takes
    about 4 steps from a good hint and 10 without.

    Raises ValueError for negative or NaN rates or weights, or arrays of different lengths.
    """
    rates, weights = _checked(rates, weights)
    intervals = np.full(len(rates), np.inf)
    useful = np.isfinite(rates) & (rates > 0) & (weights > 0)
    if not revisit_rate > 0 or not useful.any():
        return Allocation(intervals, np.inf)
    problem = _ScaledProblem(rates[useful], weights[useful], revisit_rate, min_interval)
    frequencies, multiplier = problem.solve(multiplier_hint)
    with np.errstate(divide="ignore", over="ignore"):
        intervals[np.flatnonzero(useful)[problem.revisitable]] = 1.0 / frequencies
    return Allocation(intervals, multiplier)


def _checked(rates, weights) -> tuple[np.ndarray, np.ndarray]:
    rates = np.asarray(rates, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    if rates.shape != weights.shape or rates.ndim != 1:
        raise ValueError("rates and weights must be 1-d arrays of the same length")
    if np.isnan(rates).any() or (rates < 0).any() or np.isnan(weights).any() or (weights < 0).any():
        raise ValueError("rates and weights must be numbers >= 0")
    return rates, weights


class _ScaledProblem:
    """The allocation in units where the fastest rate and the largest weight are 1.

    F depends on λI only, so time can be measured in units of 1/max λ and weights divided by their
    maximum without changing the answer; the numbers the search meets then stay far from the
    ends of the floating-point range. A page whose rate or weight is below the double range in
    these units (10^-308 of the largest) is left out (`revisitable` says which pages are in).
    """

    def __init__(self, rates: np.ndarray, weights: np.ndarray, revisit_rate: float, min_interval: float):
        self.rate_unit = float(rates.max())
        self.weight_unit = float(weights.max())
        rates = rates / self.rate_unit
        weights = weights / self.weight_unit
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            load_per_multiplier = rates / weights  # λ/w: g(x) = μ λ/w
        self.revisitable = (rates > 0) & np.isfinite(load_per_multiplier)
        self.rates = rates[self.revisitable]
        self.weights = weights[self.revisitable]
        self.load_per_multiplier = load_per_multiplier[self.revisitable]
        self.revisit_rate = revisit_rate
        self.budget = revisit_rate / self.rate_unit
        shortest = min_interval * self.rate_unit if min_interval > 0 else 0.0
        self.cap = 1.0 / shortest if shortest > 0 else np.inf  # revisits per unit time at most

    def solve(self, multiplier_hint: float | None) -> tuple[np.ndarray, float]:
        """(revisits a second of each revisitable page, μ), both in real units."""
        to_real_multiplier = self.weight_unit / self.rate_unit
        pages = len(self.rates)
        if not pages or not self.budget > 0:  # none, or R below the double range in these units
            return np.zeros(pages), np.inf
        if np.isfinite(self.cap) and self.cap * pages <= self.budget:
            return np.full(pages, self.cap * self.rate_unit), 0.0
        if self.budget > _LIMIT_BUDGET:
            return self._limit_frequencies(), 0.0
        hint = None
        if multiplier_hint is not None and to_real_multiplier > 0:
            hint = multiplier_hint / to_real_multiplier
        frequencies, multiplier = self._search(hint)
        spent = frequencies.sum()
        if spent > self.budget:  # rounding in the last step of the search
            frequencies = frequencies * (self.budget / spent)
        return frequencies * self.rate_unit, multiplier * to_real_multiplier

    def _search(self, hint: float | None) -> tuple[np.ndarray, float]:
        """μ with Σ f_i(μ) = R: safeguarded Newton on log μ.

        log Σf is nearly linear in log μ (slope −1/2 while revisits are frequent: f ≈ √(λw/2μ)),
        so Newton steps on it converge in a few steps; a step that leaves the bracket known so far
        is replaced by bisection (or, with no lower end yet, a step down by a factor of 16).
        The search starts at the hint, or at μ = (Σ√(λw/2) / R)², where the total is at most R
        (x ≥ √(2 g(x)) makes λ/x ≤ √(λw/2μ)); beyond the largest w/λ nothing is revisited.
        """
        with np.errstate(over="ignore", divide="ignore"):
            ceiling = min(float((np.sqrt(self.rates * self.weights / 2.0).sum() / self.budget) ** 2),
                          float(1.0 / self.load_per_multiplier.min()))
        low, high = -np.inf, np.log(min(max(ceiling, _TINY), _HUGE))  # total ≥ R at low, < R at high
        at_low = at_high = None
        bottom = np.log(_TINY)
        u = np.log(hint) if hint is not None and 0 < hint and np.log(hint) < high else high
        for _ in range(_SEARCH_STEPS):
            frequencies, slope = self._frequencies(float(np.exp(u)))
            total = float(frequencies.sum())
            gap = np.log(total / self.budget) if total > 0 else -np.inf
            if abs(gap) <= _SEARCH_TOLERANCE:
                return frequencies, float(np.exp(u))
            if total > self.budget:
                low, at_low = u, frequencies
            else:
                high, at_high = u, frequencies
            if high - low <= 1e-15 * max(1.0, abs(u)) or (u <= bottom and total < self.budget):
                break
            with np.errstate(over="ignore"):  # a step beyond the double range is refused below
                step = -gap * total / slope if slope < 0 and np.isfinite(gap) else np.nan
            following = max(u + step, bottom)
            if not low < following < high:
                following = (low + high) / 2 if np.isfinite(low) else max(u - np.log(16.0), bottom)
            u = following
        return self._across_the_jump(at_low, at_high), float(np.exp(u))

    def _across_the_jump(self, at_low: np.ndarray | None, at_high: np.ndarray | None) -> np.ndarray:
        """The solution when μ's bracket has closed on two neighbouring doubles around R.

        Near saturation one step of μ moves a page's x by more than the tolerance (g(x) = 1 − ε
        resolves x only to ~2e-16 / (x e^{−x})), and beyond x ≈ 37 g rounds to 1, so a page's
        revisits drop from one every 37 of its changes to none where the exact solution needs
        fewer. Pages that drop have w/λ equal to the cut-off to double precision, so equal g(x),
        hence equal x: they share what the others leave of R in proportion to λ. Otherwise the
        two neighbouring solutions are interpolated to spend R exactly.
        """
        if at_high is None:  # R is more than the bottom of the double range spends
            return at_low
        if at_low is None:  # R is less than the top spends: nothing to share
            return at_high
        left = self.budget - at_high.sum()
        dropping = (at_low > 0) & (at_high == 0)
        if dropping.any():
            frequencies = at_high.copy()
            frequencies[dropping] = left * self.rates[dropping] / self.rates[dropping].sum()
            return frequencies
        share = left / (at_low.sum() - at_high.sum())
        return at_high + share * (at_low - at_high)

    def _frequencies(self, multiplier: float) -> tuple[np.ndarray, float]:
        """(revisits per unit time of each page at μ, d Σf / d log μ).

        f = λ/x with g(x) = μλ/w (0 where μλ/w ≥ 1), capped; each uncapped page's f changes with
        log μ at −f g(x) e^x / x² (−f/2 for small x).
        """
        frequencies = np.zeros(len(self.rates))
        revisited = np.flatnonzero(self.load_per_multiplier < 1.0 / multiplier)  # μλ/w < 1
        load = multiplier * self.load_per_multiplier[revisited]
        x = _inverse_g(np.minimum(load, _BELOW_ONE))
        rates = self.rates[revisited]
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            revisits = rates / x
            underflow = x == 0  # only where μλ/w underflows: there g(x) ≈ x²/2 gives λ/x = √(λw/2μ)
            if underflow.any():
                revisits[underflow] = np.sqrt(rates[underflow] * self.weights[revisited][underflow] / (2 * multiplier))
            revisits = np.minimum(revisits, self.cap)
            change = np.where(underflow, 0.5, load * np.exp(x) / (x * x))
        slope = -float(np.where(revisits < self.cap, revisits * change, 0.0).sum())
        frequencies[revisited] = revisits
        return frequencies, slope

    def _limit_frequencies(self) -> np.ndarray:
        """The solution as R → ∞ (μ → 0, x ≈ √(2μλ/w)), in real units: revisits ∝ √(λw)."""
        share = np.sqrt(self.rates * self.weights)
        return np.minimum(self.revisit_rate * share / share.sum(), self.cap * self.rate_unit)


def _inverse_g(load: np.ndarray) -> np.ndarray:
    """x ≥ 0 with g(x) = 1 − (1 + x) e^{−x} = `load`, for loads in [0, 1).

    (1 + x) e^{−x} = 1 − g is x − log(1 + x) = L, L = −log(1 − g), whose root is
    x = −1 − W₋₁(−e^{−1−L}) (Lambert's W). Its series at the branch point in s = √(2g),
    x = s + s²/3 + 11s³/72 + 43s⁴/540 + 769s⁵/17280 + …, is exact to double precision for
    s < 10^-3 and a guess within a few per cent up to g = 1/2; above, L + log(1 + L + log(1 + L))
    (from x = L + log(1 + x)) is. Newton steps on x − log(1 + x) = L finish it.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sqrt(2.0 * load)
        series = s * (1.0 + s * (1 / 3 + s * (11 / 72 + s * (43 / 540 + s * (769 / 17280)))))
        target = -np.log1p(-load)
        x = series.copy()
        large = np.flatnonzero(load >= _ASYMPTOTIC_FROM)
        x[large] = target[large] + np.log1p(target[large] + np.log1p(target[large]))
        for _ in range(_NEWTON_STEPS):
            x = x - (x - np.log1p(x) - target) * (1.0 + x) / x
        return np.where(s < _EXACT_SERIES_BELOW, series, x)


def uniform_intervals(rates, revisit_rate: float) -> np.ndarray:
    """Every page revisited at the same interval, n / R (the papers' uniform policy)."""
    count = len(np.asarray(rates))
    if not revisit_rate > 0 or count == 0:
        return np.full(count, np.inf)
    return np.full(count, count / revisit_rate)


def proportional_intervals(rates, revisit_rate: float) -> np.ndarray:
    """Revisits in proportion to the change rate: 1/I_i = R λ_i / Σλ (a page that never changes: none)."""
    rates = np.asarray(rates, dtype=np.float64)
    finite = np.where(np.isfinite(rates), rates, 0.0)
    total = finite.sum()
    intervals = np.full(len(rates), np.inf)
    if not revisit_rate > 0 or not total > 0:
        return intervals
    changing = finite > 0
    intervals[changing] = total / (revisit_rate * finite[changing])
    return intervals


def freshness(rates, intervals) -> np.ndarray:
    """F(λ, I) = (1 − e^{−λI}) / (λI) for each page: 1 when λ = 0, 0 when never revisited (λ > 0)."""
    rates = np.asarray(rates, dtype=np.float64)
    intervals = np.asarray(intervals, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        x = rates * intervals
        safe = np.where(np.isfinite(x) & (x > 0), x, 1.0)
        value = np.where(x > 0, -np.expm1(-safe) / safe, 1.0)
    value = np.where(np.isinf(x), 0.0, value)
    return np.where(rates == 0, 1.0, value)


def age(rates, intervals) -> np.ndarray:
    """A(λ, I) = (1/λ)(x/2 − 1 + (1 − e^{−x})/x), x = λI, for each page: seconds stale on average.

    0 when λ = 0; inf when a changing page is never revisited; I/2 when λ = ∞. Below x = 0.01
    the bracket is evaluated by its series x²/6 − x³/24 + x⁴/120 (the three terms cancel).
    """
    rates = np.asarray(rates, dtype=np.float64)
    intervals = np.asarray(intervals, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        x = rates * intervals
        safe = np.where(np.isfinite(x) & (x > 0), x, 1.0)
        bracket = np.where(safe < _SERIES_BELOW, safe * safe * (1 / 6 - safe / 24 + safe * safe / 120),
                           safe / 2 - 1 - np.expm1(-safe) / safe)
        value = np.where(x > 0, bracket / np.where(rates > 0, rates, 1.0), 0.0)
    # λ → ∞: the copy is stale from just after each visit, I/2 on average; I → ∞: forever
    value = np.where(np.isinf(x), np.where(np.isinf(intervals), np.inf, intervals / 2), value)
    return np.where(rates == 0, 0.0, value)


def expected_freshness(rates, intervals, weights=None) -> float:
    """Σ w_i F_i / Σ w_i: the weighted share of the collection that is current, on average."""
    return _weighted_mean(freshness(rates, intervals), weights)


def expected_age(rates, intervals, weights=None) -> float:
    """Σ w_i A_i / Σ w_i: seconds stale, on average (inf when a changing page is never revisited)."""
    return _weighted_mean(age(rates, intervals), weights)


def _weighted_mean(values: np.ndarray, weights) -> float:
    """The weighted mean; every page alike when `weights` is None or they sum to 0."""
    if not len(values):
        return 0.0
    if weights is not None:
        weights = np.asarray(weights, dtype=np.float64)
        total = weights.sum()
        if total > 0:
            counted = weights > 0  # a page of weight 0 counts for nothing, even an inf age
            return float((weights[counted] * values[counted]).sum() / total)
    return float(values.mean())
