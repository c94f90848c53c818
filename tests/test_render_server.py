"""The render server speaks Splash's HTTP API with a real Chromium: pages built by scripts come back
built, errors come back in Splash's JSON shapes, proxies are used, and a killed browser costs one
render. Everything is served on 127.0.0.1 by tests/render_site.py."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from scrapy import Selector

pytest.importorskip("playwright")
pytest.importorskip("aiohttp")

from focuscrawl.rendering.server import options as render_options  # noqa: E402
from focuscrawl.rendering.server.app import ServerThread  # noqa: E402
from focuscrawl.rendering.server.options import RenderOptions  # noqa: E402
from focuscrawl.safety import NetworkPolicy  # noqa: E402
from tests.render_site import LINKS, Site  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
needs_browser = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"no Chromium at {CHROMIUM}")
# slow: a real Chromium
pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]
MAX_TIMEOUT = 20


def call(base: str, endpoint: str, params: dict | None = None, *, body: bytes | None = None,
         content_type: str | None = None, timeout: float = 30) -> tuple[int, dict, str]:
    """(status, headers, text) of one request to the render server."""
    url = f"{base}/{endpoint}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type} if content_type else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read().decode("utf-8")
    except urllib.error.HTTPError as answer:
        return answer.code, dict(answer.headers), answer.read().decode("utf-8")


def post_json(base: str, endpoint: str, arguments: dict, timeout: float = 30) -> tuple[int, dict, str]:
    return call(base, endpoint, body=json.dumps(arguments).encode(), content_type="application/json", timeout=timeout)


def splash_error(status: int, text: str, expected_status: int, expected_type: str) -> dict:
    """The answer, checked to be Splash's error JSON of that status and type."""
    assert status == expected_status, text
    error = json.loads(text)
    assert error["error"] == expected_status and error["type"] == expected_type, error
    assert set(error) == {"error", "type", "description", "info"} and error["description"], error
    return error


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def site():
    running = Site().start()
    yield running
    running.stop()


@pytest.fixture(scope="module")
def renderer():
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}")
    # env={}: whatever proxy the machine running the tests has is not this server's
    # the site is on 127.0.0.1: private networks allowed (their refusal: test_render_server_networks.py)
    with ServerThread(port=0, max_contexts=2, max_timeout=MAX_TIMEOUT, executable_path=CHROMIUM, env={},
                      policy=NetworkPolicy(allow_all=True)) as running:
        yield running.url


# --- rendering ------------------------------------------------------------------------------------
@needs_browser
def test_render_html_returns_the_dom_the_scripts_built(site, renderer):
    raw = urllib.request.urlopen(f"{site.url}/app.html?raw", timeout=10).read().decode()
    assert Selector(text=raw).css("a::attr(href)").getall() == []  # no link without a browser

    status, headers, html = call(renderer, "render.html", {"url": f"{site.url}/app.html?built", "wait": 0.5})

    assert status == 200 and headers["Content-Type"].startswith("text/html")
    page = Selector(text=html)
    # the inline script's link, and those it added from the fetch()ed JSON
    assert page.css("a::attr(href)").getall() == ["/inline-link", *LINKS["links"]]
    assert page.css("#app p::text").get() == "built inline"


@needs_browser
def test_render_json_gives_final_url_requested_url_title_and_html_when_asked(site, renderer):
    status, _, text = call(renderer, "render.json", {"url": f"{site.url}/moved", "wait": 0.3, "html": 1})
    page = json.loads(text)
    assert status == 200
    assert page["requestedUrl"] == f"{site.url}/moved"
    assert page["url"] == f"{site.url}/app.html?moved"  # after the redirect
    assert page["title"] == "Built by script" and page["geometry"] == [0, 0, 1024, 768]
    assert "/from-json-2" in page["html"]

    status, _, text = post_json(renderer, "render.json", {"url": f"{site.url}/app.html?nohtml"})
    assert status == 200 and "html" not in json.loads(text)  # html=0 is the default, as in Splash


@needs_browser
def test_render_json_history_holds_the_page_status_and_an_error_page_still_renders(site, renderer):
    status, _, text = call(renderer, "render.json", {"url": f"{site.url}/missing", "history": 1, "html": 1})
    page = json.loads(text)
    assert status == 200 and "Not here" in page["html"]  # a 404 page renders, as in Splash
    assert [entry["response"]["status"] for entry in page["history"]] == [404]
    assert page["history"][0]["request"]["url"] == f"{site.url}/missing"

    _, _, text = call(renderer, "render.json", {"url": f"{site.url}/moved", "history": 1})
    history = json.loads(text)["history"]
    assert [(e["request"]["url"], e["response"]["status"]) for e in history] == [(f"{site.url}/app.html?moved", 200)]


