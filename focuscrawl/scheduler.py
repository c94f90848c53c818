"""FocusScheduler: the frontier, the link-reward learner and the politeness policy behind
Scrapy's scheduler interface (``SCHEDULER = "focuscrawl.scheduler.FocusScheduler"``).

Why our own: Scrapy's scheduler honours priority only inside a host and loses it in a download
slot's queue, cannot re-score what it holds, and its robots middleware ignores Crawl-delay.
Here a request leaves ``next_request()`` only when its host may be contacted now (robots.txt
known and allowing it, delay elapsed, nothing else in flight to that host), so the downloader
starts everything it is handed at once and priority is global across hosts.

The scheduler only wires its parts together::

    enqueue_request = admission.admit -> strategy.score -> frontier.push   (journaled with JOBDIR)
    next_request    = frontier.pop -> gate.check -> release policies -> release

Feedback arrives through signals: ``response_downloaded`` (latency, status, Retry-After: the
gate), ``request_left_downloader`` (the host is free again), ``focuscrawl.signals.page_scored``
(the learner's reward; the frontier is re-scored as the learner moves on), and
``item_scraped``/``item_dropped`` (a page done; a duplicate is waste).

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
from typing import TYPE_CHECKING

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.extras import MissingExtra
from focuscrawl.distributed.connection import RedisUnavailable, reactor_wait
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.frontier.admission import DUPLICATES, SEEN, Admission
from focuscrawl.freshness import RevisitPlan
from focuscrawl.frontier.aliases import HostAliases
from focuscrawl.learning import LinkRewardLearner, link_context, link_features
from focuscrawl.learning.learner import page_reward
from focuscrawl.learning.strategies import LearnedStrategy, make_strategy
from focuscrawl.meta import link_parent
from focuscrawl.politeness import DelayPolicy
from focuscrawl.politeness.gate import HostGate, PerIpLimit
from focuscrawl.rendering.availability import RenderingError, effective_mode
from focuscrawl.rendering.decide import RenderHosts
from focuscrawl.rendering.requests import RenderMeta, page_url
from focuscrawl.request_codec import RequestCodec
from focuscrawl.scheduling.downloader import DownloaderAdapter
from focuscrawl.scheduling.load import runnable_time
from focuscrawl.scheduling.persistence import Persistence
from focuscrawl.scheduling.policies import HeadCheck, Patience, ReleasePolicy
from focuscrawl.scheduling.rendering import RenderRouting
from focuscrawl.scheduling.requests import RequestSerializer
from focuscrawl.scheduling.rescoring import ROBOTS_PRIORITY, BackgroundRescorer
from focuscrawl.scheduling.revisits import Revisits
from focuscrawl.scheduling.robots import RobotsFetcher
from focuscrawl.urls import canonicalize, host_key

if TYPE_CHECKING:
    from focuscrawl.distributed.crawl import SharedCrawl

logger = logging.getLogger(__name__)

#: Queued URLs from which the frontier deflates its cold runs: below it they stay raw (~650 B a
#: packed URL instead of ~220 B, 32 MB at most), which spares background re-scoring the inflating
#: and deflating of every run it rewrites (about a sixth of its cost on a WebKB crawl)
FRONTIER_DEFLATE_FROM = 50_000
#: what a released request's meta gained on its way (the scheduler's and Scrapy's own): dropped when
#: the request is made again in another spelling
_RELEASE_META = frozenset({M.ALIAS_OF, M.HOST, M.PRIORITY, M.EXPLAIN, M.GOT_RESPONSE, M.STATUS, "download_slot",
                           "download_latency", "download_timeout", "_scheme_proxy", "proxy"})


def _spelled_as_given(meta) -> bool:
    """A redirect's target (where the server says the page is) and the fallback of a failed
    re-spelling are fetched as they are spelled."""
    return bool(meta.get("redirect_times") or meta.get(M.AS_LINKED))


def _respelled(request: Request, url: str) -> Request:
    """``request`` for ``url``, remembering the spelling the link gave (fetched instead if ``url`` fails)."""
    return request.replace(url=url, meta={**request.meta, M.ALIAS_OF: request.url})


class FocusScheduler:
    def __init__(self, crawler, config: FocusConfig, *, frontier: Frontier, admission: Admission, gate: HostGate,
                 learner: LinkRewardLearner, serializer: RequestSerializer, downloader: DownloaderAdapter,
                 persistence: Persistence | None = None, strategy=None, aliases: HostAliases | None = None,
                 shared: SharedCrawl | None = None, revisits: Revisits | None = None,
                 render_mode: str = "never"):
        self.crawler = crawler
        self.stats = crawler.stats
        self.config = config
        self.frontier = frontier
        self.admission = admission
        self.gate = gate
        self.learner = learner
        self.serializer = serializer
        self.downloader = downloader
        self.persistence = persistence
        # this process's part in a crawl shared on Redis (FOCUS_FRONTIER_URL); None: a crawl of its own
        self.shared = shared
        # the spellings each host serves one page at, learned from redirects and content hashes
        self.aliases = aliases
        # a continuous crawl's revisits of what it found (FOCUS_RECRAWL); None: each page fetched once
        self.revisits = revisits
        # what sets the priorities (FOCUS_STRATEGY): by default the learner
        self.strategy = strategy if strategy is not None else LearnedStrategy(learner)
        # through the attribute, so that a test may stand in for the reactor
        self.rescorer = BackgroundRescorer(frontier, self.strategy, lambda func: self.downloader.call_soon(func))
        self.robots = RobotsFetcher(crawler, gate, frontier, self._free, over_cap=config.crawl_delay_over_cap,
                                    follow_sitemaps=config.follow_sitemaps)
        self.policies: list[ReleasePolicy] = []
        # patience prices a wait by the crawler's load: it hears of every request released. A shared
        # crawl's worker also works while it waits for Redis (its reactor does nothing else meanwhile)
        work = runnable_time if shared is None else (lambda: runnable_time() + reactor_wait())
        self.patience = (Patience(frontier, gate, config.patience, config.patience_margin, work=work,
                                  priced=config.patience_priced) if config.patience > 0 else None)
        if self.patience is not None:
            self.policies.append(self.patience)
        if config.head_check:
            self.policies.append(HeadCheck(self.stats, self._refuse, self._forget, documents=config.documents))
        # which hosts need a browser (FOCUS_RENDER, as the crawl can honour it); None: no page is rendered
        self.render_hosts = RenderHosts() if render_mode != "never" else None
        if self.render_hosts is not None:  # last: a request held back by another policy is not made a render
            self.policies.append(RenderRouting(render_mode, self.render_hosts, RenderMeta(config), gate, self.stats))
            if persistence is not None:
                persistence.render_hosts = self.render_hosts
        self.released = 0  # requests released, robots.txt fetches not counted (FOCUS_BUDGET)
        # requests a downloader middleware made of one released (a render sent to SPLASH_URL): sent
        # next, past the frontier and the gate, whose host they already hold
        self._continuations: deque[Request] = deque()
        self.spider = None
        self._froze_gc = False

    @classmethod
    def from_crawler(cls, crawler):
        try:
            config = FocusConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc
        serializer = RequestSerializer()
        # packed entries: a few hundred bytes a queued URL instead of a live Request and vector
        codec = (RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: link_parent(r.meta))
                 if config.frontier_pack else None)
        shared = None
        if config.frontier_url and config.recrawl:
            raise NotConfigured("focuscrawl scheduler: FOCUS_RECRAWL does not work with a shared frontier "
                                "(FOCUS_FRONTIER_URL) yet: the revisit plan lives in one process")
        if config.frontier_url:
            # a record in Redis must hold its request: entries are always packed
            codec = codec or RequestCodec(serializer.to_dict, serializer.from_dict, lambda r: link_parent(r.meta))
            try:
                # imported here: redis-py is the redis extra's, and only a shared crawl needs it
                from focuscrawl.distributed.crawl import SharedCrawl

                shared = SharedCrawl.from_config(config, codec=codec, serializer=serializer)
            except (RedisUnavailable, MissingExtra) as exc:
                raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc
            frontier = shared.frontier
        else:
            frontier = Frontier(capacity=config.frontier_capacity, codec=codec, deflate_from=FRONTIER_DEFLATE_FROM)
        delays = DelayPolicy(
            minimum=config.download_delay, adaptive_factor=config.adaptive_delay_factor,
            backoff_base=config.backoff_base, backoff_max=config.backoff_max,
            per_host_minimum=dict(config.per_host_delays), max_crawl_delay=config.max_crawl_delay)
        gate = HostGate(delays, agent=config.robots_agent, obey_robots=config.obey_robots,
                        robots_cache=config.robots_cache_seconds, robots_retry=config.robots_error_retry_seconds,
                        per_ip=PerIpLimit() if config.politeness_per_ip else None)
        admission = Admission.from_config(config, gate.robots)
        if shared is not None:
            from focuscrawl.distributed.exclusion import SharedExclusionList

            admission.seen = shared.seen
            admission.exclusion = SharedExclusionList(shared.client, shared.keys, config.exclude_file,
                                                      config.exclude_check_seconds)
        learner = LinkRewardLearner(credit_decay=config.credit_decay, exploration=config.exploration,
                                    hub_cap=config.hub_cap, learning_rate=config.learning_rate,
                                    max_nodes=config.learner_nodes)
        aliases = HostAliases(max_pages=config.url_aliases_pages) if config.url_aliases else None
        if config.jobdir and shared is not None:
            logger.warning("JOBDIR keeps the spider's state only: the shared frontier lives in Redis (%s)",
                           config.frontier_url)
        revisits = (Revisits(RevisitPlan(min_interval=config.recrawl_min_interval,
                                         # the baselines know nothing of relevance: they keep every page
                                         **({} if config.recrawl_policy == "optimal" else {"fade_below": 0.0})),
                             config.recrawl_share, config.recrawl_policy, config.recrawl_reallocate_seconds,
                             crawler.stats)
                    if config.recrawl else None)
        persistence = (Persistence(config.jobdir, serializer, frontier, admission, gate, crawler.stats,
                                   config.checkpoint_seconds, aliases=aliases, revisits=revisits)
                       if config.jobdir and shared is None else None)
        try:
            rendering = effective_mode(config, crawler.settings)
        except RenderingError as exc:
            raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc
        return cls(crawler, config, frontier=frontier, admission=admission, gate=gate, learner=learner,
                   serializer=serializer, downloader=DownloaderAdapter(crawler), persistence=persistence,
                   strategy=make_strategy(config.strategy, learner, config), aliases=aliases, shared=shared,
                   revisits=revisits, render_mode=rendering)

    # --- lifecycle ----------------------------------------------------------------------------
    def open(self, spider):
        self.spider = self.serializer.spider = self.robots.spider = spider
        sig = self.crawler.signals
        sig.connect(self._on_response_downloaded, signal=signals.response_downloaded)
        sig.connect(self._on_request_left, signal=signals.request_left_downloader)
        sig.connect(self._on_page_scored, signal=focus_signals.page_scored)
        sig.connect(self._on_item_done, signal=signals.item_scraped)
        sig.connect(self._on_item_done, signal=signals.item_dropped)
        sig.connect(self._on_page_stored, signal=focus_signals.page_stored)
        sig.connect(self._on_spider_idle, signal=signals.spider_idle)
        if self.render_hosts is not None:
            sig.connect(self._on_render_judged, signal=focus_signals.render_judged)
        if self.revisits is not None:
            sig.connect(self._on_page_visited, signal=focus_signals.page_visited)
            sig.connect(self._on_change_hinted, signal=focus_signals.change_hinted)
        self.downloader.take_over_delays()
        if self.shared is not None:
            self.shared.attach(self.gate, self.robots.apply)
        # the topic model that scores the links' words: the focused spider's; a project's own
        # spider's comes with the signal topic_model (the add-on's FocusPages)
        self._use_topic_model(getattr(spider, "model", None))
        sig.connect(self._use_topic_model, signal=focus_signals.topic_model)
        if self.persistence is not None:
            # the snapshot's learner is taken on before the journal's URLs are enqueued (and scored)
            _, self.released = self.persistence.restore(
                self.learner, self.released, self.enqueue_request,
                lambda host: self.robots.apply(host, self.gate.robots[host]), self._use_learner, self._use_strategy)
        # What exists now (Scrapy, Twisted, the models: ~170,000 objects) lives as long as the
        # crawl: frozen, it is left out of the garbage collector's full passes, which otherwise
        # stall the reactor ~100 ms each (every host's next request late by as much).
        # An application that manages the collector itself (it froze objects already) is left alone.
        self._froze_gc = gc.get_freeze_count() == 0
        if self._froze_gc:
            gc.freeze()
        return None

    def _use_topic_model(self, model, **kwargs) -> None:
        if model is not None:
            learned = getattr(model, "learned_links", getattr(model, "link_pipeline", None) is not None)
            self.learner.use_link_model(bool(learned), getattr(model, "learner_priors", None))

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
        if self.persistence is not None:
            self.persistence.close(self.learner, self.released, self.strategy)
        if self.shared is not None:
            self.shared.close(self.learner)
        self.stats.set_value("focus/frontier/left", len(self.frontier))
        self.stats.set_value("focus/frontier/rescored", self.frontier.rescored)
        self.stats.set_value("focus/frontier/pruned", self.frontier.pruned)
        self.stats.set_value("focus/seen", len(self.admission.seen))
        if self.aliases is not None and self.aliases.active:
            rules = self.aliases.rules()
            logger.info("URL aliases learned: slash on %d hosts, index pages on %d, www/bare names on %d",
                        len(rules["slash"]), len(rules["index"]), len(rules["www"]))
            self.stats.set_value("focus/aliases/hosts", len(rules["slash"]) + len(rules["index"]) + len(rules["www"]))
        return None

    def has_pending_requests(self) -> bool:
        if self._continuations:
            return True
        if self._budget_spent():
            return False
        if self.revisits is not None and len(self.revisits):
            return True  # a continuous crawl: pages to keep fresh (the budget or a stop ends it)
        if not len(self.frontier):
            if self.shared is not None:  # other workers' pages may still bring links
                return self.gate.busy() or self.shared.pending()
            return self.persistence is not None and self.persistence.has_spill()
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
        released = self.shared.released() if self.shared is not None else self.released
        return released >= self.config.budget

    # --- enqueue: admit -> score -> push -------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        meta = request.meta
        host = meta.get(M.HOST)
        if meta.get("_splash_processed") and host is not None and host in self.gate.inflight:
            # scrapy-splash made a released render its call of SPLASH_URL (a downloader middleware
            # returns a new request): the same visit of the host, which holds the host until it ends
            self.gate.inflight[host] = request
            self._continuations.append(request)
            self.stats.inc_value("scheduler/enqueued")
            return True
        if meta.get(M.ROBOTS_FOR):
            # a robots.txt fetch (or a redirect of one): always allowed, first in its host's queue
            self.frontier.push(host_key(request.url), Entry(ROBOTS_PRIORITY, request.url, request))
            self.stats.inc_value("scheduler/enqueued")
            return True
        if self.shared is not None and meta.get("redirect_times"):
            # the page redirected is done: its target is queued now, whichever worker fetches it
            self.shared.done({canonicalize(u) for u in meta.get("redirect_urls") or ()})
        canonical = canonicalize(request.url)
        if self.aliases is not None:
            request, canonical = self._alias(request, canonical)
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
        if self.persistence is not None:
            self.persistence.enqueued(request)
        self.stats.inc_value("focus/frontier/enqueued")
        self.stats.inc_value("scheduler/enqueued")  # Scrapy's name, for tools that read it
        if pruned:
            self.stats.inc_value("focus/frontier/pruned", len(pruned))
            if self.persistence is not None:
                self.persistence.spill(pruned)
        return True

    def _alias(self, request: Request, canonical: str) -> tuple[Request, str]:
        """A redirect hop is evidence of the host's aliases; any other URL is taken in the spelling
        its host's learned rules give (a redirect's target is where the server says the page is:
        never re-spelled, so a rule can never send the crawl round a redirect)."""
        meta = request.meta
        previous = meta.get("redirect_urls") or ()
        if meta.get("redirect_times") and previous:
            self.aliases.redirected(canonicalize(previous[-1]), canonical)
        if _spelled_as_given(meta):
            return request, canonical
        alias = self.aliases.canonical(canonical)
        if alias == canonical:
            return request, canonical
        self.stats.inc_value("focus/aliases/respelled")
        return _respelled(request, alias), alias

    def _alias_evidence(self, request: Request, page) -> None:
        """A page's content hash is evidence of its host's aliases; a re-spelled URL that failed is
        evidence against the rule, and the spelling the link gave is fetched instead."""
        status = getattr(page, "status", None)
        original = request.meta.get(M.ALIAS_OF)
        if original and (not status or status >= 400):
            self.aliases.mistaken(canonicalize(original), canonicalize(request.url))
            self.stats.inc_value("focus/aliases/mistaken")
            meta = {k: v for k, v in request.meta.items() if k not in _RELEASE_META}
            meta[M.AS_LINKED] = True
            self.enqueue_request(request.replace(url=original, meta=meta))
        elif status == 200 and getattr(page, "content_hash", ""):
            self.aliases.fetched(canonicalize(page.final_url or request.url), page.content_hash,
                                 redirected=bool(request.meta.get("redirect_urls")))

    def _refuse(self, request: Request, reason: str) -> bool:
        if self.revisits is not None and request.meta.get(M.REVISIT) is not None:
            self.revisits.dropped(canonicalize(request.url))
        self.stats.inc_value(f"focus/refused/{reason}")
        self.crawler.signals.send_catch_log(focus_signals.request_refused, request=request, reason=reason)
        return False

    def _forget(self, url: str) -> None:
        if self.persistence is not None:
            self.persistence.forget(url)

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
        if self.shared is not None and self.shared.tick(now, self.learner):
            self.rescorer.learner_updated()  # other workers' learning taken up: queued entries are stale
        for host in self.gate.overdue_robots(now):  # the callback never came: do not stall the host
            logger.warning("robots.txt of %s was fetched but never applied; releasing the host", host)
            self._free(host, now)
        if self.persistence is not None and self.persistence.checkpoint_due(now):
            self.persistence.checkpoint(self.learner, self.released, self.strategy)
        if self.strategy.settle():  # queued URLs found on better pages since: re-score them
            self.rescorer.learner_updated()
        if self.revisits is not None:
            self._queue_revisits(now)
        frontier = self.frontier
        for _ in range(10_000):
            popped = frontier.pop(now, rescore=self.rescorer.rescore)
            if popped is None:
                if not len(frontier) and self.persistence is not None and self.persistence.has_spill():
                    self.persistence.unspill(self.learner)
                    continue
                self.downloader.wake_at(self._next_wake(), time.monotonic())
                return None
            host, entry = popped
            request = entry.payload
            robots_request = bool(request.meta.get(M.ROBOTS_FOR))
            if self.aliases is not None and self.aliases.active and not robots_request:
                respelled = self._respell_queued(host, entry, now)
                if respelled is None:
                    continue
                entry, request = respelled, respelled.payload
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
            for policy in self.policies:
                request = policy.review(host, entry, request, now)
                if request is None:
                    frontier.requeue(host, entry)
                    frontier.release(host, now)
                    self.stats.inc_value("focus/frontier/held")
                    self.downloader.wake_at(frontier.next_ready_time(), time.monotonic(), soon=True)
                    return None
            return self._release(host, request, entry)
        return None

    def _respell_queued(self, host: str, entry: Entry, now: float) -> Entry | None:
        """A URL queued before its host's aliases were learned, in the spelling they give: dropped
        when that spelling was seen already, moved to the other host's queue for a www/bare alias
        (None: nothing to fetch from ``host`` now), else the entry to fetch. The new spelling
        becomes seen when the request is released, not here: an entry held back (patience, a
        host's wait) goes back to its queue as it was popped, and is re-spelled again."""
        request = entry.payload
        if _spelled_as_given(request.meta):
            return entry
        alias = self.aliases.canonical(entry.url)
        if self.aliases.fetched_as_another(alias) or (alias != entry.url and alias in self.admission.seen):
            self.stats.inc_value("focus/aliases/dropped")
            self.frontier.release(host, now)
            return None
        if alias == entry.url:
            return entry
        self.stats.inc_value("focus/aliases/respelled")
        moved = Entry(entry.priority, alias, _respelled(request, alias), entry.features, entry.version)
        if host_key(alias) != host:
            self.frontier.push(host_key(alias), moved)
            self.frontier.release(host, now)
            return None
        return moved

    def _release(self, host: str, request: Request, entry: Entry | None) -> Request:
        meta = request.meta
        meta["download_slot"] = host
        meta[M.HOST] = host
        self.gate.start(host, request)
        self.stats.inc_value("scheduler/dequeued")
        if self.patience is not None:
            self.patience.released(time.monotonic())
        if self.revisits is not None and not meta.get(M.ROBOTS_FOR):
            self.revisits.released_one(time.monotonic(), revisit=meta.get(M.REVISIT) is not None)
        if entry is not None and not meta.get(M.ROBOTS_FOR):
            if meta.get(M.ALIAS_OF) and self.aliases is not None:
                self.admission.seen.add(entry.url)  # re-spelled in the queue (see _respell_queued)
            self.released += 1
            if self.shared is not None:
                self.shared.count_release()
                self.frontier.fetching(host, entry.url)
                self.shared.expect_free(host)
            meta[M.PRIORITY] = round(entry.priority, 4)
            if entry.features is not None:
                meta[M.FEATURES] = entry.features
            # a revisit's why is the revisit plan's (M.REVISIT), not the link's
            meta[M.EXPLAIN] = self.strategy.explain(entry.url, meta) if meta.get(M.REVISIT) is None else []
            self.strategy.released(entry.url)
            self.stats.inc_value("focus/requests_released")
            if self.persistence is not None and meta.get(M.REVISIT) is None:
                # a revisit lost to a kill is due again by the plan the snapshot holds
                self.persistence.released(entry.url, meta.get(M.HEAD_FOR) or request)
        else:
            self.stats.inc_value("focus/robots/requests")
        return request

    # --- revisits (FOCUS_RECRAWL) -----------------------------------------------------------------
    def _queue_revisits(self, now: float) -> None:
        """Due revisits into their hosts' queues at the priority of their value, as many as the
        revisit share allows (``Revisits``); never re-scored (no features)."""
        queued_revisits = len(self.revisits.queued)
        discovery_left = len(self.frontier) > queued_revisits
        for canonical, request, value in self.revisits.due_requests(now, self.released, discovery_left,
                                                                    self.spider.revisit_request):
            self.frontier.push(host_key(canonical), Entry(value, canonical, request, None, -1))

    def _next_wake(self) -> float | None:
        """When the engine should ask again: a host's turn, or the next revisit due."""
        ready_at = self.frontier.next_ready_time()
        if self.revisits is None:
            return ready_at
        due = self.revisits.next_due(time.monotonic())
        return due if ready_at is None else ready_at if due is None else min(ready_at, due)

    def _on_page_visited(self, request, response, url, kind, text_hash, weight=None, etag=None,
                         last_modified=None, spider=None):
        revisit = request.meta.get(M.REVISIT) is not None
        self.revisits.record(url, response.status, revisit=revisit, text_hash=text_hash, weight=weight, etag=etag,
                             last_modified=last_modified, released=self.released,
                             depth=request.meta.get(M.DEPTH, 0), kind=kind)
        requested = canonicalize(page_url(request)) if revisit else url
        if requested != url:
            self.revisits.record(requested, 301, revisit=True)  # moved: its new address is tracked

    def _on_render_judged(self, request, host, shell=None, plain=None, rendered=None, spider=None):
        if plain is not None and rendered is not None:
            if self.render_hosts.rendered(host, *plain, *rendered):
                self.stats.inc_value("focus/render/gained")
        elif shell is not None:
            self.render_hosts.plain_page(host, shell)
        self.stats.set_value("focus/render/hosts_marked", self.render_hosts.stats()["hosts_marked"])

    def _on_change_hinted(self, url, changed_at=None, changefreq=None, spider=None):
        self.revisits.hint(url, changed_at, changefreq)

    def _free(self, host: str, ready_at: float) -> None:
        """The host (and, per IP, its server) may be contacted again from ``ready_at``."""
        self.frontier.release(host, ready_at)
        self.gate.free(host, ready_at)
        self.downloader.wake_at(self.frontier.next_ready_time(), time.monotonic())

    # --- feedback from the downloader ---------------------------------------------------------
    def _on_response_downloaded(self, response, request, spider=None):
        host = request.meta.get(M.HOST)
        if host is None:
            return
        request.meta[M.GOT_RESPONSE] = True
        request.meta[M.STATUS] = response.status
        self.gate.response(host, request.meta.get("download_latency"), response.status,
                           response.headers.get(b"Retry-After"), time.monotonic())
        if response.status in (429, 503):
            self.stats.inc_value("focus/politeness/backoffs")

    def _on_request_left(self, request, spider=None):
        meta = request.meta
        if self.revisits is not None and meta.get(M.REVISIT) is not None:
            self.revisits.left(canonicalize(page_url(request)))
        host = meta.get(M.HOST)
        if host is None or self.gate.inflight.get(host) is not request:
            return
        robots_request = bool(meta.get(M.ROBOTS_FOR))
        if not meta.get(M.GOT_RESPONSE) and not robots_request:
            self.stats.inc_value("focus/politeness/network_errors")
        ready_at = self.gate.finished(host, request, got_response=bool(meta.get(M.GOT_RESPONSE)),
                                      robots_status=meta.get(M.STATUS, 0) if robots_request else None,
                                      now=time.monotonic())
        if ready_at is not None:  # else: busy until its robots.txt is applied
            self._free(host, ready_at)

    # --- feedback from the spider and the pipelines ---------------------------------------------
    def _on_page_scored(self, request, response, page, links=None, hit=None, spider=None):
        """``hit``: the page counts as found for the learner (FOCUS_REWARD_THRESHOLD); without it,
        the item's relevance. A revisit teaches the learner nothing about the link that led there."""
        if request.meta.get(M.REVISIT) is not None:
            return
        if self.aliases is not None:
            self._alias_evidence(request, page)
        wasted = page.score is None
        relevant = not wasted and bool(page.relevant if hit is None else hit)
        self.learner.observe(canonicalize(page.final_url or request.url), link_parent(request.meta),
                             request.meta.get(M.FEATURES), page_reward(page.score, relevant), relevant, wasted)
        self.rescorer.learner_updated()

    def _on_item_done(self, item, response=None, spider=None, exception=None):
        """The page's item has been through the pipelines. A duplicate is waste the learner should
        know about (traps and mirrors show up as duplicates); with JOBDIR, a stored page must not
        be fetched again on resume."""
        if getattr(item, "duplicate_of", None):
            self.learner.mark_wasted(canonicalize(item.final_url or item.url))
            self.stats.inc_value("focus/learner/duplicates_punished")
        self._done(item)

    def _on_page_stored(self, item, **kwargs):
        """A page in the store is done for a resume: its links were queued before it, and the
        store would otherwise hold a page the resumed crawl fetches again."""
        self._done(item)

    def _done(self, item) -> None:
        if self.persistence is None and self.shared is None:
            return
        urls = {canonicalize(u) for u in (getattr(item, "url", None), getattr(item, "final_url", None)) if u}
        if self.persistence is not None:
            self.persistence.done(urls)
        if self.shared is not None:
            self.shared.done(urls)

