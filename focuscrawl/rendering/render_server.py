"""A Splash-compatible rendering service on Playwright and Chromium (``scrapy render-server``).

scrapy-splash code points ``SPLASH_URL`` here and gets a current Chromium instead of Splash's
QtWebKit, without Docker. Splash's HTTP API as far as a crawler uses it:

- ``render.html`` (the page's HTML after its scripts ran) and ``render.json`` (``url``: the final
  URL, ``requestedUrl``, ``title``, ``geometry``; ``html`` with ``html=1``; with ``history=1`` the
  main frame's responses as HAR entries, where the page's HTTP status is, as in Splash; ``script``
  with ``script=1``), by GET with query arguments or POST with a JSON or JavaScript body (as
  Splash) or a form body (which Splash refuses); ``_ping``.
- Arguments: ``url``, ``baseurl``, ``timeout`` (total, queueing included: default 30 s, at most
  ``max_timeout``), ``wait`` (after the load event, at most 10 s), ``resource_timeout``,
  ``images`` (0 blocks images, media and fonts), ``proxy`` (``[protocol://][user:password@]host[:port]``,
  ``none`` for none), ``headers`` (the first request's; a User-Agent applies to the whole render),
  ``http_method``/``body``, ``js_source`` (run after ``wait``), ``viewport``, ``engine``,
  ``save_args``/``load_args`` (scrapy-splash's ``cache_args``). Unknown arguments are ignored, as
  Splash does; Splash's arguments this server does not implement (``png``, ``har``, ``filters``...)
  are refused with a 400 rather than silently ignored.
- Errors are Splash's JSON answers: 400 ``BadOption``, 415 ``UnsupportedContentType``, 498
  ``ExpiredArguments``, 502 ``RenderError`` (the page could not be loaded; ``info`` says why, its
  ``code`` the nearest Qt network error number), 504 ``GlobalTimeoutError``, 500 ``InternalError``.
  A page answered 404 or 500 renders (200), as in Splash.

One browser process, relaunched when it dies (the renders it held answer 502, the next starts a
new one); each render in a fresh context (no cookies, cache or storage from an earlier render);
at most ``max_contexts`` at once, the others queue within their timeout. The environment's proxy
(``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy``) is used unless the render names one;
loopback addresses go through a proxy too, as a replayed web needs. ``resource_timeout`` bounds the
page's own request always, its other requests only when no proxy is used (Playwright fetches a
bounded request itself, and through a proxy it tunnels even plain http with CONNECT, which
forward proxies such as ``scrapy replay`` refuse). The page's favicon is never fetched.

Private networks are refused as the crawl refuses them (``server_rules``): a page, redirect or
subresource at a loopback, private or link-local address, or a name resolving to one, answers 400
(the page) or 502 (a redirect) or is not loaded (a subresource), unless the server is given a
``NetworkPolicy`` that allows them (``--allow-private-networks``). It still renders any public
URL for whoever reaches it: keep it on 127.0.0.1 (the default).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import logging
import os
import resource
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl, unquote, urljoin, urlsplit

from focuscrawl.extras import require

# the render extra's: a core install that imports this module is told which extra it lacks
require("playwright", "render", "the render server")
require("aiohttp", "render", "the render server")

from aiohttp import ClientSession, ClientTimeout, web  # noqa: E402
from aiohttp import ClientError as HTTPClientError  # noqa: E402
from playwright.async_api import Error as PlaywrightError  # noqa: E402
from playwright.async_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from playwright.async_api import async_playwright  # noqa: E402

from focuscrawl.rendering.server_rules import ServerRules
from focuscrawl.safety import NetworkPolicy

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8050  # Splash's
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_TIMEOUT = 90.0  # Splash's
DEFAULT_MAX_CONTEXTS = 4
MAX_WAIT = 10.0
DEFAULT_BROWSER = "/usr/bin/chromium"  # Debian's; None lets Playwright use its own download
VIEWPORT = (1024, 768)
MAX_VIEWPORT = (10000, 10000)  # Splash allows 40000 for full-page screenshots; none are taken here
ARGUMENT_CACHE_SIZE = 500
MAX_REDIRECTS = 20  # Chromium's
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CLOSE_TIMEOUT = 10.0
SHUTDOWN_GRACE = 5.0
#: what images=0 blocks
HEAVY_TYPES = frozenset({"image", "media", "font"})
ALLOWED_SCHEMES = ("http", "https", "data")
#: Splash's arguments this server does not implement, with the values that ask for nothing
UNSUPPORTED = {
    "png": (0,), "jpeg": (0,), "har": (0,), "iframes": (0,), "console": (0,), "render_all": (0,),
    "request_body": (0,), "response_body": (0,), "js": ("",), "filters": ("",), "allowed_domains": ("",),
    "allowed_content_types": ("", "*"), "forbidden_content_types": ("",),
}
#: headers never passed on from ``headers`` (the browser sets them for its own connection)
HOP_HEADERS = frozenset({"host", "content-length", "connection", "keep-alive", "proxy-connection",
                         "proxy-authorization", "transfer-encoding", "te", "upgrade", "accept-encoding"})
#: Chromium's network errors as the Qt (QNetworkReply) error numbers Splash reports
QT_ERRORS = {
    "ERR_CONNECTION_REFUSED": 1, "ERR_CONNECTION_CLOSED": 2, "ERR_CONNECTION_RESET": 2, "ERR_EMPTY_RESPONSE": 2,
    "ERR_NAME_NOT_RESOLVED": 3, "ERR_NAME_RESOLUTION_FAILED": 3, "ERR_ADDRESS_UNREACHABLE": 3,
    "ERR_TIMED_OUT": 4, "ERR_CONNECTION_TIMED_OUT": 4, "ERR_ABORTED": 5, "ERR_SSL_PROTOCOL_ERROR": 6,
    "ERR_PROXY_CONNECTION_FAILED": 101, "ERR_TUNNEL_CONNECTION_FAILED": 101,
    "ERR_PROXY_AUTH_UNSUPPORTED": 105, "ERR_PROXY_AUTH_REQUESTED": 105,
}


# --- Splash's error answers ---------------------------------------------------------------------
class SplashError(Exception):
    """An answer in Splash's error shape: {"error": status, "type", "description", "info"}."""

    status = 500
    description = "Unhandled internal error"

    def __init__(self, info: Any = None):
        super().__init__(info)
        self.info = info

    def body(self) -> dict:
        return {"error": self.status, "type": type(self).__name__, "description": self.description,
                "info": self.info}


