"""End to end: a continuous crawl (FOCUS_RECRAWL) of a web that changes while it is crawled
(``ChangingWeb`` through the replay proxy): revisits go out with their validators, unchanged
pages are answered 304 and cost no item, changed pages are stored again, feeds are read, and
politeness holds for revisits as for any request, audited from the server's log."""

from __future__ import annotations

import json
import re
import sqlite3
from collections import Counter

import pytest

from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.replay import ChangeMix, ChangingWeb, RecordedWeb, ReplayProxy, freshness_report

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

BUDGET = 400
DELAY = 0.05
# fast enough to change several times while the test crawls (seconds); a third of the pages never
# change, so that revisits find unchanged pages however long the crawl takes on this machine
FAST = ChangeMix(hot_share=0.5, never_share=0.3, hot_interval=(2.0, 4.0), cold_interval=(20.0, 40.0))


@pytest.fixture(scope="module")
def recrawl(demo_web, demo_files, demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("recrawl")
    server_log = out / "server.jsonl"
    web = RecordedWeb.from_records(demo_web.records)
    changes = ChangingWeb(web, demo_web.relevant_urls(), seed=3, relevant_mix=FAST, other_mix=FAST)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(server_log), changes=changes) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={demo_model}",
             "-O", str(out / "relevant.jsonl"), "-s", f"FOCUS_STORE={out / 'crawl.db'}",
             "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
             "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"FOCUS_BUDGET={BUDGET}", "-s", "FOCUS_RECRAWL=1",
             "-s", "FOCUS_RECRAWL_SHARE=0.4", "-s", "FOCUS_RECRAWL_MIN_INTERVAL=1",
             "-s", "FOCUS_RECRAWL_REALLOCATE_SECONDS=0.5", "-s", "LOG_LEVEL=INFO"],
            cwd=out, env={"http_proxy": proxy.url},
        )
        log = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    stats = {m.group(1): int(m.group(2)) for m in re.finditer(r"'(focus/[^']+)': (\d+)", result.stderr)}
    return {"out": out, "log": log, "server": load_log(server_log), "stats": stats, "changes": changes,
            "stderr": result.stderr}


def test_revisits_are_conditional_and_a_304_costs_no_item(recrawl):
    stats = recrawl["stats"]
    assert stats.get("focus/revisits/queued", 0) >= 20, stats
    # how many of each depends on when the pages changed against when the crawl came back: a
    # few seconds of crawl, so the counts vary from run to run; both kinds must be there
    assert stats.get("focus/revisits/not_modified", 0) >= 1  # the server said 304
    assert stats.get("focus/revisits/changed", 0) >= 5
    statuses = Counter(r["status"] for r in recrawl["server"])
    assert statuses[304] == stats["focus/revisits/not_modified"]
    # a page fetched more than once was revisited; a 304 is always an answer to a revisit
    fetched = Counter(r["url"] for r in recrawl["server"] if r["status"] in (200, 304) and "version" in r)
    assert any(n > 1 for n in fetched.values())


def test_the_request_log_says_why_each_revisit_was_sent_and_what_it_found(recrawl):
    lines = [json.loads(line) for line in (recrawl["out"] / "requests.jsonl").read_text().splitlines()]
    revisits = [r for r in lines if r.get("revisit")]
    assert revisits and all(isinstance(r["revisit"], str) for r in revisits)
    assert any(r["status"] == 304 for r in revisits)
    assert any(r.get("changed") is True for r in revisits)  # a new version, scored
    assert all(r["status"] != 304 for r in lines if not r.get("revisit"))  # only revisits are conditional


def test_changed_pages_are_stored_as_their_new_version(recrawl):
    db = sqlite3.connect(recrawl["out"] / "crawl.db")
    rows = db.execute("SELECT url, extra, etag FROM pages WHERE extra LIKE '%revisit%'").fetchall()
    assert rows, "no revisit found a change"
    url, extra, etag = rows[0]
    assert json.loads(extra)["revisit"]
    served = [r for r in recrawl["server"] if r["url"] == url and r["status"] == 200]
    assert len(served) >= 2 and etag  # fetched again, and stored with the new version's validators
    assert recrawl["stats"]["focus/revisits/items"] >= len(rows)


def test_revisits_pass_the_same_politeness_gate_and_budget(recrawl, demo_web):
    records = [r for r in recrawl["server"] if r["path"] != "/robots.txt"]
    assert len(records) == BUDGET  # revisits count against the budget; the crawl ends there
    report = audit_report(recrawl["server"], robots=demo_web.robots, delays=DELAY)
    assert report["violation_counts"]["gap"] == 0 and report["violation_counts"]["concurrency"] == 0, report["violations"]
    assert report["violation_counts"]["disallowed"] == 0


