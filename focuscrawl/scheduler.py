"""FocusScheduler: the frontier, the link-reward learner and the politeness policy behind
Scrapy's scheduler interface (``SCHEDULER = "focuscrawl.scheduler.FocusScheduler"``).

Why our own: Scrapy's scheduler honours priority only inside a host and loses it in a download
slot's queue, cannot re-score what it holds, and its robots middleware ignores Crawl-delay.
Here a request leaves ``next_request()`` only when its host may be contacted now (robots.txt
known and allowing it, delay elapsed, nothing else in flight to that host), so the downloader
starts everything it is handed at once and priority is global across hosts.

Feedback arrives through signals: ``response_downloaded`` (latency, status, Retry-After),
``request_left_downloader`` (the host is free again), and ``focuscrawl.signals.page_scored``
(the learner's reward).
"""

from __future__ import annotations

import gc
import logging
import socket
import time
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.request import request_from_dict

from focuscrawl import signals as focus_signals
from focuscrawl.frontier import Entry, Frontier, SeenSet
from focuscrawl.frontier.mercator import PackedRescorer, read_stored, record_priority
from focuscrawl.jobdir import JobDir, JobDirError
from focuscrawl.learning import LinkRewardLearner, link_context, link_features, link_parent
from focuscrawl.learning.learner import HUB_CAP, LEARNING_RATE, is_vector, page_reward
from focuscrawl.politeness import DelayPolicy, ExclusionList, HostTiming, RobotsRules, RobotsState, TrapRules
from focuscrawl.request_codec import LinkPreview, RequestCodec, packed_row, packed_rows
from focuscrawl.urls import canonicalize, extension, host_key, robots_url

logger = logging.getLogger(__name__)

ROBOTS_PRIORITY = float("inf")
ROBOTS_SETTLE_TIMEOUT = 60.0
ROBOTS_POLL_SECONDS = 0.25
RESCORE_MAX = 20_000  # entries re-scored in the background per learner update, at most
#: ... of which at most this many in one reactor turn, the rest in the turns after: at 15-30 us an
#: entry, a whole pass over a large frontier would stall every download and callback 0.3-0.7 s
RESCORE_CHUNK = 2048
#: Queued URLs from which the frontier deflates its cold runs: below it they stay raw (~650 B a
#: packed URL instead of ~220 B, 32 MB at most), which spares background re-scoring the inflating
#: and deflating of every run it rewrites (~1/6 of its cost on WebKB)
FRONTIER_DEFLATE_FROM = 50_000
MAX_SITEMAPS_PER_HOST = 20
#: extensions that name a page: no HEAD check needed before fetching
PAGE_EXTENSIONS = frozenset({"html", "htm", "shtml", "xhtml", "php", "asp", "aspx", "jsp", "cfm", "cgi", "pl"})


_UNNAMED = object()  # a callback that is not one of the spider's methods (to_dict decides)


def _parent(request: Request) -> str | None:
    """The canonical URL of the page a request's link was found on (None for seeds)."""
    return link_parent(request.meta)


