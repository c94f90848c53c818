"""The revisit plan: which pages a continuous crawl fetches again, and when, to keep them fresh.

`RevisitPlan` is the per-crawl state the scheduler drives; it is pure (no Scrapy, the clock
passed in) and picklable for JOBDIR checkpoints. For each tracked page it keeps the last visit, the
validators to send (ETag, Last-Modified), the visit history and the change rate estimated from it
(`estimate.py`), the page's weight (its relevance probability), and hints: a sitemap's changefreq
(the page's prior rate) and a known change (a feed entry or a sitemap lastmod after the last visit).

    plan.record_visit(url, now, changed=None, weight=0.9, etag=...)   # first fetch
    plan.reallocate(revisit_rate=0.5)          # every few seconds: intervals from allocate.py
    for url, why in plan.take_due(now, limit=8):   # revisits to send, known changes, most overdue
        ...Request(url, headers=plan.validators(url))
    plan.record_visit(url, now, changed=False)  # a 304, or the same content hash

Every time is in seconds on one clock, the wall clock (epoch seconds, `time.time()`): hints and
Last-Modified are dates, so a monotonic clock would not compare with them.

Storage is columnar: one numpy array per field, indexed by a slot per page (a dict maps URLs to
slots, and a forgotten page's slot is reused), so `reallocate`, `take_due` and `next_due_time` are
vectorised over the pages. A page costs about 170 bytes (60 of columns, up to twice that in
spare capacity, its dict entry and list slots) besides its URL, its validators when it has any
(about 110 bytes with an ETag), and its history once revisited (about 120 bytes plus 8 an
interval).
"""

from __future__ import annotations

import math

import numpy as np

from focuscrawl.freshness.allocate import freshness, optimal_intervals, proportional_intervals, uniform_intervals
from focuscrawl.freshness.estimate import (
    HISTORY_LIMIT,
    PRIOR_WEIGHT,
    VisitHistory,
    changefreq_rate,
    estimate_rate,
)

#: The prior rate before the crawl has pages with enough history to set one: once a day.
DEFAULT_RATE = 1 / 86400.0
#: A page whose weight (relevance probability) falls below this is dropped from revisits.
FADE_BELOW = 0.05
#: No page is revisited more often than this: a request every few seconds to one page would be
#: impolite, and the crawl's own clock cannot follow faster changes anyway.
MIN_INTERVAL = 60.0
#: Pages with at least this many revisits set the crawl's pool prior (the others mostly echo it).
POOL_MIN_HISTORY = 4

_NO_HISTORY = VisitHistory()
_INITIAL_CAPACITY = 64

# Each column's value in an unused slot: never due, never revisited, weight 0.
_COLUMN_FILL = {
    "_last_visit": (np.float64, np.nan),
    "_handed_out": (np.float64, np.inf),  # last visit, or the last time take_due handed it out
    "_interval": (np.float64, np.inf),
    "_rate": (np.float64, 0.0),
    "_weight": (np.float64, 0.0),
    "_own_prior": (np.float64, np.nan),  # from a sitemap's changefreq; NaN: the pool's
    "_known_change": (np.float64, np.nan),  # a hinted change after the last visit; NaN: none
    "_revisits": (np.uint8, 0),  # intervals in the page's history
}


def _check_arguments(default_rate: float, prior_weight: float, fade_below: float, min_interval: float,
                     history_limit: int) -> None:
    """ValueError for a plan's argument out of its range."""
    if not (default_rate > 0 and math.isfinite(default_rate)):
        raise ValueError("default_rate must be a positive number of changes per second")
    if not (prior_weight >= 0 and fade_below >= 0 and min_interval >= 0):
        raise ValueError("prior_weight, fade_below and min_interval must not be negative")
    if not 1 <= history_limit <= 255:
        raise ValueError("history_limit must be between 1 and 255")