def test_feeds_are_read_and_the_fresh_copies_measured(recrawl, demo_web):
    assert recrawl["stats"].get("focus/feeds/read", 0) >= 1
    server = recrawl["server"]
    start, end = server[0]["t_start"], server[-1]["t_end"]
    report = freshness_report(recrawl["log"], recrawl["changes"], demo_web.relevant_urls(), start, end)
    assert report["pages"] > 10
    assert 0.0 < report["freshness"] <= 1.0


def test_the_revisit_plan_survives_a_resume_and_explains_itself(demo_web, demo_files, demo_model, tmp_path):
    web = RecordedWeb.from_records(demo_web.records)
    changes = ChangingWeb(web, demo_web.relevant_urls(), seed=5, relevant_mix=FAST, other_mix=FAST)
    jobdir = tmp_path / "job"

    def crawl(budget: int) -> dict:
        with ReplayProxy(web, robots=demo_web.robots, changes=changes) as proxy:
            result = run_scrapy(
                ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={demo_model}",
                 "-s", f"JOBDIR={jobdir}", "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"FOCUS_BUDGET={budget}",
                 "-s", "FOCUS_RECRAWL=1", "-s", "FOCUS_RECRAWL_SHARE=0.4", "-s", "FOCUS_RECRAWL_MIN_INTERVAL=1",
                 "-s", "FOCUS_RECRAWL_REALLOCATE_SECONDS=0.5", "-s", "LOG_LEVEL=INFO"],
                cwd=tmp_path, env={"http_proxy": proxy.url})
        assert result.returncode == 0, result.stderr[-3000:]
        return {m.group(1): int(m.group(2)) for m in re.finditer(r"'(focus/[^']+)': (\d+)", result.stderr)}

    first = crawl(150)
    tracked = first["focus/revisits/plan/pages"]
    assert tracked > 20
    db = sqlite3.connect(jobdir / "crawl.db")
    page, = db.execute("SELECT final_url FROM pages WHERE status = 200 AND relevant = 1 ORDER BY id LIMIT 1").fetchone()
    db.close()
    explained = run_scrapy(["explain", page, "--jobdir", str(jobdir)], cwd=tmp_path)
    assert explained.returncode == 0, explained.stderr[-2000:]
    assert "kept fresh (FOCUS_RECRAWL)" in explained.stdout
    second = crawl(300)
    assert second.get("focus/resumed") == 1
    assert second["focus/revisits/plan/pages"] >= tracked  # the plan came back with the checkpoint
    assert second.get("focus/revisits/queued", 0) > 0


def test_a_revisited_page_gone_leaves_the_plan_and_keeps_its_stored_version(demo_web, demo_files, demo_model, tmp_path):
    """A page that answers 404 when revisited: no item replaces its stored version, and it is not
    revisited again."""
    records = dict(demo_web.records)
    web = RecordedWeb.from_records(records)
    changes = ChangingWeb(web, demo_web.relevant_urls(), seed=9, relevant_mix=FAST, other_mix=FAST)

    class Vanishing(ReplayProxy):
        """Every page answers 404 once it has been fetched: the whole web is gone at the revisits,
        whether or not the page would have changed (a conditional revisit of an unchanged page
        would otherwise be answered 304)."""

        served: set = set()

        def _lookup_changing(self, url, path, method, request_headers, t):
            if url in self.served:
                return 404, [("Content-Type", "text/html")], b"<html>gone</html>", None
            answer = super()._lookup_changing(url, path, method, request_headers, t)
            if answer[0] == 200 and answer[3] is not None:
                self.served.add(url)
            return answer

    with Vanishing(web, robots=demo_web.robots, changes=changes) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={demo_model}",
             "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "FOCUS_BUDGET=250",
             "-s", "FOCUS_RECRAWL=1", "-s", "FOCUS_RECRAWL_SHARE=0.4", "-s", "FOCUS_RECRAWL_MIN_INTERVAL=1",
             "-s", "FOCUS_RECRAWL_REALLOCATE_SECONDS=0.5", "-s", "LOG_LEVEL=INFO"],
            cwd=tmp_path, env={"http_proxy": proxy.url})
        log = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    stats = {m.group(1): int(m.group(2)) for m in re.finditer(r"'(focus/[^']+)': (\d+)", result.stderr)}
    assert stats.get("focus/revisits/gone", 0) >= 1
    gone = Counter(r["url"] for r in log if r["status"] == 404 and r["url"] in Vanishing.served)
    assert gone and max(gone.values()) == 1  # a page gone is not revisited again
    db = sqlite3.connect(tmp_path / "crawl.db")
    assert db.execute("SELECT COUNT(*) FROM pages WHERE status = 404 AND url IN (%s)" % ",".join("?" * len(gone)),
                      list(gone)).fetchone()[0] == 0  # its stored version stands
