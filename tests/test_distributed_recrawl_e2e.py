"""End to end: a continuous crawl (FOCUS_RECRAWL) shared by two ``scrapy crawl focused`` processes
through a real Redis, over a web that changes while it is crawled (``ChangingWeb`` behind the
replay proxy). The worker holding the revisit plan is killed (SIGKILL) mid-crawl; the other takes
the plan up from its snapshot and the events since and goes on revisiting. Audited from the
server's side: pages revisited and changes found, no page fetched twice for one due time, every
request polite."""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import socket
import sqlite3
import time
from collections import defaultdict

import pytest

from focuscrawl.backends.worker_state import WORKER_STATE
from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.replay import ChangeMix, ChangingWeb

from .conftest import run_scrapy
from .test_distributed_crawl_e2e import DELAY, demo_replay, start_worker, wait_all

pytestmark = pytest.mark.e2e

BUDGET = 500
MIN_INTERVAL = 2.0
CRAWL_ID = "recrawl"
FAST = ChangeMix(hot_share=0.5, never_share=0.3, hot_interval=(2.0, 4.0), cold_interval=(20.0, 40.0))


def page_records(path) -> list[dict]:
    try:
        return [r for r in load_log(path) if r["path"] != "/robots.txt"]
    except (FileNotFoundError, ValueError):
        return []


def revisited(records: list[dict]) -> int:
    seen, again = set(), 0
    for record in records:
        again += record["url"] in seen
        seen.add(record["url"])
    return again


@pytest.fixture(scope="module")
def shared_recrawl(demo_web, demo_files, demo_model, tmp_path_factory, redis_server):
    out = tmp_path_factory.mktemp("shared-recrawl")
    extra = ["-s", "FOCUS_RECRAWL=1", "-s", "FOCUS_RECRAWL_SHARE=0.4",
             "-s", f"FOCUS_RECRAWL_MIN_INTERVAL={MIN_INTERVAL}",
             "-s", "FOCUS_RECRAWL_REALLOCATE_SECONDS=0.5", "-s", f"FOCUS_BUDGET={BUDGET}",
             "-s", "FOCUS_WORKER_TIMEOUT=3", "-s", f"FOCUS_CRAWL_ID={CRAWL_ID}", "-s", "JOBDIR=job",
             "-s", "FOCUS_CRAWL_LOG=requests.jsonl"]

    def changes(web):
        return ChangingWeb(web, demo_web.relevant_urls(), seed=3, relevant_mix=FAST, other_mix=FAST)

    with demo_replay(demo_web, redis_server, out, changes) as (proxy, log):
        workers = [start_worker(i, out, demo_files["seeds"], demo_model, proxy.url, redis_server.url, extra)
                   for i in range(2)]
        # the holder of the plan is killed once revisits are under way
        deadline = time.monotonic() + 150
        victim, killed_at = None, None
        with redis_server.client() as client:
            while time.monotonic() < deadline and all(w.poll() is None for w in workers):
                holder = client.get(f"focus:{{{CRAWL_ID}}}:revisits:leader") or b""
                records = page_records(log)
                if holder and len(records) >= 100 and revisited(records) >= 5:
                    victim = next((w for w in workers
                                   if holder.startswith(f"{socket.gethostname()}-{w.pid}-".encode())), None)
                    break
                time.sleep(0.1)
        assert victim is not None, "no worker held the plan while revisits were under way"
        os.kill(victim.pid, signal.SIGKILL)
        killed_at = time.time()
        survivor = next(w for w in workers if w is not victim)
        wait_all([survivor], timeout=240)
        victim.wait()
    index = workers.index(survivor)
    text = (out / f"w{index}" / "crawl.log").read_text()
    assert survivor.returncode == 0, text[-3000:]
    stats = {m.group(1): int(m.group(2)) for m in re.finditer(r"'(focus/[^']+)': (\d+)", text)}
    store = out / f"w{index}" / "crawl.db"
    db = sqlite3.connect(store)
    page, = db.execute("SELECT final_url FROM pages WHERE status = 200 AND relevant = 1 ORDER BY id LIMIT 1").fetchone()
    db.close()
    explained = run_scrapy(["explain", page, "--store", str(store), "-s", f"FOCUS_FRONTIER_URL={redis_server.url}",
                            "-s", f"FOCUS_CRAWL_ID={CRAWL_ID}", "-s", "FOCUS_RECRAWL=1"], cwd=out)
    with open(out / f"w{index}" / "job" / WORKER_STATE, "rb") as handle:
        worker_state = pickle.load(handle)
    requests = []  # both workers' request logs (the killed one's up to its kill)
    for i in range(2):
        for line in (out / f"w{i}" / "requests.jsonl").read_text().splitlines():
            try:
                requests.append(json.loads(line))
            except ValueError:
                pass  # a line torn by the kill
    return {"server": load_log(log), "log": text, "stats": stats, "killed_at": killed_at, "explained": explained,
            "worker_state": worker_state, "requests": requests}


