"""Renders never hold a crawl: what each host's renders take, and what the crawl does about it.

A render holds its host's one connection for as long as the browser works on the page (its
scripts, its data, a subresource that never answers), and the crawl keeps a host to one request
at a time; a host whose renders hang would have the crawl wait on it render after render. So:

- the timeout adapts to the host: once a few of its renders have come back, a render may take
  ``TIMEOUT_FACTOR`` times the slowest of its recent ones (at least ``MIN_TIMEOUT``, at most
  ``FOCUS_RENDER_TIMEOUT``), so a host whose pages render in 2 s is not held 20 s by a page
  that hangs;
- a host whose renders fail or time out ``GIVE_UP_AFTER`` times in a row stops being rendered:
  its pages are read plainly, counted (``focus/render/read_plainly``), and said once in the log;
- a render's time is charged to the render, not to the host's server: the host's adaptive delay
  learns from the page's own response time (``DOCUMENT_LATENCY``, measured by the browser's
  route), not from the seconds the browser spent, so a render does not lengthen its host's
  next wait (``browser.FocusDownloadHandler``);
- a render that fails is one log line, never a traceback.

A page of a host given up that the spider read plainly and found a shell is not asked for again
(``RenderHealth.of(crawler).renders``): its plain version is all the crawl will have.

``RenderHealth`` is the pure core; ``RenderHealthMiddleware`` the downloader middleware that applies
it to renders (ahead of scrapy-splash's middleware, which turns a render into a call of
``SPLASH_URL``), built ``from_crawler``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.rendering.requests import BACKEND_KEYS, RenderMeta, is_render, page_url
from focuscrawl.urls import host_key

logger = logging.getLogger(__name__)

#: a render may take this many times the slowest of its host's recent renders
TIMEOUT_FACTOR = 3.0
#: the shortest timeout the adaptation sets (seconds)
MIN_TIMEOUT = 5.0
#: renders of a host that must have come back before its timeout adapts
ADAPT_AFTER = 2
#: recent renders the adaptation looks at
RECENT = 8
#: failed renders in a row after which a host is read plainly
GIVE_UP_AFTER = 2
#: hosts remembered (the least recently rendered forgotten first; a host given up is kept)
MAX_HOSTS = 10_000

#: meta keys: when the render was sent (monotonic), and the page's own response time as the
#: browser measured it (seconds; what the host's adaptive delay learns from)
STARTED = "focus_render_started"
DOCUMENT_LATENCY = "focus_document_latency"
#: the render's whole time (seconds), for the request log
RENDER_SECONDS = "focus_render_seconds"
#: why a page routed to rendering was read plainly
READ_PLAINLY = "focus_render_read_plainly"

#: Splash's answer to a render that ran out of time
SPLASH_TIMEOUT = 504


@dataclass
class _Host:
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT))  # seconds of renders that came back
    failures_in_row: int = 0
    failures: int = 0
    renders: int = 0
    given_up: str = ""  # why its pages are read plainly ("" while it is rendered)


class RenderHealth:
    """Per host: the timeout its renders get, and whether it is rendered at all. Pure."""

    #: the crawler's attribute holding its crawl's RenderHealth (``of``): the middleware records
    #: into it, the spider asks it before asking for a render of a page it read plainly
    ATTRIBUTE = "_focus_render_health"

    @classmethod
    def of(cls, crawler) -> RenderHealth:
        """The crawl's RenderHealth, made at the first ask."""
        health = getattr(crawler, cls.ATTRIBUTE, None)
        if health is None:
            try:
                timeout = FocusConfig.from_settings(crawler.settings).render_timeout
            except ConfigError:
                timeout = DEFAULTS.render_timeout  # the crawl itself reports the bad setting
            health = cls(timeout)
            setattr(crawler, cls.ATTRIBUTE, health)
        return health

    def __init__(self, timeout: float, *, factor: float = TIMEOUT_FACTOR, floor: float = MIN_TIMEOUT,
                 adapt_after: int = ADAPT_AFTER, give_up_after: int = GIVE_UP_AFTER, max_hosts: int = MAX_HOSTS):
        self.configured = timeout
        self.factor = factor
        self.floor = min(floor, timeout)
        self.adapt_after = adapt_after
        self.give_up_after = give_up_after
        self.max_hosts = max_hosts
        self.hosts: OrderedDict[str, _Host] = OrderedDict()
        self.given_up = 0

    def timeout(self, host: str) -> float:
        """Seconds a render of ``host`` may take now."""
        state = self.hosts.get(host)
        if state is None or len(state.recent) < self.adapt_after:
            return self.configured
        return min(self.configured, max(self.floor, self.factor * max(state.recent)))

    def renders(self, host: str) -> bool:
        """Whether ``host``'s pages still go to the browser."""
        state = self.hosts.get(host)
        return state is None or not state.given_up

    def rendered(self, host: str, seconds: float) -> None:
        state = self._host(host)
        state.renders += 1
        state.failures_in_row = 0
        state.recent.append(max(0.0, seconds))

    def failed(self, host: str, why: str) -> bool:
        """A render of ``host`` failed (``why``: "timed out after 12 s", ...): True when the host is
        given up now."""
        state = self._host(host)
        state.renders += 1
        state.failures += 1
        state.failures_in_row += 1
        if state.given_up or state.failures_in_row < self.give_up_after:
            return False
        state.given_up = f"{state.failures_in_row} renders in a row failed, the last {why}"
        self.given_up += 1
        return True

    def explain(self, host: str) -> str:
        state = self.hosts.get(host)
        if state is None:
            return "no render of this host yet"
        if state.given_up:
            return f"pages read plainly: {state.given_up}"
        return (f"rendered within {self.timeout(host):.1f} s: {state.renders - state.failures} of {state.renders} "
                "renders came back")

    def _host(self, host: str) -> _Host:
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = _Host()
            if len(self.hosts) > self.max_hosts:
                self._forget_one()
        else:
            self.hosts.move_to_end(host)
        return state

    def _forget_one(self) -> None:
        for name, state in self.hosts.items():  # least recently rendered first
            if not state.given_up:
                del self.hosts[name]
                return


