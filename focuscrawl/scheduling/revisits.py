"""The continuous crawl's revisits (``FOCUS_RECRAWL``): the scheduler's side of the revisit plan.

``focuscrawl.freshness.RevisitPlan`` decides which pages to fetch again and when; this part turns
its due pages into requests and paces them:

- **a share of the requests.** While the frontier holds URLs never fetched, revisits take at most
  ``FOCUS_RECRAWL_SHARE`` of the requests released (counted from the first revisit on, so a young
  crawl is not owed a burst), so discovery is never starved; once it has none, revisits may take
  every request the budget and the hosts' delays allow. Revisits go through the frontier like any
  URL (one connection per host, its delay, robots.txt, the exclusion list, the budget), at the
  priority of their value (``RevisitPlan.value``: the page's relevance times the chance it
  changed, in the link learner's units of a relevant page found): at a host that discovery waits
  for, a revisit goes before the links worth less and after those worth more.
- **the revisit rate.** Every ``FOCUS_RECRAWL_REALLOCATE_SECONDS`` the plan's intervals are
  recomputed for the revisits a second the crawl can spend: the share of its measured request
  rate; when nothing else is queued, every page as often as ``FOCUS_RECRAWL_MIN_INTERVAL`` allows
  (the hosts' delays and the budget then pace them).
- **conditional requests.** A revisit carries the validators of the version it has (``If-None-Match``,
  ``If-Modified-Since``) and the hash of its text; a 304, or a 200 with the same text, is
  recorded as no change, without an item. ``record`` takes the spider's report of each visit.

``FOCUS_RECRAWL_POLICY`` chooses the intervals: ``optimal`` (Cho & Garcia-Molina's allocation
for the freshness of the pages weighted by relevance), or the two baselines it is measured
against, ``uniform`` (every page alike) and ``proportional`` (revisits in proportion to the
change rate).
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from email.utils import parsedate_to_datetime

from scrapy import Request

from focuscrawl import meta as M
from focuscrawl.freshness import RevisitPlan

logger = logging.getLogger(__name__)

#: revisits queued at once when nothing else is (the hosts' delays pace them, not the queue)
MAX_QUEUED = 64
#: the window of the request rate the revisit rate is a share of
RATE_WINDOW = 64


def http_date(value: str | bytes | None) -> float | None:
    """A Last-Modified header as epoch seconds; None when absent or not a date."""
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


class RequestRate:
    """Requests released a second, over the last ``window`` of them."""

    def __init__(self, window: int = RATE_WINDOW):
        self._times: deque[float] = deque(maxlen=window)

    def released(self, now: float) -> None:
        self._times.append(now)

    def released_between(self, since: float, now: float, n: int) -> None:
        """``n`` requests released after ``since`` and by ``now``, counted together: spread evenly."""
        n = min(n, self._times.maxlen or n)
        step = (now - since) / n if n else 0.0
        self._times.extend(now - step * (n - 1 - k) for k in range(n))

    def per_second(self, now: float) -> float:
        if len(self._times) < 2:
            return 0.0
        span = max(now - self._times[0], 1e-3)
        return (len(self._times) - 1) / span


#: where the baseline policies' revisits queue: ahead of every link, as robots.txt requests do
BASELINE_PRIORITY = float("inf")


class Revisits:
    """Paces the revisit plan's due pages into the frontier. ``clock`` is the wall clock (the
    plan compares its times with Last-Modified and feed dates)."""

    def __init__(self, plan: RevisitPlan, share: float, policy: str = "optimal", reallocate_every: float = 5.0,
                 stats=None, clock=time.time):
        if not 0.0 < share <= 1.0:
            raise ValueError("the revisit share must be in (0, 1]")
        self.plan = plan
        self.share = share
        self.policy = policy
        self.reallocate_every = reallocate_every
        self.stats = stats
        self.clock = clock
        self.queued: set[str] = set()  # revisits in the frontier or in flight
        self.rate = RequestRate()
        self.released = 0  # revisits released
        self.counted_from: int | None = None  # requests released when the first page was tracked
        self._kept: dict[str, Kept] = {}  # page -> what the crawl has of it
        self._reallocated_at = -math.inf
        self._crawl_count = 0  # the crawl's requests, as last read (``crawl_released``), and when
        self._crawl_read_at: float | None = None
        self.taken_at = 0.0  # when ``due_requests`` last handed pages out (the wall clock)

    def __getstate__(self):
        # a resumed crawl's frontier no longer holds the revisits this one had queued
        state = dict(self.__dict__)
        state.update(queued=set(), rate=RequestRate(), stats=None, clock=None, _reallocated_at=-math.inf,
                     _crawl_read_at=None)
        return state

    def __setstate__(self, state):
        state.setdefault("_crawl_count", 0)  # a checkpoint written before they were kept
        state.setdefault("_crawl_read_at", None)
        state.setdefault("taken_at", 0.0)
        self.__dict__.update(state)

    def adopt(self, restored: Revisits) -> None:
        """Take a checkpoint's plan and page hashes over (JOBDIR resume)."""
        self.plan, self._kept = restored.plan, restored._kept
        self.released, self.counted_from = restored.released, restored.counted_from

    def snapshot(self) -> dict:
        """What another process needs to go on with this plan (a shared crawl's next holder of
        it): unlike a JOBDIR checkpoint, the revisits queued too, since the crawl's frontier
        outlives this process and still holds them."""
        return {"plan": self.plan, "kept": self._kept, "released": self.released,
                "counted_from": self.counted_from, "queued": set(self.queued)}

    def take_up(self, snapshot: dict | None) -> None:
        """Go on from ``snapshot`` (``snapshot()``'s), or from nothing (None: an empty plan)."""
        if snapshot is None:
            self.plan = RevisitPlan(min_interval=self.plan.min_interval, fade_below=self.plan.fade_below)
            self._kept, self.released, self.counted_from, self.queued = {}, 0, None, set()
        else:
            self.plan, self._kept = snapshot["plan"], snapshot["kept"]
            self.released, self.counted_from = snapshot["released"], snapshot["counted_from"]
            self.queued = set(snapshot["queued"])
        self._reallocated_at = -math.inf

    def __len__(self) -> int:
        return len(self.plan)

    # --- the spider's reports -----------------------------------------------------------------------
    def record(self, url: str, status: int, *, revisit: bool, text_hash: str = "", weight: float | None = None,
               etag: str | None = None, last_modified: str | None = None, released: int = 0, depth: int = 0,
               kind: str = "page", at: float | None = None) -> bool | None:
        """A visit of ``url`` (canonical): its first fetch (``revisit`` False) or a revisit;
        ``kind``: "page", "feed" or "sitemap" (what the spider parses it as); ``at``: when (the
        wall clock; None: now). Returns whether a revisit found the page changed (None for a
        first visit or a page gone)."""
        now = self.clock() if at is None else at
        self.queued.discard(url)
        if revisit and (status in (404, 410) or 300 <= status < 400 and status != 304):
            self.plan.forget(url)  # gone, or moved: its new address is a page of its own
            self._kept.pop(url, None)
            self._count("gone")
            return None
        if status not in (200, 304) or (revisit and status == 200 and not text_hash):
            return None  # an error says nothing about change: the page stays due at its interval
        if not revisit:
            if self.plan.record_visit(url, now, None, weight=weight, etag=etag, last_modified=last_modified):
                self._kept[url] = Kept(text_hash, depth, kind)
                if self.counted_from is None:
                    self.counted_from = released
            return None
        kept = self._kept.get(url)
        changed = status == 200 and (kept is None or text_hash != kept.text_hash)
        modified_at = http_date(last_modified) if changed else None
        tracked = self.plan.record_visit(url, now, changed, weight=weight if changed else None, etag=etag,
                                         last_modified=last_modified, modified_at=modified_at)
        if not tracked:
            self._kept.pop(url, None)
            self._count("faded")
        elif changed and kept is not None:
            kept.text_hash = text_hash
        self._count("changed" if changed else "unchanged")
        if status == 304:
            self._count("not_modified")
        return changed

    def hint(self, url: str, changed_at: float | None = None, changefreq: str | None = None,
             at: float | None = None) -> bool:
        """A feed entry or a sitemap speaks of ``url`` (canonical), ``at`` (None: now): True when
        it makes a tracked page due."""
        due = self.plan.hint(url, self.clock() if at is None else at, changed_at=changed_at, changefreq=changefreq)
        if due:
            self._count("hinted")
        return due

    # --- the scheduler's side -----------------------------------------------------------------------
    def released_one(self, now_monotonic: float, revisit: bool) -> None:
        self.rate.released(now_monotonic)
        if revisit:
            self.released += 1

    def crawl_released(self, now_monotonic: float, total: int) -> None:
        """The crawl's requests so far, ``total``, read at ``now_monotonic``: the request rate the
        revisit rate is a share of, when other processes release requests too (their revisits
        are counted by ``revisit_released``)."""
        if total > self._crawl_count:
            if self._crawl_read_at is not None:  # the first reading: a count, no rate yet
                self.rate.released_between(self._crawl_read_at, now_monotonic, total - self._crawl_count)
            self._crawl_count = total
        self._crawl_read_at = now_monotonic

    def revisit_released(self) -> None:
        """A revisit left a scheduler (this process's or another's)."""
        self.released += 1

    def handed_out(self, url: str, at: float) -> None:
        """A revisit of ``url`` was queued at ``at`` (``due_requests`` of the plan's holder,
        replayed by its next one): queued until its visit, its leaving the downloader or its
        refusal is told."""
        if self.plan.handed_out(url, at):
            self.queued.add(url)

    def due_requests(self, now_monotonic: float, released: int, discovery_left: bool,
                     make_request) -> list[tuple[str, Request, float]]:
        """The revisits to queue now: as many due pages as the share allows (``released``: the
        crawl's requests so far; ``discovery_left``: the frontier holds URLs never fetched).
        ``make_request(url, kept, meta)`` builds each (the spider's ``revisit_request``), ``meta``
        the revisit's (``revisit_meta``); each as (its canonical URL, the request, its value: its
        priority in the frontier)."""
        if not len(self.plan):
            return []
        now = self.taken_at = self.clock()
        if now - self._reallocated_at >= self.reallocate_every:
            self._reallocate(now_monotonic, discovery_left)
            self._reallocated_at = now
        if discovery_left:
            since = released - (self.counted_from or 0)
            room = math.floor(self.share * (since + 1)) - self.released - len(self.queued)
        else:
            room = MAX_QUEUED - len(self.queued)
        if room <= 0:
            return []
        out = []
        # a baseline spends its whole share, round robin (pages taken early when none is due); the
        # optimal schedule only what is due, while discovery has URLs to offer
        early = not discovery_left or self.policy != "optimal"
        for url, why in self.plan.take_due(now, room, early=early):
            if url in self.queued:
                continue
            kept = self._kept.get(url) or Kept("", 0, "page")
            self.queued.add(url)
            # the baselines know nothing of relevance: a recrawler spends its share round the clock,
            # ahead of discovery (the share caps it); the optimal schedule weighs each revisit
            # against the links never fetched
            value = self.plan.value(url, now) if self.policy == "optimal" else BASELINE_PRIORITY
            out.append((url, make_request(url, kept, revisit_meta(why, kept, self.plan.validators(url))), value))
        if out:
            self._count("queued", len(out))
        return out

    def next_due(self, now_monotonic: float) -> float | None:
        """When the next revisit falls due, on the monotonic clock (None: none planned)."""
        due = self.plan.next_due_time()
        if due is None:
            return None
        return now_monotonic + max(0.0, due - self.clock())

    def left(self, url: str, at: float | None = None) -> None:
        """A revisit left the downloader ``at`` (None: now): no longer queued. Not due again until
        its visit is recorded, or another interval passed from then (it failed): its visit, told
        a moment later (after the spider's parsing; from another process, a second or two), finds
        the page not handed out again meanwhile."""
        self.queued.discard(url)
        self.plan.handed_out(url, self.clock() if at is None else at)

    def dropped(self, url: str) -> None:
        """A queued revisit will not be fetched (refused by robots.txt or the exclusion list)."""
        if url in self.queued:
            self.queued.discard(url)
            self.plan.forget(url)
            self._kept.pop(url, None)

    def explain(self, url: str) -> str | None:
        return self.plan.explain(url, self.clock())

    def _reallocate(self, now_monotonic: float, discovery_left: bool) -> None:
        rate = self.rate.per_second(now_monotonic)
        if discovery_left:
            revisit_rate = rate * self.share
        else:
            # revisits are all the crawl does: as many as the hosts' delays let through (the
            # request rate is then the revisits' own, and would only ever shrink)
            revisit_rate = max(rate, len(self.plan) / max(self.plan.min_interval, 1.0))
        self.plan.reallocate(revisit_rate, policy=self.policy)
        if self.stats is not None:
            for name, value in self.plan.stats(self.clock()).items():
                self.stats.set_value(f"focus/revisits/plan/{name}", value)

    def _count(self, name: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"focus/revisits/{name}", n)


