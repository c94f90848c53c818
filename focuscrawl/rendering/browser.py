"""The browser behind ``FOCUS_RENDER_BACKEND=playwright``: Chromium through scrapy-playwright, on
a leash.

``FocusDownloadHandler`` is the crawl's download handler for http(s): a request the scheduler
marked for rendering goes to a scrapy-playwright handler made at the first such request (a crawl
that renders nothing starts no browser and no Playwright driver); every other request is
fetched as before (``PoliteHTTP11DownloadHandler``), so rendering costs nothing on plain pages.

What the browser may do, decided for every request a rendered page makes (``RenderGuard``, a
Playwright route installed on each page after scrapy-playwright's own, so it takes precedence):

- images, media and fonts are never loaded (text and links need none of them);
- only the page's own host is contacted unless ``FOCUS_RENDER_OTHER_HOSTS``: the render passed
  the crawl's gate for that host (robots.txt, delay, one connection), and another host has not;
- a subresource robots.txt disallows is not loaded; nor an address in a private network (the
  crawl's ``NetworkPolicy``: a page must not turn the browser into a proxy into the network), nor,
  without a proxy, a name resolving into one (judged here: Chromium never sends loopback through
  the proxy script that judges names as it resolves them; a redirect's target is judged only by
  that script);
- the page's requests go out one at a time (the next is let go once the last has finished), so
  the host sees one connection, as from the crawl's plain requests; scripts and stylesheets are
  kept for the crawl (``ResourceCache``) so the next page of the host does not fetch its
  application again. The rendered document is cut at ``FOCUS_RENDER_MAX_BYTES``.

The browser goes through the downloader's proxy (``http_proxy``), so a replayed web renders too.
One browser process; ``FOCUS_RENDER_CONTEXTS`` contexts, one page each; the browser is closed
between renders when its processes hold more than ``FOCUS_RENDER_MAX_BROWSER_MB`` and relaunched
at the next render (as after a crash: scrapy-playwright relaunches a disconnected browser). A
render that fails is a failed request of its page, counted, never a failure of the crawl.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import os
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit
from urllib.request import getproxies

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import FocusConfig
from focuscrawl.extras import MissingExtra, require
from focuscrawl.handlers import PoliteHTTP11DownloadHandler
from focuscrawl.rendering.health import DOCUMENT_LATENCY, RENDER_SECONDS
from focuscrawl.rendering.server_rules import ServerRules
from focuscrawl.safety import NetworkPolicy, host_address

logger = logging.getLogger(__name__)

#: what a page needs no browser to load for its text and links
BLOCKED_TYPES = frozenset({"image", "media", "font", "imageset", "texttrack", "beacon", "csp_report", "ping"})
#: resource types kept across renders of a host (an application's code, not its data)
CACHED_TYPES = frozenset({"script", "stylesheet"})
#: renders between two looks at the browser's memory
MEMORY_CHECK_EVERY = 10
#: where Chromium is, when neither the setting nor Playwright's own download says
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

#: meta keys (set by the scheduler's RenderRouting at release, never serialised)
ALLOWS = "focus_render_allows"  # url -> bool: what the page's host's robots.txt allows (requests.BACKEND_KEYS)


class RenderUnavailable(RuntimeError):
    """No browser to render with (the message says what is missing)."""


def find_browser(configured: str | None = None) -> str | None:
    """The Chromium executable to launch: the setting, else None when Playwright has its own
    browser installed (it finds it), else the first of BROWSER_NAMES on the PATH."""
    if configured:
        return configured if os.path.exists(configured) or shutil.which(configured) else None
    if _playwright_has_browser():
        return ""
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _playwright_has_browser() -> bool:
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    try:
        return any(name.startswith("chromium") for name in os.listdir(root))
    except OSError:
        return False


def check_available(config: FocusConfig) -> str:
    """The browser executable ("" for Playwright's own), or RenderUnavailable saying what is missing."""
    try:
        require("scrapy_playwright", "render", "rendering pages in a browser")
    except MissingExtra as exc:
        raise RenderUnavailable(str(exc)) from None
    path = find_browser(config.render_browser)
    if path is None:
        where = config.render_browser or f"{', '.join(BROWSER_NAMES)} on the PATH"
        raise RenderUnavailable(f"no Chromium found ({where}); install Debian's chromium package or set "
                                "FOCUS_RENDER_BROWSER")
    return path


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


def _charge_render(meta: dict) -> None:
    """A render's seconds are the browser's, not its host's server's: the host's adaptive delay
    learns from the page's own response time (None when unknown: nothing learnt), the request log
    shows the render's."""
    meta[RENDER_SECONDS] = meta.get("download_latency")
    meta["download_latency"] = meta.get(DOCUMENT_LATENCY)


class _OneLine(logging.Filter):
    """scrapy-playwright logs a failed render with its traceback (30 lines for a timeout): kept
    as one line at DEBUG; ``health.RenderHealthMiddleware`` says what failed, once."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and str(record.msg).startswith("Closing page due to failed request"):
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return True


def _quiet_playwright_failures() -> None:
    handler_logger = logging.getLogger("scrapy-playwright")  # scrapy_playwright.handler's
    if not any(isinstance(f, _OneLine) for f in handler_logger.filters):
        handler_logger.addFilter(_OneLine())


def browser_pids(root_pid: int | None = None) -> list[int]:
    """The Chromium processes among ``root_pid``'s descendants (this process's by default; Linux
    /proc, empty elsewhere)."""
    root_pid = os.getpid() if root_pid is None else root_pid
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read().decode("latin-1")
        except OSError:
            continue
        names[pid] = stat[stat.find("(") + 1:stat.rfind(")")]
        children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(pid)
    found, stack = [], list(children.get(root_pid, ()))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        if "chrom" in names.get(pid, "").lower():
            found.append(pid)
    return found


def browser_memory_mb(root_pid: int | None = None) -> float:
    """Memory of the browser processes among ``root_pid``'s descendants, in MB: their proportional
    set size (a page shared by several processes counted once, in shares), or their resident size
    where the kernel gives no PSS."""
    return sum(_process_kb(pid) for pid in browser_pids(root_pid)) / 1024


def _process_kb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024
    except (OSError, ValueError, IndexError):
        return 0.0


def _playwright_handler_class():
    from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler

    class BrowserHandler(ScrapyPlaywrightDownloadHandler):
        """scrapy-playwright's handler, launched on first use, its pages guarded."""

        def __init__(self, crawler, config: FocusConfig, guard: RenderGuard):
            super().__init__(crawler)
            self.guard = guard
            self.rendering = 0
            self.renders = 0
            self.max_browser_mb = config.render_max_browser_mb
            self.launched = False
            self._launch_lock = asyncio.Lock()
            self.too_big = False  # past FOCUS_RENDER_MAX_BROWSER_MB: restarted once no render is running

        async def render(self, request):
            async with self._launch_lock:  # two first renders at once: one launch, the other waits for it
                if not self.launched:
                    await self._launch()  # engine_started has passed: scrapy-playwright's own hook never ran
                    self.launched = True
            request.meta["playwright_page_init_callback"] = self._guard_page
            self.rendering += 1
            try:
                return await self._download_request(request)
            finally:
                self.rendering -= 1
                self.renders += 1
                if self.renders % MEMORY_CHECK_EVERY == 0:
                    self.too_big = self.too_big or self._too_big()
                if self.too_big and not self.rendering:  # between renders: none is cut short
                    self.too_big = False
                    await self._restart()

        async def _guard_page(self, page, request) -> None:
            lock = asyncio.Lock()
            page_host = (urlsplit(request.url).hostname or "").lower()
            allows = request.meta.get(ALLOWS)

            def timed(seconds: float) -> None:
                request.meta.setdefault(DOCUMENT_LATENCY, seconds)  # the first answer, not a redirect's

            names: dict = {}  # the page's names, each resolved and judged once

            async def route_all(route):
                await self.guard.handle(route, lock, request.url, page_host, allows, timed, names)

            await page.route("**/*", route_all)

        def _too_big(self) -> bool:
            used = browser_memory_mb()
            self.stats.max_value("focus/render/browser_mb_max", round(used))
            if used > self.max_browser_mb:
                logger.info("the browser holds %.0f MB (FOCUS_RENDER_MAX_BROWSER_MB %d): restarting it between "
                            "renders", used, self.max_browser_mb)
                return True
            return False

        async def _restart(self) -> None:
            if getattr(self, "browser", None) is not None:
                self.stats.inc_value("focus/render/browser_restarts")
                await self.browser.close()  # scrapy-playwright relaunches it at the next render

    return BrowserHandler


