"""Resume after SIGKILL, on a real crawl.

The issue: "with JOBDIR a crawl killed with SIGKILL at any moment resumes with the frontier, the
seen set, the learner and host state as of the last checkpoint (periodic, setting), fetching no
completed page again and losing no item."

One ReplayProxy serves the demo web across both runs, so its log is the ground truth for what
was requested before and after the kill. Run 1 (``FOCUS_CHECKPOINT_SECONDS=0.5``) is killed with
SIGKILL once the server has answered ~KILL_AFTER page requests; run 2 is the same command with the
same JOBDIR, run to completion.

"In flight at the kill": a page the server answered at most IN_FLIGHT_WINDOW seconds before the
kill (or after it) may not have reached the spider and the store yet, so it may be fetched again
and may count twice against the budget. Nothing else may.
"""

from __future__ import annotations

import os
import pickle
import signal
import subprocess
import sys
import time

import pytest

from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.linkgraph import LinkGraph, SamePage
from focuscrawl.replay.metrics import Relevance
from focuscrawl.store import CrawlStore
from focuscrawl.urls import canonicalize

from .conftest import run_scrapy

BUDGET = 200
DELAY = 0.05
CHECKPOINT_SECONDS = 0.5
KILL_AFTER = 60  # page requests answered by the server before the SIGKILL
IN_FLIGHT_WINDOW = CHECKPOINT_SECONDS  # "answered within the last ~0.5 s before the kill"
KILL_WAIT = 120.0  # bounded wait for run 1 to reach KILL_AFTER pages
RUN_TIMEOUT = 240.0
SMALL_BUDGET = 5  # the bad-checkpoint crawls


def _pages(records):
    return [r for r in records if r.get("path") != "/robots.txt" and r.get("method") != "CONNECT" and r.get("url")]


def _store_urls(path) -> set[str]:
    """Canonical url and final_url of every row in the crawl store."""
    store = CrawlStore(str(path), create=False)
    try:
        rows = list(store.iter_pages())
    finally:
        store.close()
    return {canonicalize(r[k]) for r in rows for k in ("url", "final_url") if r.get(k)}


def _stats_dump(stderr: str) -> str:
    marker = "Dumping Scrapy stats"
    return stderr[stderr.rfind(marker):] if marker in stderr else ""


def _crawl_args(tmp, seeds, model, jobdir, extra=()):
    return ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={model}",
            "-s", f"JOBDIR={jobdir}", "-s", f"FOCUS_CHECKPOINT_SECONDS={CHECKPOINT_SECONDS}",
            "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"FOCUS_BUDGET={BUDGET}",
            "-s", f"FOCUS_CRAWL_LOG={tmp / 'requests.jsonl'}", "-s", "LOG_LEVEL=INFO", *extra]