@needs_browser
def test_arguments_come_as_json_form_or_query_and_headers_reach_the_first_request(site, renderer):
    form = urllib.parse.urlencode({"url": f"{site.url}/app.html?form", "html": 1}).encode()
    status, _, text = call(renderer, "render.json", body=form, content_type="application/x-www-form-urlencoded")
    assert status == 200 and "Inline link" in json.loads(text)["html"]

    status, _, _ = post_json(renderer, "render.html", {
        "url": f"{site.url}/app.html?headers", "wait": 0.5,
        "headers": {"X-Focus-Test": "yes", "User-Agent": "focus-test/1.0"}})
    assert status == 200
    page = site.requests_for("/app.html?headers")[0]["headers"]
    data = site.requests_for("/links.json?headers")[0]["headers"]
    assert page["x-focus-test"] == "yes" and "x-focus-test" not in data  # the first request's, as in Splash
    assert page["user-agent"] == data["user-agent"] == "focus-test/1.0"  # the User-Agent: the whole render's

    status, _, _ = post_json(renderer, "render.html", {"url": f"{site.url}/app.html?posted", "http_method": "POST",
                                                       "body": "q=stars", "headers": [["Content-Type",
                                                       "application/x-www-form-urlencoded"]]})
    posted = site.requests_for("/app.html?posted")[0]
    assert status == 200 and posted["method"] == "POST" and posted["body"] == b"q=stars"


@needs_browser
def test_images_0_blocks_images_and_images_1_loads_them(site, renderer):
    call(renderer, "render.html", {"url": f"{site.url}/app.html?noimages", "images": 0, "wait": 0.3})
    call(renderer, "render.html", {"url": f"{site.url}/app.html?images", "images": 1, "wait": 0.3})

    assert "/links.json?noimages" in site.paths()  # the page did render
    assert "/photo.png?noimages" not in site.paths()  # the server never saw the image
    assert "/photo.png?images" in site.paths()
    assert not [path for path in site.paths() if "favicon" in path]  # nor, ever, a favicon


@needs_browser
def test_js_source_runs_after_the_page_and_script_returns_its_value(site, renderer):
    status, _, text = post_json(renderer, "render.json", {"url": f"{site.url}/app.html?js", "script": 1,
                                                          "js_source": "document.title = 'changed'; 6 * 7"})
    page = json.loads(text)
    assert status == 200 and page["title"] == "changed" and page["script"] == 42


@needs_browser
def test_baseurl_renders_the_page_as_if_it_were_there(site, renderer):
    elsewhere = f"http://localhost:{site.url.rsplit(':', 1)[1]}/elsewhere/"
    status, _, text = call(renderer, "render.json", {"url": f"{site.url}/app.html?based", "baseurl": elsewhere,
                                                     "wait": 0.5, "html": 1})
    page = json.loads(text)
    assert status == 200 and page["url"] == elsewhere and "/from-json-1" in page["html"]
    assert site.requests_for("/app.html?based")[0]["headers"]["host"] == site.url.split("//")[1]
    assert site.requests_for("/links.json?based")[0]["headers"]["host"] == elsewhere.split("/")[2]  # relative to it


@needs_browser
def test_resource_timeout_gives_up_on_a_slow_resource_and_fails_a_slow_page(site, renderer):
    started = time.monotonic()
    status, _, html = call(renderer, "render.html", {"url": f"{site.url}/patient.html", "resource_timeout": 0.5,
                                                     "timeout": 10})
    assert status == 200 and "after the script" in html and time.monotonic() - started < 5

    status, _, text = call(renderer, "render.html", {"url": f"{site.url}/hang?page", "resource_timeout": 0.5,
                                                     "timeout": 10})
    info = splash_error(status, text, 502, "RenderError")["info"]
    assert info["type"] == "Network" and info["code"] == 5 and info["url"] == f"{site.url}/hang?page"


@needs_browser
def test_each_render_starts_fresh(site, renderer):
    titles = [json.loads(call(renderer, "render.json", {"url": f"{site.url}/fresh.html"})[2])["title"]
              for _ in range(2)]
    assert titles == ["fresh", "fresh"]  # no cookie nor localStorage left by the first render