class BadOption(SplashError):
    status, description = 400, "Incorrect HTTP API arguments"


class UnsupportedContentType(SplashError):
    status, description = 415, "Request Content-Type is not supported"


class ExpiredArguments(SplashError):
    status, description = 498, "Arguments stored with ``save_args`` are expired"


class RenderError(SplashError):
    status, description = 502, "Error rendering page"


class GlobalTimeoutError(SplashError):
    status, description = 504, "Timeout exceeded rendering page"


class InternalError(SplashError):
    status, description = 500, "Unhandled internal error"


def bad(argument: str, description: str, kind: str = "bad_argument", **extra) -> BadOption:
    """A BadOption as Splash words one: info {"type", "argument", "description", ...}."""
    return BadOption({"type": kind, "argument": argument, "description": description, **extra})


# --- arguments ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class RenderOptions:
    """One render's arguments, checked."""

    endpoint: str
    url: str
    timeout: float = DEFAULT_TIMEOUT
    wait: float = 0.0
    resource_timeout: float = 0.0
    images: bool = True
    proxy: str | None = None  # the argument as given; None: the environment's
    baseurl: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    http_method: str = "GET"
    body: str | None = None
    js_source: str | None = None
    viewport: tuple[int, int] = VIEWPORT
    html: bool = False
    history: bool = False
    script: bool = False

    @property
    def user_agent(self) -> str | None:
        return next((value for name, value in self.headers if name.lower() == "user-agent"), None)


