"""A local web of JavaScript-built pages for the render tests, on 127.0.0.1, logging every request.

``/app.html`` holds no link in its HTML: a script builds one, and adds more from ``/links.json``
(a same-origin fetch), so only a browser sees them. The server is a forward proxy too: a request
for an absolute URL (``GET http://shop.invalid/app.html``) is logged as proxied and answered as if
for its path, so a render through it reaches hosts that resolve nowhere else.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

APP = """<!doctype html>
<html><head><title>Built by script</title></head>
<body><h1>Catalogue</h1><div id="app"></div><img src="/photo.png?{query}" alt="">
<script>
  const app = document.getElementById("app");
  app.innerHTML = '<p>built inline</p><a href="/inline-link">Inline link</a>';
  fetch("/links.json?{query}").then(r => r.json()).then(data => {{
    for (const href of data.links) {{
      const a = document.createElement("a");
      a.href = href; a.textContent = "from json " + href;
      app.appendChild(a);
    }}
  }});
</script></body></html>
"""
LINKS = {"links": ["/from-json-1", "/from-json-2"]}
FRESH = """<!doctype html><html><head><title>?</title></head><body><script>
  const seen = document.cookie.includes("seen=1") || localStorage.getItem("seen");
  document.title = seen ? "returning" : "fresh";
  document.cookie = "seen=1; max-age=3600; path=/"; localStorage.setItem("seen", "1");
</script></body></html>"""
PATIENT = """<!doctype html><html><head><title>patient</title></head><body>
<script src="/hang?subresource"></script><p>after the script</p></body></html>"""
PIXEL = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5E"
                         "rkJggg==")  # a 1x1 PNG


class Site:
    """The server; ``log`` holds {"method", "path", "proxied", "headers", "body"} per request."""

    def __init__(self):
        self.log: list[dict] = []
        self.lock = threading.Lock()
        self.release = threading.Event()  # ends every /hang at once
        self.concurrent = 0
        self.most_concurrent = 0
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                site._answer(self, b"")

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                site._answer(self, self.rfile.read(length))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> Site:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def paths(self, proxied: bool | None = None) -> list[str]:
        with self.lock:
            return [entry["path"] for entry in self.log if proxied is None or entry["proxied"] == proxied]

    def requests_for(self, path: str) -> list[dict]:
        with self.lock:
            return [entry for entry in self.log if entry["path"] == path]

    def wait_for(self, path: str, timeout: float = 10.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if path in self.paths():
                return True
            time.sleep(0.02)
        return False

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        target = handler.path
        proxied = target.startswith("http://")
        path = urlsplit(target).path + (f"?{urlsplit(target).query}" if urlsplit(target).query else "")
        with self.lock:
            self.log.append({"method": handler.command, "path": path, "proxied": proxied, "target": target,
                             "headers": {k.lower(): v for k, v in handler.headers.items()}, "body": body})
        route, query = urlsplit(path).path, urlsplit(path).query
        if route == "/app.html":
            self._send(handler, 200, "text/html; charset=utf-8", APP.format(query=query).encode())
        elif route == "/links.json":
            self._send(handler, 200, "application/json", json.dumps(LINKS).encode())
        elif route == "/photo.png":
            self._send(handler, 200, "image/png", PIXEL)
        elif route == "/fresh.html":
            self._send(handler, 200, "text/html", FRESH.encode())
        elif route == "/patient.html":  # its script never comes
            self._send(handler, 200, "text/html", PATIENT.encode())
        elif route == "/moved":
            self._send(handler, 302, "text/html", b"", {"Location": "/app.html?moved"})
        elif route == "/hang":  # answers when released (or after 15 s)
            self.release.wait(15)
            self._send(handler, 200, "text/html", b"<title>late</title>")
        elif route == "/slow":  # one second, counting how many are served at once
            with self.lock:
                self.concurrent += 1
                self.most_concurrent = max(self.most_concurrent, self.concurrent)
            time.sleep(float(parse_qs(query).get("s", ["1"])[0]))
            with self.lock:
                self.concurrent -= 1
            self._send(handler, 200, "text/html", b"<title>slow</title>")
        else:
            self._send(handler, 404, "text/html", b"<title>Not here</title><p>404</p>")

    @staticmethod
    def _send(handler, status: int, content_type: str, body: bytes, headers: dict | None = None) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the browser gave up on this request (a timeout, a killed render)
