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
import logging
import time
from urllib.parse import urlsplit
from urllib.request import getproxies

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import FocusConfig
from focuscrawl.extras import MissingExtra, require
from focuscrawl.handlers import PoliteHTTP11DownloadHandler
from focuscrawl.rendering.browser.guard import RenderGuard
from focuscrawl.rendering.chromium import (BROWSER_NAMES, block_favicons, browser_memory_mb, find_browser, launch_args,
                                          proxy_script)
from focuscrawl.rendering.health import DOCUMENT_LATENCY, RENDER_SECONDS
from focuscrawl.rendering.requests import ALLOWS
from focuscrawl.safety import NetworkPolicy

logger = logging.getLogger(__name__)

#: renders between two looks at the browser's memory
MEMORY_CHECK_EVERY = 10


class RenderUnavailable(RuntimeError):
    """No browser to render with (the message says what is missing)."""


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

            await block_favicons(page)
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


def playwright_settings(config: FocusConfig, executable: str, proxy: str | None) -> dict:
    """The scrapy-playwright settings of the crawl's browser."""
    args = launch_args(proxy_script(proxy, NetworkPolicy.from_config(config)))
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
