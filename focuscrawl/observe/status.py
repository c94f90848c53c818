"""The crawl's live figures, gathered in one place: what the progress line shows and what the web
console serves.

``ProgressCounter`` is the core, free of Scrapy (its clock passed in): requests, pages, relevant
pages found, harvest overall and over the recent requests, a bounded harvest curve, each host's
yield and waste, the latest relevant pages. ``CrawlStatus`` is its adapter: one per crawler
(``CrawlStatus.of(crawler)``), fed by Scrapy's and focuscrawl's signals, and reading what waits
through the ``CrawlView`` the scheduler announces when it opens (``focuscrawl.crawl_view``).

What counts:

- ``requests``: requests sent to servers, robots.txt fetches not counted: what ``FOCUS_BUDGET``
  counts (a HEAD check and the GET after it are two; a render is one), and what harvest is
  measured against (``focuscrawl/replay/metrics.py``);
- ``pages``: responses scored as pages (the stat ``focus/pages/scored``);
- ``relevant``: relevant pages found, duplicates not counted: the items the crawl exports
  (``focus/items/relevant``);
- a host's ``waste``: its requests that bought nothing (errors, unscored answers) and its
  duplicates, as the learner counts waste.

Every method of ``CrawlStatus`` is cheap enough to call every few seconds and never raises: a
figure that cannot be known (a shared frontier's queue in Redis, a scheduler that is not
focuscrawl's) is None or left out, and a failure is logged once and answered with what is known.
"""

from __future__ import annotations

import functools
import heapq
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.urls import host_key

logger = logging.getLogger(__name__)

#: points the harvest curve keeps at most, however long the crawl (thinned evenly)
CURVE_POINTS = 2000
#: relevant pages kept for ``latest_relevant``
LATEST_KEPT = 200
#: how long a pass over the frontier's hosts (states, best URLs) is reused: a frontier may know
#: 10^5 hosts, and several callers may ask within a second
HOST_PASS_SECONDS = 0.5
#: hosts whose best URL ``top_urls`` chooses from (so it gives at most this many URLs)
TOP_SAMPLE = 100

# a host's state (``host_state``)
ACTIVE, WAITING, READY, BLOCKED, IDLE = "active", "waiting", "ready", "blocked", "idle"
HOST_STATES = (ACTIVE, WAITING, READY, BLOCKED, IDLE)


# --- the core: counting, free of Scrapy ------------------------------------------------------------
class HostTally:
    """What one host gave the crawl: requests sent, pages fetched (answered or failed), relevant
    pages found, waste (errors, unscored answers, duplicates)."""

    __slots__ = ("requests", "fetched", "relevant", "waste")

    def __init__(self) -> None:
        self.requests = 0
        self.fetched = 0
        self.relevant = 0
        self.waste = 0

    def value(self) -> float:
        """Its yield: relevant pages per page fetched (0 before any)."""
        return self.relevant / self.fetched if self.fetched else 0.0


class Curve:
    """The harvest curve, at most ``max_points`` points however long the crawl: a point every
    ``stride`` requests, and when the points fill up, every other one is dropped and the stride
    doubles, so the points stay evenly spaced in requests from the first to the latest."""

    def __init__(self, max_points: int = CURVE_POINTS) -> None:
        if max_points < 4:
            raise ValueError("a curve keeps at least 4 points")
        self.max_points = max_points
        self.stride = 1
        self.points: list[tuple[int, float, int]] = [(0, 0.0, 0)]  # (requests, seconds, relevant)

    def add(self, requests: int, seconds: float, relevant: int) -> None:
        if requests % self.stride:
            return
        self.points.append((requests, seconds, relevant))
        if len(self.points) >= self.max_points:  # one place left for the current point
            self.stride *= 2
            self.points = [p for p in self.points if p[0] % self.stride == 0]

    def current(self, requests: int, seconds: float, relevant: int) -> list[dict]:
        """The points, the last one as of now."""
        points = self.points
        if points[-1][0] == requests:
            points = points[:-1]
        return [{"requests": r, "seconds": round(s, 3), "relevant": f} for r, s, f in points] + [
            {"requests": requests, "seconds": round(seconds, 3), "relevant": relevant}]