@pytest.fixture(scope="module")
def resumed(demo_web, demo_files, demo_model, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("resume")
    seeds = demo_files["seeds"]
    jobdir = tmp / "job"
    args = _crawl_args(tmp, seeds, demo_model, jobdir)
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(tmp / "server.jsonl")) as proxy:
        env = proxy.crawl_env()
        # --- run 1: killed with SIGKILL mid-crawl -----------------------------------------------
        with open(tmp / "run1.log", "w") as run1_log:
            proc = subprocess.Popen([sys.executable, "-m", "scrapy", *args], cwd=tmp, env=env,
                                    stdout=run1_log, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + KILL_WAIT
                while len(_pages(proxy.log)) < KILL_AFTER:
                    if proc.poll() is not None:
                        pytest.fail(f"run 1 ended (rc {proc.returncode}) before {KILL_AFTER} page requests:\n"
                                    + (tmp / "run1.log").read_text()[-3000:])
                    if time.monotonic() > deadline:
                        pytest.fail(f"run 1 made fewer than {KILL_AFTER} page requests in {KILL_WAIT:.0f}s")
                    time.sleep(0.01)
                t_kill = time.time()
                os.kill(proc.pid, signal.SIGKILL)
            finally:
                if proc.poll() is None and proc.returncode is None:
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        proxy.wait_idle(timeout=5.0)
        time.sleep(0.2)
        proxy.wait_idle(timeout=5.0)
        split = len(proxy.log)
        # what the store held at the kill, before run 2 can touch it
        stored_at_kill = _store_urls(jobdir / "crawl.db")
        checkpoint_at_kill = (jobdir / "focus-frontier.pickle").exists()
        # --- run 2: the same command, same JOBDIR, to completion --------------------------------
        result = run_scrapy(args, cwd=tmp, env={"http_proxy": proxy.url}, timeout=RUN_TIMEOUT)
        proxy.wait_idle(timeout=5.0)
        records = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    before, after = records[:split], records[split:]
    in_flight = {canonicalize(r["url"]) for r in _pages(before) if r["t_end"] >= t_kill - IN_FLIGHT_WINDOW}
    return {
        "tmp": tmp, "jobdir": jobdir, "t_kill": t_kill, "before": before, "after": after,
        "in_flight": in_flight, "stored_at_kill": stored_at_kill, "checkpoint_at_kill": checkpoint_at_kill,
        "stderr": result.stderr,
    }


@pytest.mark.e2e
def test_killed_run_left_a_checkpoint(resumed):
    assert len(_pages(resumed["before"])) >= KILL_AFTER
    assert resumed["checkpoint_at_kill"], "no focus-frontier.pickle in JOBDIR after the SIGKILL"
    assert _pages(resumed["after"]), "the resumed crawl fetched nothing"


@pytest.mark.e2e
def test_no_completed_page_is_fetched_again(resumed):
    """(a) A page answered 200 before the kill whose item reached the store is never requested
    again; only pages in flight at the kill (answered within IN_FLIGHT_WINDOW s of it) may be."""
    completed = {canonicalize(r["url"]) for r in _pages(resumed["before"]) if r["status"] == 200}
    completed &= resumed["stored_at_kill"]
    completed -= resumed["in_flight"]
    again = [r["url"] for r in _pages(resumed["after"]) if canonicalize(r["url"]) in completed]
    assert not again, f"{len(again)} completed pages fetched again after the restart: {again[:10]}"


@pytest.mark.e2e
def test_no_item_is_lost(resumed, demo_web):
    """(b) Every HTML page the server answered 200, before or after the kill, is in the store.
    A page in flight at the kill (released, answered, item never stored) must therefore be
    fetched again by the resumed crawl, ahead of new URLs: the budget was already charged for it."""
    html = {canonicalize(url) for url, (status, headers, _body) in demo_web.records.items()
            if "html" in ({k.lower(): v for k, v in headers}.get("content-type") or "").lower()}
    served = {canonicalize(r["url"]) for r in _pages(resumed["before"] + resumed["after"]) if r["status"] == 200}
    served &= html
    assert served
    stored = _store_urls(resumed["jobdir"] / "crawl.db")
    lost = sorted(served - stored)
    detail = [(r["url"], "before" if r in resumed["before"] else "after", round(r["t_end"] - resumed["t_kill"], 3))
              for r in _pages(resumed["before"] + resumed["after"]) if canonicalize(r["url"]) in lost]
    assert not lost, f"{len(lost)} pages answered 200 are not in the crawl store (url, run, t_end - t_kill): {detail}"


@pytest.mark.e2e
def test_budget_carries_over_the_kill(resumed):
    """(c) Page requests across both runs stay within the budget plus those in flight at the kill."""
    before, after = _pages(resumed["before"]), _pages(resumed["after"])
    in_flight_requests = sum(1 for r in before if r["t_end"] >= resumed["t_kill"] - IN_FLIGHT_WINDOW)
    total = len(before) + len(after)
    assert total <= BUDGET + in_flight_requests, (len(before), len(after), in_flight_requests)


@pytest.mark.e2e
def test_resumed_crawl_does_not_start_from_scratch(resumed, demo_web):
    """(d) No seed answered before the kill is requested again after the restart (a seed still
    queued at the kill may be: the crawl goes on from where it was); the stats say focus/resumed."""
    after = sorted(_pages(resumed["after"]), key=lambda r: r["t_start"])
    seeds = {canonicalize(u) for u in demo_web.seeds}
    settled = {canonicalize(r["url"]) for r in _pages(resumed["before"])
               if r["t_end"] < resumed["t_kill"] - IN_FLIGHT_WINDOW} & seeds
    assert settled, "no seed was answered before the kill: the test shows nothing"
    again = [r["url"] for r in after if canonicalize(r["url"]) in settled]
    assert not again, f"seeds answered before the kill requested again: {again}"
    assert canonicalize(after[0]["url"]) not in settled, after[0]["url"]
    assert "'focus/resumed': 1" in _stats_dump(resumed["stderr"]), _stats_dump(resumed["stderr"])[:3000]
    assert "resumed from" in resumed["stderr"]


@pytest.mark.e2e
def test_resumed_crawl_keeps_robots_state(resumed):
    """Host state came back: robots.txt answered well before the kill is not fetched again."""
    settled = {r["host"] for r in resumed["before"]
               if r.get("path") == "/robots.txt" and r["t_end"] < resumed["t_kill"] - IN_FLIGHT_WINDOW}
    again = sorted({r["host"] for r in resumed["after"] if r.get("path") == "/robots.txt"} & settled)
    assert not again, f"robots.txt fetched again after the restart for {again}"


@pytest.fixture(scope="module")
def uninterrupted(demo_web, demo_files, demo_model, tmp_path_factory):
    """The same crawl never killed: the page requests its server answered."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    args = _crawl_args(tmp, demo_files["seeds"], demo_model, tmp / "job")
    with ReplayProxy(RecordedWeb.from_records(demo_web.records), robots=demo_web.robots) as proxy:
        result = run_scrapy(args, cwd=tmp, env={"http_proxy": proxy.url}, timeout=RUN_TIMEOUT)
        proxy.wait_idle(timeout=5.0)
        records = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    return _pages(records)


@pytest.mark.e2e
def test_resumed_crawl_harvest_shows_the_learner_came_back(resumed, uninterrupted, demo_web):
    """(e) The kill costs the crawl no more than a tenth of its harvest: relevant pages found over
    both runs per page request, against the same crawl never killed (demo web labels). A resumed
    crawl that lost its frontier or its learner starts over from the seeds, whose pages it has."""
    graph = LinkGraph.from_web(RecordedWeb.from_records(demo_web.records))
    relevance = Relevance(demo_web.labels, [demo_web.topic], SamePage.for_graph(graph))

    def harvest(pages):
        found = {relevance.page(r["url"]) for r in pages if 200 <= r["status"] < 300 and relevance.is_relevant(r["url"])}
        return len(found) / len(pages), len(found), len(pages)

    both, never_killed = harvest(_pages(resumed["before"] + resumed["after"])), harvest(uninterrupted)
    assert both[0] >= 0.9 * never_killed[0], (both, never_killed)


# --- a torn or foreign checkpoint ---------------------------------------------------------------

def _truncated_checkpoint() -> bytes:
    """A checkpoint-shaped pickle cut in half, as a kill mid-write without an atomic rename leaves it."""
    state = {"entries": [("www.example.test", 1.0, {"url": f"http://www.example.test/{i}"}, None)
                         for i in range(50)],
             "seen": {f"http://www.example.test/{i}" for i in range(50)}, "released": 3, "timing": {},
             "host_admitted": {}, "robots": {}}
    data = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    return data[: len(data) // 2]


BAD_CHECKPOINTS = {
    "truncated": _truncated_checkpoint,
    "garbage": lambda: b"\x00\x01not a pickle at all\xff" * 10,
    "empty": lambda: b"",
    "foreign-pickle": lambda: pickle.dumps(["not", "a", "checkpoint"]),
    "missing-keys": lambda: pickle.dumps({"entries": []}),
}


@pytest.mark.e2e
@pytest.mark.parametrize("kind", list(BAD_CHECKPOINTS))
def test_bad_checkpoint_is_reported_and_the_crawl_starts_afresh(kind, demo_web, demo_files, demo_model, tmp_path):
    """A torn or foreign JOBDIR/focus-frontier.pickle: one clear ERROR naming the file, a new
    crawl from the seeds, exit 0, no traceback."""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    checkpoint = jobdir / "focus-frontier.pickle"
    checkpoint.write_bytes(BAD_CHECKPOINTS[kind]())
    seeds = demo_files["seeds"]
    args = _crawl_args(tmp_path, seeds, demo_model, jobdir)
    args[args.index(f"FOCUS_BUDGET={BUDGET}")] = f"FOCUS_BUDGET={SMALL_BUDGET}"
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(tmp_path / "server.jsonl")) as proxy:
        result = run_scrapy(args, cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=RUN_TIMEOUT)
        proxy.wait_idle(timeout=5.0)
        pages = sorted(_pages(proxy.log), key=lambda r: r["t_start"])
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if " ERROR: " in line]
    assert any(str(checkpoint) in line for line in errors), errors
    assert "'focus/resumed'" not in _stats_dump(result.stderr)
    assert pages and canonicalize(pages[0]["url"]) in {canonicalize(u) for u in demo_web.seeds}
    assert len(pages) == SMALL_BUDGET