def parse_options(data: Mapping[str, Any], endpoint: str, max_timeout: float) -> RenderOptions:
    """RenderOptions from Splash's arguments, or BadOption naming the first bad one."""
    for name, harmless in UNSUPPORTED.items():
        value = data.get(name)
        if value is not None and value not in harmless and str(value) not in map(str, harmless):
            raise bad(name, f"{name!r} is not supported by this render server (Splash's render.html and "
                            "render.json without it)", "unsupported_argument")
    url = _url(data, "url", required=True)
    timeout = _number(data, "timeout", min(max_timeout, DEFAULT_TIMEOUT), 0.0, max_timeout)
    method = str(data.get("http_method") or "GET").upper()
    if method not in ("GET", "POST"):
        raise bad("http_method", f"Unsupported HTTP method {method}")
    body = data.get("body")
    if body is not None and not isinstance(body, str):
        raise bad("body", "Argument 'body' must be a string")
    if method == "GET" and body:
        raise bad("body", "GET request should not have a body")
    engine = data.get("engine", "webkit")
    if engine not in ("webkit", "chromium"):  # both are served by Chromium here
        raise bad("engine", f"Unknown render engine {engine}")
    js_source = data.get("js_source")
    if js_source is not None and not isinstance(js_source, str):
        raise bad("js_source", "Argument 'js_source' must be a string")
    return RenderOptions(
        endpoint=endpoint, url=url, timeout=timeout,
        wait=_number(data, "wait", 0.0, 0.0, min(MAX_WAIT, timeout)),
        resource_timeout=_number(data, "resource_timeout", 0.0, 0.0, 1e6),
        images=bool(_flag(data, "images", 1)),
        proxy=_proxy_argument(data.get("proxy")),
        baseurl=_url(data, "baseurl", required=False),
        headers=_headers(data.get("headers")),
        http_method=method, body=body or None, js_source=js_source or None,
        viewport=_viewport(data.get("viewport")),
        html=bool(_flag(data, "html", 0)), history=bool(_flag(data, "history", 0)),
        script=bool(_flag(data, "script", 0)),
    )


def _number(data, name: str, default: float, low: float, high: float) -> float:
    value = data.get(name)
    if value is None or value == "":
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise bad(name, f"Argument {name!r} has a wrong type", required_type="float") from None
    if not low <= number <= high:  # NaN fails too
        raise bad(name, "Argument is out of the allowed range", min=low, max=high, value=value)
    return number


def _flag(data, name: str, default: int) -> int:
    value = data.get(name)
    if value is None or value == "":
        return default
    try:
        flag = int(value)
    except (TypeError, ValueError):
        raise bad(name, f"Argument {name!r} has a wrong type", required_type="int") from None
    if flag not in (0, 1):
        raise bad(name, "Argument is out of the allowed range", min=0, max=1, value=value)
    return flag


def _url(data, name: str, required: bool) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        if required:
            raise bad(name, f"Required argument is missing: {name}", "argument_required")
        return None
    if not isinstance(value, str):
        raise bad(name, f"Argument {name!r} must be a string")
    value = value.strip()
    if value == "about:blank":
        return value
    parts = urlsplit(value)
    if parts.scheme.lower() not in ALLOWED_SCHEMES or (parts.scheme.lower() != "data" and not parts.hostname):
        raise bad(name, f"Argument {name!r} must be an absolute http(s) or data URL", allowed=list(ALLOWED_SCHEMES))
    return value


def _headers(value) -> tuple[tuple[str, str], ...]:
    message = "'headers' must be either a JSON array of (name, value) pairs or a JSON object"
    if value is None or value == "":
        return ()
    if isinstance(value, str):  # a GET argument: JSON text
        try:
            value = json.loads(value)
        except ValueError:
            raise bad("headers", message) from None
    pairs = list(value.items()) if isinstance(value, dict) else value
    if not isinstance(pairs, (list, tuple)):
        raise bad("headers", message)
    result = []
    for pair in pairs:
        if not (isinstance(pair, (list, tuple)) and len(pair) == 2 and isinstance(pair[0], str)
                and isinstance(pair[1], (str, int, float))):
            raise bad("headers", message)
        result.append((pair[0], str(pair[1])))
    return tuple(result)