class ProgressCounter:
    """The crawl's figures as events arrive: ``request``, ``page``, ``found``, ``duplicate``,
    ``finish``. ``window``: the recent requests ``harvest_recent`` and the ETA are measured over."""

    def __init__(self, window: int = DEFAULTS.progress_window, curve_points: int = CURVE_POINTS,
                 latest_kept: int = LATEST_KEPT, clock: Callable[[], float] = time.monotonic) -> None:
        if window < 1:
            raise ValueError("the recent window is at least one request")
        self.window = window
        self.clock = clock
        self.started = clock()
        self.ended: float | None = None
        self.requests = 0
        self.pages = 0
        self.relevant = 0
        # (time, relevant found so far) as each of the last ``window`` requests, and the one before
        # them, was sent: the relevant pages found since the first of them, their rate since the one before
        self._recent: deque[tuple[float, int]] = deque(maxlen=window + 1)
        self._page_times: deque[float] = deque(maxlen=window + 1)  # as each of the last pages was scored
        self._curve = Curve(curve_points)
        self.hosts: dict[str, HostTally] = {}
        self.latest: deque[dict] = deque(maxlen=latest_kept)

    # --- events -------------------------------------------------------------------------------
    def start(self) -> None:
        """The crawl starts now (the counter may be made before the crawler opens its spider)."""
        if not self.requests:
            self.started = self.clock()

    def finish(self) -> None:
        if self.ended is None:
            self.ended = self.clock()

    def _host(self, host: str) -> HostTally:
        tally = self.hosts.get(host)
        if tally is None:
            tally = self.hosts[host] = HostTally()
        return tally

    def request(self, host: str) -> None:
        """A request was sent to ``host``."""
        now = self.clock()
        self.requests += 1
        self._host(host).requests += 1
        self._recent.append((now, self.relevant))
        self._curve.add(self.requests, now - self.started, self.relevant)

    def page(self, host: str, scored: bool) -> None:
        """A request to ``host`` was answered or failed; ``scored``: its answer was scored as a
        page (else it bought nothing: an error, an answer that is no page)."""
        tally = self._host(host)
        tally.fetched += 1
        if scored:
            self.pages += 1
            self._page_times.append(self.clock())
        else:
            tally.waste += 1

    def found(self, host: str, page: dict) -> None:
        """A relevant page, not a duplicate: ``page`` has url, title, score, fetched_at."""
        self.relevant += 1
        self._host(host).relevant += 1
        self.latest.append(page)

    def duplicate(self, host: str) -> None:
        """A page of ``host`` duplicated one the crawl had."""
        self._host(host).waste += 1

    # --- figures ------------------------------------------------------------------------------
    def now(self) -> float:
        return self.ended if self.ended is not None else self.clock()

    def elapsed(self) -> float:
        return max(0.0, self.now() - self.started)

    def harvest(self) -> float | None:
        return self.relevant / self.requests if self.requests else None

    def harvest_recent(self) -> float | None:
        """Relevant pages found per request over the last ``window`` requests (all of them while
        there are fewer): found since the first of them was sent."""
        if not self.requests:
            return None
        if self.requests >= self.window:
            return (self.relevant - self._recent[-self.window][1]) / self.window
        return self.relevant / self.requests

    def request_rate(self) -> float | None:
        """Requests per second over the last ``window`` requests (None before any)."""
        if not self.requests:
            return None
        if self.requests > self.window:
            since, count = self._recent[0][0], self.window
        else:
            since, count = self.started, self.requests
        span = self.now() - since
        return count / span if span > 0 else None

    def pages_per_second(self) -> float:
        """Pages scored per second over the last ``window`` pages (0 before any)."""
        if not self.pages:
            return 0.0
        if self.pages > self.window:
            since, count = self._page_times[0], self.window
        else:
            since, count = self.started, self.pages
        span = self.now() - since
        return count / span if span > 0 else 0.0

    def eta(self, budget: int | None, done: int | None = None, rate: float | None = None) -> float | None:
        """Seconds left to ``budget`` requests at the recent request rate (``done``, ``rate``: the
        requests counted against the budget and their rate, when not this counter's own, as in a
        shared crawl). None without a budget or before a rate; 0 once spent or finished."""
        return eta_seconds(budget, self.requests if done is None else done,
                           self.request_rate() if rate is None else rate, self.ended is not None)

    def curve(self) -> list[dict]:
        return self._curve.current(self.requests, self.elapsed(), self.relevant)

    def best_hosts(self, limit: int) -> list[tuple[str, HostTally]]:
        """The ``limit`` hosts most useful so far: most relevant pages, then most fetched."""
        return heapq.nsmallest(limit, self.hosts.items(), key=lambda kv: (-kv[1].relevant, -kv[1].fetched, kv[0]))

    def latest_relevant(self, n: int) -> list[dict]:
        return list(self.latest)[-n:][::-1] if n > 0 else []