@needs_browser
def test_save_args_and_load_args_as_scrapy_splash_cache_args_uses_them(site, renderer):
    script = "document.title = 'from cache'; 1"
    status, headers, _ = post_json(renderer, "render.json", {"url": f"{site.url}/app.html?save", "js_source": script,
                                                             "save_args": ["js_source"]})
    name, key = headers["X-Splash-Saved-Arguments"].split("=")
    assert status == 200 and name == "js_source"

    status, _, text = post_json(renderer, "render.json", {"url": f"{site.url}/app.html?load",
                                                          "load_args": {"js_source": key}})
    assert status == 200 and json.loads(text)["title"] == "from cache"

    status, _, text = post_json(renderer, "render.json", {"url": f"{site.url}/app.html?gone",
                                                          "load_args": {"js_source": "0" * 40}})
    assert splash_error(status, text, 498, "ExpiredArguments")["info"] == {"expired": ["js_source"]}


# --- errors -------------------------------------------------------------------------------------
@needs_browser
def test_a_render_past_its_timeout_answers_504(site, renderer):
    started = time.monotonic()
    status, _, text = call(renderer, "render.html", {"url": f"{site.url}/hang?timeout", "timeout": 1})
    error = splash_error(status, text, 504, "GlobalTimeoutError")
    assert error["info"]["timeout"] == 1 and time.monotonic() - started < 6
    pool = json.loads(call(renderer, "_ping")[2])
    assert pool["active"] == 0 and pool["queued"] == 0  # its context was closed, its slot given back


@pytest.mark.parametrize("arguments, argument, kind", [
    ({}, "url", "argument_required"),
    ({"url": "file:///etc/passwd"}, "url", "bad_argument"),
    ({"url": "http://127.0.0.1/", "wait": 11}, "wait", "bad_argument"),
    ({"url": "http://127.0.0.1/", "timeout": MAX_TIMEOUT + 1}, "timeout", "bad_argument"),
    ({"url": "http://127.0.0.1/", "timeout": "soon"}, "timeout", "bad_argument"),
    ({"url": "http://127.0.0.1/", "images": 2}, "images", "bad_argument"),
    ({"url": "http://127.0.0.1/", "proxy": "ftp://127.0.0.1:21"}, "proxy", "bad_argument"),
    ({"url": "http://127.0.0.1/", "headers": "not json"}, "headers", "bad_argument"),
    ({"url": "http://127.0.0.1/", "png": 1}, "png", "unsupported_argument"),
])
@needs_browser
def test_bad_arguments_answer_400(renderer, arguments, argument, kind):
    status, _, text = call(renderer, "render.html", arguments)
    info = splash_error(status, text, 400, "BadOption")["info"]
    assert info["argument"] == argument and info["type"] == kind and info["description"]


@needs_browser
def test_a_body_that_is_not_json_answers_400_and_an_unknown_content_type_415(renderer):
    status, _, text = call(renderer, "render.json", body=b"{url:", content_type="application/json")
    assert splash_error(status, text, 400, "BadOption")["info"]["type"] == "invalid_json"
    status, _, text = call(renderer, "render.json", body=b"url", content_type="text/plain")
    splash_error(status, text, 415, "UnsupportedContentType")


@needs_browser
def test_an_unreachable_url_answers_502(renderer):
    url = f"http://127.0.0.1:{closed_port()}/"
    status, _, text = call(renderer, "render.html", {"url": url})
    info = splash_error(status, text, 502, "RenderError")["info"]
    assert info == {"type": "Network", "code": 1, "text": "net::ERR_CONNECTION_REFUSED", "url": url}


@needs_browser
def test_ping(renderer):
    status, _, text = call(renderer, "_ping")
    assert status == 200 and json.loads(text)["status"] == "ok"


# --- proxies --------------------------------------------------------------------------------------
@needs_browser
def test_the_proxy_argument_sends_the_render_through_that_proxy(site, renderer):
    # shop.invalid resolves nowhere: only the proxy (the site, answering absolute URLs) can serve it
    status, _, html = call(renderer, "render.html", {"url": "http://shop.invalid/app.html?viaproxy", "wait": 0.5,
                                                     "proxy": site.url})
    assert status == 200 and "/from-json-1" in html
    proxied = [entry["target"] for entry in site.log if entry["proxied"]]
    assert "http://shop.invalid/app.html?viaproxy" in proxied and "http://shop.invalid/links.json?viaproxy" in proxied