#: Hosts of the browser's own services (sign-in, updates, safe browsing, field trials): the
#: browser's traffic that no page asked for, which the route never sees. Playwright's switches
#: stop most of it; the proxy configuration sends the rest to a closed port.
BROWSER_SERVICE_HOSTS = ("accounts.google.com", "clients*.google.com", "android.clients.google.com",
                         "update.googleapis.com", "safebrowsing.googleapis.com", "*-pa.googleapis.com",
                         "content-autofill.googleapis.com", "redirector.gvt1.com", "*.gvt1.com")
#: where what must not go out goes: the discard port of the loopback, closed on a normal machine
NOWHERE = "PROXY 127.0.0.1:9"


#: IPv4 networks no page may make the browser connect to when it resolves names itself (no
#: proxy): loopback, RFC 1918, link-local (cloud metadata), carrier-grade NAT, this network,
#: multicast and reserved
PRIVATE_IPV4 = (("127.0.0.0", 8), ("10.0.0.0", 8), ("172.16.0.0", 12), ("192.168.0.0", 16), ("169.254.0.0", 16),
                ("100.64.0.0", 10), ("0.0.0.0", 8), ("224.0.0.0", 4), ("240.0.0.0", 4))


def proxy_script(proxy: str | None, policy: NetworkPolicy | None = None) -> str:
    """The browser's proxy auto-configuration: the downloader's proxy (or none) for what pages
    ask for; nowhere for the browser's own services and for favicons (the browser asks for one
    of every host it shows; a crawl needs none); and, without a proxy, nowhere for a name that
    resolves into a private network the policy refuses (the route checks addresses written as
    hosts; the browser resolves names itself, so the check is here, where it resolves them)."""
    upstream = f"PROXY {urlsplit(proxy).netloc or proxy}" if proxy else "DIRECT"
    services = " || ".join(f'shExpMatch(host, "{pattern}")' for pattern in BROWSER_SERVICE_HOSTS)
    private = ""
    if proxy is None and policy is not None and policy.checks:
        # the networks the user allows first (an allowed 127.0.0.2 leaves the rest of loopback refused)
        allowed = " || ".join(f'isInNet(ip, "{network.network_address}", "{network.netmask}")'
                              for network in policy.allowed if network.version == 4)
        tests = " || ".join(f'isInNet(ip, "{net}", "{_mask(bits)}")' for net, bits in PRIVATE_IPV4)
        private = (f'var ip = dnsResolve(host); if (!ip) return "{NOWHERE}"; '
                   + (f'if ({allowed}) return "{upstream}"; ' if allowed else "")
                   + f'if ({tests}) return "{NOWHERE}"; ')
    return (f'function FindProxyForURL(url, host) {{ if ({services}) return "{NOWHERE}"; '
            f'if (shExpMatch(url, "*/favicon.ico")) return "{NOWHERE}"; {private}return "{upstream}"; }}')


