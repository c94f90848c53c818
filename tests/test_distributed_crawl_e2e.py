"""End to end: several ``scrapy crawl focused`` processes share one crawl through a real Redis,
over the demo web served by the replay proxy; audited from the server's side."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import pytest

from focuscrawl.politeness.audit import audit_report, load_log
from focuscrawl.replay import RecordedWeb, ReplayProxy

pytestmark = pytest.mark.e2e

DELAY = 0.1


def start_worker(index: int, out: Path, seeds: Path, model: Path, proxy_url: str, redis_url: str,
                 extra: list[str] = ()) -> subprocess.Popen:
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings", http_proxy=proxy_url)
    env.pop("https_proxy", None)
    folder = out / f"w{index}"
    folder.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={model}",
            "-O", str(folder / "relevant.jsonl"), "-s", f"FOCUS_STORE={folder / 'crawl.db'}",
            "-s", f"FOCUS_FRONTIER_URL={redis_url}", "-s", "FOCUS_CRAWL_ID=e2e",
            "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "LOG_LEVEL=INFO", *extra]
    return subprocess.Popen(args, cwd=folder, env=env, stdout=subprocess.DEVNULL,
                            stderr=(folder / "crawl.log").open("w"))


def wait_all(workers, timeout=180):
    deadline = time.monotonic() + timeout
    for worker in workers:
        try:
            worker.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for w in workers:
                w.kill()
            raise


@contextmanager
def demo_replay(demo_web, redis_server, out: Path, changes=None):
    """The demo web replayed for a fresh shared crawl (its Redis flushed): ``(proxy, log)``, the
    server's log in ``out/server.jsonl``; ``changes(web)``: how the web changes as it is crawled."""
    redis_server.flush()
    log = out / "server.jsonl"
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots, log_path=str(log),
                     changes=changes(web) if changes is not None else None) as proxy:
        yield proxy, log


def items(out: Path, workers: int) -> list[dict]:
    rows = []
    for i in range(workers):
        path = out / f"w{i}" / "relevant.jsonl"
        if path.exists():
            rows += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows


@pytest.fixture(scope="module")
def shared_crawl(demo_web, demo_files, demo_model, tmp_path_factory, redis_server):
    out = tmp_path_factory.mktemp("shared")
    with demo_replay(demo_web, redis_server, out) as (proxy, log):
        workers = [start_worker(i, out, demo_files["seeds"], demo_model, proxy.url, redis_server.url)
                   for i in range(2)]
        wait_all(workers)
    logs = [(out / f"w{i}" / "crawl.log").read_text() for i in range(2)]
    for worker, text in zip(workers, logs, strict=True):
        assert worker.returncode == 0, text[-3000:]
    return {"out": out, "server": load_log(log), "logs": logs}


def test_two_workers_share_the_crawl_politely(shared_crawl, demo_web):
    records = shared_crawl["server"]
    report = audit_report(records, robots=demo_web.robots, delays=DELAY)
    assert report["violation_counts"] == {"gap": 0, "concurrency": 0, "disallowed": 0, "robots_not_first": 0,
                                          "retry_after": 0, "excluded": 0}, report["violations"]
    robots = Counter(r["host"] for r in records if r["path"] == "/robots.txt")
    assert robots and max(robots.values()) == 1  # one worker fetched it, the other took its rules


def test_both_workers_fetched_and_no_page_twice(shared_crawl):
    pages = [r for r in shared_crawl["server"] if r["path"] != "/robots.txt"]
    fetched = Counter(r["url"] for r in pages)
    assert fetched and max(fetched.values()) == 1
    for text in shared_crawl["logs"]:
        assert "focus/requests_released" in text  # each worker took part
    assert all("'focus/requests_released': 0" not in text for text in shared_crawl["logs"])


def test_relevant_pages_are_exported_once_across_workers(shared_crawl):
    rows = items(shared_crawl["out"], 2)
    urls = Counter(row["url"] for row in rows)
    assert rows and max(urls.values()) == 1


def page_lines(log: Path) -> int:
    try:
        return sum(1 for line in log.read_text().splitlines() if line and "/robots.txt" not in line)
    except FileNotFoundError:
        return 0


