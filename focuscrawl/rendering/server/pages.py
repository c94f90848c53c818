"""The render server's browser: one Chromium for every render, a context per render, and what a
rendered page loads (its requests judged by the crawl's network rules, its redirects, its
document, its history)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, urljoin, urlsplit

from focuscrawl.extras import require

# the render extra's: a core install that imports this module is told which extra it lacks
require("playwright", "render", "the render server")
require("aiohttp", "render", "the render server")

from aiohttp import ClientSession, ClientTimeout  # noqa: E402
from aiohttp import ClientError as HTTPClientError  # noqa: E402
from playwright.async_api import Error as PlaywrightError  # noqa: E402
from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from focuscrawl.rendering.chromium import block_favicons, launch_args, proxy_script  # noqa: E402
from focuscrawl.rendering.network_rules import ServerRules  # noqa: E402
from focuscrawl.rendering.server.errors import QT_ERRORS, BadOption, RenderError, bad  # noqa: E402
from focuscrawl.rendering.server.options import (  # noqa: E402
    CLOSE_TIMEOUT, DEFAULT_BROWSER, DEFAULT_MAX_CONTEXTS, HEAVY_TYPES, HOP_HEADERS, MAX_REDIRECTS, REDIRECT_STATUSES,
    RenderOptions, choose_proxy)

logger = logging.getLogger(__name__)


# --- the browser ----------------------------------------------------------------------------------
@dataclass
class _Render:
    """What a render collects while its page loads."""

    options: RenderOptions
    proxied: bool
    document: dict | None = None  # baseurl: the page's own answer, fetched apart
    first_request: bool = True
    navigations: list = field(default_factory=list)
    rules: ServerRules | None = None
    names: dict = field(default_factory=dict)  # names judged by the rules during this render
    refused: list = field(default_factory=list)  # (url, reason) of the page or a redirect refused
    redirects: list = field(default_factory=list)  # the URLs the page's requests were redirected to
    navigate_to: str | None = None  # a redirect of the page, judged and allowed: where _load goes next


class Browser:
    """One Chromium for all renders, launched again when it died; a context per render."""

    def __init__(self, executable_path: str | None = DEFAULT_BROWSER, max_contexts: int = DEFAULT_MAX_CONTEXTS,
                 env_proxies: Mapping[str, dict] | None = None, rules: ServerRules | None = None):
        self.executable_path = executable_path
        self.rules = rules if rules is not None else ServerRules()
        self.env_proxies = dict(env_proxies or {})
        self.max_contexts = max_contexts
        self.active = 0
        self.queued = 0
        self.launches = 0
        self.closing = False
        self._slots = asyncio.Semaphore(max_contexts)
        self._launching: asyncio.Future | None = None
        self._playwright = None
        self._browser = None

    async def start(self) -> str:
        """Launch the browser now (a bad executable is found at start, not at the first render);
        its version."""
        browser = await self._get()
        return browser.version

    async def close(self) -> None:
        """Close the browser: renders under way fail (502), no render launches another."""
        self.closing = True
        browser, playwright, self._browser, self._playwright = self._browser, self._playwright, None, None
        for closing in ((browser.close() if browser else None), (playwright.stop() if playwright else None)):
            if closing is not None:
                try:
                    await asyncio.wait_for(closing, CLOSE_TIMEOUT)
                except Exception as exc:  # noqa: BLE001 - a dead browser or driver fails to close: it is gone
                    logger.debug("closing the browser: %s", exc)

    async def render(self, options: RenderOptions) -> dict:
        """The rendered page: {"url", "requestedUrl", "title", "geometry", "html"?, "history"?,
        "script"?}. RenderError when it cannot be loaded; cancelled by the caller's timeout."""
        self.queued += 1
        try:
            await self._slots.acquire()
        finally:
            self.queued -= 1
        self.active += 1
        try:
            return await self._render(options)
        finally:
            self.active -= 1
            self._slots.release()

    async def _get(self):
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self.closing:
            raise PlaywrightError("the render server is stopping")
        if self._launching is None or self._launching.done():
            self._launching = asyncio.ensure_future(self._launch())
        # shielded: a render timing out while it waits must not leave a half-launched browser behind
        return await asyncio.shield(self._launching)

    async def _launch(self):
        if self._browser is not None:
            logger.warning("the browser died: launching another")
        self._browser = None
        for attempt in (1, 2):
            if self._playwright is None:
                self._playwright = await async_playwright().start()
            try:
                self._browser = await self._playwright.chromium.launch(
                    executable_path=self.executable_path or None, headless=True, args=_browser_args(self.rules))
                break
            except PlaywrightError:
                if attempt == 2:
                    raise
                # the driver itself may be gone with the browser: start it again
                playwright, self._playwright = self._playwright, None
                try:
                    await asyncio.wait_for(playwright.stop(), CLOSE_TIMEOUT)
                except Exception:  # noqa: BLE001 - it was broken already
                    pass
        self.launches += 1
        return self._browser

    async def _render(self, options: RenderOptions) -> dict:
        proxy = choose_proxy(options, self.env_proxies)
        state = _Render(options, proxied=proxy is not None, rules=self.rules)
        await self._check_addresses(options, state)
        if options.baseurl:
            state.document = await _fetch_document(options, proxy, follow_redirects=not self.rules.checks)
        try:
            browser = await self._get()
        except PlaywrightError as exc:
            text = "the render server is stopping" if self.closing else f"cannot launch the browser: {_first_line(exc)}"
            raise RenderError({"type": "Browser", "code": 0, "text": text, "url": options.url}) from None
        settings: dict[str, Any] = {"ignore_https_errors": True, "service_workers": "block", "accept_downloads": False,
                                    "viewport": {"width": options.viewport[0], "height": options.viewport[1]}}
        if proxy is not None:
            settings["proxy"] = proxy
        if options.user_agent:
            settings["user_agent"] = options.user_agent
        context = None
        try:
            context = await browser.new_context(**settings)
            context.set_default_timeout(0)  # the render's own timeout bounds everything
            page = await context.new_page()
            await block_favicons(page)
            await page.route("**/*", lambda route: _route(route, state))
            page.on("response", lambda response: _navigation(response, page, state))
            page.on("request", lambda request: _redirected(request, state))
            result = await _load(page, state)
            await _check_refused(state)
            return result
        except PlaywrightError as exc:
            await _check_refused(state)
            if self.closing:
                raise RenderError({"type": "Browser", "code": 0, "text": "the render server is stopping",
                                   "url": options.url}) from None
            raise _render_error(exc, options, connected=browser.is_connected()) from None
        finally:
            if context is not None:
                try:
                    await asyncio.wait_for(context.close(), CLOSE_TIMEOUT)
                except Exception as exc:  # noqa: BLE001 - the browser may be dead: nothing to close
                    logger.debug("closing a context: %s", exc)


    async def _check_addresses(self, options: RenderOptions, state: _Render) -> None:
        """The page (and a ``proxy`` the render names) must not be in a refused network: 400."""
        if not self.rules.checks:
            return
        if options.proxy is not None and options.proxy.lower() != "none":
            proxy_url = options.proxy if "://" in options.proxy else f"http://{options.proxy}"
            reason = await self.rules.refusal(proxy_url, proxied=False, names=state.names)
            if reason:
                raise bad("proxy", f"the proxy is refused ({reason}): this render server refuses private "
                                   "networks (--allow-private-networks)", "private_network")
        for name in ("url", "baseurl"):
            url = getattr(options, name)
            if url:
                reason = await self.rules.refusal(url, state.proxied, state.names)
                if reason:
                    raise bad(name, f"{url} is refused ({reason}): this render server refuses private networks "
                                    "(--allow-private-networks)", "private_network")