class FocusScheduler:
    def __init__(self, crawler):
        self.crawler = crawler
        self.stats = crawler.stats
        try:
            config = read_settings(crawler.settings)
        except ValueError as exc:
            raise NotConfigured(f"focuscrawl scheduler: {exc}") from exc
        for name, value in config.items():  # delays, traps, exclusion, budget, ... (see read_settings)
            setattr(self, name, value)
        # packed entries: a few hundred bytes a queued URL instead of a live Request and vector
        codec = RequestCodec(self._request_dict, self._request_from_dict, _parent) if self.frontier_pack else None
        self.frontier = Frontier(capacity=self.frontier_capacity, codec=codec, deflate_from=FRONTIER_DEFLATE_FROM)
        # the frontier's rescorer: packed entries are re-scored from their bytes, others as entries
        self._rescore = PackedRescorer(self._rescore_entries, self._rescore_packed)
        self._method_names: dict = {}  # the spider's callbacks' functions -> their names
        self.seen = SeenSet()
        self.robots: dict[str, RobotsRules] = {}
        self.timing: dict[str, HostTiming] = {}
        self._ips: dict[str, str] = {}
        self.ip_busy: dict[str, str] = {}  # IP -> the host whose request is in flight there
        self.ip_ready_at: dict[str, float] = {}
        self.job: JobDir | None = None
        self._restoring = False
        self.released = 0
        self.host_admitted: dict[str, int] = {}
        self.inflight: dict[str, Request] = {}  # host -> the request in flight to it
        # canonical URL -> request released but whose item has not been through the pipelines yet
        self.unfinished: dict[str, Request] = {}
        self._robots_pending: dict[str, float] = {}  # host -> when its robots.txt response ended
        self._wakeup = None
        self._last_checkpoint = time.monotonic()
        self._background_version = self.learner.version
        self._rescore_left = 0  # entries still due in the current background pass
        self._rescore_call = None  # the reactor call that takes the pass on
        self.spider = None

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    # --- lifecycle ----------------------------------------------------------------------------
    def open(self, spider):
        self.spider = spider
        sig = self.crawler.signals
        sig.connect(self._on_response_downloaded, signal=signals.response_downloaded)
        sig.connect(self._on_request_left, signal=signals.request_left_downloader)
        sig.connect(self._on_page_scored, signal=focus_signals.page_scored)
        # The frontier enforces every delay; a delay in the download slot would only hold
        # requests in a queue where their priority is lost.
        downloader = self.crawler.engine.downloader
        downloader._delay = 0.0
        downloader._jitter = 0.0
        for slot_settings in downloader.per_slot_settings.values():
            slot_settings["delay"] = 0.0
        sig.connect(self._on_item_done, signal=signals.item_scraped)
        sig.connect(self._on_item_done, signal=signals.item_dropped)
        model = getattr(spider, "model", None)  # the focused spider's topic model (links' scores)
        if model is not None:
            self.learner.use_link_model(getattr(model, "link_pipeline", None) is not None,
                                        getattr(model, "learner_priors", None))
        if self.jobdir:
            self.job = JobDir(self.jobdir)
            self._restoring = True
            self._restore()
            self._restoring = False
        # What exists now (Scrapy, Twisted, the models: ~170,000 objects) lives as long as the
        # crawl: frozen, it is left out of the garbage collector's full passes, which otherwise
        # stall the reactor ~100 ms each (every host's next request late by as much).
        # An application that manages the collector itself (it froze objects already) is left alone.
        self._froze_gc = gc.get_freeze_count() == 0
        if self._froze_gc:
            gc.freeze()
        return None

    def close(self, reason):
        if getattr(self, "_froze_gc", False):
            gc.unfreeze()
        for call in (self._wakeup, self._rescore_call):
            if call is not None and call.active():
                call.cancel()
        if self.job is not None:
            self._checkpoint()
            self.job.close()
        self.stats.set_value("focus/frontier/left", len(self.frontier))
        self.stats.set_value("focus/frontier/rescored", self.frontier.rescored)
        self.stats.set_value("focus/frontier/pruned", self.frontier.pruned)
        self.stats.set_value("focus/seen", len(self.seen))
        return None

    def has_pending_requests(self) -> bool:
        if self.budget and self.released >= self.budget:
            return False
        if not len(self.frontier):
            return self.job is not None and self.job.has_spill()
        if self.inflight or self._robots_pending:
            return True
        ready_at = self.frontier.next_ready_time()
        if ready_at is not None and ready_at - time.monotonic() > self.max_wait:
            # every waiting host is blocked for long (back-off, unreachable robots.txt): finish
            # rather than idle; with JOBDIR the waiting URLs are kept for a resumed crawl
            if not self.stats.get_value("focus/finished_waiting"):
                self.stats.set_value("focus/finished_waiting", len(self.frontier))
                logger.info("%d URLs wait for hosts not ready for %.0f s (FOCUS_MAX_WAIT %.0f s): finishing",
                            len(self.frontier), ready_at - time.monotonic(), self.max_wait)
            return False
        return True

    def __len__(self) -> int:
        return len(self.frontier)

    # --- enqueue ------------------------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        meta = request.meta
        if meta.get("focus_robots_for"):
            # a robots.txt fetch (or a redirect of one): always allowed, first in its host's queue
            self.frontier.push(host_key(request.url), Entry(ROBOTS_PRIORITY, request.url, request))
            return True
        canonical = canonicalize(request.url)
        if not request.dont_filter and not self.seen.add(canonical):
            self.stats.inc_value("focus/dupes_filtered")
            if meta.get("redirect_times"):
                return self._refuse(request, "redirect_target_seen")
            if canonical != request.url:
                # a session id, tracking parameter or parameter order made this URL look new
                return self._refuse(request, "canonical_duplicate")
            return False
        reason = None
        if meta.get("redirect_times", 0) > self.max_redirects:
            reason = "too_many_redirects"
        if not reason and not meta.get("focus_sitemap"):  # a sitemap may well be .xml.gz
            reason = self.traps.check(canonical, meta.get("depth", 0))
        reason = reason or self._excluded(request.url) or self._out_of_scope(canonical)
        host = host_key(canonical)
        if not reason and self.host_budget and self.host_admitted.get(host, 0) >= self.host_budget:
            reason = "host_budget"
        if not reason and self.obey_robots:
            rules = self.robots.get(host)
            if rules is not None and rules.state is RobotsState.PARSED and not rules.allows(request.url, self.agent):
                reason = "robots"
        if reason:
            return self._refuse(request, reason)
        vector = self.learner.vectorise(link_features(link_context(canonical, meta)))
        entry = Entry(self.learner.score(vector, canonical, _parent(request)), canonical, request, vector,
                      self.frontier.version)
        self.host_admitted[host] = self.host_admitted.get(host, 0) + 1
        pruned = self.frontier.push(host, entry)
        if self.job is not None and not self._restoring:
            self.job.append(("enq", self._request_dict(request)))
        self.stats.inc_value("focus/frontier/enqueued")
        if pruned:
            self.stats.inc_value("focus/frontier/pruned", len(pruned))
            self._spill(pruned)
        return True

    def _out_of_scope(self, canonical: str) -> str | None:
        if not self.allowed_domains:
            return None
        host = host_key(canonical).split(":")[0]
        if any(host == d or host.endswith("." + d) for d in self.allowed_domains):
            return None
        return "out_of_scope"

    def _excluded(self, url: str) -> str | None:
        if self.exclusion is None:
            return None
        return "excluded" if self.exclusion.excludes(url) else None

    def _refuse(self, request: Request, reason: str) -> bool:
        self.stats.inc_value(f"focus/refused/{reason}")
        self.crawler.signals.send_catch_log(focus_signals.request_refused, request=request, reason=reason)
        return False

    # --- dequeue ------------------------------------------------------------------------------
    def next_request(self) -> Request | None:
        if self.budget and self.released >= self.budget:
            if not self.stats.get_value("focus/budget_exhausted"):
                self.stats.set_value("focus/budget_exhausted", 1)
                logger.info("request budget of %d reached; finishing the requests in flight", self.budget)
            return None
        now = time.monotonic()
        for host, finished in list(self._robots_pending.items()):
            if now - finished > ROBOTS_SETTLE_TIMEOUT:  # the callback never came: do not stall the host
                logger.warning("robots.txt of %s was fetched but never applied; releasing the host", host)
                self._robots_pending.pop(host)
                self._free(host, now)
        if self.job is not None and now - self._last_checkpoint >= self.checkpoint_seconds:
            self._checkpoint()
        for _ in range(10_000):
            popped = self.frontier.pop(now, rescore=self._rescore)
            if popped is None:
                if not len(self.frontier) and self.job is not None and self.job.has_spill():
                    self._unspill()
                    continue
                self._schedule_wakeup()
                return None
            host, entry = popped
            request = entry.payload
            if self.per_ip and self._ip_blocked(host, now):
                self.frontier.requeue(host, entry)
                self.frontier.release(host, max(now + 0.05, self.ip_ready_at.get(self._ip(host), now)))
                self.stats.inc_value("focus/politeness/ip_waits")
                continue
            if request.meta.get("focus_robots_for"):
                return self._release(host, request, entry)
            if self.obey_robots:
                rules = self.robots.setdefault(host, RobotsRules())
                if rules.needs_fetch(now):
                    self.frontier.requeue(host, entry)  # the host stays busy while robots.txt is fetched
                    rules.start_fetch()
                    return self._release(host, self._robots_request(host, request.url), None)
                if rules.state is RobotsState.FETCHING or rules.state is RobotsState.UNREACHABLE:
                    # robots.txt in flight (e.g. redirected to another host) or failing: look again later
                    self.frontier.requeue(host, entry)
                    self.frontier.release(host, max(now + ROBOTS_POLL_SECONDS, rules.expires_at))
                    continue
                if not rules.allows(request.url, self.agent):
                    self._refuse(request, "robots")
                    self.frontier.release(host, now)
                    continue
            reason = self._excluded(request.url)
            if reason:
                self._refuse(request, reason)
                self.frontier.release(host, now)
                continue
            if self._worth_waiting(entry, now):
                self.frontier.requeue(host, entry)
                self.frontier.release(host, now)
                self.stats.inc_value("focus/frontier/held")
                self._schedule_wakeup(soon=True)
                return None
            if self._needs_head_check(request):
                request = self._head_request(request)
            return self._release(host, request, entry)
        return None

    def _timing(self, host: str) -> HostTiming:
        """The host's response times and back-off (created on first use)."""
        timing = self.timing.get(host)
        if timing is None:
            timing = self.timing[host] = HostTiming()
        return timing

    def _worth_waiting(self, entry: Entry, now: float) -> bool:
        """Patience: a request is a cost. When a clearly better URL sits at a host that will be
        free within FOCUS_PATIENCE seconds, wait for it rather than spend a request on a worse
        one just because its host happens to be free (politeness is untouched: we only wait).
        A host with a request in flight is free at the earliest its delay after now (its response
        ends later): one with a longer delay (Crawl-delay, back-off) is not waited for, as it is
        not once its response is in. A seed (depth 0) is never held: the user chose it as a way into
        the topic, and while the first seed's rich links kept coming, the other sites' seeds waited
        up to 188 requests in WebKB crawls, and with them all they lead to (BENCHMARKS.md 1b-8)."""
        if self.patience <= 0 or entry.payload.meta.get("depth") == 0:
            return False
        horizon = now + self.patience
        busy = [host for host in self.inflight
                if self.delays.next_ready(host, self._timing(host), now) <= horizon]
        best = self.frontier.best_soon(now, self.patience, busy)
        return best > entry.priority + self.patience_margin

    # --- optional politeness per IP address (several host names on one server) ---------------
    def _ip(self, host: str) -> str:
        """The host's IPv4 address (cached); the host name itself when it does not resolve here
        (e.g. behind a proxy that resolves it)."""
        ip = self._ips.get(host)
        if ip is None:
            try:
                ip = socket.gethostbyname(host.rsplit(":", 1)[0] if host.count(":") == 1 else host)
            except OSError:
                ip = host
            self._ips[host] = ip
        return ip

    def _ip_blocked(self, host: str, now: float) -> bool:
        ip = self._ip(host)
        holder = self.ip_busy.get(ip)
        return (holder is not None and holder != host) or self.ip_ready_at.get(ip, 0.0) > now

    def _release(self, host: str, request: Request, entry: Entry | None) -> Request:
        meta = request.meta
        meta["download_slot"] = host
        meta["focus_host"] = host
        self.inflight[host] = request
        if self.per_ip:
            self.ip_busy[self._ip(host)] = host
        if entry is not None and not meta.get("focus_robots_for"):
            self.released += 1
            meta["focus_priority"] = round(entry.priority, 4)
            if entry.features is not None:
                meta["focus_features"] = entry.features
            meta["focus_explain"] = self.learner.explain(link_features(link_context(entry.url, meta)), entry.url,
                                                         _parent(request))
            # the page's GET, not the HEAD sent first (its callbacks are ours: a checkpoint cannot
            # name them, and a resume should fetch the page, checking it again)
            self.unfinished[entry.url] = meta.get("focus_head_for") or request
            self.stats.inc_value("focus/requests_released")
            if self.job is not None:
                self.job.append(("deq", entry.url))
                self.job.flush()  # on disk (in the OS) before the request can complete
        else:
            self.stats.inc_value("focus/robots/requests")
        return request

    # --- optional HEAD check of URLs whose type the extension does not tell -------------------
    def _needs_head_check(self, request: Request) -> bool:
        meta = request.meta
        return (self.head_check and request.method == "GET" and not meta.get("focus_head_checked")
                and not meta.get("focus_sitemap") and not urlsplit(request.url).path.endswith("/")
                and extension(request.url) not in PAGE_EXTENSIONS)

    def _head_request(self, request: Request) -> Request:
        head = request.replace(method="HEAD", callback=self._head_checked, errback=self._head_failed)
        head.meta["focus_head_for"] = request
        self.stats.inc_value("focus/head/requests")
        return head

    def _head_checked(self, response):
        original = response.meta["focus_head_for"]
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1").lower()
        if response.status < 400 and content_type and "html" not in content_type:
            self.stats.inc_value("focus/head/not_html")
            self._refuse(original, "head_not_html")
            self.unfinished.pop(canonicalize(original.url), None)
            return None
        return self._get_after_head(original)

    def _head_failed(self, failure):
        return self._get_after_head(failure.request.meta["focus_head_for"])

    @staticmethod
    def _get_after_head(original: Request) -> list[Request]:
        """The GET, back through the frontier, marked so that it is not checked again."""
        original.meta["focus_head_checked"] = True
        original.dont_filter = True  # already in the seen set: it was admitted once
        return [original]

    def _robots_request(self, host: str, page_url: str) -> Request:
        return Request(
            robots_url(page_url), callback=self._robots_fetched, errback=self._robots_failed,
            dont_filter=True, priority=10_000,
            # 4xx and 5xx reach the callback (RFC 9309 gives them meanings); 3xx are followed
            meta={"focus_robots_for": host, "dont_retry": True, "handle_httpstatus_list": list(range(400, 600))},
        )

    def _rescore_entries(self, entries: list[Entry]) -> list[float]:
        """New priorities; a packed entry comes as a LinkPreview (its parent), not a Request."""
        scores = iter(self.learner.score_many([
            (e.features, e.url, e.payload.parent if type(e.payload) is LinkPreview else _parent(e.payload))
            for e in entries if e.features is not None]))
        return [ROBOTS_PRIORITY if e.features is None else next(scores) for e in entries]

    def _rescore_packed(self, urls: list[str], blobs: list[bytes]) -> list[float]:
        """``_rescore_entries`` for packed entries, from their URLs and the codec's bytes."""
        parents, counts, idx, val = self.frontier.codec.links(blobs)
        scores = self.learner.score_joined(urls, parents, [n or 0 for n in counts], idx, val)
        return [ROBOTS_PRIORITY if n is None else score for n, score in zip(counts, scores)]

    def _schedule_wakeup(self, soon: bool = False) -> None:
        """Ask the engine for the next request when the earliest waiting host becomes ready
        (or shortly, when holding back for a better URL)."""
        from twisted.internet import reactor  # here, not at import: Scrapy installs the reactor first

        ready_at = self.frontier.next_ready_time()
        if ready_at is None:
            return
        delay = max(0.0, ready_at - time.monotonic()) + 0.001
        if soon:
            delay = max(delay, 0.01)
        if self._wakeup is not None and self._wakeup.active():
            if self._wakeup.getTime() <= reactor.seconds() + delay:
                return
            self._wakeup.cancel()
        self._wakeup = reactor.callLater(delay, self._wake)

    def _wake(self) -> None:
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is not None:
            slot.nextcall.schedule()

    # --- robots.txt ---------------------------------------------------------------------------
    def _robots_fetched(self, response):
        host = response.meta["focus_robots_for"]
        rules = self.robots.setdefault(host, RobotsRules())
        rules.record_response(response.status, response.body, time.monotonic(), self.robots_cache, self.robots_retry)
        self._give_up_if_unreachable(host, rules)
        self.stats.inc_value(f"focus/robots/{rules.state.value}")
        self._apply_robots(host, rules)
        self.crawler.signals.send_catch_log(focus_signals.robots_fetched, host=host, rules=rules, response=response)
        logger.debug("robots.txt of %s (status %s):\n%s", host, response.status, rules.text)
        self._robots_settled(response.request)
        if not (self.follow_sitemaps and rules.sitemaps and hasattr(self.spider, "sitemap_request")):
            return None
        # robots.txt in the wild lists relative or odd sitemap URLs: resolve them, keep http(s)
        urls = [urljoin(response.url, u.strip()) for u in rules.sitemaps[:MAX_SITEMAPS_PER_HOST]]
        urls = [u for u in urls if u.startswith(("http://", "https://"))]
        self.stats.inc_value("focus/sitemaps/listed", len(urls))
        return [self.spider.sitemap_request(url) for url in urls]

    def _robots_failed(self, failure):
        request = failure.request
        host = request.meta["focus_robots_for"]
        rules = self.robots.setdefault(host, RobotsRules())
        now = time.monotonic()
        if failure.check(IgnoreRequest):  # e.g. too many redirects: RFC 9309 lets us treat it as unavailable
            rules.record_response(404, b"", now, self.robots_cache, self.robots_retry)
        else:
            rules.record_unreachable(now, self.robots_retry)
            self._give_up_if_unreachable(host, rules)
        self.stats.inc_value(f"focus/robots/{rules.state.value}")
        logger.info("robots.txt of %s: %s (%s)", host, rules.state.value, failure.getErrorMessage())
        self._robots_settled(request)
        return None

    def _give_up_if_unreachable(self, host: str, rules: RobotsRules) -> None:
        """robots.txt failed (5xx or network) twice in a row: give the host up for this crawl."""
        if rules.failures >= 2:
            dropped = self.frontier.drop_host(host)
            self.stats.inc_value("focus/refused/robots_unreachable", len(dropped))

    def _apply_robots(self, host: str, rules: RobotsRules) -> None:
        timing = self._timing(host)
        requested = rules.crawl_delay(self.agent)
        if requested:
            within = self.delays.set_crawl_delay(timing, requested)
            if not within:
                self.stats.inc_value("focus/robots/crawl_delay_over_cap")
                if self.over_cap == "skip":
                    dropped = self.frontier.drop_host(host)
                    self.stats.inc_value("focus/refused/crawl_delay_over_cap", len(dropped))
                    logger.info("%s asks for Crawl-delay %.0fs (cap %.0fs): host skipped", host, requested,
                                self.delays.max_crawl_delay)

    # --- feedback from the downloader ---------------------------------------------------------
    def _on_response_downloaded(self, response, request, spider=None):
        host = request.meta.get("focus_host")
        if host is None:
            return
        request.meta["focus_got_response"] = True
        request.meta["focus_status"] = response.status
        timing = self._timing(host)
        self.delays.record_response(timing, request.meta.get("download_latency"), response.status,
                                    response.headers.get(b"Retry-After"), time.monotonic())
        if response.status in (429, 503):
            self.stats.inc_value("focus/politeness/backoffs")

    def _on_request_left(self, request, spider=None):
        host = request.meta.get("focus_host")
        if host is None or self.inflight.get(host) is not request:
            return
        del self.inflight[host]
        now = time.monotonic()
        timing = self._timing(host)
        if not request.meta.get("focus_got_response"):
            self.delays.record_response(timing, None, None, None, now)  # network error: back off
            if request.meta.get("focus_robots_for") is None:
                self.stats.inc_value("focus/politeness/network_errors")
        if request.meta.get("focus_robots_for") and not (300 <= request.meta.get("focus_status", 0) < 400):
            # Keep the host busy until its robots.txt is applied (the callback runs later), so the
            # first page request already obeys its Crawl-delay.
            self._robots_pending[host] = now
            return
        self._free(host, self.delays.next_ready(host, timing, now))

    def _free(self, host: str, ready_at: float) -> None:
        """The host (and, per IP, its server) may be contacted again from ``ready_at``."""
        self.frontier.release(host, ready_at)
        if self.per_ip:
            ip = self._ip(host)
            if self.ip_busy.get(ip) == host:
                del self.ip_busy[ip]
            self.ip_ready_at[ip] = max(self.ip_ready_at.get(ip, 0.0), ready_at)
        self._schedule_wakeup()

    def _robots_settled(self, request) -> None:
        """robots.txt applied (or given up on): free the host it was fetched from."""
        host = request.meta.get("focus_host")
        finished = self._robots_pending.pop(host, None)
        if finished is not None:
            self._free(host, self.delays.next_ready(host, self._timing(host), finished))

    # --- feedback from the spider (the learner's reward) --------------------------------------
    def _on_page_scored(self, request, response, page, links=None, hit=None, spider=None):
        """``hit``: the page counts as found for the learner (FOCUS_REWARD_THRESHOLD); without it,
        the item's relevance."""
        meta = request.meta
        wasted = page.score is None
        relevant = not wasted and bool(page.relevant if hit is None else hit)
        reward = page_reward(page.score, relevant)
        self.learner.observe(canonicalize(page.final_url or request.url), _parent(request),
                             meta.get("focus_features"), reward, relevant, wasted)
        if self.learner.version != self._background_version:
            # the learner moved on: bring a bounded batch of stale entries up to date
            self._background_version = self.learner.version
            self.frontier.version += 1
            # entries whose value rose since they were queued must surface: refresh a good share
            # of the frontier each time (bounded), not only what reaches the top of a host queue
            self._rescore_left = min(RESCORE_MAX, max(256, len(self.frontier) // 2))
            self._rescore_chunk()

    def _rescore_chunk(self) -> None:
        """One reactor turn's share of the background pass (RESCORE_CHUNK entries); the rest in
        the turns after, between downloads and callbacks. A newer learner version starts a new
        pass where this one stands (the frontier's round robin goes on)."""
        if self._rescore_left <= 0:
            return
        done = self.frontier.rescore_stale(self._rescore, limit=min(self._rescore_left, RESCORE_CHUNK))
        self._rescore_left = self._rescore_left - done if done else 0  # none done: nothing is stale
        if self._rescore_left > 0 and self._rescore_call is None:
            self._rescore_call = self._call_soon(self._rescore_next_chunk)

    def _rescore_next_chunk(self) -> None:
        self._rescore_call = None
        self._rescore_chunk()

    @staticmethod
    def _call_soon(func):
        """``func`` in a later reactor turn (a cancellable call)."""
        from twisted.internet import reactor  # here, not at import: Scrapy installs the reactor first

        return reactor.callLater(0, func)

    # --- spill, checkpoint and resume (JOBDIR) -----------------------------------------------
    def _on_item_done(self, item, response=None, spider=None, exception=None):
        """The page's item has been through the pipelines. A duplicate is waste the learner should
        know about (traps and mirrors show up as duplicates); with JOBDIR, a stored page must
        not be fetched again on resume."""
        if getattr(item, "duplicate_of", None):
            self.learner.mark_wasted(canonicalize(item.final_url or item.url))
            self.stats.inc_value("focus/learner/duplicates_punished")
        done = {canonicalize(u) for u in (getattr(item, "url", None), getattr(item, "final_url", None)) if u}
        for url in done:
            self.unfinished.pop(url, None)
            if self.job is not None:
                self.job.append(("done", url))
        if self.job is not None:
            self.job.flush()

    def _spill(self, entries: list[Entry]) -> None:
        if self.job is None:
            return
        self.job.spill([(host_key(e.url), e.priority, self._request_dict(e.payload), e.features) for e in entries])
        self.stats.inc_value("focus/frontier/spilled", len(entries))

    def _unspill(self) -> None:
        rows = self.job.unspill()
        for host, priority, request_dict, features in rows:
            request = self._request_from_dict(request_dict)
            canonical = canonicalize(request.url)
            self.frontier.push(host, Entry(priority, canonical, request, self._vector_of(features, canonical, request), -1))
        if rows:
            logger.info("frontier ran low: %d spilled URLs loaded back", len(rows))
            self.stats.inc_value("focus/frontier/unspilled", len(rows))

    def _checkpoint(self) -> None:
        """The snapshot: packed entries as the frontier stores them (no Request built for them:
        this runs on the reactor's thread, for every queued URL), the rest as request dicts."""
        self._last_checkpoint = time.monotonic()
        entries = []
        for host, entry in self.frontier.rich_entries():
            if entry.payload.meta.get("focus_robots_for"):
                continue
            entries.append((host, entry.priority, self._request_dict(entry.payload), entry.features))
        for url, request in self.unfinished.items():  # released, item not stored yet: first in line on resume
            entries.append((host_key(url), float("inf"), self._request_dict(request), request.meta.get("focus_features")))
        self.job.save({
            "entries": entries, "packed": self.frontier.stored(), "seen": self.seen, "learner": self.learner,
            "released": self.released, "timing": self.timing, "host_admitted": self.host_admitted,
            "robots": {h: (r.text, r.status) for h, r in self.robots.items() if r.state is RobotsState.PARSED},
        })
        self.stats.inc_value("focus/checkpoints")

    def _vector_of(self, features, canonical: str, request: Request):
        """The stored feature vector, or one rebuilt from the request's link context."""
        if is_vector(features):
            return features
        return self.learner.vectorise(link_features(link_context(canonical, request.meta)))

    def _request_dict(self, request: Request) -> dict:
        """``request.to_dict(spider=...)``, without its per-call search of the spider's members
        for the callback's name (~25 us; this runs for every journaled or packed request): a plain
        Request whose callbacks are the spider's methods takes their names from a cache filled by
        ``to_dict`` itself, and the rest of the dict as ``to_dict`` builds it."""
        names = [self._method_name(f) for f in (request.callback, request.errback)]
        if type(request) is not Request or _UNNAMED in names:
            return request.to_dict(spider=self.spider)
        d = {"url": request.url, "callback": names[0], "errback": names[1], "headers": dict(request.headers)}
        for attr in request.attributes:
            d.setdefault(attr, getattr(request, attr))
        return d

    def _method_name(self, func):
        """The spider's name for ``func`` (None or a string as they are), ``_UNNAMED`` otherwise."""
        if func is None or isinstance(func, str):
            return func
        key = getattr(func, "__func__", None)
        if key is None or getattr(func, "__self__", None) is not self.spider:
            return _UNNAMED
        name = self._method_names.get(key)
        if name is None:
            name = self._method_names[key] = Request("http://localhost/", callback=func).to_dict(
                spider=self.spider)["callback"]
        return name

    def _request_from_dict(self, d: dict) -> Request:
        return request_from_dict(d, spider=self.spider)

    def _load_packed(self, stored: list[tuple], done: set[str], pending: set[str]) -> list[tuple]:
        """A snapshot's packed records back into the frontier as they are (no Request built), stale
        (re-scored as they surface), minus the pages done since (not those in flight at the
        snapshot, priority inf: ``_restore`` keeps their rows too). Returns the rows of the records
        in flight at the kill, unpacked: they go first in line, without features (never re-scored)."""
        rows = []
        for host, prefix, loose, blocks in stored:
            records = []
            for record, url, blob in read_stored(prefix, loose, blocks):
                if url in pending:
                    rows.append(packed_row(host, record, url, blob))
                elif url not in done or record_priority(record) == float("inf"):
                    records.append(record)
            self.frontier.load(host, prefix, records, version=-1)
        return rows

    def _restore(self) -> None:
        """Snapshot, then the journal written after it: the frontier, seen set, learner and host
        state of the last checkpoint, plus every URL discovered since, minus the pages done."""
        try:
            state, events = self.job.load()
        except JobDirError as exc:
            logger.error("%s; starting a new crawl", exc)
            self.stats.set_value("focus/resume_failed", 1)
            return
        if state is None and not events:
            return
        done = {url for kind, url in events if kind == "done"}
        # released after the snapshot and never finished: in flight at the kill, fetch them first
        pending = {url for kind, url in events if kind == "deq"} - done
        if state is not None:
            self.seen, self.learner = state["seen"], state["learner"]
            self._background_version = self.learner.version
            self.released = state["released"]
            self.timing = state["timing"]
            for timing in self.timing.values():
                timing.backoff_until = 0.0  # monotonic clocks do not survive a restart
            self.host_admitted = state["host_admitted"]
            for host, (text, _status) in state["robots"].items():
                rules = self.robots[host] = RobotsRules()
                rules.record_response(200, text.encode("utf-8"), time.monotonic(), self.robots_cache,
                                      self.robots_retry)
                self._apply_robots(host, rules)
            rows = list(state["entries"])  # every row, in a snapshot of format 1
            if self.frontier.codec is None:  # FOCUS_FRONTIER_PACK turned off since: no packed records
                rows += packed_rows(state.get("packed", ()))
            else:
                rows += self._load_packed(state.get("packed", ()), done, pending)
            for host, priority, request_dict, features in rows:
                request = self._request_from_dict(request_dict)
                canonical = canonicalize(request.url)
                if canonical in pending or priority == float("inf"):
                    # no features: never re-scored, so it stays first in line
                    self.frontier.push(host, Entry(float("inf"), canonical, request, None, -1))
                elif canonical not in done:
                    vector = self._vector_of(features, canonical, request)
                    self.frontier.push(host, Entry(priority, canonical, request, vector, -1))
        replayed = 0
        for event in events:
            if event[0] == "deq":
                self.released += 1
            elif event[0] == "enq":
                request = self._request_from_dict(event[1])
                canonical = canonicalize(request.url)
                if canonical in done:
                    self.seen.add(canonical)
                elif canonical in pending and self.seen.add(canonical):
                    self.frontier.push(host_key(canonical), Entry(float("inf"), canonical, request, None, -1))
                    replayed += 1
                elif self.enqueue_request(request):
                    replayed += 1
        self._checkpoint()  # a clean generation: the replayed journal is folded into the snapshot
        logger.info("resumed from %s: %d URLs in the frontier (%d from the journal), %d seen, %d pages done "
                    "since the snapshot, %d requests already made", self.jobdir, len(self.frontier), replayed,
                    len(self.seen), len(done), self.released)
        self.stats.set_value("focus/resumed", 1)


def read_settings(s) -> dict:
    """Every setting the scheduler uses, checked: a bad value raises ValueError naming it (the
    crawl command turns that into one error line before the crawl starts)."""
    def number(name, default, kind=float, minimum=0):
        raw = s.get(name)
        try:
            value = kind(default if raw is None else raw)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, not {raw!r}") from None
        if minimum is not None and value < minimum:
            raise ValueError(f"{name} must be at least {minimum}, not {value}")
        return value

    slots = s.getdict("DOWNLOAD_SLOTS")
    over_cap = s.get("FOCUS_CRAWL_DELAY_OVER_CAP", "cap")
    if over_cap not in ("cap", "skip"):
        raise ValueError(f"FOCUS_CRAWL_DELAY_OVER_CAP must be 'cap' or 'skip', not {over_cap!r}")
    # used by the spider (None, the reward threshold's default, is the model's even-odds score);
    # checked here with the rest
    for name in ("FOCUS_RELEVANCE_THRESHOLD", "FOCUS_REWARD_THRESHOLD"):
        threshold = number(name, 0.5)
        if threshold > 1:
            raise ValueError(f"{name} is a probability (0 to 1), not {threshold}")
    number("FOCUS_LINK_EVIDENCE", 1.0)  # the spider's too
    exclude_file = s.get("FOCUS_EXCLUDE_FILE")
    try:
        per_host = {k: float(v["delay"]) for k, v in slots.items() if "delay" in v}
    except (TypeError, ValueError, AttributeError):
        raise ValueError("DOWNLOAD_SLOTS delays must be numbers") from None
    return {
        "frontier_capacity": number("FOCUS_FRONTIER_CAPACITY", 1_000_000, int, 1),
        "frontier_pack": s.getbool("FOCUS_FRONTIER_PACK", True),
        "delays": DelayPolicy(
            minimum=number("DOWNLOAD_DELAY", 1.0),
            adaptive_factor=number("FOCUS_ADAPTIVE_DELAY_FACTOR", 2.0),
            backoff_base=number("FOCUS_BACKOFF_BASE", 5.0),
            backoff_max=number("FOCUS_BACKOFF_MAX", 3600.0),
            per_host_minimum=per_host,
            max_crawl_delay=number("FOCUS_MAX_CRAWL_DELAY", 30.0),
        ),
        "over_cap": over_cap,
        "traps": TrapRules(
            max_depth=number("FOCUS_MAX_DEPTH", 30, int),
            max_url_length=number("FOCUS_MAX_URL_LENGTH", 1024, int),
            max_repeated_segments=number("FOCUS_MAX_REPEATED_SEGMENTS", 3, int),
            deny_extensions=set(s.getlist("FOCUS_DENY_EXTENSIONS")),
        ),
        "exclusion": (ExclusionList(exclude_file, number("FOCUS_EXCLUDE_CHECK_SECONDS", 5.0)) if exclude_file
                      else None),
        "learner": LinkRewardLearner(credit_decay=number("FOCUS_CREDIT_DECAY", 0.5),
                                     exploration=number("FOCUS_EXPLORATION", 0.3),
                                     hub_cap=number("FOCUS_HUB_CAP", HUB_CAP),
                                     learning_rate=number("FOCUS_LEARNING_RATE", LEARNING_RATE)),
        "obey_robots": s.getbool("ROBOTSTXT_OBEY", True),
        "agent": s.get("ROBOTSTXT_USER_AGENT") or s.get("USER_AGENT") or "focuscrawl",
        "robots_cache": number("FOCUS_ROBOTS_CACHE_SECONDS", 86400.0),
        "robots_retry": number("FOCUS_ROBOTS_ERROR_RETRY_SECONDS", 600.0),
        "budget": number("FOCUS_BUDGET", 0, int),
        "host_budget": number("FOCUS_HOST_BUDGET", 0, int),
        "max_redirects": number("FOCUS_MAX_REDIRECTS", 3, int),
        "allowed_domains": [d.lower().lstrip(".") for d in s.getlist("FOCUS_ALLOWED_DOMAINS")],
        "follow_sitemaps": s.getbool("FOCUS_FOLLOW_SITEMAPS", True),
        "head_check": s.getbool("FOCUS_HEAD_CHECK", False),
        "per_ip": s.getbool("FOCUS_POLITENESS_PER_IP", False),
        "patience": number("FOCUS_PATIENCE", 2.0),
        "patience_margin": number("FOCUS_PATIENCE_MARGIN", 0.25, float, None),
        "jobdir": s.get("JOBDIR"),
        "checkpoint_seconds": number("FOCUS_CHECKPOINT_SECONDS", 30.0),
        "max_wait": number("FOCUS_MAX_WAIT", 300.0),
    }