def _viewport(value) -> tuple[int, int]:
    if value is None or value == "" or value == "full":  # "full" only matters to screenshots
        return VIEWPORT
    try:
        width, height = (int(part) for part in str(value).lower().split("x"))
    except ValueError:
        raise bad("viewport", "Invalid viewport format: must be WIDTHxHEIGHT, e.g. 1024x768") from None
    if not (0 < width <= MAX_VIEWPORT[0] and 0 < height <= MAX_VIEWPORT[1]):
        raise bad("viewport", "Viewport is out of the allowed range", max=f"{MAX_VIEWPORT[0]}x{MAX_VIEWPORT[1]}")
    return width, height


def _proxy_argument(value) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise bad("proxy", "Argument 'proxy' must be a string")
    if value.strip().lower() != "none":
        try:
            parse_proxy(value)
        except ValueError as exc:
            raise bad("proxy", f"Invalid proxy {value!r}: {exc}") from None
    return value.strip()


# --- proxies ------------------------------------------------------------------------------------
def parse_proxy(value: str, bypass: str = "") -> dict:
    """Playwright's proxy dict for Splash's ``[protocol://][user:password@]host[:port]`` (protocol
    http, https or socks5; port 1080 when not given). Loopback addresses are proxied too (Chromium
    bypasses them by default), unless ``bypass`` (a no_proxy list) names them.

    Raises:
        ValueError: not such a proxy URL.
    """
    text = value.strip()
    if "://" not in text:
        text = "http://" + text
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "socks5"):
        raise ValueError(f"unsupported protocol {scheme!r} (http, https or socks5)")
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("expected [protocol://][user:password@]host[:port]")
    port = parts.port or 1080  # ValueError for a port out of range
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    rules = [rule.strip() for rule in bypass.split(",") if rule.strip()]
    proxy = {"server": f"{scheme}://{host}:{port}", "bypass": ",".join([*rules, "<-loopback>"])}
    if parts.username:
        proxy["username"] = unquote(parts.username)
        proxy["password"] = unquote(parts.password or "")
    return proxy


def environment_proxies(env: Mapping[str, str]) -> dict[str, dict]:
    """{scheme: Playwright proxy} from ``http_proxy``/``https_proxy``/``all_proxy`` (either case)
    and ``no_proxy``; ValueError naming the variable that is not a proxy URL."""
    def get(name: str) -> str:
        return env.get(name) or env.get(name.upper()) or ""

    no_proxy = get("no_proxy")
    if no_proxy.strip() == "*":
        return {}
    proxies = {}
    for scheme in ("http", "https"):
        name = f"{scheme}_proxy" if get(f"{scheme}_proxy") else "all_proxy"
        if get(name):
            try:
                proxies[scheme] = parse_proxy(get(name), bypass=no_proxy)
            except ValueError as exc:
                raise ValueError(f"{name}={get(name)!r} is not a proxy URL: {exc}") from None
    return proxies


def choose_proxy(options: RenderOptions, env_proxies: Mapping[str, dict]) -> dict | None:
    """The render's proxy: its ``proxy`` argument (``none``: no proxy), else the environment's for
    the page's scheme."""
    if options.proxy is not None:
        return None if options.proxy.lower() == "none" else parse_proxy(options.proxy)
    return env_proxies.get(urlsplit(options.url).scheme.lower())


