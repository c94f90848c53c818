"""The soak web (``soakweb.SoakWeb``) served as an HTTP forward proxy on 127.0.0.1.

A ``ReplayProxy`` whose answers are generated instead of looked up: it keeps the replay's request
parsing, connection handling and log format (so the politeness audit reads its log), and adds
what a generated hostile web needs: per-host latency, bodies streamed in chunks (12 MiB never sits
in memory; without a Content-Length the end of the body is the closing of the connection), the
Retry-After it sent in the log (``retry_after``), and a log kept only on disk: a 20-minute crawl
must not grow the bench's own memory. A request the client abandons mid-body (a crawler cutting
a download at DOWNLOAD_MAXSIZE) is still logged, with the bytes sent and ``aborted``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter

from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.server import _reason

from soakweb import SoakWeb


class SoakProxy(ReplayProxy):
    def __init__(self, web: SoakWeb, log_path: str, host: str = "127.0.0.1", port: int = 0):
        super().__init__(RecordedWeb.from_records({}), host=host, port=port, log_path=log_path)
        self.soak = web
        self.statuses: Counter = Counter()  # status -> answers
        self.kinds: Counter = Counter()  # SoakWeb's kind of answer -> answers
        self.answered = 0
        self.bytes_sent = 0

    def _record(self, rec: dict) -> None:
        """Counted, and written to the log file only (``ReplayProxy.log`` stays empty)."""
        with self._lock:
            self.answered += 1
            self.statuses[rec.get("status")] += 1
            self.bytes_sent += rec.get("bytes") or 0
            if self._log_file is not None:
                self._log_file.write(json.dumps(rec) + "\n")
                self._log_file.flush()

    def snapshot(self) -> tuple[int, int]:
        """(requests answered, of which 200), thread-safe."""
        with self._lock:
            return self.answered, self.statuses.get(200, 0)

    async def _respond(self, writer, conn: int, t_start: float, method: str, url: str, host: str, path: str,
                       keep_alive: bool) -> bool:
        reply = self.soak.respond(method, url)
        with self._lock:
            self.kinds[reply.kind] += 1
        if reply.latency:
            await asyncio.sleep(reply.latency)
        streamed = reply.stream is not None
        keep_alive = keep_alive and reply.with_length
        lines = [f"HTTP/1.1 {reply.status} {_reason(reply.status)}", *(f"{k}: {v}" for k, v in reply.headers)]
        if reply.with_length:
            lines.append(f"Content-Length: {reply.size}")
        lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        record = {"t_start": t_start, "t_end": None, "method": method, "url": url, "host": host, "path": path,
                  "status": reply.status, "bytes": 0, "conn": conn}
        if reply.retry_after:
            record["retry_after"] = reply.retry_after
        try:
            if method == "HEAD":
                writer.write(head)
            elif not streamed:
                writer.write(head + reply.body)
                record["bytes"] = len(reply.body)
            else:
                writer.write(head)
                for chunk in reply.stream():
                    writer.write(chunk)
                    await writer.drain()  # the next chunk is made only once this one is in the kernel
                    record["bytes"] += len(chunk)
            await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            record.update(t_end=time.time(), aborted=True)
            self._record(record)
            raise
        record["t_end"] = time.time()
        self._record(record)
        return keep_alive
