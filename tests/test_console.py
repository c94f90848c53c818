"""The web console: its checks (token, Host), its figures from a crawl store, its answers; and, in a
real headless Chromium, the page beside a running crawl of the demo web (the figures and the curve
grow, a label given in the page reaches the store, a request without the token is refused) and
the page of a stored crawl (``scrapy console``). ``scrapy export --plot`` draws the same curve."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from focuscrawl.labelling import LabelError
from focuscrawl.observe.console import MIN_REDRAW_SECONDS, Answer, Console, curve_version, host_ok, thin, token_ok
from focuscrawl.observe.console_sources import FrontierView, LabelDesk, StoreSource
from focuscrawl.observe.plot import crawl_series, figure_bytes, harvest_figure, store_curve
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.store import CrawlStore

from .conftest import run_scrapy

PNG = b"\x89PNG\r\n\x1a\n"
TOKEN = "t0ken-for-tests"


# --- the checks ------------------------------------------------------------------------------------
def test_only_the_consoles_token_is_accepted():
    assert token_ok(TOKEN, TOKEN)
    assert not token_ok(TOKEN, None)
    assert not token_ok(TOKEN, "")
    assert not token_ok(TOKEN, TOKEN + "x")
    assert not token_ok(TOKEN, TOKEN.upper())
    assert not token_ok("", "")  # a console without a token accepts nothing


def test_only_the_address_served_is_accepted_as_host():
    assert host_ok("127.0.0.1:8800", "127.0.0.1", 8800)
    assert host_ok("localhost:8800", "127.0.0.1", 8800)  # the same loopback, by its name
    assert not host_ok("127.0.0.1:8801", "127.0.0.1", 8800)  # another port
    assert not host_ok("127.0.0.1", "127.0.0.1", 8800)  # no port: not what a browser sends here
    assert not host_ok("evil.example:8800", "127.0.0.1", 8800)  # DNS rebinding: a name rebound to 127.0.0.1
    assert not host_ok("127.0.0.1.evil.example:8800", "127.0.0.1", 8800)
    assert not host_ok(None, "127.0.0.1", 8800)
    assert not host_ok("localhost:8800", "192.168.1.5", 8800)  # localhost is not a LAN address
    assert host_ok("192.168.1.5:8800", "192.168.1.5", 8800)
    assert host_ok("[::1]:8800", "::1", 8800)
    # on every interface: any address literal, never a name
    assert host_ok("10.0.0.7:8800", "0.0.0.0", 8800)
    assert not host_ok("evil.example:8800", "0.0.0.0", 8800)
    assert not host_ok("[::1]:8800x", "127.0.0.1", 8800)


def test_a_long_curve_is_thinned_evenly_keeping_its_last_point():
    curve = [{"requests": i, "seconds": i / 10, "relevant": i // 3} for i in range(1, 10_001)]
    thinned = thin(curve, most=100)
    assert len(thinned) == 100 and thinned[0] == curve[0] and thinned[-1] == curve[-1]
    assert thin(curve[:50], most=100) == curve[:50]
    assert curve_version(curve) != curve_version(curve[:-1])
    assert curve_version([]) == "0"


# --- the drawing -----------------------------------------------------------------------------------
def test_the_harvest_curve_is_drawn_as_png_and_svg():
    points = [{"requests": r, "seconds": r * 0.5, "relevant": r // 2} for r in range(0, 40)]
    for x in ("requests", "seconds"):
        fig = harvest_figure([crawl_series(points, x, "crawl 1")], x)
        assert figure_bytes(fig, "png").startswith(PNG)
        svg = figure_bytes(fig, "svg")
        assert svg.lstrip().startswith(b"<?xml") and b"<svg" in svg and b"<script" not in svg
    with pytest.raises(ValueError):
        crawl_series(points, "hours")


def test_a_stored_crawls_curve_counts_relevant_pages_that_are_no_duplicates():
    pages = [
        {"relevant": True, "duplicate_of": None, "fetched_at": "2026-01-01T00:00:10+00:00"},
        {"relevant": False, "duplicate_of": None, "fetched_at": "2026-01-01T00:00:12+00:00"},
        {"relevant": True, "duplicate_of": "http://a.test/", "fetched_at": "2026-01-01T00:00:13+00:00"},
        {"relevant": True, "duplicate_of": None, "fetched_at": ""},  # time unknown: the last time known
    ]
    assert store_curve(pages, "2026-01-01T00:00:00+00:00") == [
        {"requests": 1, "seconds": 10.0, "relevant": 1}, {"requests": 2, "seconds": 12.0, "relevant": 1},
        {"requests": 3, "seconds": 13.0, "relevant": 1}, {"requests": 4, "seconds": 13.0, "relevant": 2}]
    assert store_curve(pages)[0]["seconds"] == 0.0  # from the first page when the start is unknown


# --- a stored crawl, by hand --------------------------------------------------------------------------
ASTRONOMY = "telescope galaxy nebula orbit planet comet astronomy observatory spectrum stellar supernova eclipse"
OTHER = "football league match goal season coach stadium transfer score referee championship fans"


def page(url, relevant, second, words=ASTRONOMY, **extra):
    return {"url": url, "final_url": url, "status": 200, "title": f"title of {url} <script>alert(1)</script>",
            "text": (words + " ") * 20, "score": 0.9 if relevant else 0.1, "relevant": relevant,
            "fetched_at": f"2026-01-01T00:00:{second:02d}+00:00", **extra}


@pytest.fixture
def store_path(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        store.begin_crawl(model="no-such-model.joblib", settings={"FOCUS_BUDGET": 10})
        store.add_page(page("http://a.test/", True, 1))
        store.add_page(page("http://a.test/1", False, 3, OTHER))
        store.add_page(page("http://a.test/2", True, 4, duplicate_of="http://a.test/", duplicate_kind="exact"))
        store.add_page(page("http://b.test/", True, 6))
        store.add_page({**page("http://b.test/gone", False, 8), "status": 404, "score": None, "text": ""})
        store.end_crawl("finished")
    return path


def test_the_store_source_gives_the_figures_of_a_stored_crawl(store_path):
    with CrawlStore(store_path, create=False) as store:
        frontier = FrontierView(top=[{"url": "http://c.test/", "host": "c.test", "priority": 0.7, "why": []}],
                                queued={"c.test": 3, "a.test": 1}, size=4)
        source = StoreSource(store, store.latest_crawl(), frontier)
        assert [p["relevant"] for p in source.curve()] == [1, 1, 1, 2, 2]
        snap = source.snapshot()
        assert snap["requests"] == snap["pages"] == 5 and snap["relevant"] == 2
        assert snap["harvest"] == pytest.approx(0.4) and snap["finished"] and snap["budget"] == 10
        assert snap["frontier"] == 4 and snap["hosts"]["queued"] == 2
        hosts = {h["host"]: h for h in source.hosts()}
        assert hosts["a.test"] == {"host": "a.test", "state": "queued", "fetched": 3, "relevant": 1,
                                   "yield": pytest.approx(0.3333), "waste": 1, "delay": None, "queued": 1}
        assert hosts["b.test"]["waste"] == 1 and hosts["b.test"]["state"] == "idle"  # the 404, unscored
        assert hosts["c.test"]["fetched"] == 0 and hosts["c.test"]["queued"] == 3
        assert [p["url"] for p in source.latest_relevant(5)] == ["http://b.test/", "http://a.test/"]
        assert source.top_urls(1)[0]["url"] == "http://c.test/"
        assert StoreSource(store, store.latest_crawl()).top_urls() == []


def test_a_store_still_written_is_read_again_after_the_recheck(store_path):
    now = [0.0]
    with CrawlStore(store_path, create=False) as store:
        source = StoreSource(store, store.latest_crawl(), clock=lambda: now[0], recheck=5.0)
        assert source.snapshot()["pages"] == 5
        with CrawlStore(store_path, create=False) as writer:
            writer.resume_crawl(store.latest_crawl())
            writer.add_page(page("http://b.test/more", True, 9))
        assert source.snapshot()["pages"] == 5  # not before the recheck
        now[0] = 6.0
        assert source.snapshot()["pages"] == 6 and source.snapshot()["relevant"] == 3


# --- the console's answers, without a server ----------------------------------------------------------
class FakeSource:
    def __init__(self):
        self.points = [{"requests": 1, "seconds": 0.5, "relevant": 1}]

    def snapshot(self):
        return {"requests": len(self.points), "relevant": self.points[-1]["relevant"], "harvest": float("inf")}

    def curve(self):
        return list(self.points)

    def hosts(self, limit=50):
        return [{"host": "a.test", "state": "active"}]

    def top_urls(self, n=20):
        return [{"url": "http://a.test/x", "host": "a.test", "priority": 0.5, "why": [["anchor:moon", 0.2]]}]

    def latest_relevant(self, n=20):
        return []


def ask(console, method, path, query=None, headers=None, body=b"", token=TOKEN, host=None):
    all_headers = {"host": host or f"127.0.0.1:{console.port}", **(headers or {})}
    if token is not None:
        all_headers["x-focus-token"] = token
    return console.answer(method, path, query or {}, all_headers, body)


def label_body(url, label):
    return json.dumps({"url": url, "label": label}).encode()


JSON = {"content-type": "application/json"}


@pytest.fixture
def console(store_path):
    store = CrawlStore(store_path, create=False)
    desk = LabelDesk(store=lambda: store, model=lambda: None, crawl=lambda: store.latest_crawl())
    yield Console(FakeSource(), desk, token=TOKEN, port=8800)
    store.close()


def test_every_request_needs_the_token_and_the_served_host(console):
    for path in ("/", "/console.js", "/api/state", "/api/curve.svg", "/api/queue", "/api/labels", "/nowhere"):
        assert ask(console, "GET", path, token=None).status == 403
        assert ask(console, "GET", path, token="wrong").status == 403
        assert ask(console, "GET", path, host="evil.example:8800").status == 403
    assert ask(console, "POST", "/api/label", headers=JSON, body=label_body("http://a.test/", "on-topic"),
               token=None).status == 403
    assert ask(console, "GET", "/api/state", token=None, query={"token": TOKEN}).status == 200  # in the query
    assert ask(console, "GET", "/nowhere").status == 404


def test_the_page_and_its_answers(console):
    answer = ask(console, "GET", "/", token=None, query={"token": TOKEN})
    assert answer.status == 200 and answer.content_type.startswith("text/html")
    assert f"console.js?token={TOKEN}".encode() in answer.body and b"__TOKEN__" not in answer.body
    assert "script-src 'self'" in answer.headers["Content-Security-Policy"]
    state = json.loads(ask(console, "GET", "/api/state").body)
    assert state["snapshot"]["harvest"] is None  # not a number JSON can carry
    assert state["top"][0]["why"] == [["anchor:moon", 0.2]] and state["labelling"]
    svg = ask(console, "GET", "/api/curve.svg", {"x": "seconds"})
    assert svg.status == 200 and svg.content_type == "image/svg+xml" and svg.body.lstrip().startswith(b"<?xml")
    assert ask(console, "GET", "/api/curve.svg", {"x": "hours"}).status == 400
    assert json.loads(ask(console, "GET", "/api/queue").body)["available"] is False  # no model: no queue


def test_the_curve_is_drawn_again_only_when_it_changed_and_not_too_often(console):
    now = [1000.0]
    console.clock = lambda: now[0]
    first = ask(console, "GET", "/api/curve.svg").body
    assert ask(console, "GET", "/api/curve.svg").body is first
    version = json.loads(ask(console, "GET", "/api/state").body)["curve_version"]
    console.source.points.append({"requests": 2, "seconds": 1.0, "relevant": 2})
    # drawn a moment ago: the page is not told of the new curve yet, and gets the same drawing
    assert json.loads(ask(console, "GET", "/api/state").body)["curve_version"] == version
    assert ask(console, "GET", "/api/curve.svg").body is first
    now[0] += MIN_REDRAW_SECONDS + 60  # far more than DRAW_SHARE asks after a drawing's fraction of a second
    assert json.loads(ask(console, "GET", "/api/state").body)["curve_version"] != version
    assert ask(console, "GET", "/api/curve.svg").body != first


def test_a_label_is_a_post_of_json_and_a_get_changes_nothing(console, store_path):
    url = "http://a.test/1"
    assert ask(console, "GET", "/api/label", {"url": url, "label": "on-topic"}).status == 405
    assert ask(console, "HEAD", "/api/state").status == 200
    # a cross-site form can post only simple content types: refused
    assert ask(console, "POST", "/api/label", headers={"content-type": "application/x-www-form-urlencoded"},
               body=b"url=http://a.test/1&label=on-topic").status == 415
    assert ask(console, "POST", "/api/label", headers={**JSON, "origin": "http://evil.example"},
               body=label_body(url, "on-topic")).status == 403
    assert ask(console, "PUT", "/api/label", headers=JSON, body=label_body(url, "on-topic")).status == 405
    with CrawlStore(store_path, create=False) as store:
        assert store.labels() == []
    bad = ask(console, "POST", "/api/label", headers=JSON, body=label_body(url, "maybe"))
    assert bad.status == 400 and "on-topic" in json.loads(bad.body)["error"]
    unknown = ask(console, "POST", "/api/label", headers=JSON, body=label_body("http://z.test/", "skip"))
    assert unknown.status == 400 and "no page" in json.loads(unknown.body)["error"]
    assert ask(console, "POST", "/api/label", headers=JSON, body=b"{not json").status == 400
    good = ask(console, "POST", "/api/label", headers={**JSON, "origin": "http://127.0.0.1:8800"},
               body=label_body(url, "on-topic"))
    assert good.status == 200 and json.loads(good.body)["label"]["label"] == "on-topic"
    with CrawlStore(store_path, create=False) as store:
        assert [(row["url"], row["label"], row["who"]) for row in store.labels()] == [(url, "on-topic", "console")]
    assert json.loads(ask(console, "GET", "/api/labels").body)[0]["url"] == url


def test_the_whole_stored_text_is_served_escaped(console):
    answer = ask(console, "GET", "/api/page", {"url": "http://a.test/"})
    assert answer.status == 200 and b"<script>" not in answer.body and b"&lt;script&gt;" in answer.body
    assert ask(console, "GET", "/api/page", {"url": "http://nowhere.test/"}).status == 404


def test_the_label_desk_queues_pages_by_the_model(store_path, demo_model):
    from focuscrawl.relevance import TopicModel

    model = TopicModel.load(str(demo_model))
    with CrawlStore(store_path, create=False) as store:
        desk = LabelDesk(store=lambda: store, model=lambda: model, crawl=lambda: store.latest_crawl())
        queue = desk.queue(10)
        urls = [c["url"] for c in queue["candidates"]]
        assert queue["available"] and "http://a.test/2" not in urls  # a duplicate is not worth a label
        assert set(urls) <= {"http://a.test/", "http://a.test/1", "http://b.test/"}
        assert {"url", "title", "score", "why", "extract", "host", "crawl"} <= set(queue["candidates"][0])
        desk.label(urls[0], "off-topic", who="me")
        assert urls[0] not in [c["url"] for c in desk.queue(10)["candidates"]]
        with pytest.raises(LabelError):
            desk.label(urls[0], "unsure")


def test_an_answer_is_json_safe():
    assert json.loads(Answer.json({"a": float("nan"), "b": (1, 2)}).body) == {"a": None, "b": [1, 2]}


# --- scrapy export --plot ------------------------------------------------------------------------------
@pytest.mark.slow
def test_export_draws_the_crawls_harvest_curve(store_path, tmp_path):
    result = run_scrapy(["export", "--plot", str(tmp_path / "curve.png"), "--store", str(store_path)], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "curve.png").read_bytes().startswith(PNG)
    assert "2 relevant in 5 pages" in result.stdout
    result = run_scrapy(["export", "--plot", str(tmp_path / "time.svg"), "--plot-x", "seconds", "--store",
                         str(store_path), "-o", str(tmp_path / "pages.jsonl")], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert b"<svg" in (tmp_path / "time.svg").read_bytes()
    assert len((tmp_path / "pages.jsonl").read_text().splitlines()) == 2  # -o still exports


# --- in a real browser ----------------------------------------------------------------------------------
needs_chromium = pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (CI installs it)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def scrapy_env(**extra) -> dict:
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings", **extra)
    env.pop("https_proxy", None)
    return env


def wait_for_line(path: Path, pattern: str, process: subprocess.Popen, timeout: float = 60) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        match = re.search(pattern, path.read_text(errors="replace")) if path.exists() else None
        if match:
            return match
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in {path}: {path.read_text(errors='replace')[-3000:] if path.exists() else ''}")


def stop(process: subprocess.Popen) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            return process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait(timeout=10)


def http(url: str, *, data: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never through a proxy
    try:
        with opener.open(request, timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as answer:
        return answer.code, answer.read()


@pytest.fixture(scope="module")
def browser():
    if shutil.which("chromium") is None:
        pytest.skip("needs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-proxy-server: whatever proxy the machine has is not the console's
        chromium = playwright.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                              args=["--no-proxy-server"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def live_crawl(demo_web, demo_files, demo_model, tmp_path_factory):
    """A crawl of the demo web, slowed by its delay, serving its console; stopped (SIGINT) once
    the module's tests are done (CLOSESPIDER_TIMEOUT bounds it in any case)."""
    out = tmp_path_factory.mktemp("console-live")
    port = free_port()
    log = out / "crawl.log"
    with ReplayProxy(RecordedWeb.from_records(demo_web.records), robots=demo_web.robots) as proxy:
        with log.open("w") as stderr:
            process = subprocess.Popen(
                [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={demo_files['seeds']}",
                 "-a", f"model={demo_model}", "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", "DOWNLOAD_DELAY=2",
                 "-s", "FOCUS_BUDGET=300", "-s", "CLOSESPIDER_TIMEOUT=150", "-s", f"FOCUS_CONSOLE_PORT={port}",
                 "-s", "LOG_LEVEL=INFO"],
                cwd=out, env=scrapy_env(http_proxy=proxy.url), stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            match = wait_for_line(log, r"console: (http://127\.0\.0\.1:(\d+)/\?token=([\w-]+))", process)
            yield {"url": match.group(1), "base": f"http://127.0.0.1:{port}", "token": match.group(3),
                   "port": port, "store": out / "crawl.db", "process": process, "log": log}
        finally:
            stop(process)


def figure(page, name: str) -> str:
    return page.locator(f'#snapshot dd[data-figure="{name}"]').inner_text()


def until(check, timeout: float = 30, what: str = "the page"):
    """Wait for ``check()`` to be true, asking it from Python: the console's Content-Security-Policy
    forbids the string evaluation Playwright's wait_for_function uses."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
        except ValueError:
            value = None
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"{what} did not change in {timeout} s")


def relevant_found(page) -> int:
    return int(figure(page, "relevant found"))


def drawn(page, axis: str) -> bool:
    return page.locator(f"#curve-{axis}").evaluate("img => img.complete && img.naturalWidth > 0")


def text_of(page, src: str) -> str:
    """The drawing at ``src``, its random element ids left out (two drawings of one curve are equal)."""
    return re.sub(r'(id="|#)[\w-]+', "", page.evaluate("async (src) => (await fetch(src)).text()", src))


@needs_chromium
@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_a_request_without_the_token_is_refused_and_a_get_changes_nothing(live_crawl, browser):
    base, token = live_crawl["base"], live_crawl["token"]
    page = browser.new_page()
    try:
        assert page.goto(f"{base}/").status == 403
        assert page.goto(f"{base}/?token=not-the-token").status == 403
        assert page.goto(f"{base}/api/state").status == 403
        assert page.goto(live_crawl["url"]).status == 200
    finally:
        page.close()
    assert http(f"{base}/api/state", headers={"X-Focus-Token": "wrong"})[0] == 403
    assert http(f"{base}/api/state", headers={"X-Focus-Token": token})[0] == 200
    # the right token from a page whose name was rebound to 127.0.0.1 (DNS rebinding)
    assert http(f"{base}/api/state?token={token}", headers={"Host": f"rebound.example:{live_crawl['port']}"})[0] == 403
    body = json.dumps({"url": "http://www.skywatch-journal.test/", "label": "on-topic"}).encode()
    assert http(f"{base}/api/label", data=body, headers={"Content-Type": "application/json"})[0] == 403
    assert http(f"{base}/api/label?token=x", data=body, headers={"Content-Type": "application/json"})[0] == 403
    assert http(f"{base}/api/label?token={token}", data=body, headers={"Content-Type": "text/plain"})[0] == 415
    for path in (f"/api/label?token={token}&url=http://www.skywatch-journal.test/&label=on-topic",
                 f"/api/state?token={token}", f"/api/queue?token={token}", f"/api/labels?token={token}"):
        assert http(base + path)[0] in (200, 405)
    time.sleep(0.5)
    with CrawlStore(live_crawl["store"], create=False) as store:
        assert store.labels() == []  # no GET gave a label, nor a refused POST


@needs_chromium
@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_the_page_shows_the_crawl_and_its_curve_growing(live_crawl, browser):
    page = browser.new_page()
    try:
        page.goto(live_crawl["url"])
        until(lambda: relevant_found(page) > 0, what="the relevant count")
        until(lambda: drawn(page, "requests"), 10, "the curve")
        relevant, src = relevant_found(page), page.get_attribute("#curve-requests", "src")
        svg = text_of(page, src)
        # a few seconds later, the crawl has found more, the page asks for a new drawing, and it differs
        until(lambda: relevant_found(page) > relevant, what="the relevant count")
        # drawn again once DRAW_SHARE allows: every few seconds
        until(lambda: page.get_attribute("#curve-requests", "src") != src, 30, "the curve's address")
        until(lambda: text_of(page, page.get_attribute("#curve-requests", "src")) != svg, 10, "the drawing")
        until(lambda: drawn(page, "seconds"), 10, "the curve against time")
        assert page.locator("#hosts tbody tr").count() > 1
        assert page.locator("#latest tbody tr a").count() > 0
        assert re.search(r"[+-]\d\.\d{4}", page.locator("#top tbody").inner_text())  # why, as scrapy explain says
        assert page.locator("#state").inner_text() == "running"
        assert live_crawl["process"].poll() is None
    finally:
        page.close()


@needs_chromium
@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_a_label_given_in_the_page_reaches_the_store(live_crawl, browser):
    page = browser.new_page()
    try:
        page.goto(live_crawl["url"])
        page.wait_for_selector("#queue .candidate", timeout=30_000)
        first = page.locator("#queue .candidate").first.get_attribute("data-url")
        page.keyboard.press("o")  # the first candidate is selected: on-topic
        until(lambda: page.locator("#queue-note").inner_text().startswith("labelled"), 10, "the note")
        until(lambda: page.locator("#labelled li").count() == 1, 10, "the labelled list")
        queued = [node.get_attribute("data-url") for node in page.locator("#queue .candidate").all()]
        assert first not in queued  # the queue was asked again: what is labelled has left it
        item = page.locator(f"#queue .candidate:nth-child(2)[data-url={json.dumps(queued[1])}]")
        item.locator("button[data-label=off-topic]").click()  # the second candidate, by a click
        until(lambda: page.locator("#labelled li").count() == 2, 10, "the labelled list")
        second = queued[1]
    finally:
        page.close()
    with CrawlStore(live_crawl["store"], create=False) as store:
        labels = {row["url"]: (row["label"], row["who"]) for row in store.labels()}
    assert labels == {first: ("on-topic", "console"), second: ("off-topic", "console")}


@pytest.fixture(scope="module")
def stored_crawl(demo_web, demo_files, demo_model, tmp_path_factory):
    """A short crawl with JOBDIR, over: its store and its checkpoint."""
    out = tmp_path_factory.mktemp("console-stored")
    jobdir = out / "job"
    with ReplayProxy(RecordedWeb.from_records(demo_web.records), robots=demo_web.robots) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={demo_model}",
             "-s", f"JOBDIR={jobdir}", "-s", "FOCUS_BUDGET=40", "-s", "DOWNLOAD_DELAY=0.05"],
            cwd=out, env={"http_proxy": proxy.url}, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return {"out": out, "jobdir": jobdir, "store": jobdir / "crawl.db"}


@needs_chromium
@pytest.mark.e2e
@pytest.mark.timeout(90)
def test_scrapy_console_serves_the_page_of_a_stored_crawl(stored_crawl, browser):
    out = stored_crawl["out"]
    log = out / "console.out"
    with log.open("w") as stdout:
        process = subprocess.Popen([sys.executable, "-m", "scrapy", "console", "--jobdir", str(stored_crawl["jobdir"]),
                                    "--port", "0"], cwd=out, env=scrapy_env(), stdout=stdout, stderr=subprocess.STDOUT)
    try:
        url = wait_for_line(log, r"open (http://127\.0\.0\.1:\d+/\?token=[\w-]+)", process).group(1)
        with CrawlStore(stored_crawl["store"], create=False) as store:
            relevant = store.crawls()[-1]["relevant"]
        page = browser.new_page()
        page.goto(url)
        until(lambda: drawn(page, "requests"), 20, "the curve")
        assert figure(page, "relevant found") == str(relevant) and relevant > 0
        # a crawl that spent its budget says so, as any other end reason than running dry
        assert page.locator("#state").inner_text() in ("finished", "finished (focus_budget)")
        assert page.locator("#kind").inner_text() == "stored crawl"
        assert page.locator("#hosts tbody tr").count() > 1
        assert re.search(r"[+-]\d\.\d{4}", page.locator("#top tbody").inner_text())  # the JOBDIR's frontier, explained
        page.wait_for_selector("#queue .candidate", timeout=20_000)  # ranked by the model the crawl recorded
        page.close()
        assert http(url.split("?")[0])[0] == 403
    finally:
        code = stop(process)
    assert code == 0, log.read_text()[-2000:]


@pytest.mark.slow
def test_a_busy_port_is_one_error_line(store_path, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        result = run_scrapy(["console", "--store", str(store_path), "--port", str(busy.getsockname()[1])],
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.startswith("error: cannot listen on 127.0.0.1:") and len(result.stderr.splitlines()) == 1
