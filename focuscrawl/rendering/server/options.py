"""The render server's arguments as Splash reads them, the proxy a render goes through, and
scrapy-splash's argument cache (``save_args``/``load_args``)."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from focuscrawl.rendering.server.errors import ExpiredArguments, bad

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
