"""A request made a render: the meta each backend reads.

``playwright``: scrapy-playwright's keys (a browser context out of a bounded pool, the load wait,
then a wait for the document to settle); ``splash``: scrapy-splash's ``meta["splash"]`` (its
SplashMiddleware rewrites the request to ``SPLASH_URL``'s ``render.html`` in the downloader, after
the crawl's scheduler has gated it as a request of the page's host), sent to the service without
the crawl's proxy.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from focuscrawl.config import FocusConfig

logger = logging.getLogger(__name__)

#: meta key set at release for the crawl's browser, never serialised: url -> bool, what the page's
#: host's robots.txt allows (its route reads it)
ALLOWS = "focus_render_allows"
#: After the load event: resolves once the document has not changed for `quiet` ms (a script
#: building the page from data it fetched changes it as each part arrives), or at `cap` ms.
SETTLE_JS = """([quiet, cap]) => new Promise(resolve => {
  let timer = null;
  const done = () => { observer.disconnect(); clearTimeout(timer); clearTimeout(limit); resolve(); };
  const observer = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, quiet); });
  observer.observe(document, {subtree: true, childList: true, characterData: true});
  timer = setTimeout(done, quiet);
  const limit = setTimeout(done, cap);
})"""


async def settle(page, quiet: float, cap: float) -> None:
    """Wait until the page's network has been idle and its document quiet (both bounded by
    ``cap`` seconds); a page that never settles is read as it is then."""
    started = asyncio.get_running_loop().time()
    try:
        await page.wait_for_load_state("networkidle", timeout=cap * 1000)
    except Exception as exc:  # Playwright's TimeoutError: a page that keeps polling
        logger.debug("render: %s never went idle: %s", page.url, exc)
    left = max(0.0, cap - (asyncio.get_running_loop().time() - started))
    if left > 0 and quiet > 0:
        try:
            await page.evaluate(SETTLE_JS, [int(quiet * 1000), int(left * 1000)])
        except Exception as exc:  # the page navigated away or closed
            logger.debug("render: %s did not settle: %s", page.url, exc)


class RenderMeta:
    """The meta that sends a request to the configured backend."""

    def __init__(self, config: FocusConfig):
        self.backend = config.render_backend
        self.timeout = config.render_timeout
        self.settle = config.render_settle
        self._contexts = itertools.cycle(range(config.render_contexts))

    def apply(self, meta: dict, allows=None) -> None:
        if self.backend == "splash":
            meta["splash"] = {"endpoint": "render.html",
                              "args": {"wait": self.settle, "timeout": self.timeout, "images": 0}}
            # the call of SPLASH_URL goes straight to the service, never through the crawl's proxy
            # (http_proxy): a proxy answers it for itself. The service fetches the page through
            # its own proxy, if it has one (`scrapy render-server` takes the environment's).
            meta["proxy"] = None
            return
        meta.update({"playwright": True, "playwright_context": f"focus-render-{next(self._contexts)}", ALLOWS: allows})
        self.set_timeout(meta, self.timeout)

    def set_timeout(self, meta: dict, timeout: float) -> None:
        """The seconds a render may take (its host's, ``health.RenderHealth``)."""
        if self.backend == "splash":
            meta["splash"]["args"]["timeout"] = timeout
            meta["splash"]["args"]["wait"] = min(self.settle, timeout)
            return
        from scrapy_playwright.page import PageMethod

        # the load event within two thirds of the time, the settling within the rest
        load = timeout * 2 / 3
        meta["playwright_page_goto_kwargs"] = {"wait_until": "load", "timeout": load * 1000}
        meta["playwright_page_methods"] = [PageMethod(settle, self.settle, timeout - load)]
        meta["download_timeout"] = timeout + 5


#: what a backend adds to a request's meta at its release (live objects among them): left out when
#: a render in flight is checkpointed (JOBDIR); the resumed crawl makes it a render again
BACKEND_KEYS = frozenset({
    "playwright", "playwright_context", "playwright_page_goto_kwargs", "playwright_page_methods",
    "playwright_page_init_callback", "playwright_include_page", "playwright_page", ALLOWS,
    "splash", "_splash_processed", "download_timeout", "proxy",
})


def storable(request):
    """``request`` as a checkpoint keeps it: a render without its backend's live parts."""
    if not is_render(request.meta):
        return request
    return request.replace(meta={key: value for key, value in request.meta.items() if key not in BACKEND_KEYS})


def page_url(request) -> str:
    """The URL of the page a request is for: a render through Splash is a call of SPLASH_URL that
    names the page in its arguments."""
    splash = request.meta.get("splash")
    if isinstance(splash, dict):
        url = (splash.get("args") or {}).get("url")
        if url:
            return url
    return request.url


def is_render(meta: dict) -> bool:
    """The request goes (or went) to a backend."""
    return bool(meta.get("playwright") or meta.get("splash"))
