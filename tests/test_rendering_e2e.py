"""End to end: ``scrapy crawl focused`` renders the pages of a JavaScript-only host in a real
Chromium, through the replay proxy, and reads a plain host as it is; audited from the server's
side (what the browser loaded, and how politely)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter

import pytest

from focuscrawl.demo.responses import response
from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.rendering.chromium import browser_pids
from focuscrawl.replay import RecordedWeb, ReplayProxy

from .conftest import run_scrapy

pytestmark = [pytest.mark.e2e,
              pytest.mark.skipif(shutil.which("chromium") is None, reason="needs Debian's chromium (CI installs it)")]

DELAY = 0.05
JS = "http://js.test"
PLAIN = "http://plain.test"
WORDS = ("telescope galaxy nebula orbit planet comet astronomy observatory spectrum stellar "
         "supernova eclipse asteroid cosmology quasar pulsar meteor lunar solar zodiac ").split()

#: builds the page from its data: fetched from the API, or embedded as __NEXT_DATA__
APP_JS = b"""
(async function () {
  const root = document.getElementById('root');
  let data;
  const blob = document.getElementById('__NEXT_DATA__');
  if (blob) { data = JSON.parse(blob.textContent); }
  else {
    const answer = await fetch('/data' + (location.pathname === '/' ? '/index' : location.pathname) + '.json');
    data = await answer.json();
  }
  try { await fetch('/private/secret.json'); } catch (e) {}
  const h1 = document.createElement('h1'); h1.textContent = data.title; root.appendChild(h1);
  for (const text of data.paragraphs) { const p = document.createElement('p'); p.textContent = text; root.appendChild(p); }
  const ul = document.createElement('ul');
  for (const [href, anchor] of data.links) {
    const li = document.createElement('li'); const a = document.createElement('a');
    a.href = href; a.textContent = anchor; li.appendChild(a); ul.appendChild(li);
  }
  root.appendChild(ul);
})();
"""


def prose(seed: int, n: int = 60) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n))


def shell(title: str, embedded: dict | None = None) -> bytes:
    blob = ("" if embedded is None else
            f'<script type="application/json" id="__NEXT_DATA__">{json.dumps(embedded)}</script>')
    return (f'<!doctype html><html><head><title>{title}</title>'
            f'<script src="http://cdn.test/analytics.js"></script></head>'
            f'<body><div id="root"></div><img src="/logo.png" alt="">'
            f'<noscript>You need to enable JavaScript to run this app.</noscript>{blob}'
            f'<script src="/static/app.js"></script></body></html>').encode()


def plain_page(title: str, seed: int, links: list[tuple[str, str]], scripts: int = 0) -> bytes:
    items = "".join(f'<li><a href="{href}">{anchor}</a></li>' for href, anchor in links)
    tags = "".join(f'<script src="/s{i}.js"></script>' for i in range(scripts))
    return (f"<html><head><title>{title}</title>{tags}</head><body><h1>{title}</h1>"
            f"<p>{prose(seed, 120)}</p><ul>{items}</ul></body></html>").encode()


def js_web(more: int = 0) -> dict:
    """The JavaScript host and a plain host; ``more`` pages linked from /d on the first."""
    html = "text/html; charset=utf-8"
    data = {
        "index": {"title": "Star atlas", "paragraphs": [prose(1)], "links": [["/a", "galaxy atlas"],
                                                                              [f"{PLAIN}/", "observatory"]]},
        "a": {"title": "Galaxy atlas", "paragraphs": [prose(2)], "links": [["/b", "nebula atlas"],
                                                                           ["/c", "comet atlas"]]},
        "b": {"title": "Nebula atlas", "paragraphs": [prose(3)], "links": [["/d", "pulsar atlas"]]},
        "c": {"title": "Comet atlas", "paragraphs": [prose(4)], "links": [["/", "star atlas"]]},
        "d": {"title": "Pulsar atlas", "paragraphs": [prose(5)],
              "links": [["/", "star atlas"]] + [[f"/m{i}", f"meteor atlas {i}"] for i in range(more)]},
    }
    for i in range(more):
        data[f"m{i}"] = {"title": f"Meteor atlas {i}", "paragraphs": [prose(10 + i)], "links": [["/", "star atlas"]]}
    records = {
        f"{JS}/robots.txt": response(200, "text/plain", b"User-agent: *\nDisallow: /private/\n"),
        f"{JS}/static/app.js": response(200, "application/javascript", APP_JS, [("Cache-Control", "max-age=3600")]),
        f"{JS}/logo.png": response(200, "image/png", b"\x89PNG\r\n\x1a\n"),
        f"{JS}/private/secret.json": response(200, "application/json", b"{}"),
        f"{PLAIN}/robots.txt": response(200, "text/plain", b"User-agent: *\nAllow: /\n"),
        f"{PLAIN}/": response(200, html, plain_page("Observatory", 6, [("/x", "telescope notes"), ("/y", "orbit notes"),
                                                                       (f"{JS}/", "star atlas")], scripts=2)),
        f"{PLAIN}/x": response(200, html, plain_page("Telescope notes", 7, [("/y", "orbit notes"), ("/", "observatory")],
                                                     scripts=4)),
        f"{PLAIN}/y": response(200, html, plain_page("Orbit notes", 8, [("/x", "telescope notes")])),
    }
    for name, page in data.items():
        path = "/" if name == "index" else f"/{name}"
        embedded = page if name == "c" else None  # one page carries its data inline, as Next.js does
        records[f"{JS}{path}"] = response(200, html, shell(page["title"], embedded))
        records[f"{JS}/data/{name}.json"] = response(200, "application/json", json.dumps(page).encode())
    return records


@pytest.fixture(scope="module")
def rendered_crawl(demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("rendered")
    seeds = out / "seeds.txt"
    seeds.write_text(f"{PLAIN}/\n")
    server_log = out / "server.jsonl"
    web = RecordedWeb.from_records(js_web())
    with ReplayProxy(web, log_path=str(server_log)) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}", "-O", str(out / "relevant.jsonl"),
             "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
             "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "FOCUS_BUDGET=40", "-s", "LOG_LEVEL=INFO",
             "-s", "FOCUS_RELEVANCE_THRESHOLD=0"],
            cwd=out, env={"http_proxy": proxy.url}, timeout=180,
        )
    assert result.returncode == 0, result.stderr[-3000:]
    log = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines() if line.strip()]
    items = [json.loads(line) for line in (out / "relevant.jsonl").read_text().splitlines() if line.strip()]
    return {"server": load_log(server_log), "log": log, "items": items, "stderr": result.stderr}


def fetched(records, host: str) -> Counter:
    return Counter(r["path"] for r in records if r["host"] == host)


def test_pages_built_by_javascript_are_rendered_and_their_links_followed(rendered_crawl):
    js = fetched(rendered_crawl["server"], "js.test")
    # /b, /c and /d are linked only from what the script built: found only by rendering
    for path in ("/", "/a", "/b", "/c", "/d"):
        assert js[path] >= 1, js
    by_url = {item["url"]: item for item in rendered_crawl["items"]}
    assert "nebula" in by_url[f"{JS}/b"]["text"]
    assert by_url[f"{JS}/c"]["title"] == "Comet atlas"  # its data inline (__NEXT_DATA__)


def test_a_host_whose_renders_add_links_goes_straight_to_the_browser(rendered_crawl):
    renders = [r for r in rendered_crawl["log"] if r.get("render")]
    reasons = Counter(r["render"].split(":")[0].split(" (")[0] for r in renders)
    assert reasons["app shell"] >= 2, reasons  # plain first, then rendered: the host learns from these
    assert reasons["host needs rendering"] >= 1, reasons  # then its pages skip the plain fetch
    js = fetched(rendered_crawl["server"], "js.test")
    assert sum(js[p] for p in ("/", "/a", "/b", "/c", "/d")) < 2 * 5  # not every page fetched twice


def test_a_plain_host_is_not_rendered(rendered_crawl):
    plain = [r for r in rendered_crawl["log"] if r.get("url", "").startswith(PLAIN) and r.get("render")]
    assert plain == []
    paths = fetched(rendered_crawl["server"], "plain.test")
    assert all(n == 1 for path, n in paths.items()), paths  # nothing fetched twice (no render after the plain fetch)


def test_the_browser_loads_only_what_the_page_needs(rendered_crawl):
    records = rendered_crawl["server"]
    hosts = {r["host"] for r in records}
    assert "cdn.test" not in hosts  # another host: blocked
    js = fetched(records, "js.test")
    assert js["/logo.png"] == 0  # images: blocked
    assert js["/private/secret.json"] == 0  # disallowed by robots.txt: blocked
    assert js["/static/app.js"] == 1  # the application's code, kept across the host's renders
    assert js["/data/a.json"] >= 1


def test_a_render_is_one_connection_to_its_host(rendered_crawl):
    report = audit_report(rendered_crawl["server"], delays=0.0)
    assert report["violation_counts"]["concurrency"] == 0, report["violations"]


@pytest.fixture(scope="module")
def splash_crawl(demo_model, tmp_path_factory):
    """The same web rendered through FOCUS_RENDER_BACKEND=splash and `scrapy render-server`."""
    out = tmp_path_factory.mktemp("splash")
    seeds = out / "seeds.txt"
    seeds.write_text(f"{PLAIN}/\n")
    server_log = out / "server.jsonl"
    with ReplayProxy(RecordedWeb.from_records(js_web()), log_path=str(server_log)) as proxy:
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings", http_proxy=proxy.url)
        server = subprocess.Popen([sys.executable, "-m", "scrapy", "render-server", "--port", "0"], env=env, cwd=out,
                                  stdout=subprocess.PIPE, stderr=(out / "render-server.log").open("w"), text=True)
        try:
            match = None
            deadline = time.monotonic() + 60
            while match is None and time.monotonic() < deadline and server.poll() is None:
                match = re.search(r"http://127\.0\.0\.1:\d+", server.stdout.readline() or "")
            assert match, "scrapy render-server did not start"
            result = run_scrapy(
                ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
                 "-O", str(out / "relevant.jsonl"), "-s", f"FOCUS_STORE={out / 'crawl.db'}",
                 "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}", "-s", f"DOWNLOAD_DELAY={DELAY}",
                 "-s", "FOCUS_BUDGET=40", "-s", "FOCUS_RELEVANCE_THRESHOLD=0",
                 "-s", "FOCUS_RENDER_BACKEND=splash", "-s", f"SPLASH_URL={match.group(0)}"],
                # the proxy in the crawl's environment, as in a replayed crawl: the calls of
                # SPLASH_URL go straight to the service, the pages it renders through the proxy
                cwd=out, env={"http_proxy": proxy.url}, timeout=180)
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert result.returncode == 0, result.stderr[-3000:]
    items = [json.loads(line) for line in (out / "relevant.jsonl").read_text().splitlines() if line.strip()]
    log = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines() if line.strip()]
    (out / "crawl.log").write_text(result.stderr)
    return {"server": load_log(server_log), "items": items, "log": log, "stderr": result.stderr}


def test_the_splash_backend_renders_through_scrapy_render_server(splash_crawl):
    js = fetched(splash_crawl["server"], "js.test")
    for path in ("/a", "/b", "/d"):  # linked only from what the script built
        assert js[path] >= 1, js
    by_url = {item["url"]: item for item in splash_crawl["items"]}
    assert "nebula" in by_url[f"{JS}/b"]["text"]
    renders = [r for r in splash_crawl["log"] if r.get("render")]
    assert renders and all(r["url"].startswith(JS) for r in renders)  # logged as the page, not as SPLASH_URL


def test_every_request_the_browser_made_is_in_the_request_log(rendered_crawl):
    logged = Counter((r["url"], r["status"]) for r in rendered_crawl["log"] if r.get("url") and r.get("status"))
    served = Counter((r["url"], r["status"]) for r in rendered_crawl["server"])
    assert served == logged  # pages, renders, robots.txt, and the scripts and data renders loaded
    loads = [r for r in rendered_crawl["log"] if r.get("render_of")]
    assert any(r["resource"] == "fetch" and r["url"].endswith(".json") for r in loads)
    blocked = {r["dropped"] for r in loads if r.get("dropped")}
    assert {"render_type", "render_other_host", "render_robots"} <= blocked


@pytest.fixture(scope="module")
def restarted_crawl(demo_model, tmp_path_factory):
    """Every page rendered; the browser killed once mid-crawl, and over its memory limit later."""
    import signal
    import threading

    out = tmp_path_factory.mktemp("restarted")
    seeds = out / "seeds.txt"
    seeds.write_text(f"{JS}/\n")
    server_log = out / "server.jsonl"
    killed = []
    with ReplayProxy(RecordedWeb.from_records(js_web(more=12)), log_path=str(server_log)) as proxy:
        env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings", http_proxy=proxy.url)
        env.pop("https_proxy", None)
        argv = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}",
                "-O", str(out / "relevant.jsonl"), "-s", f"FOCUS_STORE={out / 'crawl.db'}",
                "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "FOCUS_BUDGET=40", "-s", "FOCUS_RENDER=always",
                "-s", "FOCUS_RENDER_MAX_BROWSER_MB=64", "-s", "FOCUS_RELEVANCE_THRESHOLD=0"]
        with (out / "crawl.log").open("w") as log:
            crawl = subprocess.Popen(argv, cwd=out, env=env, stdout=subprocess.DEVNULL, stderr=log)

            def kill_the_browser_once():
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and crawl.poll() is None:
                    if sum(1 for r in proxy.log if "/data/" in r.get("url", "")) >= 3:
                        for pid in browser_pids(crawl.pid):
                            os.kill(pid, signal.SIGKILL)
                            killed.append(pid)
                        return
                    time.sleep(0.05)

            killer = threading.Thread(target=kill_the_browser_once)
            killer.start()
            code = crawl.wait(timeout=180)
            killer.join()
    stderr = (out / "crawl.log").read_text()
    assert code == 0, stderr[-3000:]
    stats = {m.group(1): int(m.group(2)) for m in re.finditer(r"'(focus/render/[^']+)': (\d+)", stderr)}
    items = [json.loads(line) for line in (out / "relevant.jsonl").read_text().splitlines() if line.strip()]
    return {"server": load_log(server_log), "stats": stats, "killed": killed, "items": items}


def test_a_killed_browser_fails_its_page_not_the_crawl_and_comes_back(restarted_crawl):
    assert restarted_crawl["killed"], "the browser was never seen running"
    js = fetched(restarted_crawl["server"], "js.test")
    # the pages after the kill were rendered too (each /mN is linked only from what a script built)
    assert sum(1 for path in js if path.startswith("/m")) >= 10
    assert restarted_crawl["stats"]["focus/render/rendered"] >= 10


def test_a_browser_past_its_memory_limit_is_restarted_between_renders(restarted_crawl):
    assert restarted_crawl["stats"].get("focus/render/browser_restarts", 0) >= 1
    assert restarted_crawl["stats"].get("focus/render/browser_mb_max", 0) > 64