def eta_seconds(budget: int | None, done: int, rate: float | None, finished: bool = False) -> float | None:
    """Seconds left to ``budget`` requests at ``rate`` per second (see ``ProgressCounter.eta``)."""
    if not budget:
        return None
    if finished or done >= budget:
        return 0.0
    if not rate:
        return None
    return (budget - done) / rate


def host_state(*, in_flight: bool, queued: int | None, ready_at: float | None, blocked: bool, now: float) -> str:
    """A host as the crawl sees it: ``active`` (a request in flight, or its robots.txt being
    applied), ``idle`` (nothing queued), ``blocked`` (URLs queued, but the host cannot be
    contacted for more than its delay: robots.txt unreachable, backed off after 429/503 or
    network errors, excluded), ``waiting`` (URLs queued, its delay, Crawl-delay or Retry-After not
    passed yet), ``ready`` (URLs queued, free now). ``queued`` None: not known (a shared frontier),
    taken as some; ``ready_at`` None: not known, taken as now."""
    if in_flight:
        return ACTIVE
    if queued == 0:
        return IDLE
    if blocked:
        return BLOCKED
    if ready_at is not None and ready_at > now:
        return WAITING
    return READY


# --- the adapter: one per crawler, fed by signals -------------------------------------------------
@dataclass
class _HostPass:
    """One pass over the frontier's hosts, reused for ``HOST_PASS_SECONDS``."""

    at: float
    counts: dict[str, int | None]
    top: list[tuple[bytes, str, Any]]  # (record key, host, queue) of the best hosts' best records


def _never_raises(default: Callable[[], Any]):
    """A method of CrawlStatus answers ``default()`` rather than raise: the progress line and
    the console must outlive a figure that cannot be read (Redis gone, a part not built)."""

    def wrap(method):
        @functools.wraps(method)
        def safe(self, *args, **kwargs):
            try:
                return method(self, *args, **kwargs)
            except Exception:  # noqa: BLE001 - an observer must never stop the crawl it watches
                first = method.__name__ not in self._failed
                self._failed.add(method.__name__)
                logger.log(logging.WARNING if first else logging.DEBUG,
                           "crawl status: %s failed; answering with what is known", method.__name__, exc_info=True)
                return default()
        return safe
    return wrap


