"""The render service of FOCUS_RENDER_BACKEND=splash: its answers judged (``rendering.splash.watch``), and
a SPLASH_URL that answers _ping but renders with something that is not Splash stopping the crawl
with one line."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from focuscrawl.rendering.splash.watch import is_splash_answer

from .conftest import run_scrapy


@pytest.mark.parametrize("status, content_type, body, splash", [
    (200, "text/html; charset=utf-8", b"<html>rendered</html>", True),
    (502, "application/json", json.dumps({"error": 502, "type": "RenderError", "description": "x"}).encode(), True),
    (504, "application/json", json.dumps({"error": 504, "type": "GlobalTimeoutError"}).encode(), True),
    (405, "text/html", b"<html>Method not allowed</html>", False),  # a forward proxy's answer
    (404, "application/json", b'{"detail": "not found"}', False),  # another JSON API
    (500, "application/json", b"not json", False),
    (407, "", b"", False),
])
def test_splash_answers_are_told_from_others(status, content_type, body, splash):
    assert is_splash_answer(status, content_type, body) is splash


class FakeSplash:
    """Answers _ping as Splash does, and every render with a proxy's 405."""

    def __init__(self):
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                outer.paths.append(self.path)
                if self.path.startswith("/_ping"):
                    status, kind, body = 200, "application/json", b'{"status": "ok", "maxrss": 1}'
                else:
                    status, kind, body = 405, "text/html", b"<html><h1>405 Method Not Allowed</h1></html>"
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_a_render_service_that_is_not_splash_stops_the_crawl(demo_model, tmp_path):
    from focuscrawl.replay import RecordedWeb, ReplayProxy

    from .test_rendering_e2e import JS, PLAIN, js_web

    seeds = tmp_path / "seeds.txt"  # pages enough that the crawl would render many
    seeds.write_text("".join(f"{url}\n" for url in (f"{PLAIN}/", f"{PLAIN}/x", f"{PLAIN}/y", f"{JS}/", f"{JS}/a",
                                                     f"{JS}/b", f"{JS}/c", f"{JS}/d")))
    service = FakeSplash()
    try:
        with ReplayProxy(RecordedWeb.from_records(js_web()), log_path=str(tmp_path / "server.jsonl")) as proxy:
            result = run_scrapy(
                ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
                 "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", "FOCUS_BUDGET=40", "-s", "DOWNLOAD_DELAY=0.05",
                 "-s", "FOCUS_RENDER=always", "-s", "FOCUS_RENDER_BACKEND=splash", "-s", f"SPLASH_URL={service.url}",
                 "-s", "LOG_LEVEL=INFO"],
                cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=180)
    finally:
        service.close()
    assert result.returncode == 2, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert f"SPLASH_URL={service.url}" in errors[0] and "405 text/html" in errors[0]
    assert "Traceback" not in result.stderr
    renders = [path for path in service.paths if path.startswith("/render")]
    assert 3 <= len(renders) <= 5, service.paths  # stopped after the first few, not the whole budget