class Kept:
    """What the crawl has of a page it revisits: the hash of its text (a 200 with the same text is
    no change), its depth (its new links' depth follows) and what it is parsed as."""

    __slots__ = ("text_hash", "depth", "kind")

    def __init__(self, text_hash: str, depth: int, kind: str):
        self.text_hash, self.depth, self.kind = text_hash, depth, kind

    def __getstate__(self):
        return self.text_hash, self.depth, self.kind

    def __setstate__(self, state):
        self.text_hash, self.depth, self.kind = state


def revisit_meta(why: str, kept: Kept, validators: dict) -> dict:
    """A revisit's meta: why (the request log, ``scrapy explain``), the hash of the text it has,
    sent as it is spelled (no alias re-spelling, no HEAD check), its validators as headers
    (``M.REVISIT_HEADERS``), a 304 passed to the spider's callback (a 4xx/5xx goes to its errback:
    Scrapy's HttpError middleware) and what it is parsed as (a feed, a sitemap or a page)."""
    meta = {M.REVISIT: why, M.REVISIT_HASH: kept.text_hash, M.REVISIT_HEADERS: validators, M.AS_LINKED: True,
            M.HEAD_CHECKED: True, "handle_httpstatus_list": [304], M.DEPTH: kept.depth}
    if kept.kind == "feed":
        meta[M.FEED] = True
    elif kept.kind == "sitemap":
        meta[M.SITEMAP] = True
    return meta


__all__ = ["Kept", "Revisits", "RequestRate", "http_date", "revisit_meta"]