def _mask(bits: int) -> str:
    value = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def playwright_settings(config: FocusConfig, executable: str, proxy: str | None) -> dict:
    """The scrapy-playwright settings of the crawl's browser."""
    pac = base64.b64encode(proxy_script(proxy, NetworkPolicy.from_config(config)).encode()).decode()
    # Playwright's own switches come first and keep the browser quiet; --disable-features is not
    # passed here, as it would replace Playwright's list instead of adding to it
    args = ["--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--disable-sync",
            "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-pings",
            f"--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,{pac}"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
    launch: dict = {"headless": True, "args": args}
    if executable:
        launch["executable_path"] = executable
    return {
        "PLAYWRIGHT_LAUNCH_OPTIONS": launch,
        "PLAYWRIGHT_MAX_CONTEXTS": config.render_contexts,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": 1,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": config.render_timeout * 1000,
        "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": True,
    }


class FocusDownloadHandler(PoliteHTTP11DownloadHandler):
    """Plain requests as ``PoliteHTTP11DownloadHandler``; those marked ``playwright`` to a browser
    started at the first of them."""

    def __init__(self, crawler):
        super().__init__(crawler)
        self.crawler = crawler
        self._browser = None
        self._browser_lock = asyncio.Lock()
        self._max_bytes = FocusConfig.from_settings(crawler.settings).render_max_bytes

    async def download_request(self, request, *args, **kwargs):
        if request.meta.get("_splash_processed"):  # a render, as a call of SPLASH_URL
            response = await super().download_request(request, *args, **kwargs)
            _charge_render(request.meta)
            return response
        if not request.meta.get("playwright"):
            return await super().download_request(request, *args, **kwargs)
        browser = await self._browser_handler()
        started = time.monotonic()
        try:
            response = await browser.render(request)
        except Exception:
            self.crawler.stats.inc_value("focus/render/failed")
            if request.meta.get(DOCUMENT_LATENCY) is not None:
                # the page's server answered it; the browser did not finish (a subresource that
                # hangs, a script that never settles): no network error of the host, no back-off
                request.meta[M.GOT_RESPONSE] = True
            _charge_render(request.meta)
            raise
        _charge_render(request.meta)
        limit = self._max_bytes
        if len(response.body) > limit:
            self.crawler.stats.inc_value("focus/render/cut")
            response = response.replace(body=response.body[:limit])
        self.crawler.stats.inc_value("focus/render/rendered")
        self.crawler.stats.inc_value("focus/render/seconds", round(time.monotonic() - started, 3))
        return response

    async def _browser_handler(self):
        async with self._browser_lock:
            if self._browser is None:
                self._browser = self._make_browser_handler()
            return self._browser

    def _make_browser_handler(self):
        _quiet_playwright_failures()
        config = FocusConfig.from_settings(self.crawler.settings)
        executable = check_available(config)
        proxy = getproxies().get("http")
        settings = self.crawler.settings.copy()
        settings.frozen = False  # a copy of the crawl's frozen settings, for the browser's handler alone
        for name, value in playwright_settings(config, executable, proxy).items():
            settings.set(name, value, priority="cmdline")
        guard = RenderGuard(config, NetworkPolicy.from_config(config), self.crawler.stats, proxied=bool(proxy),
                            user_agent=self.crawler.settings.get("USER_AGENT") or "", loaded=self._loaded)

        class _Crawler:  # scrapy-playwright reads settings, stats and signals from its crawler
            def __init__(self, crawler, settings):
                self._crawler, self.settings = crawler, settings

            def __getattr__(self, name):
                return getattr(self._crawler, name)

        handler = _playwright_handler_class()(_Crawler(self.crawler, settings), config, guard)
        logger.info("rendering with Chromium %s%s", executable or "(Playwright's)",
                    f" through the proxy {proxy}" if proxy else "")
        return handler

    def _loaded(self, **what) -> None:
        self.crawler.signals.send_catch_log(focus_signals.render_loaded, **what)

    async def close(self) -> None:
        if self._browser is not None:
            try:
                await self._browser.close()
            except Exception as exc:  # a browser that died: nothing left to close
                logger.debug("closing the browser: %s", exc)
        await super().close()
