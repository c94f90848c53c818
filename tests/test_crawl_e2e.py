"""End to end: a real ``scrapy crawl focused`` through the replay proxy over a generated multi-host
web, audited from the server's side (what was fetched, in what order, how politely), and what
was stored and exported."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections import Counter

import pytest

from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.relevance import TopicModel, load_examples
from focuscrawl.relevance.links import MISSING
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.baselines import bfs_requests, random_requests
from focuscrawl.replay.linkgraph import LinkGraph, SamePage
from focuscrawl.replay.metrics import Relevance, counted_requests, found_at, found_curve
from focuscrawl.store import CrawlStore
from focuscrawl.urls import canonicalize, w3lib_canonical

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

BUDGET = 160
DELAY = 0.05


@pytest.fixture(scope="module")
def crawl(demo_web, demo_files, demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("crawl")
    seeds = demo_files["seeds"]
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
    robots_hosts = [r["host"] for r in records if r["path"] == "/robots.txt"]
    assert len(robots_hosts) == len(set(robots_hosts))  # cached: never fetched twice
    first_request = {}
    for r in records:
        first_request.setdefault(r["host"], r["path"])
    assert set(first_request.values()) == {"/robots.txt"}  # robots.txt before any page of a host


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


def test_focused_crawl_beats_bfs_and_random_by_a_clear_margin(crawl, demo_web):
    """Scored like `scrapy evaluate`: the same link graph, the same accounting."""
    graph = LinkGraph.from_web(RecordedWeb.from_records(demo_web.records))
    relevance = Relevance(demo_web.labels, [demo_web.topic], SamePage.for_graph(graph))
    focused = found_curve(counted_requests(crawl["server"]), relevance)
    bfs = found_curve(bfs_requests(graph, demo_web.seeds, BUDGET), relevance)
    random_runs = [found_curve(random_requests(graph, demo_web.seeds, BUDGET, seed=s), relevance) for s in range(5)]
    for n in (50, 100, BUDGET):
        random_mean = sum(found_at(c, n) for c in random_runs) / len(random_runs)
        assert found_at(focused, n) >= 1.3 * found_at(bfs, n), (n, found_at(focused, n), found_at(bfs, n))
        assert found_at(focused, n) >= 1.3 * random_mean, (n, found_at(focused, n), random_mean)
    assert found_at(focused, BUDGET) / BUDGET >= 0.5  # harvest: most requests buy a relevant page


def test_store_holds_every_fetched_page_and_export_only_relevant(crawl, demo_web, demo_model):
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
    assert set(exported[0]) >= {"url", "final_url", "title", "score", "page_score", "link_score", "text",
                                "fetched_at", "depth", "referrer", "content_hash"}
    # an item's score is its page's words and the link that led to it (a seed's: the page alone)
    model = TopicModel.load(demo_model)
    assert any(item["link_score"] is not None for item in exported)
    for item in exported:
        expected = model.with_link_evidence(item["page_score"], item["link_score"])
        assert item["score"] == pytest.approx(expected), item["url"]
        assert (item["link_score"] is None) == (item["depth"] == 0)
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


def test_connections_to_the_proxy_are_kept_alive_for_every_host(crawl):
    """Behind a proxy every host shares the proxy's pool key: the pool keeps as many idle
    connections as requests can be in flight (CONCURRENT_REQUESTS), not one, so requests reuse
    connections instead of opening one each."""
    records = crawl["server"]
    connections = {r["conn"] for r in records}
    assert len(records) > 100 and len(connections) <= 16


def test_the_store_records_the_link_graph_but_the_feed_does_not(crawl):
    out = crawl["out"]
    with CrawlStore(str(out / "crawl.db"), create=False) as store:
        pages = {p["url"]: p for p in store.iter_pages()}
        links = list(store.iter_links())
    assert links
    per_page = Counter(link["from_url"] for link in links)
    # the links of the HTML pages, as many as the spider followed (the demo's pages have fewer than the cap)
    assert all(pages[url]["status"] == 200 and pages[url]["outlinks"] == n for url, n in per_page.items())
    assert all(link["url"] == w3lib_canonical(link["url"]) for link in links)
    exported = [json.loads(line) for line in (out / "relevant.jsonl").read_text().splitlines()]
    assert all("links" not in item for item in exported)


def train_on(paths, labels, topic, output, cwd):
    return run_scrapy(["train", *map(str, paths), "--labels", str(labels), "--positive", topic, "-o", str(output),
                       "--cv-folds", "3"], cwd=cwd)


def test_retraining_from_the_store_keeps_a_link_model(crawl, demo_web, demo_files):
    out, store = crawl["out"], crawl["out"] / "crawl.db"
    result = train_on([store], demo_files["labels"], demo_web.topic, out / "retrained.joblib", out)
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"from {store} (crawl store): " in result.stdout
    model = TopicModel.load(out / "retrained.joblib")
    assert model.link_pipeline is not None
    # a dead link is one to a URL the crawl fetched and failed on; links to URLs it never fetched are skipped
    with CrawlStore(str(store), create=False) as crawl_store:
        fetched = list(crawl_store.iter_pages())
    failed = {w3lib_canonical(p[k]) for p in fetched for k in ("url", "final_url") if p["status"] in (0, *range(400, 600))}
    examples = load_examples([store], labels_path=demo_files["labels"])
    dead = [link for link in examples.links if link.label == MISSING]
    assert all(w3lib_canonical(link.url) in failed for link in dead)
    tally = examples.link_sources[str(store)]
    assert tally["unknown"] > 0 and tally["dead"] == len(dead) == model.metadata["links"]["n_missing"]
    assert f"{tally['unknown']} to pages the crawl never fetched" in result.stdout


def test_retraining_from_a_store_without_links_says_so_and_keeps_the_topic_model(crawl, demo_web, demo_files,
                                                                                 tmp_path):
    old = tmp_path / "old.db"
    shutil.copy(crawl["out"] / "crawl.db", old)
    with sqlite3.connect(old) as conn:  # as a store written before the crawl recorded links
        conn.execute("DROP TABLE links")
    conn.close()
    result = train_on([old], demo_files["labels"], demo_web.topic, tmp_path / "m.joblib", tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [line for line in result.stdout.splitlines() if "link" in line]
    assert lines == [f"link model: none ({old}: no link table (a store written before focuscrawl recorded links)); "
                     "links are valued by the topic model"]
    assert TopicModel.load(tmp_path / "m.joblib").link_pipeline is None
