"""A hostile web on 127.0.0.1: every trap and misbehaviour a polite, robust crawler must survive.

Each "host" is its own threaded HTTP/1.1 server on its own port, so per-host politeness is
visible in the servers' log. The hub's home page (the seed) links into everything:

    hub        normal articles, duplicate stories (/story/N = /print/N = /amp/N), /admin/ disallowed
    calendar   an infinite calendar: /calendar/2026/11 links the previous and next month forever
    session    session ids in URLs (;jsessionid= and ?sid=), new on every link, over 5 real items
    deep       ever-deeper /a/a/a/... paths (relative links)
    params     one page under query-parameter permutations plus a useless, ever-new utm_source
    redirects  a redirect loop (/loop/a <-> /loop/b) and a chain of 10 redirects
    big        a 50 MB body (streamed; with and without Content-Length) and a gzip bomb (>1 GB)
    slow       a body trickled one byte per second (bounded by ``trickle_seconds``)
    reset      connections reset (SO_LINGER 0) before or in the middle of the response
    errors     500s, 429/503 with ``Retry-After: 2``
    broken     broken HTML (unclosed tags, garbage bytes, NULs); pages whose header says ISO-8859-1
               but whose bytes are windows-1251 Russian or Shift_JIS Japanese
    robots     a robots.txt with odd syntax (BOM, mixed case, comments, blank lines in groups,
               unknown directives), Crawl-delay 1, /private disallowed
    excluded   a normal host, for exclusion-list tests

Every request is logged as the audit (``focuscrawl.politeness.audit``) reads it. Finite content is
small (well under a hundred real pages), so a budget of a few hundred requests ends a crawl.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import select
import socket
import struct
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

# --- constants tests assert against -----------------------------------------------------------

HOST_NAMES = ("hub", "calendar", "session", "deep", "params", "redirects", "big", "slow",
              "reset", "errors", "broken", "robots", "excluded")

#: trap name -> (host name, path prefix every URL of the trap starts with)
TRAPS = {
    "calendar": ("calendar", "/calendar/"),
    "session": ("session", "/shop"),
    "deep": ("deep", "/a/"),
    "params": ("params", "/products"),
    "redirect_loop": ("redirects", "/loop/"),
    "redirect_chain": ("redirects", "/chain/"),
}
CALENDAR_START = (2026, 11)
SESSION_ITEMS = 5  # distinct items behind the infinitely many session URLs
PARAM_VALUES = (1, 2)  # a and b each take these; 4 distinct pages behind infinitely many URLs
REDIRECT_LOOP = ("/loop/a", "/loop/b")
REDIRECT_CHAIN_LENGTH = 10  # /chain/0 -> ... -> /chain/10 (200)
REDIRECT_CHAIN_END = f"/chain/{REDIRECT_CHAIN_LENGTH}"

BIG_BODY_BYTES = 50 * 1024 * 1024
BIG_PATHS = ("/big/50mb", "/big/50mb-nolength")
GZIP_BOMB_PATH = "/bomb"
TRICKLE_PATH = "/trickle"
TRICKLE_MAX_SECONDS = 60
RESET_PATHS = ("/reset/immediate", "/reset/midbody")

RETRY_AFTER_SECONDS = 2
ERROR_PATHS = {
    "/error/500": "500 on every request",
    "/flaky/1": "500 on the first request, 200 after",
    "/busy/1": "429 Retry-After: 2 on the first request, 200 after",
    "/busy/2": "429 Retry-After: 2 on the first request, 200 after",
    "/unavailable": "503 Retry-After: 2 on every request",
}

CYRILLIC_SENTENCE = "Привет, мир: краулер читает кириллицу"
JAPANESE_SENTENCE = "こんにちは世界、クローラーは日本語を読む"
#: path on the "broken" host -> (the bytes' real encoding, a sentence the decoded text contains);
#: the HTTP header claims ISO-8859-1 and there is no <meta charset>.
CHARSET_PAGES = {
    "/charset/cyrillic": ("windows-1251", CYRILLIC_SENTENCE),
    "/charset/japanese": ("shift_jis", JAPANESE_SENTENCE),
}
BROKEN_PATHS = ("/broken/1", "/broken/2", "/broken/3")
#: text inside the broken pages that a tolerant parser still finds
BROKEN_SENTENCE = "This sentence survives the broken markup around it"

ROBOTS_HOST = "robots"
ROBOTS_CRAWL_DELAY = 1.0
#: host name -> paths linked from that host that robots.txt disallows for focuscrawl
DISALLOWED_PATHS = {
    "hub": ("/admin/panel.html",),
    "robots": ("/private/secret.html", "/privateer.html", "/drafts/plan.html"),
}
#: paths on the robots host that look forbidden but are allowed for focuscrawl
#: (an Allow rule; a case-sensitive match; "/drafts/" is disallowed only in focuscrawl's group)
ROBOTS_ALLOWED_PATHS = ("/public/1.html", "/public/2.html", "/private/press.html",
                        "/Private/case.html")

EXCLUDED_HOST = "excluded"
ARTICLE_PATHS = tuple(f"/article/{n}" for n in range(1, 7))
STORY_COUNT = 3
#: groups of paths on the hub serving the same story text (print adds one line; amp is identical)
DUPLICATE_GROUPS = tuple((f"/story/{n}", f"/print/{n}", f"/amp/{n}")
                         for n in range(1, STORY_COUNT + 1))

ODD_ROBOTS_TXT = (
    "\ufeffUser-Agent: FocusCrawl\n"
    "# our own group; the BOM above must not hide it\n"
    "\n"
    "DisAllow: /private\n"
    "allow: /private/press.html\n"
    "\n"
    "disallow: /drafts/   # trailing comment\n"
    "Crawl-Delay: 1\n"
    "Noindex: /whatever\n"
    "Request-rate: 1/5\n"
    "X-Unknown-Directive: yes\n"
    "\n"
    "USER-AGENT: SomeOtherBot\n"
    "Disallow: /\n"
    "\n"
    "user-agent: *\n"
    "Disallow: /private\n"
    "CRAWL-DELAY: 1\n"
    "Host: example.invalid\n"
    "Sitemap: /sitemap.xml\n"
)
_PLAIN_ROBOTS = "User-agent: *\nDisallow:\n"
ROBOTS_TXT = {name: _PLAIN_ROBOTS for name in HOST_NAMES}
ROBOTS_TXT["hub"] = "# hub\nUser-agent: *\nDisallow: /admin/\n"
ROBOTS_TXT["robots"] = ODD_ROBOTS_TXT

# --- bodies computed once ----------------------------------------------------------------------


def _make_gzip_bomb(blocks_mib: int = 1100) -> tuple[bytes, int]:
    """A gzip member inflating to ``blocks_mib`` MiB of zeros, built without deflating them all:
    after a full flush deflate restarts, so one compressed 1 MiB block can be repeated."""
    block = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip wrapper
    head = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    repeat = comp.compress(block) + comp.flush(zlib.Z_FULL_FLUSH)
    tail = comp.flush(zlib.Z_FINISH)  # final empty block + the trailer for 2 MiB: replaced below
    final_block = tail[:-8]
    crc = 0
    for _ in range(blocks_mib):
        crc = zlib.crc32(block, crc)
    size = blocks_mib << 20
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    body = head + repeat * (blocks_mib - 1) + final_block + trailer
    return body, size


GZIP_BOMB, GZIP_BOMB_INFLATED_BYTES = _make_gzip_bomb()
_BIG_CHUNK = (b"<p>" + b"filler " * 140 + b"</p>\n") * 64  # ~63 KB, sent over and over

_WORDS = ("river delta sediment flood plain wetland estuary current salmon spawning gravel bank "
          "erosion channel tributary watershed rainfall discharge gauge levee meander oxbow "
          "floodgate reservoir dam turbine fish ladder nutrient algae oxygen temperature").split()


def _prose(seed: int, words: int = 160) -> str:
    rng = random.Random(seed)
    sentences, sentence = [], []
    for _ in range(words):
        sentence.append(rng.choice(_WORDS))
        if len(sentence) >= rng.randint(8, 14):
            sentences.append(" ".join(sentence).capitalize() + ".")
            sentence = []
    if sentence:
        sentences.append(" ".join(sentence).capitalize() + ".")
    return " ".join(sentences)


STORY_TEXT = {n: _prose(1000 + n) for n in range(1, STORY_COUNT + 1)}


def _esc(text: str) -> str:
    for raw, entity in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&quot;")):
        text = text.replace(raw, entity)
    return text


def _page(title: str, paragraphs=(), links=()) -> bytes:
    """A small valid UTF-8 HTML page; ``links`` are (href, anchor text) pairs."""
    body = "".join(f"<p>{_esc(p)}</p>\n" for p in paragraphs)
    items = "".join(f'<li><a href="{_esc(href)}">{_esc(text)}</a></li>\n' for href, text in links)
    return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{_esc(title)}</title>'
            f"</head>\n<body><h1>{_esc(title)}</h1>\n{body}<ul>\n{items}</ul></body></html>\n"
            ).encode("utf-8")


# --- replies -----------------------------------------------------------------------------------

@dataclass
class Reply:
    """What a route answers. ``kind`` picks how it is sent: full, stream, stream_nolength,
    trickle, reset (before any byte), reset_mid (after the head and part of the body)."""

    status: int = 200
    body: bytes = b""
    headers: list = field(default_factory=list)
    content_type: str | None = "text/html; charset=utf-8"
    kind: str = "full"


def _redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, b"", [("Location", location)], None)


_NOT_FOUND = Reply(404, _page("Not found", ["Nothing here."]))


# --- the server --------------------------------------------------------------------------------

class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, web: "HostileWeb", site: str):
        self.web, self.site = web, site
        super().__init__(("127.0.0.1", 0), _Handler)
        self.netloc = f"127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request, client_address):  # resets and aborts are the point here
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "HostileWeb/1.0"
    timeout = 15  # an idle keep-alive connection ends by itself

    def setup(self):
        super().setup()
        self.conn_id = self.server.web._register(self.connection)
        self.served = 0  # requests already answered on this connection

    def finish(self):
        try:
            super().finish()
        except (OSError, ValueError):
            pass
        finally:
            self.server.web._unregister(self.connection)

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self._serve("GET")

    def do_HEAD(self):
        self._serve("HEAD")

    def _serve(self, method: str) -> None:
        web, srv = self.server.web, self.server
        path = self.path
        if path.startswith(("http://", "https://")):  # absolute-form request line
            parts = urlsplit(path)
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._rec = rec = {
            "t_start": time.time(), "t_end": None, "method": method,
            "url": f"http://{srv.netloc}{path}", "host": srv.netloc, "path": path,
            "status": 0, "bytes": 0, "conn": self.conn_id, "site": srv.site,
            "user_agent": self.headers.get("User-Agent", ""),
        }
        web._begin()
        try:
            reused, self.served = self.served > 0, self.served + 1
            if reused and srv.site == "reset" and path == "/" and web.reset_reused_home:
                reply = Reply(kind="reset")  # a keep-alive connection dropped as it is reused
            else:
                reply = web._route(srv.site, path)
            getattr(self, f"_send_{reply.kind}")(reply, method == "HEAD")
        except OSError:  # reset, broken pipe, timeout: the client or we gave up
            self.close_connection = True
        finally:
            rec["t_end"] = time.time()
            web._log(rec)
            web._end()

    # -- sending --

    def _head(self, reply: Reply, length: int | None, close: bool = False) -> None:
        self.send_response(reply.status)
        self._rec["status"] = reply.status
        if reply.content_type:
            self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers:
            self.send_header(name, value)
            if name.lower() == "retry-after":
                self._rec["retry_after"] = value
        if length is not None:
            self.send_header("Content-Length", str(length))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()

    def _write(self, data: bytes) -> None:
        self.wfile.write(data)
        self._rec["bytes"] += len(data)

    def _send_full(self, reply: Reply, head_only: bool) -> None:
        self._head(reply, len(reply.body))
        if not head_only and reply.body:
            self._write(reply.body)

    def _stream_big(self, head_only: bool) -> None:
        stop, left = self.server.web._stopping, BIG_BODY_BYTES
        while left > 0 and not head_only:
            if stop.is_set():
                self.close_connection = True
                return
            chunk = _BIG_CHUNK[:left]
            self._write(chunk)
            left -= len(chunk)

    def _send_stream(self, reply: Reply, head_only: bool) -> None:
        self._head(reply, BIG_BODY_BYTES)
        self._stream_big(head_only)

    def _send_stream_nolength(self, reply: Reply, head_only: bool) -> None:
        self._head(reply, None, close=True)
        self._stream_big(head_only)

    def _client_gone_within(self, seconds: float) -> bool:
        """Wait up to ``seconds``; True as soon as the client closed or the web is stopping, so
        the logged t_end is when the client left, not a byte-interval later."""
        deadline = time.monotonic() + seconds
        stop = self.server.web._stopping
        while not stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.25))
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                time.sleep(min(left, 0.25))  # a pipelined request: not ours to read yet
        return True

    def _send_trickle(self, reply: Reply, head_only: bool) -> None:
        body = reply.body
        self._head(reply, len(body))
        if head_only:
            return
        for i in range(len(body)):
            self._write(body[i:i + 1])
            if i + 1 < len(body) and self._client_gone_within(1.0):
                self.close_connection = True
                return

    def _rst(self) -> None:
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _send_reset(self, reply: Reply, head_only: bool) -> None:
        self._rst()

    def _send_reset_mid(self, reply: Reply, head_only: bool) -> None:
        self._head(reply, len(reply.body))
        self._write(reply.body[: len(reply.body) // 4])
        time.sleep(0.05)  # let the partial body reach the client before the reset
        self._rst()


class HostileWeb:
    """Thirteen hostile hosts on 127.0.0.1; ``start()`` returns self; also a context manager.

    ``trickle_seconds`` bounds the one-byte-per-second body (at most 60); ``lifetime`` stops the
    whole web by itself; ``log_path`` also appends every record there as JSON lines;
    ``reset_reused_home``: the reset host's home page resets the connection when asked for on a
    connection that already served a request (a crawler asks for it right after robots.txt),
    and answers normally on a fresh one."""

    def __init__(self, trickle_seconds: int = TRICKLE_MAX_SECONDS, lifetime: float = 600.0,
                 log_path=None, reset_reused_home: bool = False):
        self.trickle_seconds = max(1, min(int(trickle_seconds), TRICKLE_MAX_SECONDS))
        self.lifetime = lifetime
        self.log_path = log_path
        self.reset_reused_home = reset_reused_home
        self.hosts: dict[str, str] = {}
        self._servers: dict[str, _Server] = {}
        self._threads: list[threading.Thread] = []
        self._records: list[dict] = []
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._conn_ids = itertools.count(1)
        self._hits: dict[tuple[str, str], int] = {}
        self._sids = itertools.count(1)
        self._stopping = threading.Event()
        self._timer: threading.Timer | None = None
        self._stopped = False
        self._done = threading.Event()
        self._inflight = 0
        self._idle = threading.Condition(self._lock)

    # -- lifecycle --

    def start(self) -> "HostileWeb":
        for name in HOST_NAMES:
            srv = _Server(self, name)
            self._servers[name] = srv
            self.hosts[name] = srv.netloc
            t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                                 name=f"hostile-{name}", daemon=True)
            t.start()
            self._threads.append(t)
        self._timer = threading.Timer(self.lifetime, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        with self._lock:
            already, self._stopped = self._stopped, True
        if already:  # another thread (perhaps the lifetime timer) is stopping it: wait for that
            self._done.wait(timeout=15)
            return
        self._stopping.set()
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        for srv in self._servers.values():
            srv.shutdown()
            srv.server_close()
        with self._lock:
            conns = list(self._conns)
        for conn in conns:  # wake handler threads blocked on idle keep-alive connections
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)
        self.wait_idle(timeout=5)
        self._done.set()

    def wait_stopped(self, timeout: float = 15.0) -> bool:
        """Wait (bounded) until the web has stopped, e.g. by its ``lifetime``."""
        return self._done.wait(timeout=timeout)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait (at most ``timeout`` s) until no request is being answered, so the log is
        complete: a client can hold the whole response before the server has logged it."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout=timeout)

    def __enter__(self) -> "HostileWeb":
        return self.start() if not self._servers else self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what tests use --

    def url(self, name: str, path: str = "/") -> str:
        return f"http://{self.hosts[name]}{path}"

    @property
    def seeds(self) -> list[str]:
        return [self.url("hub", "/")]

    @property
    def robots(self) -> dict[str, str]:
        """{netloc: robots.txt text} for every host, as the audit takes it."""
        return {self.hosts[name]: ROBOTS_TXT[name] for name in HOST_NAMES}

    @property
    def excluded_host(self) -> str:
        return self.hosts[EXCLUDED_HOST]

    def name_of(self, netloc: str) -> str | None:
        return next((n for n, h in self.hosts.items() if h == netloc), None)

    def disallowed_urls(self) -> list[str]:
        return [self.url(name, p) for name, paths in DISALLOWED_PATHS.items() for p in paths]

    @property
    def log(self) -> list[dict]:
        """A snapshot of every request record so far (the audit's format; plus ``site``, the
        host's name, and ``user_agent``). Call :meth:`wait_idle` first for a complete one."""
        with self._lock:
            return [dict(r) for r in self._records]

    def requests_to(self, name: str, prefix: str = "/") -> list[dict]:
        """Logged requests to host ``name`` whose path starts with ``prefix``."""
        return [r for r in self.log if r["site"] == name and r["path"].startswith(prefix)]

    def clear_log(self) -> None:
        with self._lock:
            self._records.clear()

    def write_log(self, path) -> None:
        with open(path, "w", encoding="utf-8") as fh:
            for r in self.log:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")

    # -- plumbing for the handlers --

    def _register(self, conn: socket.socket) -> int:
        with self._lock:
            self._conns.add(conn)
        return next(self._conn_ids)

    def _unregister(self, conn: socket.socket) -> None:
        with self._lock:
            self._conns.discard(conn)

    def _begin(self) -> None:
        with self._lock:
            self._inflight += 1

    def _end(self) -> None:
        with self._lock:
            self._inflight -= 1
            self._idle.notify_all()

    def _log(self, rec: dict) -> None:
        with self._lock:
            self._records.append(rec)
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")

    def _hit(self, site: str, path: str) -> int:
        """How many times this path was asked for, this request included."""
        with self._lock:
            n = self._hits.get((site, path), 0) + 1
            self._hits[(site, path)] = n
            return n

    def _sid(self) -> str:
        return f"{next(self._sids) * 2654435761 % 2**32:08x}"

    # -- routing --

    def _route(self, site: str, raw_path: str) -> Reply:
        parts = urlsplit(raw_path)
        path, query = parts.path or "/", parts.query
        if path == "/robots.txt":
            return Reply(200, ROBOTS_TXT[site].encode("utf-8"), content_type="text/plain")
        return getattr(self, f"_site_{site}")(path, query)

    def _site_hub(self, path: str, query: str) -> Reply:
        if path == "/":
            links = [(p, f"Article {p.rsplit('/', 1)[1]}") for p in ARTICLE_PATHS]
            links += [(p, f"Story {p}") for group in DUPLICATE_GROUPS for p in group]
            links += [("/admin/panel.html", "Admin")]
            u = self.url
            links += [
                (u("calendar", "/calendar/%d/%d" % CALENDAR_START), "Events calendar"),
                (u("session", "/"), "Shop"),
                (u("deep", "/"), "Deep archive"),
                (u("params", "/products?b=2&a=1"), "Products"),
                (u("redirects", "/"), "Moved pages"),
                (u("big", "/"), "Downloads"),
                (u("slow", "/"), "Slow server"),
                (u("reset", "/"), "Flaky network"),
                (u("errors", "/"), "Error pages"),
                (u("broken", "/"), "Old pages"),
                (u("robots", "/"), "Members"),
                (u("excluded", "/"), "Excluded site"),
            ]
            return Reply(200, _page("Hostile hub", [_prose(1)], links))
        m = re.fullmatch(r"/article/(\d+)", path)
        if m and path in ARTICLE_PATHS:
            n = int(m.group(1))
            links = [("/", "Home")] + [(p, "Next article") for p in ARTICLE_PATHS if p != path][:2]
            return Reply(200, _page(f"Article {n}", [_prose(n), _prose(n + 50)], links))
        m = re.fullmatch(r"/(story|print|amp)/(\d+)", path)
        if m and int(m.group(2)) in STORY_TEXT:
            kind, n = m.group(1), int(m.group(2))
            paragraphs = [STORY_TEXT[n]]
            if kind == "print":
                paragraphs.append("Printer-friendly version.")
            return Reply(200, _page(f"Story {n}", paragraphs, [("/", "Home")]))
        if path == "/admin/panel.html":
            return Reply(200, _page("Admin", ["Robots.txt disallows this page."]))
        return _NOT_FOUND

    def _site_calendar(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Calendar", [], [("/calendar/%d/%d" % CALENDAR_START, "Now")]))
        m = re.fullmatch(r"/calendar/(\d{1,6})/(\d{1,2})", path)
        if not m or not 1 <= int(m.group(2)) <= 12:
            return _NOT_FOUND
        y, mo = int(m.group(1)), int(m.group(2))
        prev = (y, mo - 1) if mo > 1 else (y - 1, 12)
        nxt = (y, mo + 1) if mo < 12 else (y + 1, 1)
        links = [("/calendar/%d/%d" % prev, "Previous month"),
                 ("/calendar/%d/%d" % nxt, "Next month")]
        return Reply(200, _page(f"Events {y}-{mo:02d}", ["No events this month."], links))

    def _site_session(self, path: str, query: str) -> Reply:
        if not (path == "/" or path.startswith("/shop")):
            return _NOT_FOUND
        base = path.split(";", 1)[0]
        links = [(f"/shop;jsessionid={self._sid()}", "Shop home")]
        links += [(f"/shop/item/{n}?sid={self._sid()}", f"Item {n}")
                  for n in range(1, SESSION_ITEMS + 1)]
        if base in ("/", "/shop"):
            return Reply(200, _page("Shop", ["Welcome to the shop."], links))
        m = re.fullmatch(r"/shop/item/(\d+)", base)
        if m and 1 <= int(m.group(1)) <= SESSION_ITEMS:
            n = int(m.group(1))
            return Reply(200, _page(f"Item {n}", [f"Item {n} is a fine item. " + _prose(200 + n)],
                                    links))
        return _NOT_FOUND

    def _site_deep(self, path: str, query: str) -> Reply:
        if path == "/" or re.fullmatch(r"(/a)+/?", path):
            depth = path.count("/a")
            return Reply(200, _page(f"Archive level {depth}", ["Older material is further down."],
                                    [("a/", "Deeper"), ("/", "Top")]))
        return _NOT_FOUND

    def _site_params(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Catalogue", [], [("/products?b=2&a=1", "Products")]))
        if path != "/products":
            return _NOT_FOUND
        q = dict(parse_qsl(query))
        try:
            a, b = int(q.get("a", 1)), int(q.get("b", 1))
        except ValueError:
            return _NOT_FOUND
        if a not in PARAM_VALUES or b not in PARAM_VALUES:
            return _NOT_FOUND
        n = next(self._sids)
        links = [(f"/products?b={b}&a={a}", "Same, reordered"),
                 (f"/products?a={a}&b={b}", "Same"),
                 (f"/products?a={a}&b={b}&utm_source=feed{n}", "Same, tracked"),
                 (f"/products?utm_source=mail{n}&b={b}&a={a}&utm_medium=email", "Same, tracked")]
        links += [(f"/products?b={bb}&a={aa}", f"Products {aa}/{bb}")
                  for aa in PARAM_VALUES for bb in PARAM_VALUES if (aa, bb) != (a, b)]
        return Reply(200, _page(f"Products a={a} b={b}", [_prose(300 + 10 * a + b)], links))

    def _site_redirects(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Moved", [], [(REDIRECT_LOOP[0], "Loop"),
                                                  ("/chain/0", "Chain")]))
        if path == REDIRECT_LOOP[0]:
            return _redirect(self.url("redirects", REDIRECT_LOOP[1]))
        if path == REDIRECT_LOOP[1]:
            return _redirect(REDIRECT_LOOP[0], 301)
        m = re.fullmatch(r"/chain/(\d+)", path)
        if m and int(m.group(1)) < REDIRECT_CHAIN_LENGTH:
            return _redirect(f"/chain/{int(m.group(1)) + 1}")
        if path == REDIRECT_CHAIN_END:
            return Reply(200, _page("End of the chain", ["Ten redirects later."]))
        return _NOT_FOUND

    def _site_big(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Downloads", [], [(p, p) for p in BIG_PATHS]
                                    + [(GZIP_BOMB_PATH, "Compressed")]))
        if path == BIG_PATHS[0]:
            return Reply(kind="stream")
        if path == BIG_PATHS[1]:
            return Reply(kind="stream_nolength")
        if path == GZIP_BOMB_PATH:
            return Reply(200, GZIP_BOMB, [("Content-Encoding", "gzip")])
        return _NOT_FOUND

    def _site_slow(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Slow", [], [(TRICKLE_PATH, "Wait for it")]))
        if path == TRICKLE_PATH:
            body = (b"<html><body>" + b"." * TRICKLE_MAX_SECONDS)[: self.trickle_seconds]
            return Reply(200, body, kind="trickle")
        return _NOT_FOUND

    def _site_reset(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Network", [], [(p, p) for p in RESET_PATHS]))
        if path == RESET_PATHS[1]:
            return Reply(200, _page("Cut short", [_prose(400)]), kind="reset_mid")
        return Reply(kind="reset")

    def _site_errors(self, path: str, query: str) -> Reply:
        if path == "/":
            return Reply(200, _page("Errors", [], [(p, d) for p, d in ERROR_PATHS.items()]))
        ok = Reply(200, _page(f"Recovered {path}", ["The server answered at last."]))
        retry = [("Retry-After", str(RETRY_AFTER_SECONDS))]
        if path == "/error/500":
            return Reply(500, _page("Server error", ["Internal error."]))
        if path == "/flaky/1":
            if self._hit("errors", path) == 1:
                return Reply(500, _page("Server error", ["Try again."]))
            return ok
        if path.startswith("/busy/") and path in ERROR_PATHS:
            if self._hit("errors", path) == 1:
                return Reply(429, _page("Too many requests", ["Slow down."]), retry)
            return ok
        if path == "/unavailable":
            return Reply(503, _page("Unavailable", ["Come back later."]), retry)
        return _NOT_FOUND

    def _site_broken(self, path: str, query: str) -> Reply:
        if path == "/":
            links = [(p, p) for p in BROKEN_PATHS] + [(p, p) for p in CHARSET_PAGES]
            return Reply(200, _page("Old pages", [], links))
        if path == "/broken/1":
            body = (b"<html><head><title>Broken one</title><body><div><p>"
                    + BROKEN_SENTENCE.encode()
                    + b".<p>garbage \xff\xfe\x80\x81 bytes and NULs \x00\x00 here<table><tr><td>"
                    b"<a href=\"/broken/2\">next broken</a><td><a href='/'>home"
                    b"</div></span></html><p>after the end <a href=/broken/3>third</a>")
            return Reply(200, body)
        if path == "/broken/2":
            body = (b"\x00\x00<!DOCTYPE html><html><body><p>" + BROKEN_SENTENCE.encode()
                    + b" <b><i>mis</b>nested</i> <a href=\"/broken/1\">back</a> "
                    b"<a href=\"/broken/3\" <a href=\"/broken/1\">tangled</a> <script>var x = '"
                    b"<a href=/nowhere>'; </scr")
            return Reply(200, body)
        if path == "/broken/3":  # no Content-Type at all, NULs between the tags
            body = (b"<html>\x00<body>\x00<p>" + BROKEN_SENTENCE.encode()
                    + b"</p>\x00<a href=\"/broken/1\">first</a>")
            return Reply(200, body, content_type=None)
        if path in CHARSET_PAGES:
            encoding, sentence = CHARSET_PAGES[path]
            body = _charset_page(path, sentence).encode(encoding)
            return Reply(200, body, content_type="text/html; charset=ISO-8859-1")
        return _NOT_FOUND

    def _site_robots(self, path: str, query: str) -> Reply:
        if path == "/":
            links = [(p, p) for p in DISALLOWED_PATHS["robots"] + ROBOTS_ALLOWED_PATHS]
            return Reply(200, _page("Members", ["Some pages are private."], links))
        if path in DISALLOWED_PATHS["robots"] or path in ROBOTS_ALLOWED_PATHS:
            return Reply(200, _page(path, [_prose(500 + len(path))], [("/", "Members")]))
        return _NOT_FOUND

    def _site_excluded(self, path: str, query: str) -> Reply:
        pages = [f"/page/{n}" for n in range(1, 4)]
        if path == "/" or path in pages:
            return Reply(200, _page(f"Excluded {path}", [_prose(600 + len(path))],
                                    [(p, p) for p in pages]))
        return _NOT_FOUND


_CHARSET_EXTRA = {
    "/charset/cyrillic": ("Это обычная страница о реках и погоде, и в ней много русских "
                          "слов, чтобы кодировку было легко определить по самим байтам."),
    "/charset/japanese": ("これは川と天気についての普通のページです。"
                          "日本語の文字がたくさんあるので、文字コードはバイトから判定できます。"),
}


def _charset_page(path: str, sentence: str) -> str:
    """A page with no <meta charset>: only the bytes tell the truth."""
    return (f"<html><head><title>{sentence}</title></head><body><p>{sentence}.</p>"
            f"<p>{_CHARSET_EXTRA[path]}</p><a href=\"/\">home</a></body></html>")