class CrawlStatus:
    """The live figures of one crawl (see the module docstring). Get it with ``of(crawler)``,
    in an extension's ``from_crawler`` (before the crawl starts, so no event is missed): one
    instance per crawler, whoever asks, connected to the signals once.

    Called from the reactor's thread (an extension, a Twisted web resource); the frontier is
    read, never changed."""

    #: the crawler's attribute that holds its status: it lives as long as the crawler (a weak-keyed
    #: table would not do, the status refers to its crawler), and the signals hold it weakly
    ATTRIBUTE = "_focus_crawl_status"

    @classmethod
    def of(cls, crawler) -> CrawlStatus:
        status = getattr(crawler, cls.ATTRIBUTE, None)
        if status is None:
            status = cls(crawler)
            setattr(crawler, cls.ATTRIBUTE, status)
        return status

    def __init__(self, crawler, config: FocusConfig | None = None, clock: Callable[[], float] = time.monotonic):
        from scrapy import signals

        from focuscrawl import signals as focus_signals

        self.crawler = crawler
        if config is None:
            try:
                config = FocusConfig.from_settings(crawler.settings)
            except ConfigError:
                config = DEFAULTS  # the crawl itself reports the bad setting
        self.config = config
        self.clock = clock
        self.counter = ProgressCounter(window=config.progress_window, clock=clock)
        self.view = None  # the scheduler's CrawlView, once it opened (none: not focuscrawl's scheduler)
        self._pass: _HostPass | None = None
        self._failed: set[str] = set()
        connect = crawler.signals.connect
        connect(self._on_opened, signal=signals.spider_opened)
        connect(self._on_closed, signal=signals.spider_closed)
        connect(self._on_request, signal=signals.request_reached_downloader)
        connect(self._on_page_scored, signal=focus_signals.page_scored)
        connect(self._on_item_scraped, signal=signals.item_scraped)
        connect(self._on_item_dropped, signal=signals.item_dropped)
        connect(self._on_crawl_view, signal=focus_signals.crawl_view)

    # --- signals ------------------------------------------------------------------------------
    def _on_opened(self, spider=None):
        self.counter.start()

    def _on_crawl_view(self, view, **kwargs):
        # kept once announced, so a finished crawl's frontier can still be read
        self.view = view

    def _on_closed(self, spider=None, reason=None):
        self.finish()

    def finish(self) -> None:
        """The crawl is over: elapsed time stops (idempotent), and the hosts are looked at afresh."""
        if self.counter.ended is None:
            self.counter.finish()
            self._pass = None

    def _on_request(self, request, spider=None):
        from focuscrawl.meta import HOST, ROBOTS_FOR

        meta = request.meta
        if meta.get(ROBOTS_FOR):
            return
        self.counter.request(meta.get(HOST) or host_key(request.url))

    def _on_page_scored(self, request, response=None, page=None, links=None, hit=None, spider=None, **kwargs):
        if page is None:
            return
        self.counter.page(host_key(page.url or request.url), page.score is not None)

    def _on_item_scraped(self, item, response=None, spider=None):
        get = _getter(item)
        if not get("relevant") or get("duplicate_of"):
            return  # another pipeline setup lets every page through: only the harvest counts
        url = get("final_url") or get("url") or ""
        self.counter.found(host_key(get("url") or url), {
            "url": url, "title": get("title") or "", "score": get("score"), "fetched_at": get("fetched_at") or ""})

    def _on_item_dropped(self, item, response=None, exception=None, spider=None):
        get = _getter(item)
        if get("duplicate_of") and not get("restored"):
            self.counter.duplicate(host_key(get("url") or get("final_url") or ""))

    # --- the scheduler's view -----------------------------------------------------------------
    def _frontier_size(self) -> int | None:
        return self.view.frontier_size() if self.view is not None else None

    def _host_pass(self) -> _HostPass:
        """Host states counted and each host's best record, in one pass over the frontier's hosts
        (O(hosts), not O(URLs)); reused for ``HOST_PASS_SECONDS``."""
        now = self.clock()
        if self._pass is not None and now - self._pass.at < HOST_PASS_SECONDS:
            return self._pass
        view = self.view
        counts: dict[str, int | None] = {state: 0 for state in HOST_STATES}
        top: list[tuple[bytes, str, Any]] = []
        if view is None:
            counts = {state: None for state in HOST_STATES}
        else:
            busy = view.busy()
            slots = view.host_queues()
            if slots is None:
                counts[ACTIVE] = len(busy)
                counts[BLOCKED] = sum(1 for host in view.known_hosts() - busy if view.blocked(host, now))
                counts[WAITING] = counts[READY] = counts[IDLE] = None
            else:
                from focuscrawl.frontier.records import KEY

                best: list[tuple[bytes, str, Any]] = []
                for name, (ready_at, q) in slots.items():
                    record = q.top
                    state = host_state(in_flight=name in busy, queued=0 if record is None else 1,
                                       ready_at=ready_at, blocked=record is not None and view.blocked(name, now),
                                       now=now)
                    counts[state] += 1
                    if record is not None:
                        best.append((record[:KEY], name, q))
                top = heapq.nsmallest(TOP_SAMPLE, best, key=lambda row: row[0])
                for host in busy - slots.keys():  # a robots.txt fetched for a host with nothing queued yet
                    counts[ACTIVE] += 1
        self._pass = _HostPass(now, counts, top)
        return self._pass

    # --- the contract -------------------------------------------------------------------------
    @_never_raises(dict)
    def snapshot(self) -> dict:
        """The crawl's figures now, JSON-able: elapsed (s), requests, pages, relevant, harvest,
        harvest_recent, recent_window, pages_per_second, frontier, hosts {active, waiting,
        blocked, ready, idle}, budget, eta_seconds, finished; in a shared crawl also shared
        (True) and crawl_requests (every worker's requests, which the budget counts)."""
        counter = self.counter
        budget = self.config.budget or None
        view = self.view
        out: dict[str, Any] = {
            "elapsed": round(counter.elapsed(), 3),
            "requests": counter.requests,
            "pages": counter.pages,
            "relevant": counter.relevant,
            "harvest": _rounded(counter.harvest()),
            "harvest_recent": _rounded(counter.harvest_recent()),
            "recent_window": counter.window,
            "pages_per_second": round(counter.pages_per_second(), 3),
            "frontier": self._frontier_size(),
            "hosts": {state: None for state in (ACTIVE, WAITING, BLOCKED)},
            "budget": budget,
            "eta_seconds": None,
            "finished": counter.ended is not None,
        }
        try:
            out["hosts"] = self._host_pass().counts
        except Exception:  # noqa: BLE001 - see _never_raises: the counts are left unknown
            logger.debug("crawl status: host states unknown", exc_info=True)
        if view is not None and view.shared:
            out["shared"] = True
            done = view.crawl_requests()  # cached by the shared crawl: no Redis call each time
            out["crawl_requests"] = done
            eta = counter.eta(budget, done=done)  # this worker's rate: an upper bound
        else:
            eta = counter.eta(budget)
        out["eta_seconds"] = None if eta is None else round(eta, 1)
        return out

    @_never_raises(list)
    def curve(self) -> list[dict]:
        """The harvest curve: {requests, seconds, relevant} points, evenly spaced in requests, at
        most ``CURVE_POINTS``; the last one is now."""
        return self.counter.curve()

    @_never_raises(list)
    def hosts(self, limit: int = 50) -> list[dict]:
        """The ``limit`` most useful hosts so far (relevant pages, then pages fetched): host,
        state, fetched, relevant, yield, waste, delay (s, the gate's gap between two requests),
        queued (URLs in the frontier; None when not known), requests, and retry_in (s) for a
        blocked host when known."""
        view = self.view
        slots = view.host_queues() if view is not None else None
        busy = view.busy() if view is not None else set()
        now = self.clock()
        out = []
        for host, tally in self.counter.best_hosts(limit):
            row: dict[str, Any] = {"host": host, "state": None, "fetched": tally.fetched, "relevant": tally.relevant,
                                   "yield": round(tally.value(), 4), "waste": tally.waste, "delay": None,
                                   "queued": None, "requests": tally.requests}
            if view is not None:
                slot = slots.get(host) if slots is not None else None
                if slot is not None:
                    queued = slot[1].size()
                elif slots is not None:
                    queued = 0
                else:
                    queued = view.queued(host)
                blocked = view.blocked(host, now)
                delay = view.delay(host)
                row["queued"] = queued
                row["delay"] = round(delay, 3) if delay is not None else None
                row["state"] = host_state(in_flight=host in busy, queued=queued,
                                          ready_at=slot[0] if slot is not None else None, blocked=blocked, now=now)
                if blocked:
                    retry = view.retry_in(host, now)
                    row["retry_in"] = round(retry, 1) if retry is not None else None
            out.append(row)
        return out

    @_never_raises(list)
    def top_urls(self, n: int = 20) -> list[dict]:
        """The frontier's best ``n`` URLs now (the best URL of each of the best hosts): url, host,
        priority (as queued), why (the features behind it, as ``scrapy explain`` gives them for a
        waiting URL); at most ``TOP_SAMPLE``. Empty for a shared frontier (its queues are in Redis)."""
        view = self.view
        if view is None or view.host_queues() is None:
            return []
        out = []
        for _key, host, q in self._host_pass().top:
            if len(out) >= n:
                break
            waiting = view.waiting(q)  # None: fetched since the pass, or a robots.txt
            if waiting is not None:
                out.append({"url": waiting["url"], "host": host, "priority": round(waiting["priority"], 4),
                            "why": waiting["why"]})
        return out

    @_never_raises(list)
    def latest_relevant(self, n: int = 20) -> list[dict]:
        """The ``n`` relevant pages found last, newest first: url, title, score, fetched_at."""
        return self.counter.latest_relevant(n)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _getter(item) -> Callable[[str], Any]:
    """A field of a PageItem, a dict or any item (missing: None)."""
    if isinstance(item, dict):
        return item.get
    return lambda name: getattr(item, name, None)


__all__ = ["CrawlStatus", "Curve", "HOST_STATES", "HostTally", "ProgressCounter", "eta_seconds", "host_state"]
