"""ReplayProxy: a recorded web served as an HTTP/1.1 forward proxy on 127.0.0.1.

A crawler pointed at it with ``http_proxy`` sees the recorded web as if it were live, and
every answered request is logged with server-side times: the log is the ground truth for
harvest (what was fetched, in which order) and for politeness audits (gaps between requests
to one host, connections open per host).

Log record keys (one JSON line each, and ``ReplayProxy.log``):
``t_start`` epoch seconds when the request head was fully received; ``t_end`` when the
response was fully handed to the kernel; ``method``; ``url`` (absolute, "" when the request
line could not be parsed); ``host`` (netloc); ``path``; ``status``; ``bytes`` (body bytes
sent; 0 for HEAD); ``conn`` (connection id, counting from 1). With a ``ChangingWeb``
(``changes=``), a record of a changing page also has ``version``: the version served, or the
one a 304 confirmed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from http import HTTPStatus
from typing import Mapping
from urllib.parse import urlsplit

from focuscrawl.replay.changing import ChangingWeb
from focuscrawl.replay.recorded import RecordedWeb, host_of

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
MAX_HEADER_LINES = 200
MAX_REQUEST_BODY = 1024 * 1024
IDLE_TIMEOUT = 60.0
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length"}


class _BadRequest(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


async def _read_head(reader: asyncio.StreamReader):
    """Read a request head; None on a clean close before any byte."""
    lines: list[bytes] = []
    total = 0
    while True:
        try:
            line = await reader.readline()
        except (asyncio.LimitOverrunError, ValueError):
            raise _BadRequest(431, "request header line too long")
        if not line:
            if not lines:
                return None
            raise asyncio.IncompleteReadError(b"", None)
        total += len(line)
        if total > MAX_HEAD_BYTES or len(lines) > MAX_HEADER_LINES:
            raise _BadRequest(431, "request head too large")
        if not line.endswith(b"\n"):
            raise asyncio.IncompleteReadError(line, None)
        stripped = line.rstrip(b"\r\n")
        if not stripped:
            if not lines:
                continue  # tolerate blank lines before a request line (RFC 9112 2.2)
            break
        lines.append(stripped)
    t_start = time.time()
    request_line = lines[0].decode("latin-1")
    parts = request_line.split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _BadRequest(400, "malformed request line")
    method, target, version = parts
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep or not name.strip() or name != name.strip():
            raise _BadRequest(400, "malformed header line")
        headers[name.strip().lower()] = value.strip()
    return t_start, method.upper(), target, version, headers


class ReplayProxy:
    """Answer recorded responses for recorded URLs, 404 for the rest; log every answer.

    With ``changes`` (a ``ChangingWeb`` over the same recorded web), its pages change with time
    and are answered through it (versions, validators, 304s), and its hosts' feeds, sitemaps
    and ``Sitemap:`` robots.txt lines are served too. A request is answered as the web stands
    at its ``t_start`` (``time.time()``), so such a ``ChangingWeb`` keeps its default clock.
    """

    def __init__(self, web: RecordedWeb, host: str = "127.0.0.1", port: int = 0,
                 robots: Mapping[str, str] | None = None, latency_ms: float = 0,
                 log_path: str | None = None, changes: ChangingWeb | None = None):
        self.web = web
        self.changes = changes
        self.host = host
        self.port = port
        self.robots = {str(k).lower(): v for k, v in (robots or {}).items()}
        self.latency = max(0.0, float(latency_ms)) / 1000.0
        self.log_path = log_path
        self._log: list[dict] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0  # requests received and not yet logged
        self._log_file = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._next_conn = 0
        self._start_error: BaseException | None = None

    # --- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def crawl_env(self, base: dict | None = None, settings_module: str | None = "focuscrawl.settings") -> dict:
        """The environment for a crawler process that goes through this proxy: ``http_proxy``
        and ``https_proxy`` set, other proxy variables removed, focuscrawl's settings (or, with
        ``settings_module=None``, none)."""
        env = dict(os.environ if base is None else base)
        for name in ("no_proxy", "NO_PROXY", "HTTP_PROXY", "HTTPS_PROXY", "SCRAPY_SETTINGS_MODULE"):
            env.pop(name, None)
        env["http_proxy"] = env["https_proxy"] = self.url
        if settings_module:
            env["SCRAPY_SETTINGS_MODULE"] = settings_module
        return env

    @property
    def log(self) -> list[dict]:
        """A snapshot of the records so far (thread-safe)."""
        with self._lock:
            return list(self._log)

    def wait_idle(self, timeout: float = 5.0) -> bool:
        """Wait until every request received so far is answered and logged (a client can hold
        the whole answer a moment before its log record is appended). False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

    def start(self) -> "ReplayProxy":
        """Listen in a background thread; return once the socket is bound (raises OSError)."""
        if self._thread is not None:
            return self
        if self.log_path:
            self._log_file = open(self.log_path, "a", encoding="utf-8")
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="replay-proxy", daemon=True)
        self._thread.start()
        ready.wait()
        if self._start_error is not None:
            self._thread.join()
            self._thread = None
            self._close_log_file()
            raise self._start_error
        return self

    def stop(self) -> None:
        """Close the listener and every open connection, then join the thread."""
        if self._thread is None:
            return
        self.wait_idle(timeout=5.0)
        loop = self._loop
        if loop is not None and not loop.is_closed():
            fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
            try:
                fut.result(timeout=10)
            except Exception as exc:  # pragma: no cover - shutdown best effort
                logger.warning("replay proxy shutdown: %s", exc)
            loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=10)
        self._thread = None
        self._close_log_file()

    def __enter__(self) -> "ReplayProxy":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def _close_log_file(self) -> None:
        with self._lock:
            if self._log_file is not None:
                self._log_file.close()
                self._log_file = None

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            self._server = loop.run_until_complete(asyncio.start_server(
                self._handle, self.host, self.port, limit=MAX_HEAD_BYTES, backlog=1024))
            self.port = self._server.sockets[0].getsockname()[1]
        except BaseException as exc:
            self._start_error = exc
            ready.set()
            loop.close()
            return
        ready.set()
        try:
            loop.run_forever()
        finally:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 5)
            except asyncio.TimeoutError:  # pragma: no cover
                pass

    # --- logging ------------------------------------------------------------------------------

    def _record(self, rec: dict) -> None:
        with self._lock:
            self._log.append(rec)
            if self._log_file is not None:
                self._log_file.write(json.dumps(rec) + "\n")
                self._log_file.flush()

    # --- one connection -----------------------------------------------------------------------

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._next_conn += 1
        conn = self._next_conn
        self._writers.add(writer)
        # With no write buffer, drain() returns only once the bytes are in the kernel: t_end is
        # the time the response was written, not when it was queued.
        writer.transport.set_write_buffer_limits(high=0)
        try:
            keep_alive = True
            while keep_alive:
                try:
                    head = await asyncio.wait_for(_read_head(reader), IDLE_TIMEOUT)
                except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError):
                    break  # client closed or went idle (possibly mid-request): nothing to answer
                except _BadRequest as exc:
                    with self._lock:
                        self._in_flight += 1
                    try:
                        await self._send_error(writer, conn, time.time(), exc.status, str(exc))
                    finally:
                        with self._idle:
                            self._in_flight -= 1
                            self._idle.notify_all()
                    break
                if head is None:
                    break
                with self._lock:
                    self._in_flight += 1
                try:
                    keep_alive = await self._answer(reader, writer, conn, head)
                finally:
                    with self._idle:
                        self._in_flight -= 1
                        self._idle.notify_all()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away while we wrote
        except asyncio.CancelledError:
            pass
        except Exception:  # never let one connection take the server down
            logger.exception("replay proxy: error on connection %d", conn)
        finally:
            self._writers.discard(writer)
            try:
                writer.close()
            except Exception:  # pragma: no cover
                pass

    async def _answer(self, reader, writer, conn: int, head) -> bool:
        t_start, method, target, version, headers = head
        conn_tokens = {
            t.strip().lower()
            for t in (headers.get("connection", "") + "," + headers.get("proxy-connection", "")).split(",")
        }
        if version == "HTTP/1.0":
            keep_alive = "keep-alive" in conn_tokens
        else:
            keep_alive = "close" not in conn_tokens

        if method == "CONNECT":
            await self._send(writer, conn, t_start, method, target, "", "", 501, [],
                             b"CONNECT (HTTPS tunnelling) is not supported by the replay proxy\n",
                             keep_alive=False)
            return False
        if "transfer-encoding" in headers:
            await self._send_error(writer, conn, t_start, 501, "chunked request bodies are not supported")
            return False
        length = headers.get("content-length", "0") or "0"
        if not length.isdigit() or int(length) > MAX_REQUEST_BODY:
            await self._send_error(writer, conn, t_start, 400, "bad Content-Length")
            return False
        if int(length):
            await reader.readexactly(int(length))  # a request body is read and ignored

        if target.startswith(("http://", "https://")):
            url = target
        elif target.startswith("/") and headers.get("host"):
            url = f"http://{headers['host']}{target}"
        else:
            await self._send_error(writer, conn, t_start, 400, "request target needs an absolute URL or a Host header")
            return False
        parts = urlsplit(url)
        host, path = parts.netloc, parts.path or "/"
        if self.changes is not None:
            return await self._respond_changing(writer, conn, t_start, method, url, host, path, keep_alive, headers)
        return await self._respond(writer, conn, t_start, method, url, host, path, keep_alive)

    async def _respond(self, writer, conn: int, t_start: float, method: str, url: str, host: str, path: str,
                       keep_alive: bool) -> bool:
        """Answer one parsed request and log it; whether the connection stays open. A subclass
        that makes its answers up (bench/soakproxy.py: a generated web, streamed) replaces this."""
        status, resp_headers, body = self._lookup(url, path)
        if self.latency:
            await asyncio.sleep(self.latency)
        await self._send(writer, conn, t_start, method, url, host, path, status, resp_headers,
                         body, keep_alive=keep_alive, head_only=(method == "HEAD"))
        return keep_alive

    async def _respond_changing(self, writer, conn: int, t_start: float, method: str, url: str, host: str,
                                path: str, keep_alive: bool, request_headers: dict) -> bool:
        """Answer through ``changes`` as the web stands at ``t_start``; the log record of a
        changing page gets the version served (or confirmed)."""
        try:
            status, resp_headers, body, version = self._lookup_changing(url, path, method, request_headers, t_start)
        except Exception:  # a bug in the changing web must not cost the crawler its connection
            logger.exception("replay proxy: changing web failed on %s", url)
            status, resp_headers, body, version = 500, [("Content-Type", "text/plain")], b"internal error\n", None
        if self.latency:
            await asyncio.sleep(self.latency)
        await self._send(writer, conn, t_start, method, url, host, path, status, resp_headers, body,
                         keep_alive=keep_alive, head_only=(method == "HEAD"),
                         extra=None if version is None else {"version": version},
                         declare_length=(status != 304))
        return keep_alive

    def _lookup_changing(self, url: str, path: str, method: str, request_headers: dict, t: float):
        """``(status, headers, body, version)``: robots.txt with the host's sitemap announced,
        a changing page or a made-up feed or sitemap, else the recorded answer (or 404)."""
        if path == "/robots.txt":
            robots = self._robots_with_sitemap(url)
            if robots is not None:
                return robots + (None,)
        resp = self.web.lookup(url)
        answer = self.changes.answer(url, request_headers, t, resp, method=method)
        if answer is not None:
            status, headers, body, version = answer
            return status, [(k, v) for k, v in headers if k.lower() not in HOP_BY_HOP], body, version
        return self._lookup(url, path) + (None,)

    def _robots_with_sitemap(self, url: str):
        """The robots.txt the proxy would serve (recorded 200, else the ``robots`` mapping,
        else none) with a ``Sitemap:`` line; None when a recorded non-200 answer stands."""
        host = host_of(url)
        resp = self.web.lookup(url)
        if resp is not None and resp.status != 200:
            return None
        if resp is not None:
            headers = [(k, v) for k, v in resp.headers if k.lower() not in HOP_BY_HOP]
            original = resp.body.decode("utf-8", "surrogateescape")
        else:
            headers = [("Content-Type", "text/plain; charset=utf-8")]
            original = self.robots.get(host)
        text = self.changes.robots_txt(host, original)
        if text is None:
            return None
        return 200, headers, text.encode("utf-8", "surrogateescape")

    def _lookup(self, url: str, path: str):
        resp = self.web.lookup(url)
        if resp is not None:
            headers = [(k, v) for k, v in resp.headers if k.lower() not in HOP_BY_HOP]
            return resp.status, headers, resp.body
        if path == "/robots.txt":
            text = self.robots.get(host_of(url))
            if text is not None:
                return 200, [("Content-Type", "text/plain; charset=utf-8")], text.encode("utf-8")
        return 404, [("Content-Type", "text/html; charset=utf-8")], b"<html><body><h1>404 Not Found</h1><p>Not in the recorded web.</p></body></html>\n"

    async def _send_error(self, writer, conn: int, t_start: float, status: int, message: str) -> None:
        await self._send(writer, conn, t_start, "", "", "", "", status,
                         [("Content-Type", "text/plain; charset=utf-8")],
                         (message + "\n").encode("utf-8"), keep_alive=False)

    async def _send(self, writer, conn, t_start, method, url, host, path, status, headers, body,
                    keep_alive: bool, head_only: bool = False, extra: Mapping | None = None,
                    declare_length: bool = True) -> None:
        """Write one answer and log it (``extra``: keys added to the record). Without
        ``declare_length`` no Content-Length is sent: a 304's would have to be the length of the
        200 it stands for."""
        lines = [f"HTTP/1.1 {status} {_reason(status)}"]
        lines += [f"{k}: {v}" for k, v in headers]
        if declare_length:
            lines.append(f"Content-Length: {len(body)}")
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        sent = 0 if head_only else len(body)
        writer.write(data if head_only else data + body)
        await writer.drain()
        record = {
            "t_start": t_start, "t_end": time.time(), "method": method, "url": url, "host": host,
            "path": path, "status": status, "bytes": sent, "conn": conn,
        }
        if extra:
            record.update(extra)
        self._record(record)