def _browser_args(rules: ServerRules | None = None) -> list[str]:
    # what the browser fetches outside the route (its own services, favicons) goes through the
    # crawl's proxy script: a name resolving into a refused network goes nowhere (Chromium never
    # sends loopback through a proxy script: the route fetches every request itself)
    checks = rules is not None and rules.checks
    return launch_args(proxy_script(None, rules.policy) if checks else None)


def _redirected(request, state: _Render) -> None:
    """A redirect, which the route never sees, judged once the render ends: one to an address the
    rules refuse fails the render (a direct connection there was stopped by the browser's proxy
    script; through a proxy, nothing it read is answered)."""
    try:
        if request.redirected_from is not None and state.rules is not None and state.rules.checks:
            state.redirects.append(request.url)
    except PlaywrightError:
        pass


async def _check_refused(state: _Render) -> None:
    """The render fails when its page, or a redirect, was refused: nothing it read is answered."""
    for url in state.redirects:
        reason = await state.rules.refusal(url, state.proxied, state.names)
        if reason:
            state.refused.append((url, reason))
            break
    if state.refused:
        url, reason = state.refused[0]
        raise RenderError({"type": "Network", "code": 201, "url": state.options.url,
                           "text": f"{url} is refused ({reason}): this render server refuses private networks "
                                   "(--allow-private-networks)"})


