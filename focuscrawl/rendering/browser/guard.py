"""What a page the crawl's browser renders may load: ``RenderGuard``, a Playwright route on every
page (see ``rendering.browser.handler``), and ``ResourceCache``, the scripts and stylesheets kept
across a host's renders."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

from focuscrawl.config import FocusConfig
from focuscrawl.rendering.network_rules import ServerRules
from focuscrawl.safety import NetworkPolicy, host_address

logger = logging.getLogger(__name__)

#: what a page needs no browser to load for its text and links
BLOCKED_TYPES = frozenset({"image", "media", "font", "imageset", "texttrack", "beacon", "csp_report", "ping"})
#: resource types kept across renders of a host (an application's code, not its data)
CACHED_TYPES = frozenset({"script", "stylesheet"})


class ResourceCache:
    """Scripts and stylesheets of the crawl's rendered pages, by URL, bounded in entries and bytes
    (least recently used out first); not kept when the server says ``no-store``."""

    def __init__(self, max_entries: int = 256, max_bytes: int = 32 * 1024 * 1024):
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.bytes = 0
        self.entries: OrderedDict[str, tuple[int, dict, bytes]] = OrderedDict()

    def get(self, url: str):
        entry = self.entries.get(url)
        if entry is not None:
            self.entries.move_to_end(url)
        return entry

    def put(self, url: str, status: int, headers: dict, body: bytes) -> None:
        if status != 200 or "no-store" in (headers.get("cache-control") or "").lower() or len(body) > self.max_bytes:
            return
        old = self.entries.pop(url, None)
        if old is not None:
            self.bytes -= len(old[2])
        self.entries[url] = (status, headers, body)
        self.bytes += len(body)
        while len(self.entries) > self.max_entries or self.bytes > self.max_bytes:
            _, (_, _, dropped) = self.entries.popitem(last=False)
            self.bytes -= len(dropped)


class RenderGuard:
    """Which of a rendered page's requests go out, and how: one at a time, through the route."""

    def __init__(self, config: FocusConfig, policy: NetworkPolicy, stats, *, proxied: bool, user_agent: str = "",
                 loaded: Callable[..., object] | None = None):
        self.loaded = loaded  # told of each of a page's requests: the request log's render_loaded
        self.user_agent = user_agent  # the crawl's, on every request the browser makes: a clear name
        self.other_hosts = config.render_other_hosts
        self.max_bytes = config.render_max_bytes
        self.timeout_ms = config.render_timeout * 1000
        self.policy = policy
        self.stats = stats
        self.proxied = proxied  # names are resolved by the proxy: only literal addresses are checked here
        # without a proxy, names are resolved and judged here: Chromium never sends loopback
        # through the proxy script, which judges the other private networks where it resolves
        self.rules = ServerRules(policy)
        self.cache = ResourceCache()

    def refusal(self, url: str, resource_type: str, page_host: str, allows: Callable[[str], bool] | None,
                navigation: bool) -> str | None:
        """Why the page may not load ``url`` (a short reason for the stats), or None."""
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return None
        if parts.scheme not in ("http", "https"):
            return "scheme"
        if resource_type in BLOCKED_TYPES:
            return "type"
        host = (parts.hostname or "").lower()
        if host != page_host and not self.other_hosts:
            return "other_host"
        address = host_address(host)
        if address is not None and self.policy.checks and self.policy.refusal(address):
            return "private_network"
        if not navigation and allows is not None and not allows(url):
            return "robots"
        return None

    async def handle(self, route, lock: asyncio.Lock, page_url: str, page_host: str, allows,
                     timed: Callable[[float], None] | None = None, names: dict | None = None) -> None:
        """``timed(seconds)``: told how long the page's own request took (its server's latency);
        ``names``: the page's names judged so far."""
        request = route.request
        navigation = request.is_navigation_request() and request.frame.parent_frame is None
        reason = self.refusal(request.url, request.resource_type, page_host, allows, navigation)
        if reason is None and not self.proxied and self.policy.checks:
            if await self.rules.refusal(request.url, proxied=False, names=names):
                reason = "private_network"
        if reason is not None:
            self.stats.inc_value(f"focus/render/blocked/{reason}")
            self._tell(page_url, request, None, navigation, blocked=reason)
            await route.abort("blockedbyclient")
            return
        cacheable = request.resource_type in CACHED_TYPES and request.method == "GET"
        cached = self.cache.get(request.url) if cacheable else None
        if cached is not None:
            self.stats.inc_value("focus/render/cached")
            status, headers, body = cached  # no request reaches the web: nothing to log
            await route.fulfill(status=status, headers=headers, body=body)
            return
        headers = await request.all_headers()
        if self.user_agent:
            headers["user-agent"] = self.user_agent
        async with lock:  # the page's requests one at a time: one connection to the host
            started = time.monotonic()
            try:
                await route.continue_(headers=headers)
                response = await request.response()
                if response is not None:
                    await asyncio.wait_for(response.finished(), self.timeout_ms / 1000)
            except Exception as exc:  # a network error, a timeout or the page closed: a failed load
                logger.debug("render: %s failed: %s", request.url, exc)
                self.stats.inc_value("focus/render/subresource_failed")
                self._tell(page_url, request, None, navigation)
                return
        self.stats.inc_value("focus/render/requests")
        if navigation and timed is not None:
            timed(time.monotonic() - started)
        self._tell(page_url, request, response.status if response is not None else None, navigation)
        if cacheable and response is not None and response.status == 200:
            try:
                body = await response.body()
            except Exception:  # a body the browser did not keep
                return
            if len(body) <= self.max_bytes:
                self.cache.put(request.url, response.status, await response.all_headers(), body)

    def _tell(self, page_url: str, request, status, navigation: bool, blocked: str | None = None) -> None:
        if self.loaded is not None and not navigation:  # the page's own request is logged as the crawl's
            self.loaded(page=page_url, url=request.url, method=request.method, status=status,
                        resource=request.resource_type, blocked=blocked)
