"""End to end on a tiny hand-made web: sitemaps from robots.txt, X-Robots-Tag, the optional HEAD
check for URLs of unknown type, and the crawl scope -- each checked on the server's own log."""

from __future__ import annotations

import json

import pytest

from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.store import CrawlStore

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

SKY = ("The comet and the planets crossed the night sky; astronomers at the observatory watched "
       "the telescope images of nebula, galaxy and meteor shower while stargazing under dark skies. ")
A = "http://www.sky.test"
B = "http://elsewhere.test"


def html(title, body, links=()):
    anchors = "".join(f'<p><a href="{u}">{text}</a></p>' for u, text in links)
    return f"<html><head><title>{title}</title></head><body><p>{body}</p>{anchors}</body></html>".encode()


def sky(topic):
    """Distinct on-topic text for each page (identical pages would be dropped as duplicates)."""
    return f"{topic}: " + " ".join(f"{SKY} Night {i} of the {topic} log." for i in range(3))


def page(body, extra_headers=()):
    return (200, [("Content-Type", "text/html; charset=utf-8"), *extra_headers], body)


SITEMAP = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{A}/only-in-sitemap.html</loc></url>
</urlset>""".encode()

RECORDS = {
    f"{A}/robots.txt": (200, [("Content-Type", "text/plain")], f"User-agent: *\nAllow: /\nSitemap: {A}/sitemap.xml\n".encode()),
    f"{A}/sitemap.xml": (200, [("Content-Type", "application/xml")], SITEMAP),
    f"{A}/": page(html("Sky club", sky("Sky club"), [(f"{A}/hidden-links.html", "comet notes"),
                                               (f"{A}/download", "telescope data"),
                                               (f"{A}/report", "meteor report"),
                                               (f"{B}/comet.html", "comet elsewhere")])),
    f"{A}/only-in-sitemap.html": page(html("Galaxy atlas", sky("Galaxy atlas"))),
    # the header says: do not index me, do not follow my links
    f"{A}/hidden-links.html": page(html("Nebula notes", sky("Nebula notes"), [(f"{A}/behind-nofollow.html", "nebula")]),
                                   [("X-Robots-Tag", "noindex, nofollow")]),
    f"{A}/behind-nofollow.html": page(html("Behind", sky("Behind"))),
    # a URL with no extension that is not a page: the HEAD check must keep the GET away
    f"{A}/download": (200, [("Content-Type", "video/mp4")], b"\x00\x00\x00\x18ftypmp42" + b"x" * 5000),
    # a URL with no extension that is a page: HEAD, then GET
    f"{A}/report": page(html("Meteor report", sky("Meteor report"))),
    f"{B}/robots.txt": (404, [("Content-Type", "text/plain")], b""),
    f"{B}/comet.html": page(html("Comet elsewhere", sky("Comet elsewhere"))),
}


@pytest.fixture(scope="module")
def crawl(demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("rules")
    with ReplayProxy(RecordedWeb.from_records(RECORDS), log_path=str(out / "server.jsonl")) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={A}/", "-a", f"model={demo_model}", "-O", str(out / "relevant.jsonl"),
             "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
             "-s", "DOWNLOAD_DELAY=0.05", "-s", "FOCUS_HEAD_CHECK=True", "-s", "FOCUS_ALLOWED_DOMAINS=sky.test",
             "-s", "FOCUS_PATIENCE=0"],
            cwd=out, env={"http_proxy": proxy.url}, timeout=120)
        log = list(proxy.log)
    assert result.returncode == 0, result.stderr[-3000:]
    store = CrawlStore(str(out / "crawl.db"))
    pages = {row["url"]: row for row in store.iter_pages()}
    store.close()
    requests = [json.loads(line) for line in (out / "requests.jsonl").read_text().splitlines()]
    exported = {json.loads(line)["url"] for line in (out / "relevant.jsonl").read_text().splitlines()}
    return {"server": log, "pages": pages, "requests": requests, "exported": exported, "stderr": result.stderr}


def served(crawl, method="GET"):
    return [r["url"] for r in crawl["server"] if r["method"] == method]


def test_sitemap_listed_in_robots_is_followed(crawl):
    assert f"{A}/sitemap.xml" in served(crawl)
    assert f"{A}/only-in-sitemap.html" in served(crawl)  # linked from nowhere but the sitemap


def test_x_robots_tag_noindex_and_nofollow_are_honoured(crawl):
    assert f"{A}/hidden-links.html" in crawl["pages"]  # fetched and stored...
    assert f"{A}/hidden-links.html" not in crawl["exported"]  # ...but not indexed
    assert f"{A}/behind-nofollow.html" not in served(crawl)  # and its links not followed


def test_head_check_keeps_useless_types_away_and_lets_pages_through(crawl):
    assert f"{A}/download" in served(crawl, "HEAD")
    assert f"{A}/download" not in served(crawl, "GET")
    assert f"{A}/report" in served(crawl, "HEAD") and f"{A}/report" in served(crawl, "GET")
    assert any(r.get("dropped") == "head_not_html" and r["url"] == f"{A}/download" for r in crawl["requests"])
    assert f"{A}/report" in crawl["exported"]


def test_scope_keeps_the_crawl_on_its_domains(crawl):
    assert not [r for r in crawl["server"] if r["host"] == "elsewhere.test"]
    assert any(r.get("dropped") == "out_of_scope" for r in crawl["requests"])


def test_per_host_budget_caps_what_one_host_gets(demo_model, tmp_path):
    with ReplayProxy(RecordedWeb.from_records(RECORDS)) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={A}/", "-a", f"model={demo_model}", "-s", f"FOCUS_STORE={tmp_path / 'c.db'}",
             "-s", "DOWNLOAD_DELAY=0.05", "-s", "FOCUS_HOST_BUDGET=3", "-s", "FOCUS_PATIENCE=0"],
            cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=120)
        log = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    pages = [r for r in log if r["host"] == "www.sky.test" and r["path"] != "/robots.txt"]
    assert len(pages) <= 3
    assert "'focus/refused/host_budget':" in result.stderr