# --- scrapy-splash's argument cache (save_args / load_args) ---------------------------------------
class ArgumentCache:
    """Argument values kept by their hash, so a client sends a large value (a script) once."""

    def __init__(self, size: int = ARGUMENT_CACHE_SIZE):
        self.size = size
        self._values: OrderedDict[str, Any] = OrderedDict()

    def apply(self, data: dict) -> str | None:
        """Store ``save_args``, restore ``load_args`` into ``data``; the X-Splash-Saved-Arguments
        header value (None when nothing was saved). ExpiredArguments for keys no longer kept."""
        load_args = data.pop("load_args", None) or {}
        if isinstance(load_args, str):
            try:
                load_args = dict(pair.split("=", 1) for pair in load_args.split(";") if pair)
            except ValueError:
                raise bad("load_args", "'load_args' string value is not a semicolon-separated list of "
                                       "name=hash pairs") from None
        if not isinstance(load_args, dict):
            raise bad("load_args", "'load_args' should be either a JSON object with argument hashes or a "
                                   "semicolon-separated list of name=hash pairs")
        expired = [name for name, key in load_args.items() if key not in self._values]
        if expired:
            raise ExpiredArguments({"expired": expired})
        save_args = data.pop("save_args", None) or []
        if isinstance(save_args, str):
            save_args = [name for name in save_args.split(",") if name]
        if not isinstance(save_args, list) or not all(isinstance(name, str) for name in save_args):
            raise bad("save_args", "'save_args' should be either a comma-separated string or a JSON array "
                                   "with argument names")
        saved = [f"{name}={self._add(data.get(name))}" for name in save_args]
        for name, key in load_args.items():
            self._values.move_to_end(key)
            data[name] = self._values[key]
        return ";".join(saved) or None

    def _add(self, value) -> str:
        key = hashlib.sha1(json.dumps(value, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()
        self._values[key] = value
        self._values.move_to_end(key)
        while len(self._values) > self.size:
            self._values.popitem(last=False)
        return key


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
    # as root Chromium refuses to start sandboxed; a container's small /dev/shm crashes its tabs
    args = ["--disable-dev-shm-usage"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    if rules is not None and rules.checks:
        # what the browser fetches outside the route (its own services, favicons) through the
        # crawl's proxy script: a name resolving into a refused network goes nowhere (Chromium
        # never sends loopback through a proxy script: the route fetches every request itself)
        from focuscrawl.rendering.browser import proxy_script

        pac = base64.b64encode(proxy_script(None, rules.policy).encode()).decode()
        args.append(f"--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,{pac}")
    return args


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


# --- the HTTP service -----------------------------------------------------------------------------
class RenderServer:
    """Splash's HTTP API on ``host:port`` (port 0: a free one, see ``url`` after ``start``)."""

    def __init__(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *,
                 max_contexts: int = DEFAULT_MAX_CONTEXTS, max_timeout: float = DEFAULT_MAX_TIMEOUT,
                 executable_path: str | None = DEFAULT_BROWSER, env: Mapping[str, str] | None = None,
                 use_env_proxy: bool = True, policy: NetworkPolicy | None = None):
        if max_contexts < 1:
            raise ValueError(f"max_contexts must be at least 1, not {max_contexts}")
        if not max_timeout > 0:
            raise ValueError(f"max_timeout must be positive, not {max_timeout}")
        self.host, self.port = host, port
        self.max_timeout = float(max_timeout)
        env_proxies = environment_proxies(os.environ if env is None else env) if use_env_proxy else {}
        # private networks refused unless the policy allows them (the crawl's rules: focuscrawl.safety)
        self.browser = Browser(executable_path, max_contexts, env_proxies, ServerRules(policy))
        self.cache = ArgumentCache()
        self.renders = 0
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Launch the browser, then listen. OSError when the address is taken, PlaywrightError
        when the browser cannot be launched."""
        try:
            self.browser_version = await self.browser.start()
        except BaseException:
            await self.browser.close()  # the Playwright driver, started for nothing
            raise
        app = web.Application()
        for endpoint in ("render.html", "render.json"):
            handler = self._endpoint(endpoint)
            app.router.add_get(f"/{endpoint}", handler)
            app.router.add_post(f"/{endpoint}", handler)
        app.router.add_get("/_ping", self._ping)
        # stop() closes the browser first, so the renders under way end at once; this bounds the rest
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=SHUTDOWN_GRACE)
        await self._runner.setup()
        try:
            await web.TCPSite(self._runner, self.host, self.port).start()
        except OSError:
            await self.stop()
            raise
        self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        """Stop listening, end the renders under way (each answered 502), close the browser."""
        runner, self._runner = self._runner, None
        if runner is not None:
            for site in list(runner.sites):
                await site.stop()
        await self.browser.close()
        if runner is not None:
            await runner.cleanup()

    def _endpoint(self, endpoint: str):
        async def handle(request: web.Request) -> web.Response:
            return await self._handle(request, endpoint)
        return handle

    async def _ping(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok", "maxrss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                                  "active": self.browser.active, "queued": self.browser.queued,
                                  "browser_launches": self.browser.launches})

    async def _handle(self, request: web.Request, endpoint: str) -> web.Response:
        started = time.monotonic()
        url, saved, error = "", None, ""
        try:
            data = await _read_arguments(request)
            url = str(data.get("url") or "")
            saved = self.cache.apply(data)
            options = parse_options(data, endpoint, self.max_timeout)
            result = await self._render(options)
            if endpoint == "render.html":
                response = web.Response(text=result["html"], content_type="text/html", charset="utf-8")
            else:
                response = web.json_response(result, dumps=lambda value: json.dumps(value, ensure_ascii=False))
        except SplashError as exc:
            response, error = web.json_response(exc.body(), status=exc.status), f" {type(exc).__name__}"
        except Exception as exc:  # noqa: BLE001 - any other failure is one answer, never a dead server
            logger.exception("render of %s failed", url or "(no url)")
            response, error = web.json_response(InternalError(str(exc)).body(), status=500), " InternalError"
        if saved:
            response.headers["X-Splash-Saved-Arguments"] = saved
        self.renders += 1
        logger.info("%s %d%s %d ms %s", endpoint, response.status, error, (time.monotonic() - started) * 1000,
                    url[:300])
        return response

    async def _render(self, options: RenderOptions) -> dict:
        deadline = asyncio.timeout(options.timeout)  # waiting for a context counts, as in Splash
        try:
            async with deadline:
                return await self.browser.render(options)
        except TimeoutError:
            if deadline.expired():
                raise GlobalTimeoutError({"timeout": options.timeout}) from None
            raise


async def _read_arguments(request: web.Request) -> dict:
    """The query's arguments, and a POST body's (JSON object, form, or JavaScript as js_source)."""
    data: dict[str, Any] = {name: request.query.get(name) for name in request.query}
    if request.method != "POST" or not request.body_exists:
        return data
    content_type = request.content_type
    if content_type == "application/json":
        raw = await request.read()
        try:
            body = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise BadOption({"type": "invalid_json", "description": "Can't decode JSON", "message": str(exc)}) from None
        if not isinstance(body, dict):
            raise BadOption({"type": "invalid_json", "description": "The JSON body must be an object of arguments"})
        data.update(body)
    elif content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        data.update((name, form.get(name)) for name in form if isinstance(form.get(name), str))
    elif content_type == "application/javascript":
        data["js_source"] = (await request.read()).decode("utf-8", "replace")
    else:
        raise UnsupportedContentType({"supported": ["application/json", "application/x-www-form-urlencoded",
                                                    "multipart/form-data", "application/javascript"],
                                      "received": content_type})
    return data


# --- running it -------------------------------------------------------------------------------------
async def serve(server: RenderServer, stop: asyncio.Event, on_ready: Callable[[RenderServer], None] | None = None):
    """Start ``server``, call ``on_ready``, serve until ``stop`` is set, then stop it cleanly."""
    await server.start()
    try:
        if on_ready is not None:
            on_ready(server)
        await stop.wait()
    finally:
        await server.stop()


class ServerThread:
    """A RenderServer on its own event loop in a daemon thread, for synchronous code and tests.

    >>> with ServerThread(port=0) as running:   # doctest: +SKIP
    ...     requests.get(running.url + "/render.html", params={"url": "http://127.0.0.1:8000/"})
    """

    def __init__(self, **kwargs):
        self.server = RenderServer(**kwargs)
        self._loop = asyncio.new_event_loop()
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="render-server", daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    def start(self, timeout: float = 60.0) -> ServerThread:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise RuntimeError(f"the render server did not start within {timeout:g} s")
        if self._error is not None:
            raise self._error
        return self

    def stop(self, timeout: float = 30.0) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def main():
            self._stop = asyncio.Event()
            await serve(self.server, self._stop, lambda _server: self._ready.set())

        try:
            self._loop.run_until_complete(main())
        except BaseException as exc:  # noqa: BLE001 - handed to start()'s caller
            self._error = exc
        finally:
            self._ready.set()
            self._loop.close()
