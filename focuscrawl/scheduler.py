"""FocusScheduler: the frontier, the link-reward learner and the politeness policy behind
Scrapy's scheduler interface (``SCHEDULER = "focuscrawl.scheduler.FocusScheduler"``).

Why our own: Scrapy's scheduler honours priority only inside a host and loses it in a download
slot's queue, cannot re-score what it holds, and its robots middleware ignores Crawl-delay.
Here a request leaves ``next_request()`` only when its host may be contacted now (robots.txt
known and allowing it, delay elapsed, nothing else in flight to that host), so the downloader
starts everything it is handed at once and priority is global across hosts.

The scheduler only wires its parts together::

    enqueue_request = policies.admit -> admission.admit -> strategy.score -> frontier.push -> backend.queued
    next_request    = policies.refill -> frontier.pop -> policies.popped -> gate.check -> policies.review -> release

The crawl's state (frontier, seen set, exclusion list, budget, what a restart takes up) is the
backend's (``FOCUS_BACKEND``, ``focuscrawl.backends``): this process's, kept in JOBDIR, or a crawl
shared by several workers on Redis.

The release policies (``FOCUS_RELEASE_POLICIES``, ``focuscrawl.scheduling.release``: URL aliases,
patience, the HEAD check, revisits, render routing, and a project's own) are built from the
crawler, switch themselves off, connect their own signals and keep their own state (JOBDIR keeps
it through ``Persistence``); the scheduler asks each the hooks it defines, in order.

Feedback arrives through signals, each heard by a part of its own: ``response_downloaded``
(latency, status, Retry-After) and ``request_left_downloader`` (the host is free again) by
``HostFeedback``, which tells the gate; ``focuscrawl.signals.page_scored`` (the learner's reward;
the frontier is re-scored as the learner moves on) and duplicates (waste) by ``LearnerFeedback``;
``item_scraped``/``item_dropped``/``page_stored`` (a page done) by the scheduler, for the backend.

``FOCUS_STRATEGY`` chooses what sets the priorities (``focuscrawl.learning.strategies``): the
learner (``learned``, the default) or a classic focused crawler to compare it with (``bestfirst``,
``shark``, ``bfs``). The learner observes pages whatever the strategy, but only ``learned`` takes
its scores as priorities; everything else (admission, gate, policies) is the same.
"""

from __future__ import annotations

import gc
import logging
import time
from collections import deque

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.misc import build_from_crawler

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.backends import BackendUnavailable, CrawlBackend, backend_class
from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.crawl_view import CrawlView
from focuscrawl.extras import MissingExtra
from focuscrawl.frontier import Entry
from focuscrawl.frontier.admission import DUPLICATES, SEEN, Admission
from focuscrawl.learning import LinkRewardLearner, link_context, link_features
from focuscrawl.learning.strategies import LearnedStrategy, make_strategy
from focuscrawl.politeness import DelayPolicy
from focuscrawl.politeness.gate import HostGate, PerIpLimit
from focuscrawl.scheduling.downloader import DownloaderAdapter
from focuscrawl.scheduling.host_feedback import HostFeedback
from focuscrawl.scheduling.learner_feedback import LearnerFeedback
from focuscrawl.scheduling.persistence import Stateful
from focuscrawl.scheduling.release import PolicyHooks, load_policies, refuse
from focuscrawl.scheduling.requests import RequestSerializer
from focuscrawl.scheduling.rescoring import ROBOTS_PRIORITY, BackgroundRescorer
from focuscrawl.scheduling.robots import RobotsFetcher
from focuscrawl.urls import canonicalize, host_key

logger = logging.getLogger(__name__)


