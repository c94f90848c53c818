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

Where the plan lives is the backend's to say (``revisit_keeper``, ``scheduling/plan_keepers.py``):
in this process for a crawl of its own (its state, kept with a JOBDIR snapshot); for a shared
crawl, with one worker at a time, which the others' events reach (``distributed/revisits.py``).
The policy turns what it sees into events for the keeper, and hands revisits out only while this
process holds the plan.
"""

from __future__ import annotations

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError
from focuscrawl.freshness import RevisitPlan
from focuscrawl.frontier import Entry
from focuscrawl.rendering.requests import page_url
from focuscrawl.scheduling import plan_keepers as events
from focuscrawl.scheduling.plan_keepers import LocalKeeper, PlanKeeper
from focuscrawl.scheduling.release import Scheduling
from focuscrawl.scheduling.revisits import Revisits
from focuscrawl.urls import canonicalize, host_key


class Recrawl:
    name = "revisits"  # its state in a JOBDIR snapshot

    def __init__(self, scheduler: Scheduling, revisits: Revisits, keeper: PlanKeeper | None = None):
        self.scheduler = scheduler
        self.revisits = revisits
        self.keeper = keeper if keeper is not None else LocalKeeper(revisits)

    @classmethod
    def from_crawler(cls, crawler, scheduler: Scheduling) -> Recrawl:
        config = scheduler.config
        if not config.recrawl:
            raise NotConfigured
        # the baselines know nothing of relevance: they keep every page
        plan = RevisitPlan(min_interval=config.recrawl_min_interval,
                           **({} if config.recrawl_policy == "optimal" else {"fade_below": 0.0}))
        revisits = Revisits(plan, config.recrawl_share, config.recrawl_policy, config.recrawl_reallocate_seconds,
                            crawler.stats)
        part = cls(scheduler, revisits, plan_keeper(scheduler.backend, revisits))
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
        if not self.keeper.hold(now):
            return  # another process holds the plan: it hands the revisits out
        frontier = self.scheduler.frontier
        discovery_left = len(frontier) > len(self.revisits.queued)
        due = self.revisits.due_requests(now, self.scheduler.backend.crawl_released(), discovery_left,
                                         self.scheduler.spider.revisit_request)
        if due:  # told first: a process that takes the plan up after this one knows they are queued
            self.keeper.handed_out([canonical for canonical, _, _ in due], self.revisits.taken_at)
        for canonical, request, value in due:
            frontier.push(host_key(canonical), Entry(value, canonical, request, None, -1))

    def released(self, host: str, request: Request, entry: Entry | None, now: float) -> None:
        if not request.meta.get(M.ROBOTS_FOR):
            revisit = request.meta.get(M.REVISIT) is not None
            self.keeper.released(now, canonicalize(page_url(request)) if revisit else None)

    def next_due(self, now: float) -> float | None:
        return self.keeper.next_due(now)

    def pending(self) -> bool:
        """Pages to keep fresh: a continuous crawl goes on (the budget or a stop ends it)."""
        return self.keeper.pages() > 0

    # --- the spider's reports, the downloader's -------------------------------------------------------
    def page_visited(self, request, response, url, kind, text_hash, weight=None, etag=None, last_modified=None,
                     spider=None) -> None:
        revisit = request.meta.get(M.REVISIT) is not None
        at = self.revisits.clock()
        self.keeper.report(events.visit(url, response.status, revisit=revisit, text_hash=text_hash, weight=weight,
                                        etag=etag, last_modified=last_modified,
                                        released=self.scheduler.backend.crawl_released(),
                                        depth=request.meta.get(M.DEPTH, 0), kind=kind, at=at))
        requested = canonicalize(page_url(request)) if revisit else url
        if requested != url:  # moved: its new address is tracked
            self.keeper.report(events.visit(requested, 301, revisit=True, at=at))

    def change_hinted(self, url, changed_at=None, changefreq=None, spider=None) -> None:
        self.keeper.report(events.hint(url, changed_at, changefreq, at=self.revisits.clock()))

    def request_left(self, request, spider=None) -> None:
        if request.meta.get(M.REVISIT) is not None:
            self.keeper.report(events.left(canonicalize(page_url(request)), at=self.revisits.clock()))

    def request_refused(self, request, reason, spider=None) -> None:
        """A queued revisit the scheduler will not release (robots.txt, the exclusion list) leaves
        the plan. One refused after its release (the network guard: its meta has the host the
        release stamped) stays due at its interval."""
        if request.meta.get(M.REVISIT) is not None and M.HOST not in request.meta:
            self.keeper.report(events.dropped(canonicalize(request.url)))

    # --- JOBDIR -------------------------------------------------------------------------------------
    def state(self) -> Revisits | None:
        """The plan, when it is this process's (a shared crawl's is the crawl's: None)."""
        return self.revisits if self.keeper.keeps_state else None

    def restore(self, state: Revisits | None) -> None:
        if state is not None and self.keeper.keeps_state:
            self.revisits.adopt(state)


def plan_keeper(backend, revisits: Revisits) -> PlanKeeper:
    """Where the backend keeps the plan (its ``revisit_keeper(revisits)``); a backend without that
    door keeps it in this process, unless other processes share its crawl (ConfigError: each
    would keep a plan of its own)."""
    door = getattr(backend, "revisit_keeper", None)
    if door is not None:
        return door(revisits)
    if getattr(backend, "shared", False):
        raise ConfigError(f"FOCUS_RECRAWL: the crawl backend {type(backend).__name__} is shared by several "
                          "processes but has no revisit_keeper() to keep one revisit plan for them")
    return LocalKeeper(revisits)