class RevisitPlan:
    """Revisit schedule of the pages a crawl keeps fresh (see the module docstring)."""

    def __init__(self, *, default_rate: float = DEFAULT_RATE, prior_weight: float = PRIOR_WEIGHT,
                 fade_below: float = FADE_BELOW, min_interval: float = MIN_INTERVAL,
                 history_limit: int = HISTORY_LIMIT):
        _check_arguments(default_rate, prior_weight, fade_below, min_interval, history_limit)
        self.default_rate = default_rate
        self.prior_weight = prior_weight
        self.fade_below = fade_below
        self.min_interval = min_interval
        self.history_limit = history_limit
        self._slots: dict[str, int] = {}
        self._urls: list[str | None] = []
        self._histories: list[VisitHistory | None] = []
        self._validators: list[tuple[str | None, str | None] | None] = []
        self._free: list[int] = []
        self._size = 0  # slots [0, size) have been used
        self._pool_rate = default_rate
        self._multiplier = math.inf  # μ of the last allocation: w/λ ≤ μ gets no revisits
        for name, (dtype, fill) in _COLUMN_FILL.items():
            setattr(self, name, np.full(_INITIAL_CAPACITY, fill, dtype=dtype))

    # --- what the crawl tells the plan ------------------------------------------------------------

    def record_visit(self, url: str, now: float, changed: bool | None, *, weight: float | None = None,
                     etag: str | None = None, last_modified: str | None = None,
                     modified_at: float | None = None) -> bool:
        """A fetch of `url` at `now`; True if the plan tracks the page afterwards.

        Args:
            changed: None for a first visit (or any fetch with nothing to compare); True for a
                revisit that found new content (a 200 with another hash), False for one that did
                not (a 304, or the same hash). A revisit adds the interval since the last visit to
                the page's history and re-estimates its rate.
            weight: the page's relevance probability (a new page without one gets 1.0); below
                `fade_below` the page is dropped.
            etag, last_modified: the response's validators. A response with content replaces
                them (None clears one); a 304 or unchanged content keeps the old ones unless renewed.
            modified_at: the Last-Modified time as seconds on the crawl's clock, for a revisit
                that found a change: the rate estimate then knows how long the page stayed unchanged
                (ignored when it is not after the previous visit: the header does not explain the
                change).
        """
        if weight is not None and not weight >= self.fade_below:
            self.forget(url)
            return False
        slot = self._slots.get(url)
        if slot is None:
            slot = self._track(url)
            changed = None
            self._weight[slot] = 1.0 if weight is None else weight
        else:
            if changed is not None:
                self._add_interval(slot, now, changed, modified_at)
            if weight is not None:
                self._weight[slot] = weight
        self._set_validators(slot, changed, etag, last_modified)
        self._last_visit[slot] = self._handed_out[slot] = now
        self._known_change[slot] = np.nan
        self._rate[slot] = self._estimate(slot)
        return True

    def hint(self, url: str, now: float, changed_at: float | None = None, changefreq: str | None = None) -> bool:
        """A feed or sitemap speaks of `url`; True if that makes the page due now.

        `changed_at` (a feed entry's time, a sitemap's lastmod, on the crawl's clock): a change
        after the last visit is known, not guessed, so the page is due until a revisit is handed
        out. `changefreq` (a sitemap word) becomes the page's prior rate. A page the plan does not
        track is ignored (False).
        """
        slot = self._slots.get(url)
        if slot is None:
            return False
        rate = changefreq_rate(changefreq)
        if rate is not None:
            self._own_prior[slot] = rate
            self._rate[slot] = self._estimate(slot)
        if changed_at is not None and changed_at > self._last_visit[slot]:
            changed_at = min(changed_at, now)  # a server clock ahead of ours
            if not self._known_change[slot] <= changed_at:  # keep the first change: stale since then
                self._known_change[slot] = changed_at
        return bool(self._known_change[slot] > self._handed_out[slot])

    def set_weight(self, url: str, weight: float) -> bool:
        """A new relevance probability for a tracked page; False if the page is (now) not tracked."""
        if url not in self._slots:
            return False
        if not weight >= self.fade_below:
            self.forget(url)
            return False
        self._weight[self._slots[url]] = weight
        return True

    def forget(self, url: str) -> bool:
        """Stop tracking `url` (gone, faded, excluded); False if it was not tracked."""
        slot = self._slots.pop(url, None)
        if slot is None:
            return False
        for name, (_, fill) in _COLUMN_FILL.items():
            getattr(self, name)[slot] = fill
        self._urls[slot] = None
        self._histories[slot] = None
        self._validators[slot] = None
        self._free.append(slot)
        return True

    # --- what the plan tells the crawl ------------------------------------------------------------

    def reallocate(self, revisit_rate: float, policy: str = "optimal") -> None:
        """Recompute every page's revisit interval for `revisit_rate` revisits a second.

        Pages with no history of their own (and no changefreq) follow the pool prior: the
        geometric mean rate of the pages with at least `POOL_MIN_HISTORY` revisits. Then
        `allocate.optimal_intervals`, starting from the last multiplier: a few O(pages) numpy
        passes (about 10 ms for 10^5 pages when the multiplier moved little).

        `policy` "uniform" or "proportional" spreads the revisits as the baselines the optimal
        allocation is measured against do (`allocate.uniform_intervals`, `proportional_intervals`),
        over the pages tracked, never below `min_interval` either.
        """
        size = self._size
        self._follow_pool()
        if policy != "optimal":
            baseline = {"uniform": uniform_intervals, "proportional": proportional_intervals}[policy]
            tracked = np.flatnonzero(~np.isnan(self._last_visit[:size]))
            intervals = np.full(size, np.inf)
            intervals[tracked] = np.maximum(baseline(self._rate[tracked], revisit_rate), self.min_interval)
            self._interval[:size] = intervals
            return
        hint = self._multiplier if 0 < self._multiplier < math.inf else None
        allocation = optimal_intervals(self._rate[:size], self._weight[:size], revisit_rate,
                                       min_interval=self.min_interval, multiplier_hint=hint)
        self._interval[:size] = allocation.intervals
        self._multiplier = allocation.multiplier

    def take_due(self, now: float, limit: int, *, early: bool = False) -> list[tuple[str, str]]:
        """Up to `limit` pages to revisit now, each with why: [(url, why)].

        Pages with a known change come first (the heavier first: each second it waits costs its
        weight in freshness), then pages whose interval has passed, the most overdue in units of
        their interval first. A page handed out is not due again until its visit is recorded, a
        newer change is hinted, or another interval passes (a request that got lost).

        `early`: fill the places no due page takes with the pages nearest their revisit (in
        units of their interval), so a revisit capacity the crawl would otherwise leave unused is
        spent where it does most good. Due times arrive as unevenly as requests do: at a budget
        planned to the last revisit, some moments find nothing due and others a queue.
        """
        size = self._size
        if limit <= 0 or not size:
            return []
        hinted, scheduled = self._due_masks(now)
        if early:  # any page with revisits planned and none on its way
            waiting = (self._handed_out[:size] == self._last_visit[:size]) & np.isfinite(self._interval[:size])
            scheduled = scheduled | waiting
        due = np.flatnonzero(hinted | scheduled)
        if not len(due):
            return []
        urgent = hinted[due]
        with np.errstate(divide="ignore", invalid="ignore"):
            overdue = np.nan_to_num((now - self._handed_out[due]) / self._interval[due], nan=np.inf)
        order = np.lexsort((-np.where(urgent, self._weight[due], overdue), ~urgent))[:limit]
        taken = []
        for slot in due[order].tolist():
            taken.append((self._urls[slot], self._describe(slot, now)))
            self._handed_out[slot] = now
        return taken

    def handed_out(self, url: str, at: float) -> bool:
        """`url` handed out at `at` (another process's `take_due`, replayed): not due again until
        `take_due` would hand it out again. False if it is not tracked."""
        slot = self._slots.get(url)
        if slot is not None:
            self._handed_out[slot] = max(float(self._handed_out[slot]), at)
        return slot is not None

    def value(self, url: str, now: float) -> float:
        """What a revisit of `url` at `now` is worth, in the units of a relevant page found (the
        link learner's reward): its weight times the chance that it changed since the last visit,
        1 - e^{-λ t} (a hinted change: certain). 0 for a page not tracked. The crawl queues a
        revisit at this priority beside the links never fetched, so at a host both want, the
        better goes first."""
        slot = self._slots.get(url)
        if slot is None:
            return 0.0
        weight, last_visit = float(self._weight[slot]), float(self._last_visit[slot])
        if self._known_change[slot] > last_visit:
            return weight
        return weight * -math.expm1(-float(self._rate[slot]) * max(0.0, now - last_visit))

    def next_due_time(self) -> float | None:
        """When the next page falls due (a past time: one is due already); None: none is planned."""
        size = self._size
        if not size:
            return None
        handed_out = self._handed_out[:size]
        known = self._known_change[:size]
        due_at = np.where(known > handed_out, known, handed_out + self._interval[:size])
        soonest = float(due_at.min())
        return soonest if math.isfinite(soonest) else None

    def validators(self, url: str) -> dict[str, str]:
        """The conditional headers for a revisit of `url` (If-None-Match, If-Modified-Since)."""
        slot = self._slots.get(url)
        etag, last_modified = (self._validators[slot] if slot is not None else None) or (None, None)
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified
        return headers

    def explain(self, url: str, now: float) -> str | None:
        """What the plan knows and intends for `url` (None: not tracked), as `take_due` explains it."""
        slot = self._slots.get(url)
        return None if slot is None else self._describe(slot, now)

    def rate(self, url: str) -> float | None:
        """The page's estimated change rate (changes per second); None: not tracked."""
        slot = self._slots.get(url)
        return None if slot is None else float(self._rate[slot])

    def interval(self, url: str) -> float | None:
        """Seconds between the page's revisits from the last allocation (inf: none); None: not tracked."""
        slot = self._slots.get(url)
        return None if slot is None else float(self._interval[slot])

    def stats(self, now: float) -> dict[str, float]:
        """pages (tracked), revisited (with a finite interval), due (now), known_changes (hinted,
        not yet handed out), pool_rate (changes per second), expected_freshness (the weighted
        time-averaged freshness the current intervals give, at the estimated rates)."""
        size = self._size
        hinted, scheduled = self._due_masks(now)
        live = ~np.isnan(self._last_visit[:size])
        intervals, rates, weights = self._interval[:size], self._rate[:size], self._weight[:size]
        total_weight = float(weights.sum())
        fresh = float((weights * freshness(rates, intervals)).sum() / total_weight) if total_weight > 0 else 1.0
        return {
            "pages": len(self._slots),
            "revisited": int(np.count_nonzero(live & np.isfinite(intervals))),
            "due": int(np.count_nonzero(hinted | scheduled)),
            "known_changes": int(np.count_nonzero(hinted)),
            "pool_rate": self._pool_rate,
            "expected_freshness": fresh,
        }

    def __len__(self) -> int:
        return len(self._slots)

    def __contains__(self, url: object) -> bool:
        return url in self._slots

    # --- persistence ------------------------------------------------------------------------------

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for name in _COLUMN_FILL:  # no spare capacity in a checkpoint
            state[name] = state[name][:self._size].copy()
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    # --- internals --------------------------------------------------------------------------------

    def _track(self, url: str) -> int:
        if self._free:
            slot = self._free.pop()
            self._urls[slot] = url
        else:
            slot = self._size
            if slot >= len(self._rate):
                self._grow()
            self._size += 1
            self._urls.append(url)
            self._histories.append(None)
            self._validators.append(None)
        self._slots[url] = slot
        return slot

    def _grow(self) -> None:
        capacity = max(_INITIAL_CAPACITY, 2 * len(self._rate))
        for name, (dtype, fill) in _COLUMN_FILL.items():
            column = np.full(capacity, fill, dtype=dtype)
            old = getattr(self, name)
            column[:len(old)] = old
            setattr(self, name, column)

    def _add_interval(self, slot: int, now: float, changed: bool, modified_at: float | None) -> None:
        since_modified = None
        if changed and modified_at is not None and math.isfinite(modified_at):
            since_modified = now - min(modified_at, now)  # a server clock ahead of ours: changed just now
        history = self._histories[slot] or VisitHistory()
        if history.add(now - float(self._last_visit[slot]), changed, since_modified, limit=self.history_limit):
            self._histories[slot] = history
            self._revisits[slot] = len(history)

    def _set_validators(self, slot: int, changed: bool | None, etag: str | None, last_modified: str | None) -> None:
        if changed is False:  # the copy we hold is still current: its validators still hold
            old_etag, old_last_modified = self._validators[slot] or (None, None)
            etag, last_modified = etag or old_etag, last_modified or old_last_modified
        self._validators[slot] = (etag, last_modified) if etag or last_modified else None

    def _estimate(self, slot: int) -> float:
        own_prior = float(self._own_prior[slot])
        prior = self._pool_rate if math.isnan(own_prior) else own_prior
        return estimate_rate(self._histories[slot] or _NO_HISTORY, prior, self.prior_weight)

    def _follow_pool(self) -> None:
        """Set the pool prior from the pages with enough history; pages with none follow it."""
        size = self._size
        rates = self._rate[:size]
        settled = (self._revisits[:size] >= POOL_MIN_HISTORY) & (rates > 0)
        self._pool_rate = float(np.exp(np.log(rates[settled]).mean())) if settled.any() else self.default_rate
        live = ~np.isnan(self._last_visit[:size])
        unsettled = live & (self._revisits[:size] == 0) & np.isnan(self._own_prior[:size])
        rates[unsettled] = self._pool_rate

    def _due_masks(self, now: float) -> tuple[np.ndarray, np.ndarray]:
        """(a known change not yet handed out, the interval since the last hand-out has passed)."""
        size = self._size
        handed_out = self._handed_out[:size]
        hinted = self._known_change[:size] > handed_out
        scheduled = handed_out + self._interval[:size] <= now
        return hinted, scheduled

    def _describe(self, slot: int, now: float) -> str:
        timing = _timing(float(self._last_visit[slot]), float(self._known_change[slot]),
                         float(self._handed_out[slot]), float(self._interval[slot]), self._multiplier, now)
        return "; ".join((timing, self._rate_text(slot), f"weight {self._weight[slot]:.2f}"))

    def _rate_text(self, slot: int) -> str:
        rate = float(self._rate[slot])
        every = f"changes ~every {_span(1 / rate)}" if rate > 0 else "no change expected"
        history = self._histories[slot]
        if history is not None and len(history):
            return f"{every} ({history.changes} of {len(history)} revisits changed)"
        if not math.isnan(self._own_prior[slot]):
            return f"{every} (sitemap changefreq)"
        return f"{every} (the crawl's pages)"


def _timing(last_visit: float, known: float, handed_out: float, interval: float, multiplier: float,
            now: float) -> str:
    """A page's revisit timing for people: its hinted change, the revisit on its way, its interval."""
    if known > handed_out:
        return f"changed {_ago(now - known)} (hinted), after the last visit {_ago(now - last_visit)}"
    if handed_out > last_visit:
        return f"revisit sent {_ago(now - handed_out)}, every {_span(interval)}; last visit {_ago(now - last_visit)}"
    if math.isfinite(interval):
        return (f"revisit every {_span(interval)}: last visit {_ago(now - last_visit)}, "
                f"{(now - last_visit) / interval:.1f} intervals")
    if math.isfinite(multiplier):
        return f"not revisited (weight per change rate below the plan's cut-off); last visit {_ago(now - last_visit)}"
    return f"no revisits planned yet; last visit {_ago(now - last_visit)}"


def _span(seconds: float) -> str:
    """A duration for people: 45 s, 12 min, 3.4 h, 2.1 d."""
    if not math.isfinite(seconds):
        return "never"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    if seconds < 129600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _ago(seconds: float) -> str:
    return f"{_span(max(seconds, 0.0))} ago"