async def _load(page, state: _Render) -> dict:
    options = state.options
    target = options.baseurl or options.url
    for _ in range(MAX_REDIRECTS + 1):
        try:
            await page.goto(target, wait_until="commit", timeout=options.resource_timeout * 1000)
        except PlaywrightTimeout:
            raise RenderError({"type": "Network", "code": 5, "text": f"no answer within resource_timeout "
                               f"({options.resource_timeout:g} s)", "url": target}) from None
        except PlaywrightError:
            if state.navigate_to is None:
                raise
        if state.navigate_to is None:
            break
        target, state.navigate_to = state.navigate_to, None  # a redirect judged by _fetch_guarded
    else:
        raise RenderError({"type": "Network", "code": 99, "text": "too many redirects", "url": options.url})
    await page.wait_for_load_state("load")
    if options.wait:
        await asyncio.sleep(options.wait)
    script = None
    if options.js_source:
        try:
            script = await page.evaluate(options.js_source)
        except PlaywrightError as exc:
            if not page.is_closed() and "Execution context was destroyed" not in str(exc):
                raise BadOption({"type": "js_error", "argument": "js_source",
                                 "description": _first_line(exc)}) from None
            raise
    html = await _settled(page, page.content) if options.html or options.endpoint == "render.html" else None
    result = {"url": page.url, "requestedUrl": options.url, "geometry": [0, 0, *options.viewport],
              "title": await _settled(page, page.title)}
    if html is not None:
        result["html"] = html
    if options.history:
        result["history"] = [await _har_entry(response) for response in state.navigations
                             if response.request.redirected_to is None]
    if options.script and script is not None:
        result["script"] = script
    return result


async def _settled(page, read: Callable[[], Awaitable[Any]]):
    """``read()`` once the page stands still: a script navigating it meanwhile is waited for."""
    for _ in range(5):
        try:
            return await read()
        except PlaywrightError as exc:
            if "navigating" not in str(exc) and "Execution context was destroyed" not in str(exc):
                raise
            await page.wait_for_load_state("load")
    return await read()


