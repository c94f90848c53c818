"""``scrapy render-server`` refuses private networks as the crawl does (``rendering.network_rules``):
a local HTTP server on 127.0.0.1 stands in for an internal service, a page server on 127.0.0.2
(allowed, as a public site would be) links, redirects and loads subresources there; the internal
service must see no request at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from ipaddress import ip_network

import pytest

pytest.importorskip("playwright")
pytest.importorskip("aiohttp")

from focuscrawl.rendering.server.app import ServerThread  # noqa: E402
from focuscrawl.safety import NetworkPolicy  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")]


class Server:
    """An HTTP server on ``host`` answering from ``pages`` ({path: (status, headers, body)}),
    logging every path asked."""

    def __init__(self, host: str, pages: dict):
        self.paths: list[str] = []
        self.headers: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.paths.append(self.path)
                outer.headers.append(dict(self.headers))
                status, headers, body = pages.get(self.path.split("?")[0], (200, {"Content-Type": "text/plain"},
                                                                          b"internal secret"))
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def internal():
    server = Server("127.0.0.1", {})
    yield server
    server.close()


@pytest.fixture(scope="module")
def public(internal):
    secret = f"http://127.0.0.1:{internal.port}/secret"
    named = f"http://localhost:{internal.port}/secret"
    html = {"Content-Type": "text/html"}
    page = f"""<!doctype html><html><head><title>public</title>
<script src="{secret}.js"></script><link rel="stylesheet" href="{named}.css"></head>
<body><p id="out">public page</p><img src="{secret}.png"><iframe src="{named}-frame"></iframe>
<script>fetch("{secret}.json").then(r => r.text()).then(t => document.getElementById("out").textContent = t)
  .catch(() => document.getElementById("out").textContent = "fetch refused");</script></body></html>"""
    server = Server("127.0.0.2", {
        "/page": (200, html, page.encode()),
        "/to-address": (302, {"Location": secret}, b""),
        "/to-name": (302, {"Location": named}, b""),
    })
    yield server
    server.close()


@pytest.fixture(scope="module")
def renderer():
    # 127.0.0.2 stands for the public web; the rest of loopback stays refused
    with ServerThread(port=0, max_contexts=2, max_timeout=30, executable_path=CHROMIUM, env={},
                      policy=NetworkPolicy(allowed=(ip_network("127.0.0.2/32"),))) as running:
        yield running.url


def render(renderer: str, url: str, **args) -> tuple[int, str]:
    query = urllib.parse.urlencode({"url": url, "timeout": 20, "wait": 0.5, **args})
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"{renderer}/render.html?{query}", timeout=40) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "2130706433", "[::ffff:127.0.0.1]"])
def test_a_page_in_a_private_network_is_refused(renderer, internal, host):
    before = len(internal.paths)
    status, body = render(renderer, f"http://{host}:{internal.port}/secret")
    assert status == 400, body
    answer = json.loads(body)
    assert answer["type"] == "BadOption" and "private_network" in answer["info"]["description"]
    assert "--allow-private-networks" in answer["info"]["description"]
    assert len(internal.paths) == before


@pytest.mark.parametrize("path", ["/to-address", "/to-name"])
def test_a_redirect_into_a_private_network_fails_the_render(renderer, public, internal, path):
    before = len(internal.paths)
    status, body = render(renderer, f"{public.url}{path}")
    assert status == 502, body
    assert "private_network" in json.loads(body)["info"]["text"]
    assert "internal secret" not in body
    time.sleep(0.5)
    assert len(internal.paths) == before, internal.paths


def test_a_pages_subresources_in_a_private_network_are_not_loaded(renderer, public, internal):
    before = len(internal.paths)
    status, body = render(renderer, f"{public.url}/page", images=1)
    assert status == 200, body
    assert "public" in body and "internal secret" not in body
    time.sleep(0.5)
    assert len(internal.paths) == before, internal.paths


def _command(*args: str):
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env.setdefault("SCRAPY_SETTINGS_MODULE", "focuscrawl.settings")
    return subprocess.Popen([sys.executable, "-m", "scrapy", "render-server", "--port", "0", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def _url_of(process) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if "listening on" in line:
            return line.split("listening on ")[1].strip()
        assert process.poll() is None, "the render server stopped"
    raise AssertionError("the render server did not start")


@pytest.mark.parametrize("flag, expected", [((), 400), (("--allow-private-networks",), 200)])
def test_the_command_refuses_private_networks_unless_allowed(internal, flag, expected):
    process = _command(*flag)
    try:
        url = _url_of(process)
        before = len(internal.paths)
        status, body = render(url, f"{internal.url}/secret")
        assert status == expected, body
        assert (len(internal.paths) > before) is (expected == 200)
    finally:
        process.terminate()
        process.wait(30)


def test_a_guarded_render_still_sends_the_renders_headers(renderer, public):
    """With the rules on, the route fetches each request itself: the page's own request keeps the
    headers the render was given, and a public redirect is followed to its page."""
    status, body = render(renderer, f"{public.url}/page", headers=json.dumps({"X-Render-Test": "yes"}))
    assert status == 200, body
    (first,) = [h for p, h in zip(public.paths, public.headers) if p == "/page"][-1:]
    assert {name.lower(): value for name, value in first.items()}.get("x-render-test") == "yes"