def test_the_survivor_takes_the_plan_up_and_goes_on_revisiting(shared_recrawl):
    text, stats = shared_recrawl["log"], shared_recrawl["stats"]
    assert re.search(r"this worker holds the revisit plan now: [1-9]\d* pages \(from its snapshot\)", text), \
        text[-3000:]
    after = [r for r in shared_recrawl["server"] if r["t_start"] > shared_recrawl["killed_at"] + 3.0
             and r["path"] != "/robots.txt"]
    fetched_before = {r["url"] for r in shared_recrawl["server"] if r["t_start"] <= shared_recrawl["killed_at"]}
    assert sum(r["url"] in fetched_before for r in after) >= 5  # pages found before the kill, revisited after
    # the changes found, and those not found, by the events folded into the plan it took up
    assert stats.get("focus/revisits/changed", 0) >= 1 and stats.get("focus/revisits/unchanged", 0) >= 1, stats
    assert stats.get("focus/revisits/shared/takeovers", 0) >= 1


def test_a_workers_jobdir_keeps_its_own_state_not_the_crawls_plan(shared_recrawl):
    state = shared_recrawl["worker_state"]
    assert "revisits" in state and state["revisits"] is None  # the plan is the crawl's, in Redis


def test_explain_reads_the_shared_plan(shared_recrawl):
    explained = shared_recrawl["explained"]
    assert explained.returncode == 0, explained.stderr[-2000:]
    assert "kept fresh (FOCUS_RECRAWL)" in explained.stdout


def test_no_revisit_is_fetched_twice_for_one_due_time(shared_recrawl):
    """A page handed out twice (by a holder, and again by its successor) would be fetched twice
    within its host's delay; revisits of one page are due at least FOCUS_RECRAWL_MIN_INTERVAL
    after its visit. (A page the killed worker had fetched and not finished is queued again by
    the frontier, as in any shared crawl: that fetch is not a revisit.)"""
    fetches = defaultdict(list)
    for request in shared_recrawl["requests"]:
        if request.get("revisit") and "status" in request:
            fetches[request["url"]].append(request["time"])
    close = {url: times for url, times in fetches.items()
             if any(b - a < MIN_INTERVAL / 2 for a, b in zip(sorted(times), sorted(times)[1:]))}
    assert not close, close
    assert sum(len(times) for times in fetches.values()) >= 20
    # each revisit the workers logged is one the server answered
    served = defaultdict(int)
    for record in shared_recrawl["server"]:
        served[record["url"]] += 1
    assert all(served[url] >= len(times) + 1 for url, times in fetches.items())


def test_revisits_across_workers_are_polite(shared_recrawl, demo_web):
    report = audit_report(shared_recrawl["server"], robots=demo_web.robots, delays=DELAY)
    assert report["violation_counts"] == {"gap": 0, "concurrency": 0, "disallowed": 0, "robots_not_first": 0,
                                          "retry_after": 0, "excluded": 0}, report["violations"]
    statuses = {r["status"] for r in shared_recrawl["server"]}
    assert 304 in statuses  # revisits are conditional, whichever worker sends them
