"""Renders never hold a crawl (``rendering.health``): each host's renders timed, a host whose
renders fail read plainly, a failed render one log line; end to end with a real Chromium, a host
whose pages load a script that never answers, and a host beside it that must be served meanwhile."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from focuscrawl.rendering.health import GIVE_UP_AFTER, MIN_TIMEOUT, RenderHealth, is_timeout

from .conftest import run_scrapy


# --- the core -------------------------------------------------------------------------------------
def test_the_timeout_adapts_to_what_the_hosts_renders_take():
    health = RenderHealth(20.0)
    assert health.timeout("a") == 20.0  # nothing known yet: the configured timeout
    health.rendered("a", 1.0)
    assert health.timeout("a") == 20.0  # one render is not enough to go by
    health.rendered("a", 2.5)
    assert health.timeout("a") == 7.5  # three times the slowest recent render
    for _ in range(8):
        health.rendered("a", 0.2)
    assert health.timeout("a") == MIN_TIMEOUT  # never below the floor
    for _ in range(3):
        health.rendered("b", 30.0)
    assert health.timeout("b") == 20.0  # never above the configured timeout
    assert health.timeout("c") == 20.0  # each host its own


def test_a_host_whose_renders_fail_in_a_row_is_read_plainly():
    health = RenderHealth(20.0)
    assert health.failed("a", "timed out after 20.0 s") is False
    health.rendered("a", 1.0)  # a success in between: the count starts again
    assert [health.failed("a", "timed out after 20.0 s") for _ in range(GIVE_UP_AFTER)] == [False] * (
        GIVE_UP_AFTER - 1) + [True]
    assert not health.renders("a") and health.renders("b")
    assert "read plainly" in health.explain("a") and "timed out" in health.explain("a")
    assert health.failed("a", "failed (x)") is False  # said once
    assert health.given_up == 1


def test_the_hosts_remembered_are_bounded_and_a_host_given_up_is_kept():
    health = RenderHealth(20.0, max_hosts=3)
    for _ in range(GIVE_UP_AFTER):
        health.failed("bad", "timed out")
    for host in ("a", "b", "c", "d"):
        health.rendered(host, 1.0)
    assert len(health.hosts) == 3 and not health.renders("bad")


def test_timeouts_are_told_from_other_failures():
    from playwright.async_api import TimeoutError as PlaywrightTimeout
    from twisted.internet.error import TimeoutError as TwistedTimeout

    assert is_timeout(PlaywrightTimeout("Timeout 2000ms exceeded."))
    assert is_timeout(asyncio.TimeoutError()) and is_timeout(TwistedTimeout())
    assert not is_timeout(RuntimeError("net::ERR_CONNECTION_REFUSED"))


def test_scrapy_playwrights_failed_render_is_one_line():
    from focuscrawl.rendering.browser.handler import _OneLine

    try:
        raise TimeoutError("Timeout 2000ms exceeded.")
    except TimeoutError:
        record = logging.LogRecord("scrapy_playwright.handler", logging.WARNING, __file__, 1,
                                   "Closing page due to failed request: %s", ("<GET x>",), exc_info=True)
        import sys

        record.exc_info = sys.exc_info()
    assert _OneLine().filter(record)
    assert record.exc_info is None and record.levelno == logging.DEBUG


# --- end to end ----------------------------------------------------------------------------------
class Site:
    """Pages on ``host``, logged with the time each request came; ``hang``: every page loads a
    script that never answers (until the test ends)."""

    def __init__(self, host: str, pages: int, hang: bool, shell: bool = False):
        self.log: list[tuple[float, float, str]] = []  # (came, answered, path)
        self.extra = ""  # more of every page's head
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                came = time.monotonic()
                if self.path == "/hang.js":
                    outer.release.wait(60)
                    body, kind = b"", "application/javascript"
                elif self.path == "/robots.txt":
                    body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
                elif shell:  # an application shell: a mount point and its script (which hangs)
                    body = (b'<html><head><title>app</title></head><body><div id="app"></div>'
                            b'<script src="/hang.js"></script></body></html>')
                    kind = "text/html"
                else:
                    links = "".join(f'<a href="/p{i}">page {i} of stars and telescopes</a> ' for i in range(pages))
                    script = ('<script src="/hang.js"></script>' if hang else "") + outer.extra
                    body = (f"<html><head><title>{self.path}</title>{script}</head><body><h1>Stars</h1>"
                            f"<p>{'telescope orbit galaxy nebula ' * 40}</p>{links}</body></html>").encode()
                    kind = "text/html"
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass
                outer.log.append((came, time.monotonic(), self.path))

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


RENDER_TIMEOUT = 5  # seconds: the longest a render may hang before it is given up


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
def test_a_host_whose_renders_hang_never_holds_the_crawl(demo_model, tmp_path):
    hanging, plain = Site("127.0.0.1", 8, hang=True), Site("127.0.0.2", 12, hang=False)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{hanging.url}/p{i}\n" for i in range(4)) + f"{plain.url}/\n")
    try:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
             "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={tmp_path / 'requests.jsonl'}",
             "-s", "FOCUS_ALLOW_PRIVATE_NETWORKS=True", "-s", "FOCUS_RENDER=always", "-s", f"FOCUS_RENDER_TIMEOUT={RENDER_TIMEOUT}",
             "-s", "FOCUS_BUDGET=24", "-s", "DOWNLOAD_DELAY=0.2", "-s", "FOCUS_RELEVANCE_THRESHOLD=0",
             "-s", "LOG_LEVEL=INFO"],
            cwd=tmp_path, timeout=240)
    finally:
        hanging.close()
        plain.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-5000:]
    failures = [line for line in result.stderr.splitlines() if "rendering.health" in line and "render of" in line]
    assert len(failures) == GIVE_UP_AFTER, failures  # one line a failed render, then the host is read plainly
    assert "timed out after" in failures[0] and "read plainly" in failures[-1]
    print("\n".join(failures))

    hangs = [(came, answered) for came, answered, path in hanging.log if path == "/hang.js"]
    assert len(hangs) == GIVE_UP_AFTER, hanging.log  # no render after the host was given up
    pages = [path for _, _, path in hanging.log if path.startswith("/p")]
    assert len(pages) >= 2, hanging.log  # its later pages read plainly
    # while the first render hung (its script asked for, never answered; the render is given up at
    # FOCUS_RENDER_TIMEOUT at the latest), the other host was served
    first_hang = hangs[0][0]
    served_meanwhile = [path for came, _, path in plain.log if first_hang < came < first_hang + RENDER_TIMEOUT]
    assert served_meanwhile, (hangs, plain.log)

    stats = result.stderr[result.stderr.rfind("Dumping Scrapy stats"):]
    assert "'focus/render/hosts_given_up': 1" in stats and "'focus/render/read_plainly'" in stats
    # the page's server answered each time: a render that timed out is no network error (no back-off)
    assert "'focus/politeness/network_errors'" not in stats and "'focus/render/timeouts': 2" in stats
    log = [json.loads(line) for line in (tmp_path / "requests.jsonl").read_text().splitlines() if line.strip()]
    assert any(r.get("status") == 200 and r.get("url", "").startswith(plain.url) for r in log)


def test_one_render_health_a_crawl():
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(settings_dict={"FOCUS_RENDER_TIMEOUT": 7})
    health = RenderHealth.of(crawler)
    assert RenderHealth.of(crawler) is health and health.configured == 7.0
    assert RenderHealth.of(get_crawler()) is not health


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
def test_in_auto_mode_a_host_given_up_has_its_shells_read_once(demo_model, tmp_path):
    """Shells whose renders hang: the first are fetched plainly then rendered (and time out); once
    the host is given up, a shell is fetched once, plainly, and not asked for again."""
    shells, plain = Site("127.0.0.1", 0, hang=True, shell=True), Site("127.0.0.2", 6, hang=False)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"{shells.url}/s{i}\n" for i in range(5)) + f"{plain.url}/\n")
    try:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
             "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", "FOCUS_ALLOW_PRIVATE_NETWORKS=True",
             "-s", "FOCUS_RENDER=auto", "-s", "FOCUS_RENDER_TIMEOUT=5", "-s", "FOCUS_BUDGET=30",
             "-s", "DOWNLOAD_DELAY=0.2", "-s", "LOG_LEVEL=INFO"],
            cwd=tmp_path, timeout=240)
    finally:
        shells.close()
        plain.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-5000:]
    fetched = [path for _, _, path in shells.log if path.startswith("/s")]
    assert sorted(set(fetched)) == [f"/s{i}" for i in range(5)], shells.log
    assert sum(1 for _, _, path in shells.log if path == "/hang.js") == GIVE_UP_AFTER  # two renders, no more
    counts = {path: fetched.count(path) for path in set(fetched)}
    assert max(counts.values()) <= 2, counts  # plain, then at most one render (or one plain read instead)
    assert sum(1 for n in counts.values() if n == 1) >= 1, counts  # shells found after it: read once


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="needs Debian's chromium")
def test_the_crawls_browser_never_loads_a_name_resolving_to_loopback(demo_model, tmp_path):
    """Chromium never sends loopback through its proxy script, so a name resolving there is judged
    by the route (an internal service on 127.0.0.1; the page on 127.0.0.2, allowed)."""
    internal = Site("127.0.0.1", 0, hang=False)
    port = internal.url.rsplit(":", 1)[1]
    page = Site("127.0.0.2", 0, hang=False)
    page.extra = f'<script src="http://localhost:{port}/secret.js"></script>'
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(f"{page.url}/p0\n")
    try:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
             "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", "FOCUS_ALLOWED_NETWORKS=127.0.0.2",
             "-s", "FOCUS_RENDER=always", "-s", "FOCUS_RENDER_OTHER_HOSTS=True", "-s", "FOCUS_BUDGET=3",
             "-s", "LOG_LEVEL=INFO"],
            cwd=tmp_path, timeout=240)
    finally:
        internal.close()
        page.close()
    assert result.returncode == 0, result.stderr[-3000:]
    assert any(path == "/p0" for _, _, path in page.log), page.log
    assert internal.log == [], internal.log
    assert "'focus/render/blocked/private_network'" in result.stderr