@needs_browser
def test_http_proxy_in_the_environment_is_used_by_default(site):
    with ServerThread(port=0, max_contexts=1, executable_path=CHROMIUM, env={"http_proxy": site.url},
                      policy=NetworkPolicy(allow_all=True)) as running:
        status, _, html = call(running.url, "render.html", {"url": "http://env.invalid/app.html?envproxy"})
        assert status == 200 and "Inline link" in html
        assert "http://env.invalid/app.html?envproxy" in [entry["target"] for entry in site.log if entry["proxied"]]
        # a render may refuse it
        status, _, text = call(running.url, "render.html", {"url": f"{site.url}/app.html?noproxy", "proxy": "none"})
        assert status == 200 and site.requests_for("/app.html?noproxy")[0]["proxied"] is False


def test_proxy_urls_are_read_as_splash_reads_them():
    assert render_options.parse_proxy("127.0.0.1") == {"server": "http://127.0.0.1:1080", "bypass": "<-loopback>"}
    assert render_options.parse_proxy("socks5://user:p%40ss@proxy.example:9050") == {
        "server": "socks5://proxy.example:9050", "bypass": "<-loopback>", "username": "user", "password": "p@ss"}
    for bad in ("ftp://proxy:21", "http://proxy:99999", "http://proxy/path", "http://"):
        with pytest.raises(ValueError):
            render_options.parse_proxy(bad)


def test_the_environment_proxy_follows_the_scheme_and_no_proxy():
    env = {"HTTP_PROXY": "http://10.1.1.1:3128", "all_proxy": "http://10.2.2.2:8080", "no_proxy": "intranet.example"}
    proxies = render_options.environment_proxies(env)
    assert proxies["http"]["server"] == "http://10.1.1.1:3128"
    assert proxies["https"]["server"] == "http://10.2.2.2:8080"  # all_proxy covers the rest
    assert proxies["http"]["bypass"] == "intranet.example,<-loopback>"
    assert render_options.environment_proxies({"http_proxy": "http://p:1", "no_proxy": "*"}) == {}
    with pytest.raises(ValueError, match="http_proxy"):
        render_options.environment_proxies({"http_proxy": "gopher://p:70"})

    def options(proxy=None, url="http://a.example/"):
        return RenderOptions(endpoint="render.html", url=url, proxy=proxy)
    assert render_options.choose_proxy(options(), proxies) is proxies["http"]
    assert render_options.choose_proxy(options(url="https://a.example/"), proxies) is proxies["https"]
    assert render_options.choose_proxy(options("none"), proxies) is None
    assert render_options.choose_proxy(options("http://127.0.0.1:9"), proxies)["server"] == "http://127.0.0.1:9"


# --- the pool and the browser ---------------------------------------------------------------------
@needs_browser
def test_renders_beyond_max_contexts_wait_for_a_context(site, renderer):
    site.most_concurrent = 0
    answers: list[int] = []

    def render(n: int) -> None:
        answers.append(call(renderer, "render.html", {"url": f"{site.url}/slow?s=1&n={n}", "timeout": 15})[0])

    threads = [threading.Thread(target=render, args=(n,)) for n in range(3)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert answers == [200, 200, 200]
    assert site.most_concurrent == 2  # max_contexts=2: the third render waited
    assert time.monotonic() - started >= 2


def _browser_processes() -> list[int]:
    """The Chromium browser processes (not their renderers) started by this test process."""
    children: dict[int, list[tuple[int, bytes]]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat, open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                parent = int(stat.read().rsplit(b")", 1)[1].split()[1])
                command = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append((int(entry), command))
    found, stack = [], [os.getpid()]
    while stack:
        for pid, command in children.get(stack.pop(), []):
            stack.append(pid)
            # Chromium's children rewrite their command line into one string: "--type=" marks them
            program = os.path.basename(command.split(b"\0")[0].split(b" ")[0])
            if b"chrom" in program and b"--type=" not in command:
                found.append(pid)
    return found


@needs_browser
def test_a_killed_browser_fails_its_render_with_502_and_the_next_render_works(site, renderer):
    launches = json.loads(call(renderer, "_ping")[2])["browser_launches"]
    answer: list = []
    thread = threading.Thread(target=lambda: answer.append(
        call(renderer, "render.html", {"url": f"{site.url}/hang?crash", "timeout": 15})))
    thread.start()
    assert site.wait_for("/hang?crash")  # the render is under way
    browsers = _browser_processes()
    assert len(browsers) == 1, browsers
    os.kill(browsers[0], signal.SIGKILL)
    thread.join(15)

    status, _, text = answer[0]
    assert splash_error(status, text, 502, "RenderError")["info"]["type"] == "Browser"
    status, _, html = call(renderer, "render.html", {"url": f"{site.url}/app.html?afterkill", "wait": 0.3})
    assert status == 200 and "/from-json-1" in html
    assert json.loads(call(renderer, "_ping")[2])["browser_launches"] == launches + 1