async def _route(route, state: _Render) -> None:
    """Every request the page makes: the first one gets the render's headers, method and body (or,
    with baseurl, the document fetched apart); images, media and fonts are refused with images=0;
    the favicon always; with resource_timeout (and no proxy) the others are bounded. With the
    private-network rules on, a refused address is never contacted (``_fetch_guarded``)."""
    request = route.request
    options = state.options
    main = request.is_navigation_request() and request.frame.parent_frame is None
    try:
        guarded = state.rules is not None and state.rules.checks
        if guarded:
            reason = await state.rules.refusal(request.url, state.proxied, state.names)
            if reason:
                if main:
                    state.refused.append((request.url, reason))
                logger.info("refused %s: %s", request.url[:300], reason)
                await route.abort("blockedbyclient")
                return
        if guarded and not state.proxied and not (state.first_request and main and state.document is not None):
            if urlsplit(request.url).path == "/favicon.ico" and not request.is_navigation_request():
                await route.abort("blockedbyclient")
            elif not options.images and request.resource_type in HEAVY_TYPES:
                await route.abort("blockedbyclient")
            else:
                await _fetch_guarded(route, state, main)
            return
        if state.first_request and main:
            state.first_request = False
            if state.document is not None:
                await route.fulfill(**state.document)
                return
            await route.continue_(**_first_overrides(await request.all_headers(), options))
        elif urlsplit(request.url).path == "/favicon.ico" and not request.is_navigation_request():
            await route.abort("blockedbyclient")
        elif not options.images and request.resource_type in HEAVY_TYPES:
            await route.abort("blockedbyclient")
        elif options.resource_timeout and not state.proxied and not request.is_navigation_request():
            try:
                response = await route.fetch(timeout=options.resource_timeout * 1000, max_redirects=0)
            except PlaywrightTimeout:
                await route.abort("timedout")
                return
            except PlaywrightError:
                await route.abort("failed")
                return
            await route.fulfill(response=response)
        else:
            await route.continue_()
    except PlaywrightError:
        pass  # the page closed meanwhile (a timeout, a crash): nothing waits for this request


def _first_overrides(request_headers: dict, options: RenderOptions) -> dict:
    """The render's headers, method and body, for its page's own request (the headers merged only
    when there are any to add, so the browser's own are otherwise left as they are)."""
    overrides: dict[str, Any] = {}
    headers = [(name, value) for name, value in options.headers
               if name.lower() not in HOP_HEADERS and name.lower() != "user-agent"]
    if headers or options.http_method != "GET":
        merged = {name.lower(): value for name, value in request_headers.items() if not name.startswith(":")}
        merged.update((name.lower(), value) for name, value in headers)
        overrides["headers"] = merged
    if options.http_method != "GET":
        overrides["method"] = options.http_method
        overrides["post_data"] = options.body or ""
    return overrides


async def _fetch_guarded(route, state: _Render, main: bool) -> None:
    """A direct render's request, fetched here rather than by the browser, so each redirect is
    judged before it is followed (the browser follows redirects where no route sees them, and
    never sends loopback through a proxy script). The page's own redirect becomes a navigation
    of its own (``_load`` goes there), so the page's URL is the final one; a subresource's chain
    is followed here and its last answer given to the page."""
    request = route.request
    options = state.options
    overrides: dict[str, Any] = {}
    if main and state.first_request:
        state.first_request = False
        overrides = _first_overrides(await request.all_headers(), options)
    url = request.url
    timeout = options.resource_timeout * 1000 if options.resource_timeout else 0
    for _ in range(MAX_REDIRECTS + 1):
        try:
            response = await route.fetch(url=url, max_redirects=0, timeout=timeout, **overrides)
        except PlaywrightTimeout:
            await route.abort("timedout")
            return
        except PlaywrightError as exc:
            if "Target page, context or browser has been closed" in str(exc):
                raise
            await route.abort("failed")
            return
        location = response.headers.get("location")
        if response.status not in REDIRECT_STATUSES or not location:
            await route.fulfill(response=response)
            return
        target = urljoin(url, location)
        reason = await state.rules.refusal(target, False, state.names)
        if reason:
            logger.info("refused %s (a redirect from %s): %s", target[:300], url[:300], reason)
            if main:
                state.refused.append((target, reason))
            await route.abort("blockedbyclient")
            return
        if main:  # the page goes there as a navigation of its own, routed as the first was
            state.navigate_to = target
            await route.abort("aborted")
            return
        if response.status in (301, 302, 303):
            overrides = {name: value for name, value in overrides.items() if name == "headers"}
        url = target
    await route.abort("failed")  # too many redirects