class FocusScheduler:
    def __init__(self, crawler, config: FocusConfig, *, backend: CrawlBackend, admission: Admission, gate: HostGate,
                 learner: LinkRewardLearner, serializer: RequestSerializer, downloader: DownloaderAdapter,
                 strategy=None):
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        # where the crawl's state lives (FOCUS_BACKEND): this process, or Redis shared by several
        self.backend = backend
        self.frontier = frontier = backend.frontier
        self.admission = admission
        self.gate = gate
        self.learner = learner
        self.serializer = serializer
        self.downloader = downloader
        # what sets the priorities (FOCUS_STRATEGY): by default the learner
        self.strategy = strategy if strategy is not None else LearnedStrategy(learner)
        # through the attribute, so that a test may stand in for the reactor
        self.rescorer = BackgroundRescorer(frontier, self.strategy, lambda func: self.downloader.call_soon(func))
        self.robots = RobotsFetcher(crawler, gate, frontier, self.free, over_cap=config.crawl_delay_over_cap,
                                    follow_sitemaps=config.follow_sitemaps)
        # what the pages teach the learner, and what the downloader tells the gate
        self.learner_feedback = LearnerFeedback(self)
        self.host_feedback = HostFeedback(self)
        # requests a downloader middleware made of one released (a render sent to SPLASH_URL): sent
        # next, past the frontier and the gate, whose host they already hold
        self._continuations: deque[Request] = deque()
        self.spider = None
        self._froze_gc = False
        # FOCUS_RELEASE_POLICIES, in order; each hook's methods (a policy defines those it needs)
        self.policies = load_policies(crawler, self)
        self.hooks = PolicyHooks(self.policies)
        # what a restarted crawl takes up besides the frontier, seen set and learner
        backend.bind(gate, admission, [policy for policy in self.policies if isinstance(policy, Stateful)])

    @classmethod
    def from_crawler(cls, crawler):
        try:
            config = FocusConfig.from_settings(crawler.settings)
            serializer = RequestSerializer()
            backend = build_from_crawler(backend_class(config), crawler, config=config, serializer=serializer)
        except (ConfigError, BackendUnavailable, MissingExtra) as exc:
            raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc
        delays = DelayPolicy(
            minimum=config.download_delay, adaptive_factor=config.adaptive_delay_factor,
            backoff_base=config.backoff_base, backoff_max=config.backoff_max,
            per_host_minimum=dict(config.per_host_delays), max_crawl_delay=config.max_crawl_delay)
        gate = HostGate(delays, agent=config.robots_agent, obey_robots=config.obey_robots,
                        robots_cache=config.robots_cache_seconds, robots_retry=config.robots_error_retry_seconds,
                        per_ip=PerIpLimit() if config.politeness_per_ip else None)
        admission = Admission(config, gate.robots, backend.exclusion)
        admission.seen = backend.seen
        learner = LinkRewardLearner(credit_decay=config.credit_decay, exploration=config.exploration,
                                    hub_cap=config.hub_cap, learning_rate=config.learning_rate,
                                    max_nodes=config.learner_nodes)
        try:  # the release policies are built with the scheduler
            return cls(crawler, config, backend=backend, admission=admission, gate=gate, learner=learner,
                       serializer=serializer, downloader=DownloaderAdapter(crawler),
                       strategy=make_strategy(config.strategy, learner, config))
        except ConfigError as exc:
            raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc

    # --- lifecycle ----------------------------------------------------------------------------
    def open(self, spider):
        self.spider = self.serializer.spider = self.robots.spider = spider
        sig = self.crawler.signals
        self.host_feedback.open()
        sig.connect(self._on_item_done, signal=signals.item_scraped)
        sig.connect(self._on_item_done, signal=signals.item_dropped)
        sig.connect(self._on_item_done, signal=focus_signals.page_stored)
        sig.connect(self._on_listing_read, signal=focus_signals.listing_read)
        sig.connect(self._on_spider_idle, signal=signals.spider_idle)
        self.downloader.take_over_delays()
        self.learner_feedback.open(spider)
        self.backend.open(learner=self.learner, enqueue=self.enqueue_request,
                          apply_robots=lambda host: self.robots.apply(host, self.gate.robots[host]),
                          use_learner=self._use_learner, use_strategy=self._use_strategy)
        self.admission.seen = self.backend.seen  # a resumed crawl's
        sig.send_catch_log(focus_signals.crawl_view, view=CrawlView(self))
        # What exists now (Scrapy, Twisted, the models: ~170,000 objects) lives as long as the
        # crawl: frozen, it is left out of the garbage collector's full passes, which otherwise
        # stall the reactor ~100 ms each (every host's next request late by as much).
        # An application that manages the collector itself (it froze objects already) is left alone.
        self._froze_gc = gc.get_freeze_count() == 0
        if self._froze_gc:
            gc.freeze()
        return None

    def _use_learner(self, learner: LinkRewardLearner) -> None:
        """A learner restored from a checkpoint replaces the crawl's."""
        if learner is not self.learner:
            self.learner = learner
            self.rescorer.use_learner(learner)

    def _use_strategy(self, strategy) -> None:
        """A classic strategy restored from a checkpoint replaces the crawl's, unless the crawl was
        resumed with another ``FOCUS_STRATEGY`` (then the new one starts afresh)."""
        if strategy.name != self.strategy.name:
            logger.warning("the checkpoint was crawled with FOCUS_STRATEGY=%s; resuming with %s, which starts "
                           "afresh", strategy.name, self.strategy.name)
            return
        self.strategy = strategy
        self.rescorer.use_strategy(strategy)

    def close(self, reason):
        if self._froze_gc:
            gc.unfreeze()
        self.downloader.close()
        self.rescorer.cancel()
        self.backend.close(self.learner, self.strategy)
        self.stats.set_value("focus/frontier/left", len(self.frontier))
        self.stats.set_value("focus/frontier/rescored", self.frontier.rescored)
        self.stats.set_value("focus/frontier/pruned", self.frontier.pruned)
        self.stats.set_value("focus/seen", len(self.admission.seen))
        return None

    def has_pending_requests(self) -> bool:
        if self._continuations:
            return True
        if self._budget_spent():
            return False
        if any(pending() for pending in self.hooks.pending):
            return True  # a policy's work (revisits) keeps the crawl open: the budget or a stop ends it
        if not len(self.frontier):
            return self.backend.more_work()
        if self.gate.busy():
            return True
        ready_at = self.frontier.next_ready_time()
        max_wait = self.config.max_wait
        if ready_at is not None and ready_at - time.monotonic() > max_wait:
            # every waiting host is blocked for long (back-off, unreachable robots.txt): finish
            # rather than idle; with JOBDIR the waiting URLs are kept for a resumed crawl
            if not self.stats.get_value("focus/finished_waiting"):
                self.stats.set_value("focus/finished_waiting", len(self.frontier))
                logger.info("%d URLs wait for hosts not ready for %.0f s (FOCUS_MAX_WAIT %.0f s): finishing",
                            len(self.frontier), ready_at - time.monotonic(), max_wait)
            return False
        return True

    @property
    def released(self) -> int:
        """Requests this process released, robots.txt fetches not counted (FOCUS_BUDGET counts the crawl's)."""
        return self.backend.released_here

    def __len__(self) -> int:
        return len(self.frontier)

    def _on_spider_idle(self, spider=None):
        """A crawl that spent its budget ends as ``focus_budget``, as Scrapy's own limits name theirs
        (``closespider_pagecount``): its requests in flight are done by now."""
        if self._budget_spent():
            raise CloseSpider("focus_budget")

    def _budget_spent(self) -> bool:
        if not self.config.budget:
            return False
        return self.backend.crawl_released() >= self.config.budget

    # --- enqueue: admit -> score -> push -------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        meta = request.meta
        if any(continues(request) for continues in self.hooks.continues):
            # it continues a request released (a render made a call of the render service): sent next
            self._continuations.append(request)
            self.stats.inc_value("scheduler/enqueued")
            return True
        if meta.get(M.ROBOTS_FOR):
            # a robots.txt fetch (or a redirect of one): always allowed, first in its host's queue
            self.frontier.push(host_key(request.url), Entry(ROBOTS_PRIORITY, request.url, request))
            self.stats.inc_value("scheduler/enqueued")
            return True
        if meta.get("redirect_times"):
            self.backend.redirected(meta.get("redirect_urls") or ())
        canonical = canonicalize(request.url)
        for admit in self.hooks.admit:
            request, canonical = admit(request, canonical)
        reason = self.admission.admit(request.url, canonical, dont_filter=request.dont_filter,
                                      redirect_times=meta.get("redirect_times", 0),
                                      sitemap=bool(meta.get(M.SITEMAP) or meta.get(M.FEED)),
                                      depth=meta.get(M.DEPTH, 0))
        if reason in DUPLICATES:
            self.stats.inc_value("focus/dupes_filtered")
            if reason == SEEN:
                # found again: a classic strategy may raise the URL's priority (re-scored as it settles)
                if self.strategy.refound(canonical, meta):
                    self.stats.inc_value("focus/strategy/raised")
                return False
        if reason:
            return self._refuse(request, reason)
        vector = self.learner.vectorise(link_features(link_context(canonical, meta)))
        entry = Entry(self.strategy.score(canonical, meta, vector), canonical, request, vector, self.frontier.version)
        pruned = self.frontier.push(host_key(canonical), entry)
        self.backend.queued(request, pruned)
        self.stats.inc_value("focus/frontier/enqueued")
        self.stats.inc_value("scheduler/enqueued")  # Scrapy's name, for tools that read it
        if pruned:
            self.stats.inc_value("focus/frontier/pruned", len(pruned))
        return True

    def _refuse(self, request: Request, reason: str) -> bool:
        return refuse(self.crawler, request, reason)

    def forget(self, url: str) -> None:
        """A released URL that will not be fetched after all (a HEAD check said it is no page)."""
        self.backend.forget(url)

    # --- dequeue: pop -> gate -> policies -> release --------------------------------------------
    def next_request(self) -> Request | None:
        if self._continuations:
            self.stats.inc_value("scheduler/dequeued")
            return self._continuations.popleft()
        if self._budget_spent():
            if not self.stats.get_value("focus/budget_exhausted"):
                self.stats.set_value("focus/budget_exhausted", 1)
                logger.info("request budget of %d reached; finishing the requests in flight", self.config.budget)
            return None
        now = time.monotonic()
        if self.backend.tick(now, self.learner, self.strategy):
            self.rescorer.learner_updated()  # learning taken up from elsewhere: queued entries are stale
        for host in self.gate.overdue_robots(now):  # the callback never came: do not stall the host
            logger.warning("robots.txt of %s was fetched but never applied; releasing the host", host)
            self.free(host, now)
        if self.strategy.settle():  # queued URLs found on better pages since: re-score them
            self.rescorer.learner_updated()
        for refill in self.hooks.refill:  # a policy's own requests (revisits due) into the queues
            refill(now)
        frontier = self.frontier
        for _ in range(10_000):
            popped = frontier.pop(now, rescore=self.rescorer.rescore)
            if popped is None:
                if not len(frontier) and self.backend.refill(self.learner):
                    continue
                self.downloader.wake_at(self._next_wake(), time.monotonic())
                return None
            host, entry = popped
            for respell in self.hooks.popped:  # another spelling of the URL (aliases); None: dropped or moved
                if (entry := respell(host, entry, now)) is None:
                    break
            if entry is None:
                continue
            request = entry.payload
            robots_request = bool(request.meta.get(M.ROBOTS_FOR))
            verdict = self.gate.check(host, request.url, now, robots_request)
            if verdict.action == "wait":
                frontier.requeue(host, entry)
                frontier.release(host, verdict.until)
                if verdict.reason == "ip":
                    self.stats.inc_value("focus/politeness/ip_waits")
                continue
            if verdict.action == "fetch_robots":
                frontier.requeue(host, entry)  # the host stays busy while robots.txt is fetched
                return self._release(host, self.robots.request(host, request.url), None)
            if verdict.action == "refuse":
                self._refuse(request, verdict.reason)
                frontier.release(host, now)
                continue
            if robots_request:
                return self._release(host, request, entry)
            reason = self.admission.excluded(request.url)  # the list may have changed since admission
            if reason:
                self._refuse(request, reason)
                frontier.release(host, now)
                continue
            for review in self.hooks.review:
                request = review(host, entry, request, now)
                if request is None:
                    frontier.requeue(host, entry)
                    frontier.release(host, now)
                    self.stats.inc_value("focus/frontier/held")
                    self.downloader.wake_at(frontier.next_ready_time(), time.monotonic(), soon=True)
                    return None
            return self._release(host, request, entry)
        return None

    def _release(self, host: str, request: Request, entry: Entry | None) -> Request:
        meta = request.meta
        meta["download_slot"] = host
        meta[M.HOST] = host
        self.gate.start(host, request)
        self.stats.inc_value("scheduler/dequeued")
        if self.hooks.released:
            now = time.monotonic()
            for released in self.hooks.released:
                released(host, request, entry, now)
        if entry is not None and not meta.get(M.ROBOTS_FOR):
            # a revisit lost to a kill is due again by the plan kept; a page sent a HEAD first is its GET
            self.backend.released(host, entry.url,
                                  None if meta.get(M.REVISIT) is not None else meta.get(M.HEAD_FOR) or request)
            meta[M.PRIORITY] = round(entry.priority, 4)
            if entry.features is not None:
                meta[M.FEATURES] = entry.features
            # a revisit's why is the revisit plan's (M.REVISIT), not the link's
            meta[M.EXPLAIN] = self.strategy.explain(entry.url, meta) if meta.get(M.REVISIT) is None else []
            self.strategy.released(entry.url)
            self.stats.inc_value("focus/requests_released")
            # how much the order decided now could not know yet (per request: / requests_released)
            self.stats.inc_value("focus/requests_released/unseen", self.downloader.unseen())
        else:
            self.stats.inc_value("focus/robots/requests")
        return request

    def _next_wake(self) -> float | None:
        """When the engine should ask again: a host's turn, or a policy's next work due (a revisit)."""
        times = [self.frontier.next_ready_time()]
        if self.hooks.next_due:
            now = time.monotonic()
            times += [next_due(now) for next_due in self.hooks.next_due]
        return min((t for t in times if t is not None), default=None)

    def free(self, host: str, ready_at: float) -> None:
        """The host (and, per IP, its server) may be contacted again from ``ready_at``."""
        self.frontier.release(host, ready_at)
        self.gate.free(host, ready_at)
        self.downloader.wake_at(self.frontier.next_ready_time(), time.monotonic())

    # --- feedback from the spider and the pipelines ---------------------------------------------
    def _on_item_done(self, item, response=None, spider=None, exception=None, **kwargs):
        """The page's item has been through the pipelines, or the page is in the store: done for a
        resume (its links were queued before it), never to be fetched again."""
        self._done(item)

    def _on_listing_read(self, request, response, spider=None, **kwargs):
        """A sitemap or feed makes no item: done once its entries are queued."""
        self.backend.done([request.url, response.url])

    def _done(self, item) -> None:
        self.backend.done([u for u in (getattr(item, "url", None), getattr(item, "final_url", None)) if u])

