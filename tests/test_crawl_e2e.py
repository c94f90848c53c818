"""End to end: a real ``scrapy crawl focused`` through the replay proxy over a generated multi-host
web, audited from the server's side (what was fetched, in what order, how politely), and what
was stored and exported."""

from __future__ import annotations

import json

import pytest

from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.store import CrawlStore
from focuscrawl.urls import canonicalize

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

BUDGET = 160
DELAY = 0.05


@pytest.fixture(scope="module")
def crawl(demo_web, demo_files, demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("crawl")
    seeds = out / "seeds.txt"
    seeds.write_text("\n".join(demo_web.seeds) + "\n")
    server_log = out / "server.jsonl"
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(server_log)) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={demo_model}", "-O", str(out / "relevant.jsonl"),
             "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
             "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"FOCUS_BUDGET={BUDGET}", "-s", "LOG_LEVEL=INFO"],
            cwd=out, env={"http_proxy": proxy.url},
        )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"out": out, "server": load_log(server_log), "stderr": result.stderr}


def page_requests(records):
    return [r for r in records if r["path"] != "/robots.txt"]


def test_budget_is_spent_and_robots_fetched_once_per_host_first(crawl):
    records = crawl["server"]
    pages = page_requests(records)
    assert len(pages) == BUDGET
    robots = [r for r in records if r["path"] == "/robots.txt"]
    hosts = {r["host"] for r in pages}
    assert sorted(r["host"] for r in robots) == sorted(hosts)  # once per host, none twice


def test_politeness_audited_from_the_server_side(crawl, demo_web):
    report = audit_report(crawl["server"], robots=demo_web.robots, delays=DELAY)
    assert report["violation_counts"] == {"gap": 0, "concurrency": 0, "disallowed": 0, "robots_not_first": 0,
                                          "retry_after": 0, "excluded": 0}, report["violations"]
    # the host with Crawl-delay: 1 was never hit twice within a second
    slow = [h for h, t in demo_web.robots.items() if "crawl-delay" in t.lower()]
    assert slow
    for host in slow:
        if report["requests_per_host"].get(host, 0) > 1:
            assert report["min_gap"][host] >= 1.0 - 0.05


def test_focused_order_finds_relevant_pages_early(crawl, demo_web):
    relevant = {canonicalize(u) for u in demo_web.relevant_urls()}
    pages = [canonicalize(r["url"]) for r in page_requests(crawl["server"]) if r["status"] == 200]
    half = len(pages) // 2
    first = sum(u in relevant for u in pages[:half]) / half
    second = sum(u in relevant for u in pages[half:]) / (len(pages) - half)
    crawl_host_pages = [u for u in demo_web.labels if u.split("/")[2] in demo_web.crawl_hosts]
    base_rate = sum(canonicalize(u) in relevant for u in crawl_host_pages) / len(crawl_host_pages)
    # pages fetched early are more often relevant than those fetched later, and than the web at large
    assert first > base_rate * 1.5, (first, second, base_rate)
    assert first > second


def test_store_holds_every_fetched_page_and_export_only_relevant(crawl, demo_web):
    out = crawl["out"]
    store = CrawlStore(str(out / "crawl.db"))
    rows = list(store.iter_pages())
    store.close()
    served = {canonicalize(r["url"]) for r in page_requests(crawl["server"]) if r["status"] != 301}
    stored = {canonicalize(r["final_url"]) for r in rows}
    assert served <= stored | {canonicalize(r["url"]) for r in rows}
    exported = [json.loads(line) for line in (out / "relevant.jsonl").read_text().splitlines()]
    assert exported, "the crawl exported nothing"
    assert all(item["score"] >= 0.5 for item in exported)
    assert set(exported[0]) >= {"url", "final_url", "title", "score", "text", "fetched_at", "depth", "referrer",
                                "content_hash"}
    labels = {canonicalize(u): l for u, l in demo_web.labels.items()}
    precision = sum(labels.get(canonicalize(i["final_url"])) == demo_web.topic for i in exported) / len(exported)
    assert precision >= 0.8
    assert len({i["content_hash"] for i in exported}) == len(exported)  # no exact duplicates exported
    # nothing disallowed by robots.txt was stored
    disallowed = {canonicalize(u) for u in demo_web.disallowed}
    assert not disallowed & stored


def test_request_log_has_every_request_with_its_reasons(crawl):
    log = [json.loads(line) for line in (crawl["out"] / "requests.jsonl").read_text().splitlines()]
    fetched = [r for r in log if r.get("status") is not None and not r.get("event")]
    assert len(fetched) == len(crawl["server"])
    scored = [r for r in fetched if r.get("score") is not None]
    assert scored and all(r["priority"] is not None and r["why"] for r in scored)
    assert any(r.get("dropped") == "robots" for r in log)
    assert any(r.get("event") == "robots" and r["robots_txt"] for r in log)
    assert {"time", "url", "method", "status", "content_type", "length", "elapsed", "priority", "score",
            "redirect"} <= set(scored[0])


def test_export_command_writes_the_same_relevant_pages(crawl):
    out = crawl["out"]
    result = run_scrapy(["export", "-o", str(out / "again.jsonl"), "--store", str(out / "crawl.db")], cwd=out)
    assert result.returncode == 0, result.stderr
    crawled = {json.loads(l)["url"] for l in (out / "relevant.jsonl").read_text().splitlines()}
    exported = {json.loads(l)["url"] for l in (out / "again.jsonl").read_text().splitlines()}
    assert exported == crawled