def _navigation(response, page, state: _Render) -> None:
    try:
        if response.request.is_navigation_request() and response.frame == page.main_frame:
            state.navigations.append(response)
    except PlaywrightError:
        pass


async def _har_entry(response) -> dict:
    """A main-frame response as Splash's ``history`` gives it: a HAR entry."""
    request = response.request
    started = request.timing.get("startTime") or 0
    elapsed = request.timing.get("responseEnd") or -1
    headers = await response.headers_array()
    return {
        "startedDateTime": datetime.fromtimestamp(started / 1000, UTC).isoformat().replace("+00:00", "Z"),
        "time": round(elapsed, 3),
        "request": {"method": request.method, "url": request.url, "httpVersion": "HTTP/1.1",
                    "headers": await request.headers_array(), "cookies": [],
                    "queryString": [{"name": k, "value": v} for k, v in parse_qsl(urlsplit(request.url).query)],
                    "headersSize": -1, "bodySize": -1},
        "response": {"status": response.status, "statusText": response.status_text, "httpVersion": "HTTP/1.1",
                     "headers": headers, "cookies": [],
                     "content": {"size": -1, "mimeType": next((h["value"] for h in headers
                                                               if h["name"].lower() == "content-type"), "")},
                     "redirectURL": "", "headersSize": -1, "bodySize": -1},
        "cache": {},
        "timings": {"send": -1, "wait": -1, "receive": -1},
    }


async def _fetch_document(options: RenderOptions, proxy: dict | None, follow_redirects: bool = True) -> dict:
    """baseurl: the page is fetched from ``url`` here, and rendered as if it were at ``baseurl``."""
    if proxy is not None and not proxy["server"].startswith("http://"):
        raise bad("baseurl", "baseurl works through an http:// proxy only")
    proxy_url = None
    if proxy is not None:
        auth = f"{proxy['username']}:{proxy.get('password', '')}@" if proxy.get("username") else ""
        proxy_url = proxy["server"].replace("http://", f"http://{auth}", 1)
    headers = {name: value for name, value in options.headers if name.lower() not in HOP_HEADERS}
    try:
        async with ClientSession(timeout=ClientTimeout(total=options.resource_timeout or None)) as session:
            async with session.request(options.http_method, options.url, data=options.body, headers=headers,
                                       proxy=proxy_url, ssl=False, allow_redirects=follow_redirects) as answer:
                body = await answer.read()
                return {"status": answer.status, "body": body,
                        "content_type": answer.headers.get("Content-Type", "text/html")}
    except asyncio.TimeoutError:
        raise RenderError({"type": "Network", "code": 4, "text": "timed out fetching url for baseurl",
                           "url": options.url}) from None
    except (HTTPClientError, OSError, ValueError) as exc:
        raise RenderError({"type": "Network", "code": 99, "text": str(exc) or type(exc).__name__,
                           "url": options.url}) from None


def _render_error(exc: Exception, options: RenderOptions, connected: bool) -> RenderError:
    text = _first_line(exc)
    if not connected:
        return RenderError({"type": "Browser", "code": 0, "url": options.url,
                            "text": "the browser died during the render (the next render launches another)"})
    for word in text.replace(";", " ").split():
        if word.startswith("net::"):
            name = word[len("net::"):]
            code = QT_ERRORS.get(name, 6 if name.startswith(("ERR_SSL", "ERR_CERT")) else 99)
            return RenderError({"type": "Network", "code": code, "text": word, "url": options.url})
    return RenderError({"type": "Browser", "code": 0, "text": text, "url": options.url})


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__
