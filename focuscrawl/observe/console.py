"""The web console: one local page that shows a crawl as it runs (or one that is over) and takes
labels for its pages.

``-s FOCUS_CONSOLE_PORT=N`` serves it beside a crawl (``ConsoleExtension``), inside the crawl's
own reactor with twisted.web (what Scrapy runs on: no thread, no new dependency); ``scrapy console
--store PATH`` serves the same page for a stored crawl. The page (``console_page.html``,
``console.js``, ``console.css``) asks the API for the crawl's figures every few seconds and draws
the harvest curve that ``focuscrawl.observe.plot`` draws for ``scrapy evaluate`` and ``export``.

The console's security, for a page that shows what the crawl fetched from anywhere and writes to
its store:

- it listens on 127.0.0.1 unless told otherwise (``FOCUS_CONSOLE_HOST``);
- every request needs the console's token, a random ``secrets.token_urlsafe`` in the URL the crawl
  logs (``?token=``; the page's own requests send it as ``X-Focus-Token``): anything else is 403;
- a request whose Host header is not the address served is 403, so a web page whose name is
  rebound to 127.0.0.1 (DNS rebinding) cannot read the API in the browser's name;
- a GET never changes anything; a label is a POST of JSON (a cross-site form cannot send one),
  with the token, from no other origin;
- what came from crawled pages (titles, URLs, text) is hostile: the page builds its DOM with
  ``textContent``, links carry ``rel=noreferrer`` (the token must not leak in a Referer) and every
  answer has a Content-Security-Policy that runs no inline or foreign script.
"""

from __future__ import annotations

import html
import ipaddress
import json
import logging
import math
import secrets
import time
from collections.abc import Callable
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

from focuscrawl.extras import MissingExtra
from focuscrawl.labelling import LabelError

logger = logging.getLogger(__name__)

TOKEN_HEADER = "X-Focus-Token"
#: the static files of the page, with their content types (package data beside this module)
STATIC = {
    "/": ("console_page.html", "text/html; charset=utf-8"),
    "/console.js": ("console.js", "text/javascript; charset=utf-8"),
    "/console.css": ("console.css", "text/css; charset=utf-8"),
}
#: no inline script, nothing from elsewhere, no framing, no form posts
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
               "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
#: a drawing: matplotlib's SVG styles itself inline, and runs nothing
SVG_POLICY = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"
#: the most rows an API answer holds, whatever is asked
MAX_ROWS = 200
#: the most points of a curve drawn (a long crawl's curve is thinned evenly, its last point kept)
MAX_CURVE_POINTS = 1500
MAX_BODY = 64 * 1024
#: the most of the crawl's time the drawings of its curve may take: the page is told of a new
#: curve (and asks for its drawings) once the time since the last drawing is this share's worth
#: of what drawing took (matplotlib draws the two views in about 0.4 s: every 8 s or so)
DRAW_SHARE = 0.05
#: the curve is not drawn again more often than this, however fast the drawing
MIN_REDRAW_SECONDS = 2.0


# --- the checks, pure ---------------------------------------------------------------------------

def new_token() -> str:
    return secrets.token_urlsafe(24)


def token_ok(expected: str, given: str | None) -> bool:
    """Whether ``given`` is the console's token (compared in constant time)."""
    return bool(expected) and given is not None and secrets.compare_digest(given.encode(), expected.encode())


