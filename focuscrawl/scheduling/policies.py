"""Two release policies (``focuscrawl.scheduling.release``): each is asked about a request the
frontier and the host gate let go, and answers the request to send (the same one, or another in
its place), or None to hold it back (it goes back to the frontier).

- ``Patience``: a request is a cost, and so is time. When a better URL waits at a host that
  will be free before a request sent now would be through the crawler, or (with a budget) the
  ready one is below what the rest of the budget can buy, wait for it rather than spend a request
  on a worse one whose host happens to be free (politeness is untouched: we only wait).
- ``HeadCheck``: a URL whose extension does not say "page" is checked with a HEAD request first,
  and skipped unless it is HTML (or a document focuscrawl reads, with FOCUS_DOCUMENTS).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from functools import partial
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.parsing.documents import DOCUMENT_TYPES
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.budget import SAMPLE_SIZE, BudgetCounts, BudgetCut
from focuscrawl.scheduling.load import CrawlerLoad, runnable_time
from focuscrawl.scheduling.release import Scheduling, refuse
from focuscrawl.urls import canonicalize, extension

logger = logging.getLogger(__name__)

#: what a wait may be priced in (FOCUS_PATIENCE_PRICE)
PRICES = ("budget", "time", "request")

#: extensions that name a page: no HEAD check needed before fetching
PAGE_EXTENSIONS = frozenset({"html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "cfm", "cgi", "pl"})


class Patience:
    """Hold a ready request for a better URL at a host free soon, when the wait costs the crawl
    nothing it pays for: time, or (a crawl with a budget) a request.

    Sending the ready request (priority p) and holding it for a better URL whose host is free
    ``t`` seconds from now spend the same one request; the better URL makes the better request.
    Two prices tell when the wait is worth it:

    - **Time** (every price): the crawler handles responses one at a time, as a single server with
      a queue: a request sent now is through it after its sojourn, ``cost / (1 - busy)``
      (``CrawlerLoad``: its own work, stretched by the work queued ahead of it). A URL scoring
      ``margin`` more (priorities are noisy: only a clear gain is worth a wait) at a host free
      within that time is handled as soon as the worse one would have been, so waiting for it
      costs no time. A crawler bound by its own work (a fast server) has a long sojourn and goes
      best-first; one bound by its hosts' delays or their latency (a real web) has one of a few
      milliseconds and sends what is ready. Holding lowers the measured load, so the horizon
      shrinks while it holds: this price cannot stall a crawl.
    - **Budget** (``price`` 'budget' and a FOCUS_BUDGET): of its remaining requests, a crawl will
      spend one on every URL among the best the rest of its budget can buy (``budget.BudgetCut``:
      the best R / (F + g R) of the frontier). Sending one of those now costs nothing; sending a
      URL below them spends a request one of them would have had. So a URL below the cut is held
      while one at or above it is at a host free within ``patience`` seconds, however fast the
      crawler or the web: the order stops depending on the machine. A crawl whose good URLs are
      all behind a long Crawl-delay (past ``patience``) sends what is ready, and one whose budget
      covers its frontier and what it will find (the cut is -inf) holds only by time.
    - ``price`` 'request': a request is the price whatever the budget: hold for a URL scoring
      ``margin`` more at a host free within ``patience`` seconds.

    A host with a request in flight counts as free at the earliest its delay after now (its
    response ends later): one with a longer delay (Crawl-delay, back-off) is waited for less. A
    seed (depth 0) is never held: the user chose it as a way into the topic, and holding seeds
    while the first site's rich links kept coming left the other sites, and all they lead to,
    waiting for hundreds of requests."""

    def __init__(self, frontier: Frontier, gate: HostGate, patience: float, margin: float,
                 load: CrawlerLoad | None = None, work: Callable[[], float] = runnable_time,
                 price: str = "time", budget: BudgetCounts | None = None,
                 sample: Callable[[int, random.Random], list[float]] | None = None,
                 rng: random.Random | None = None, stats=None):
        if price not in PRICES:
            raise ValueError(f"patience is priced in {' or '.join(PRICES)}, not {price!r}")
        self.frontier = frontier
        self.gate = gate
        self.patience = patience
        self.margin = margin
        self.price = price
        self.load = load if load is not None else CrawlerLoad()
        self.work = work  # the crawler's seconds of work so far
        # the budget's price: its counts, and the cut they and a sample of the frontier give
        # (``sample(k, rng)``: the priorities of k entries of the crawl's frontier drawn at random)
        self.budget = (budget if price == "budget" and budget is not None and budget.budget > 0
                       and sample is not None else None)
        self.sample = sample
        self.cut = BudgetCut(budget.budget) if self.budget is not None else None
        self.rng = rng if rng is not None else random.Random(0)
        self.stats = stats  # Scrapy's stats collector: the holds the budget made are counted

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> Patience:
        config = scheduler.config
        if config.patience <= 0:
            raise NotConfigured
        budget = budget_counts(scheduler) if config.budget > 0 else None
        sample = getattr(scheduler.backend, "priority_sample", None)
        if budget is not None and config.patience_price == "budget" and sample is None:
            logger.warning("FOCUS_PATIENCE_PRICE=budget: the crawl's backend draws no sample of its frontier's "
                           "priorities (priority_sample); patience is priced by time")
        # the backend's work so far: a shared crawl's worker also works while it waits for Redis
        return cls(scheduler.frontier, scheduler.gate, config.patience, config.patience_margin,
                   work=scheduler.backend.work_time, price=config.patience_price, budget=budget,
                   sample=sample, stats=scheduler.stats)

    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None:
        """A request went out (robots.txt fetches too): the load's measure moves on (only a wait
        priced by time reads it)."""
        if self.price != "request":
            self.load.released(now, self.work())

    def horizon(self, now: float) -> float:
        """How long a wait for a clearly better URL is taken now, in seconds: as long as it costs
        no time ('time', 'budget'), or ``patience`` ('request')."""
        if self.price == "request":
            return self.patience
        return min(self.patience, self.load.sojourn(now, self.work()))

    def budget_cut(self) -> float:
        """The score the rest of the budget can buy (-inf: no budget, or it covers everything);
        the frontier's sample drawn again when due."""
        cut, budget = self.cut, self.budget
        if cut is None:
            return float("-inf")
        queued = len(self.frontier)
        released = budget.released()
        if cut.due(released, queued):
            cut.resample(self.sample(SAMPLE_SIZE, self.rng), released, budget.admitted())
        return cut.cut(budget.budget - budget.crawl_released(), queued)

    def review(self, host: str, entry: Entry, request: Request, now: float) -> Request | None:
        if request.meta.get(M.DEPTH) == 0:
            return request
        if self.cut is not None:
            cut = self.budget_cut()
            if entry.priority < cut and self._best_soon(now, self.patience) >= cut:
                if self.stats is not None:
                    self.stats.inc_value("focus/patience/held_by_budget")
                return None
        horizon = self.horizon(now)
        if horizon <= 0:
            return request
        return None if self._best_soon(now, horizon) > entry.priority + self.margin else request

    def _best_soon(self, now: float, horizon: float) -> float:
        return self.frontier.best_soon(now, horizon, self.gate.soon_free(now, horizon))