@pytest.fixture(scope="module")
def killed_crawl(demo_web, demo_files, demo_model, tmp_path_factory, redis_server, shared_crawl):
    """Three workers; worker 0 is killed with SIGKILL mid-crawl, the others finish the crawl."""
    out = tmp_path_factory.mktemp("killed")
    with demo_replay(demo_web, redis_server, out) as (proxy, log):
        workers = [start_worker(i, out, demo_files["seeds"], demo_model, proxy.url, redis_server.url,
                                ["-s", "FOCUS_WORKER_TIMEOUT=3"]) for i in range(3)]
        deadline = time.monotonic() + 120
        while page_lines(log) < 120 and workers[0].poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        # killed while it holds a host or has pages not done (its lease tokens and work fields start
        # with its worker id: host-PID-...): frozen first and checked again, so the kill cannot race
        # the worker's own release
        mine = f"{socket.gethostname()}-{workers[0].pid}-".encode()
        with redis_server.client() as client:
            def holds_something() -> bool:
                return any(token.startswith(mine) for token in client.hvals("focus:{e2e}:lease")) or \
                    any(field.startswith(mine) for field in client.hkeys("focus:{e2e}:work"))

            while workers[0].poll() is None and time.monotonic() < deadline:
                if holds_something():
                    os.kill(workers[0].pid, signal.SIGSTOP)
                    if holds_something():
                        break
                    os.kill(workers[0].pid, signal.SIGCONT)
                time.sleep(0.002)
        assert workers[0].poll() is None, "worker 0 finished before it could be killed"
        os.kill(workers[0].pid, signal.SIGKILL)
        wait_all(workers)
    for i, worker in enumerate(workers[1:], start=1):
        assert worker.returncode == 0, (out / f"w{i}" / "crawl.log").read_text()[-3000:]
    with redis_server.client() as client:
        stats = {k.decode(): int(v) for k, v in client.hgetall("focus:{e2e}:stats").items()}
    return {"out": out, "server": load_log(log), "stats": stats}


def fetched_pages(records) -> Counter:
    return Counter(r["url"] for r in records if r["path"] != "/robots.txt" and r["status"] == 200)


def test_a_killed_worker_loses_no_page(killed_crawl, shared_crawl):
    """The crawl finishes without the dead worker: every page the uninterrupted crawl fetched is
    fetched, and a page fetched twice is one the dead worker held (its lease or its work reaped)."""
    fetched = fetched_pages(killed_crawl["server"])
    assert set(fetched) == set(fetched_pages(shared_crawl["server"]))
    twice = sum(n - 1 for n in fetched.values())
    stats = killed_crawl["stats"]
    assert stats.get("leases_reaped", 0) + stats.get("work_requeued", 0) >= 1
    assert twice <= stats.get("leases_reaped", 0) + stats.get("work_requeued", 0)


def test_a_killed_worker_breaks_no_politeness(killed_crawl, demo_web):
    report = audit_report(killed_crawl["server"], robots=demo_web.robots, delays=DELAY)
    assert report["violation_counts"]["gap"] == 0 and report["violation_counts"]["concurrency"] == 0, \
        report["violations"]


# --- what one worker concluded of a host, taken up by the next ------------------------------------

def _slash_web() -> RecordedWeb:
    """A host that answers ``/people/pN`` with a redirect to ``/people/pN/``; the first worker's
    seed links two of them (its evidence), the second's the rest."""
    html = [("Content-Type", "text/html; charset=utf-8")]

    def page(title: str, links) -> bytes:
        anchors = " ".join(f'<a href="{href}">{title} notes {href}</a>' for href in links)
        return f"<html><head><title>{title}</title></head><body><p>{title} writes {anchors}</p></body></html>".encode()

    records = {"http://a.test/first.html": (200, html, page("First", ["/people/p0", "/people/p1"])),
               "http://a.test/second.html": (200, html, page("Second", [f"/people/p{n}" for n in range(2, 8)]))}
    for n in range(8):
        records[f"http://a.test/people/p{n}"] = (301, [("Location", f"http://a.test/people/p{n}/")], b"")
        records[f"http://a.test/people/p{n}/"] = (200, html, page(f"Person {n}", []))
    return RecordedWeb.from_records(records)


def test_a_worker_spends_no_redirect_on_a_rule_another_learned(demo_model, tmp_path, redis_url):
    from .conftest import run_scrapy

    log = tmp_path / "server.jsonl"
    with ReplayProxy(_slash_web(), log_path=str(log)) as proxy:
        for name in ("first", "second"):
            result = run_scrapy(["crawl", "focused", "-a", f"seeds=http://a.test/{name}.html",
                                 "-a", f"model={demo_model}",
                                 "-s", f"FOCUS_FRONTIER_URL={redis_url}", "-s", "FOCUS_CRAWL_ID=conclusions",
                                 "-s", "DOWNLOAD_DELAY=0", "-s", "FOCUS_PATIENCE=0",
                                 "-s", f"FOCUS_STORE={tmp_path / f'{name}.db'}"],
                                cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=120)
            assert result.returncode == 0, result.stderr[-2000:]
        proxy.wait_idle(timeout=5.0)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    redirected = sorted(r["path"] for r in records if r.get("status") == 301)
    fetched = {r["path"] for r in records if r.get("status") == 200}
    assert redirected == ["/people/p0", "/people/p1"]  # the first worker's evidence; none for the second
    assert {f"/people/p{n}/" for n in range(8)} <= fetched
