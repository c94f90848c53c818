"""Two release policies (``focuscrawl.scheduling.release``): each is asked about a request the
frontier and the host gate let go, and answers the request to send (the same one, or another in
its place), or None to hold it back (it goes back to the frontier).

- ``Patience``: a request is a cost, and so is time. When a clearly better URL waits at a host
  that will be free before a request sent now would be through the crawler, wait for it rather
  than spend a request on a worse one whose host happens to be free (politeness is untouched: we
  only wait).
- ``HeadCheck``: a URL whose extension does not say "page" is checked with a HEAD request first,
  and skipped unless it is HTML (or a document focuscrawl reads, with FOCUS_DOCUMENTS).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.parsing.documents import DOCUMENT_TYPES
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.load import CrawlerLoad, runnable_time
from focuscrawl.scheduling.release import Scheduling, refuse
from focuscrawl.urls import canonicalize, extension

#: extensions that name a page: no HEAD check needed before fetching
PAGE_EXTENSIONS = frozenset({"html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "cfm", "cgi", "pl"})


class Patience:
    """Hold a request only while waiting for a clearly better URL costs the crawl no time.

    Sending the ready request (priority p) and holding it for a URL of priority above p +
    ``margin`` (priorities are noisy: only a clear gain is worth a wait) whose host is free ``t``
    seconds from now spend the same one request; the better URL makes the better request. What
    they may differ in is time. The crawler handles responses one at a time, as a single server
    with a queue: a request sent now is through it after its sojourn, ``cost / (1 - busy)``
    (``CrawlerLoad``: its own work, stretched by the work queued ahead of it). A better URL ready
    within that time is handled as soon as the worse one would have been, so waiting for it costs
    the crawl nothing; waiting longer leaves the crawl idle while work is ready, and the work the
    ready hosts would have done in the wait is lost. So hold when the better URL's host is free
    within the sojourn (and ``patience`` seconds at most).

    The two cases the rule must tell apart follow from it. A crawler whose own work is its
    bottleneck (a fast server, no delays: busy near 1) has a long sojourn, waits for good hosts
    free again within a few requests' work, and spends its requests best-first. One bound by its
    hosts' delays (a real web, a second between requests: busy near 0) has a sojourn of about one
    request's work, a few milliseconds, and waits only for a host that is free by then: it sends
    what is ready. Holding lowers the measured load (the crawler idles), so the horizon shrinks
    while it holds: patience cannot stall a crawl. Before two requests have gone nothing is held.

    A host with a request in flight counts as free at the earliest its delay after now (its
    response ends later): one with a longer delay (Crawl-delay, back-off) is waited for less. A
    seed (depth 0) is never held: the user chose it as a way into the topic, and holding seeds
    while the first site's rich links kept coming left the other sites, and all they lead to,
    waiting for hundreds of requests."""

    def __init__(self, frontier: Frontier, gate: HostGate, patience: float, margin: float,
                 load: CrawlerLoad | None = None, work: Callable[[], float] = runnable_time, priced: bool = True):
        self.frontier = frontier
        self.gate = gate
        self.patience = patience
        self.margin = margin
        # False: a request is the price (FOCUS_PATIENCE_PRICED): wait up to ``patience`` whatever
        # the crawler's load, for more relevant pages per request and fewer per minute
        self.priced = priced
        self.load = load if load is not None else CrawlerLoad()
        self.work = work  # the crawler's seconds of work so far

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> Patience:
        config = scheduler.config
        if config.patience <= 0:
            raise NotConfigured
        # the backend's work so far: a shared crawl's worker also works while it waits for Redis
        return cls(scheduler.frontier, scheduler.gate, config.patience, config.patience_margin,
                   work=scheduler.backend.work_time, priced=config.patience_priced)

    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None:
        """A request went out (robots.txt fetches too): the load's measure moves on (only a wait
        priced by time reads it)."""
        if self.priced:
            self.load.released(now, self.work())

    def horizon(self, now: float) -> float:
        """How long a wait for a better URL costs the crawl nothing now, in seconds."""
        if not self.priced:
            return self.patience
        return min(self.patience, self.load.sojourn(now, self.work()))

    def review(self, host: str, entry: Entry, request: Request, now: float) -> Request | None:
        if request.meta.get(M.DEPTH) == 0:
            return request
        horizon = self.horizon(now)
        if horizon <= 0:
            return request
        best = self.frontier.best_soon(now, horizon, self.gate.soon_free(now, horizon))
        return None if best > entry.priority + self.margin else request


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