def budget_counts(scheduler: Scheduling) -> BudgetCounts:
    """The scheduler's counts of a budget: requests released here and by the whole crawl (the
    backend's: a shared crawl's every worker), new URLs admitted here (its stats)."""
    stats, backend = scheduler.stats, scheduler.backend
    return BudgetCounts(scheduler.config.budget, lambda: backend.released_here,
                        lambda: stats.get_value("focus/frontier/enqueued", 0), backend.crawl_released)


class HeadCheck:
    """``refuse(request, reason)`` reports a URL that is not HTML; ``dropped(canonical_url)``
    forgets it as a request in flight."""

    def __init__(self, stats, refuse: Callable[[Request, str], object], dropped: Callable[[str], object],
                 documents: bool = False):
        self.stats = stats
        self.refuse = refuse
        self.dropped = dropped
        self.documents = documents  # PDF and office documents are read too (FOCUS_DOCUMENTS)

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> HeadCheck:
        if not scheduler.config.head_check:
            raise NotConfigured
        return cls(crawler.stats, partial(refuse, crawler), scheduler.forget, documents=scheduler.config.documents)

    def review(self, host: str, entry: Entry, request: Request, now: float) -> Request | None:
        meta = request.meta
        if (request.method != "GET" or meta.get(M.HEAD_CHECKED) or meta.get(M.SITEMAP) or meta.get(M.FEED)
                or urlsplit(request.url).path.endswith("/") or extension(request.url) in PAGE_EXTENSIONS):
            return request
        head = request.replace(method="HEAD", callback=self.head_checked, errback=self.head_failed)
        head.meta[M.HEAD_FOR] = request
        self.stats.inc_value("focus/head/requests")
        return head

    def head_checked(self, response):
        original = response.meta[M.HEAD_FOR]
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1").lower()
        media_type = content_type.split(";", 1)[0].strip()
        if (response.status < 400 and content_type and "html" not in content_type
                and not (self.documents and media_type in DOCUMENT_TYPES)):
            self.stats.inc_value("focus/head/not_html")
            self.refuse(original, "head_not_html")
            self.dropped(canonicalize(original.url))
            return None
        return self.get_after_head(original)

    def head_failed(self, failure):
        return self.get_after_head(failure.request.meta[M.HEAD_FOR])

    @staticmethod
    def get_after_head(original: Request) -> list[Request]:
        """The GET, back through the frontier, marked so that it is not checked again."""
        original.meta[M.HEAD_CHECKED] = True
        original.dont_filter = True  # already in the seen set: it was admitted once
        return [original]