def is_timeout(exception: BaseException) -> bool:
    """A render that ran out of time (Playwright's, asyncio's or Twisted's timeout)."""
    if isinstance(exception, (asyncio.TimeoutError, TimeoutError)):
        return True
    name = type(exception).__name__
    return "Timeout" in name or "timed out" in str(exception).lower()


def first_line(exception: BaseException) -> str:
    lines = str(exception).strip().splitlines()
    return lines[0][:200] if lines else type(exception).__name__


class RenderHealthMiddleware:
    """Downloader middleware (ahead of scrapy-splash's, 725): a render of a host given up is read
    plainly; every other render gets its host's timeout, and its outcome is recorded."""

    def __init__(self, crawler, config: FocusConfig):
        self.crawler = crawler
        self.stats = crawler.stats
        self.health = RenderHealth.of(crawler)
        self.render_meta = RenderMeta(config)

    @classmethod
    def from_crawler(cls, crawler):
        try:
            config = FocusConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            raise NotConfigured(str(exc)) from None
        if config.render == "never":
            raise NotConfigured("FOCUS_RENDER=never")
        return cls(crawler, config)

    def process_request(self, request, spider=None):
        meta = request.meta
        if not is_render(meta) or meta.get("_splash_processed"):
            return None  # a plain request, or the call of SPLASH_URL a render became (already seen)
        host = meta.get(M.HOST) or host_key(request.url)
        if not self.health.renders(host):
            for key in BACKEND_KEYS:
                meta.pop(key, None)
            meta[READ_PLAINLY] = self.health.hosts[host].given_up
            self.stats.inc_value("focus/render/read_plainly")
            return None
        timeout = self.health.timeout(host)
        if timeout < self.health.configured:
            self.render_meta.set_timeout(meta, timeout)
            self.stats.inc_value("focus/render/timeout_adapted")
        meta[STARTED] = time.monotonic()
        return None

    def process_response(self, request, response, spider=None):
        seconds = _render_seconds(request.meta)
        if seconds is None:
            return response
        meta = request.meta
        status = getattr(response, "splash_response_status", response.status) if meta.get("splash") else 200
        if status == 200:
            self.health.rendered(self._host(request), seconds)
        else:  # the render service's error answer (scrapy-splash passes it on as the response)
            self._failed(request, seconds, status == SPLASH_TIMEOUT, f"answered {status}")
        return response

    def process_exception(self, request, exception, spider=None):
        seconds = _render_seconds(request.meta)
        if seconds is not None:
            self._failed(request, seconds, is_timeout(exception), f"failed ({first_line(exception)})")
        return None  # the page's failure: the spider's errback records it

    def _failed(self, request, seconds: float, timed_out: bool, failure: str) -> None:
        """A render that failed: ``failure`` says how, unless it ``timed_out`` after ``seconds``."""
        why = f"timed out after {seconds:.1f} s" if timed_out else failure
        host = self._host(request)
        self.stats.inc_value("focus/render/failed_renders")
        if timed_out:
            self.stats.inc_value("focus/render/timeouts")
        gave_up = self.health.failed(host, why)
        if gave_up:
            self.stats.inc_value("focus/render/hosts_given_up")
        logger.warning("render of %s %s%s", page_url(request), why,
                       f"; {host}'s pages are read plainly from now on ({self.health.hosts[host].given_up})"
                       if gave_up else "")

    @staticmethod
    def _host(request) -> str:
        return request.meta.get(M.HOST) or host_key(page_url(request))


def _render_seconds(meta) -> float | None:
    """How long a render this middleware timed took, or None for any other request."""
    started = meta.get(STARTED)
    if started is None or not is_render(meta):
        return None
    return time.monotonic() - started