def _is_wildcard(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def host_ok(header: str | None, served_host: str, port: int) -> bool:
    """Whether a request's Host header names the address served (DNS rebinding defence).

    Accepted: the served address with the served port; ``localhost`` when it is a loopback
    address; any IP address literal when serving on every interface (0.0.0.0, ::), since a
    rebound name is a name, never an address."""
    if not header:
        return False
    try:
        parts = urlsplit(f"//{header.strip()}")
        name, given_port = (parts.hostname or "").lower(), parts.port
    except ValueError:
        return False
    if given_port != port or not name:
        return False
    served = served_host.strip("[]").lower()
    if name == served:
        return True
    if name == "localhost":
        return _is_loopback(served)
    if _is_wildcard(served):
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True
    return False


def thin(curve: list[dict], most: int = MAX_CURVE_POINTS) -> list[dict]:
    """At most ``most`` points of ``curve``, evenly spread, its last one kept."""
    if len(curve) <= most:
        return curve
    step = len(curve) / (most - 1)
    return [curve[int(i * step)] for i in range(most - 1)] + [curve[-1]]


def curve_version(curve: list[dict]) -> str:
    """A short name for the curve as it is: it changes whenever a point is added or the last one moves."""
    if not curve:
        return "0"
    last = curve[-1]
    return f"{len(curve)}-{last.get('requests')}-{last.get('relevant')}"


def plain(value: Any) -> Any:
    """``value`` made JSON-safe: infinite and NaN numbers become None, tuples lists, others text."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return str(value)


def _text_svg(text: str) -> bytes:
    """A small SVG that shows ``text``, escaped, where a figure would be."""
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="640" height="40">'
            f'<text x="8" y="24" font-family="sans-serif" font-size="12">{html.escape(text)}</text>'
            '</svg>').encode()


def _rows(raw: str | None, default: int) -> int:
    try:
        return max(1, min(MAX_ROWS, int(raw))) if raw is not None else default
    except ValueError:
        return default


def static_file(name: str) -> bytes:
    return resources.files("focuscrawl.observe").joinpath(name).read_bytes()


# --- the console: routes over a source and a label desk, free of the HTTP server ------------------

class Answer:
    """An HTTP answer: status, content type, body, extra headers."""

    def __init__(self, status: int, content_type: str, body: bytes, headers: dict[str, str] | None = None):
        self.status, self.content_type, self.body, self.headers = status, content_type, body, headers or {}

    @classmethod
    def json(cls, data: Any, status: int = 200) -> Answer:
        return cls(status, "application/json", json.dumps(plain(data)).encode())

    @classmethod
    def error(cls, status: int, message: str) -> Answer:
        return cls.json({"error": message}, status)


class Console:
    """What the console answers, given a request's method, path, query, headers and body.

    ``source`` answers the figures (see focuscrawl/observe/console_sources.py), ``desk`` the
    labelling (None: no labelling), ``kind`` says "live" or "stored" on the page."""

    def __init__(self, source, desk=None, *, token: str | None = None, host: str = "127.0.0.1", port: int = 0,
                 kind: str = "live", title: str = "focuscrawl", clock: Callable[[], float] = time.monotonic) -> None:
        self.source = source
        self.desk = desk
        self.token = token or new_token()
        self.host = host
        self.port = port
        self.kind = kind
        self.title = title
        self._drawings: dict[str, tuple[str, bytes, float]] = {}  # x axis -> (version, SVG, seconds drawing took)
        self.clock = clock
        self._shown: tuple[str, float] | None = None  # the curve version the page is told of, and when

    @property
    def url(self) -> str:
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?token={self.token}"

    def answer(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: bytes = b"") -> Answer:
        """The answer to one request: 403 unless its Host is the one served and it has the token."""
        if not host_ok(headers.get("host"), self.host, self.port):
            return Answer.error(403, "this console answers only at the address it serves (Host header refused)")
        if not token_ok(self.token, headers.get(TOKEN_HEADER.lower()) or query.get("token")):
            return Answer.error(403, "no or wrong token: open the console at the URL the crawl logged")
        if method in ("GET", "HEAD"):
            return self._get(path, query)
        if method == "POST":
            return self._post(path, headers, body)
        return Answer(405, "text/plain", b"method not allowed\n", {"Allow": "GET, HEAD, POST"})

    # --- reading ---------------------------------------------------------------------------------
    def _get(self, path: str, query: dict[str, str]) -> Answer:
        if path in STATIC:
            name, content_type = STATIC[path]
            body = static_file(name)
            if path == "/":
                body = body.replace(b"__TOKEN__", self.token.encode())
            return Answer(200, content_type, body, {"Content-Security-Policy": PAGE_POLICY})
        routes: dict[str, Callable[[dict[str, str]], Answer]] = {
            "/api/state": self._state, "/api/curve.json": self._curve_json, "/api/curve.svg": self._curve_svg,
            "/api/queue": self._queue, "/api/labels": self._labels, "/api/page": self._page,
        }
        route = routes.get(path)
        if path == "/api/label":
            return Answer(405, "application/json", b'{"error": "a label is given with POST"}', {"Allow": "POST"})
        if route is None:
            return Answer.error(404, f"no such page: {path}")
        return route(query)

    def _state(self, query: dict[str, str]) -> Answer:
        curve = self.source.curve()
        return Answer.json({
            "kind": self.kind, "title": self.title, "labelling": self.desk is not None,
            "snapshot": self.source.snapshot(), "curve_version": self._shown_version(curve),
            "hosts": self.source.hosts(limit=_rows(query.get("hosts"), 50)),
            "top": self.source.top_urls(n=_rows(query.get("top"), 20)),
            "latest": self.source.latest_relevant(n=_rows(query.get("latest"), 20)),
        })

    def _curve_json(self, query: dict[str, str]) -> Answer:
        return Answer.json(thin(self.source.curve()))

    def _shown_version(self, curve: list[dict]) -> str:
        """The curve version the page is told of: the current one, once drawing it again keeps the
        drawings' share of the crawl's time under DRAW_SHARE (the page asks for drawings only when
        the version it is told of changes)."""
        version, now = curve_version(curve), self.clock()
        if self._shown is None:
            self._shown = (version, now)
        if version == self._shown[0]:
            return version
        took = sum(drawing[2] for drawing in self._drawings.values())
        if now - self._shown[1] >= max(MIN_REDRAW_SECONDS, took / DRAW_SHARE):
            self._shown = (version, now)
        return self._shown[0]

    def _curve_svg(self, query: dict[str, str]) -> Answer:
        """The harvest curve drawn as SVG against ``x`` (requests or seconds), drawn again only for
        a new version the page was told of (``_shown_version``: a drawing takes a fifth of a second
        of the crawl's reactor)."""
        from focuscrawl.observe.plot import X_AXES, check_available, crawl_series, figure_bytes, harvest_figure

        x = query.get("x", "requests")
        if x not in X_AXES:
            return Answer.error(400, f"x must be one of {', '.join(X_AXES)}")
        try:
            check_available("the console's harvest curve")
        except MissingExtra as exc:  # the page shows the image: it says what to install
            return Answer(200, "image/svg+xml", _text_svg(str(exc)), {"Content-Security-Policy": SVG_POLICY})
        curve = self.source.curve()
        version = self._shown_version(curve)
        cached = self._drawings.get(x)
        if cached is None or cached[0] != version:
            started = time.perf_counter()
            label = "pages fetched" if self.kind == "stored" and x == "requests" else None
            fig = harvest_figure([crawl_series(thin(curve), x)], x, x_label=label, size=(6.4, 3.4), dpi=90)
            cached = self._drawings[x] = (version, figure_bytes(fig, "svg"), time.perf_counter() - started)
        return Answer(200, "image/svg+xml", cached[1], {"Content-Security-Policy": SVG_POLICY})

    def _queue(self, query: dict[str, str]) -> Answer:
        if self.desk is None:
            return Answer.json({"available": False, "reason": "no labelling here", "candidates": []})
        return Answer.json(self.desk.queue(_rows(query.get("n"), 10)))

    def _labels(self, query: dict[str, str]) -> Answer:
        return Answer.json(self.desk.labels(_rows(query.get("n"), 50)) if self.desk is not None else [])

    def _page(self, query: dict[str, str]) -> Answer:
        """A stored page's whole text, as an escaped HTML page (nothing of it is markup)."""
        url = query.get("url", "")
        page = self.desk.page(url) if self.desk is not None and url else None
        if page is None:
            return Answer.error(404, "no such stored page")
        title = page.get("title") or page.get("url") or ""
        body = (f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
                f"<h1>{html.escape(title)}</h1><p>{html.escape(page.get('final_url') or page.get('url') or '')}"
                f" &middot; score {html.escape(str(page.get('score')))}</p>"
                f"<pre style='white-space:pre-wrap'>{html.escape(page.get('text') or '')}</pre>")
        return Answer(200, "text/html; charset=utf-8", body.encode(),
                      {"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"})

    # --- changing: labels ------------------------------------------------------------------------
    def _post(self, path: str, headers: dict[str, str], body: bytes) -> Answer:
        if path != "/api/label":
            return Answer.error(405, "only /api/label takes a POST")
        origin = headers.get("origin")
        if origin and origin != "null" and not host_ok(urlsplit(origin).netloc, self.host, self.port):
            return Answer.error(403, "a label comes from the console's own page")
        if (headers.get("content-type") or "").split(";")[0].strip().lower() != "application/json":
            return Answer.error(415, "a label is a JSON body: {\"url\": ..., \"label\": ...}")
        if self.desk is None:
            return Answer.error(409, "no labelling here")
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return Answer.error(400, "the body is not JSON")
        if not isinstance(data, dict) or not isinstance(data.get("url"), str) or not isinstance(data.get("label"), str):
            return Answer.error(400, "a label is {\"url\": \"...\", \"label\": \"on-topic|off-topic|skip\"}")
        who = data.get("who") if isinstance(data.get("who"), str) else None
        try:
            row = self.desk.label(data["url"], data["label"], who)
        except LabelError as exc:
            return Answer.error(400, str(exc))
        return Answer.json({"ok": True, "label": row})


# --- twisted.web --------------------------------------------------------------------------------

class ConsoleServer:
    """The console served with twisted.web on the running reactor: ``start()`` listens (raises
    twisted's CannotListenError for a busy port), ``stop()`` stops listening (a Deferred)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._port = None

    def start(self) -> ConsoleServer:
        from twisted.internet import reactor

        self._port = reactor.listenTCP(self.console.port, _site(self.console), interface=self.console.host)
        self.console.port = self._port.getHost().port
        return self

    def stop(self):
        port, self._port = self._port, None
        return port.stopListening() if port is not None else None


def _site(console: Console):
    from twisted.web import resource, server

    class Root(resource.Resource):
        isLeaf = True

        def render(self, request):
            headers = {name.decode("latin-1").lower(): values[0].decode("latin-1")
                       for name, values in request.requestHeaders.getAllRawHeaders() if values}
            query = {k.decode("utf-8", "replace"): v[0].decode("utf-8", "replace") for k, v in request.args.items()}
            method = request.method.decode("ascii", "replace")
            body = request.content.read(MAX_BODY + 1) if request.content is not None else b""
            try:
                if len(body) > MAX_BODY:
                    answer = Answer.error(413, "too large")
                else:
                    answer = console.answer(method, request.path.decode("utf-8", "replace"), query, headers, body)
            except Exception as exc:  # noqa: BLE001 - a failing figure must not fail the crawl
                logger.exception("console: %s %s failed", method, request.path)
                answer = Answer.error(500, f"{type(exc).__name__}: {exc}".splitlines()[0])
            request.setResponseCode(answer.status)
            request.setHeader(b"Content-Type", answer.content_type.encode())
            for name, value in {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                                "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
                                "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'",
                                **answer.headers}.items():
                request.setHeader(name.encode(), value.encode())
            return answer.body

    class QuietSite(server.Site):
        noisy = False
        displayTracebacks = False

        def log(self, request):  # no access log: the page polls every few seconds
            pass

    return QuietSite(Root())


# --- the Scrapy extension -----------------------------------------------------------------------

class ConsoleExtension:
    """Serves the console beside a crawl when ``FOCUS_CONSOLE_PORT`` is set: from spider_opened to
    spider_closed, on ``FOCUS_CONSOLE_HOST``. Its figures are the crawl's ``CrawlStatus``; labels go
    to the crawl's store through a connection of its own, opened when somebody first labels, and the
    queue ranks pages by the model the spider loaded."""

    def __init__(self, crawler, config, status) -> None:
        self.crawler = crawler
        self.config = config
        self.status = status
        self.crawl_id: int | None = None
        self.server: ConsoleServer | None = None
        self.desk = None

    @classmethod
    def from_crawler(cls, crawler):
        from scrapy import signals
        from scrapy.exceptions import NotConfigured

        from focuscrawl import signals as focus_signals
        from focuscrawl.config import ConfigError, FocusConfig
        from focuscrawl.observe.status import CrawlStatus

        try:
            config = FocusConfig.from_settings(crawler.settings)
        except ConfigError as exc:
            raise NotConfigured(str(exc)) from exc
        if not config.console_port:
            raise NotConfigured  # off by default: nothing to say
        extension = cls(crawler, config, CrawlStatus.of(crawler))  # made now, so it misses no event
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(extension.crawl_opened, signal=focus_signals.crawl_opened)
        return extension

    def crawl_opened(self, store=None, crawl_id=None, **kwargs):
        self.crawl_id = crawl_id

    def spider_opened(self, spider=None):
        from twisted.internet.error import CannotListenError

        from focuscrawl.observe.console_sources import LabelDesk
        from focuscrawl.store import CrawlStore, resolve_store_path

        path = resolve_store_path(self.config)
        spider = spider or self.crawler.spider
        self.desk = LabelDesk(store=lambda: CrawlStore(path, create=False),
                              model=lambda: getattr(spider, "model", None), crawl=lambda: self.crawl_id)
        console = Console(self.status, self.desk, host=self.config.console_host,
                          port=self.config.console_port, kind="live", title=f"focuscrawl: {spider.name}")
        try:
            self.server = ConsoleServer(console).start()
        except CannotListenError as exc:
            reason = getattr(exc.socketError, "strerror", None) or exc.socketError
            logger.error("console: cannot listen on %s:%d (%s): the crawl goes on without it",
                         self.config.console_host, self.config.console_port, reason)
            return
        logger.info("console: %s", console.url)

    def spider_closed(self, spider=None, reason=None):
        if self.desk is not None:
            self.desk.close()
        if self.server is not None:
            server, self.server = self.server, None
            return server.stop()
        return None


__all__ = ["Answer", "Console", "ConsoleExtension", "ConsoleServer", "TOKEN_HEADER", "curve_version",
           "host_ok", "new_token", "thin", "token_ok"]
