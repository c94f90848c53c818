"""The release policy of a continuous crawl (``FOCUS_RECRAWL``): the pages found are fetched again.

``Revisits`` (``focuscrawl.scheduling.revisits``) paces the revisit plan; this part puts it on the
request's path and feeds it:

- before the frontier is asked for a request (``refill``), the revisits due go into their hosts'
  queues at the priority of their value, as many as the revisit share allows; never re-scored;
- the crawl stays open while pages are kept fresh (``pending``), and the engine is woken when the
  next revisit falls due (``next_due``);
- every request released moves the request rate the revisit rate is a share of;
- the spider reports each visit (``page_visited``) and what feeds and sitemaps say of a page's
  changes (``change_hinted``); a revisit that left the downloader or was refused is no longer
  queued.

The plan and what the crawl has of each page are its state, kept with a JOBDIR snapshot.
"""

from __future__ import annotations

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.freshness import RevisitPlan
from focuscrawl.frontier import Entry
from focuscrawl.rendering.requests import page_url
from focuscrawl.scheduling.release import Scheduling
from focuscrawl.scheduling.revisits import Revisits
from focuscrawl.urls import canonicalize, host_key


class Recrawl:
    name = "revisits"  # its state in a JOBDIR snapshot

    def __init__(self, scheduler: Scheduling, revisits: Revisits):
        self.scheduler = scheduler
        self.revisits = revisits

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> Recrawl:
        config = scheduler.config
        if not config.recrawl:
            raise NotConfigured
        # the baselines know nothing of relevance: they keep every page
        plan = RevisitPlan(min_interval=config.recrawl_min_interval,
                           **({} if config.recrawl_policy == "optimal" else {"fade_below": 0.0}))
        part = cls(scheduler, Revisits(plan, config.recrawl_share, config.recrawl_policy,
                                       config.recrawl_reallocate_seconds, crawler.stats))
        sig = crawler.signals
        sig.connect(part.page_visited, signal=focus_signals.page_visited)
        sig.connect(part.change_hinted, signal=focus_signals.change_hinted)
        sig.connect(part.request_left, signal=signals.request_left_downloader)
        sig.connect(part.request_refused, signal=focus_signals.request_refused)
        return part

    # --- the request's path -----------------------------------------------------------------------
    def refill(self, now: float) -> None:
        """Due revisits into their hosts' queues at the priority of their value (no features: never
        re-scored)."""
        frontier = self.scheduler.frontier
        discovery_left = len(frontier) > len(self.revisits.queued)
        for canonical, request, value in self.revisits.due_requests(now, self.scheduler.released, discovery_left,
                                                                    self.scheduler.spider.revisit_request):
            frontier.push(host_key(canonical), Entry(value, canonical, request, None, -1))

    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None:
        if not request.meta.get(M.ROBOTS_FOR):
            self.revisits.released_one(now, revisit=request.meta.get(M.REVISIT) is not None)

    def next_due(self, now: float) -> float | None:
        return self.revisits.next_due(now)

    def pending(self) -> bool:
        """Pages to keep fresh: a continuous crawl goes on (the budget or a stop ends it)."""
        return len(self.revisits) > 0

    # --- the spider's reports, the downloader's -------------------------------------------------------
    def page_visited(self, request, response, url, kind, text_hash, weight=None, etag=None, last_modified=None,
                     spider=None) -> None:
        revisit = request.meta.get(M.REVISIT) is not None
        self.revisits.record(url, response.status, revisit=revisit, text_hash=text_hash, weight=weight, etag=etag,
                             last_modified=last_modified, released=self.scheduler.released,
                             depth=request.meta.get(M.DEPTH, 0), kind=kind)
        requested = canonicalize(page_url(request)) if revisit else url
        if requested != url:
            self.revisits.record(requested, 301, revisit=True)  # moved: its new address is tracked

    def change_hinted(self, url, changed_at=None, changefreq=None, spider=None) -> None:
        self.revisits.hint(url, changed_at, changefreq)

    def request_left(self, request, spider=None) -> None:
        if request.meta.get(M.REVISIT) is not None:
            self.revisits.left(canonicalize(page_url(request)))

    def request_refused(self, request, reason, spider=None) -> None:
        """A queued revisit the scheduler will not release (robots.txt, the exclusion list) leaves
        the plan. One refused after its release (the network guard: its meta has the host the
        release stamped) stays due at its interval."""
        if request.meta.get(M.REVISIT) is not None and M.HOST not in request.meta:
            self.revisits.dropped(canonicalize(request.url))

    # --- JOBDIR -------------------------------------------------------------------------------------
    def state(self) -> Revisits:
        return self.revisits

    def restore(self, state: Revisits) -> None:
        self.revisits.adopt(state)
