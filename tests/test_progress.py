"""The crawl's live status and progress line: the counting core driven by hand (a clock of its
own), and real crawls of the demo web on 127.0.0.1 whose progress lines, stats and live status
are checked against what the crawl itself counted."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import textwrap

import pytest

from focuscrawl.observe.progress import budget_text, duration, progress_line, progress_stats
from focuscrawl.observe.status import (
    ACTIVE, BLOCKED, HOST_STATES, IDLE, READY, WAITING, Curve, ProgressCounter, eta_seconds, host_state,
)
from focuscrawl.replay import RecordedWeb, ReplayProxy

from .conftest import PROJECT, run_scrapy


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += seconds


def page(n: int) -> dict:
    return {"url": f"http://a.test/{n}", "title": f"page {n}", "score": 0.9, "fetched_at": f"t{n}"}


# --- the core ------------------------------------------------------------------------------------
def test_harvest_recent_counts_the_relevant_pages_found_over_the_last_window_requests():
    clock = Clock()
    counter = ProgressCounter(window=10, clock=clock)
    assert (counter.harvest(), counter.harvest_recent(), counter.request_rate()) == (None, None, None)
    # 20 requests, a relevant page after each of the first 10, none after the next 10
    for n in range(20):
        clock.tick(1.0)
        counter.request("a.test")
        if n < 10:
            counter.found("a.test", page(n))
        if n == 4:  # fewer requests than the window: over all of them
            assert counter.harvest_recent() == counter.harvest() == 1.0
    assert counter.harvest() == 10 / 20
    assert counter.harvest_recent() == 0.0  # the last 10 requests found nothing
    for n in range(5):  # 5 more requests, 4 relevant pages
        clock.tick(1.0)
        counter.request("a.test")
        if n:
            counter.found("a.test", page(100 + n))
    assert counter.harvest_recent() == 4 / 10
    assert counter.harvest() == 14 / 25
    assert counter.request_rate() == pytest.approx(1.0)  # 10 requests over the last 10 s


def test_the_curve_stays_bounded_and_evenly_spaced_however_long_the_crawl():
    clock = Clock()
    counter = ProgressCounter(window=50, curve_points=40, clock=clock)
    for n in range(1, 100_001):
        clock.tick(0.01)
        counter.request(f"h{n % 7}.test")
        if n % 3 == 0:
            counter.found("h0.test", page(n))
    clock.tick(2.0)
    curve = counter.curve()
    assert 20 <= len(curve) <= 40
    stored = curve[:-1]
    steps = {b["requests"] - a["requests"] for a, b in zip(stored, stored[1:])}
    assert len(steps) == 1 and steps.pop() > 1  # evenly thinned
    assert curve[0] == {"requests": 0, "seconds": 0.0, "relevant": 0}
    assert curve[-1] == {"requests": 100_000, "seconds": pytest.approx(1002.0), "relevant": 33_333}
    for a, b in zip(curve, curve[1:]):
        assert a["requests"] < b["requests"] and a["seconds"] <= b["seconds"] and a["relevant"] <= b["relevant"]
    for point in stored:  # each point as it was when its request was sent (the pages found before it)
        n = point["requests"]
        assert point == {"requests": n, "seconds": pytest.approx(n * 0.01), "relevant": (n - 1) // 3 if n else 0}


def test_a_curve_point_is_not_repeated_when_the_last_stored_one_is_current():
    curve = Curve(max_points=8)
    for n in range(1, 5):
        curve.add(n, float(n), n)
    assert [p["requests"] for p in curve.current(4, 4.0, 4)] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError):
        Curve(max_points=2)


def test_eta_is_the_budget_left_at_the_recent_request_rate():
    clock = Clock()
    counter = ProgressCounter(window=10, clock=clock)
    assert counter.eta(100) is None  # no rate yet
    for _ in range(20):  # 2 requests a second over the last 10 requests ...
        clock.tick(0.5)
        counter.request("a.test")
    assert counter.eta(None) is None and counter.eta(0) is None
    assert counter.eta(100) == pytest.approx(80 / 2.0)
    clock.tick(5.0)  # ... and a stall: the rate falls as time passes without requests
    assert counter.eta(100) == pytest.approx(80 / (10 / 10.0))
    assert counter.eta(100, done=90, rate=5.0) == pytest.approx(2.0)  # a shared crawl's count and rate
    assert counter.eta(20) == 0.0
    counter.finish()
    assert counter.eta(100) == 0.0
    assert eta_seconds(100, 50, None) is None and eta_seconds(100, 50, 0.0) is None
    assert eta_seconds(100, 50, 10.0) == 5.0 and eta_seconds(100, 120, 10.0) == 0.0


def test_elapsed_time_and_rates_stop_when_the_crawl_finishes():
    clock = Clock()
    counter = ProgressCounter(window=4, clock=clock)
    clock.tick(10.0)
    counter.start()  # the spider opens later than the counter was made
    assert counter.pages_per_second() == 0.0
    for _ in range(8):
        clock.tick(1.0)
        counter.request("a.test")
        counter.page("a.test", scored=True)
    assert counter.elapsed() == pytest.approx(8.0)
    assert counter.pages_per_second() == pytest.approx(1.0)  # the last 4 pages, over the 4 s they took
    counter.finish()
    clock.tick(100.0)
    assert counter.elapsed() == pytest.approx(8.0)
    assert counter.pages_per_second() == pytest.approx(1.0)


def test_hosts_tally_yield_and_waste_and_the_best_come_first():
    counter = ProgressCounter(clock=Clock())
    for host, fetched, relevant, errors, duplicates in (("a.test", 10, 2, 1, 0), ("b.test", 4, 3, 0, 1),
                                                          ("c.test", 6, 2, 2, 0), ("d.test", 1, 0, 1, 0)):
        for n in range(fetched):
            counter.request(host)
            counter.page(host, scored=n >= errors)
        for n in range(relevant):
            counter.found(host, page(n))
        for _ in range(duplicates):
            counter.duplicate(host)
    best = counter.best_hosts(3)
    assert [host for host, _ in best] == ["b.test", "a.test", "c.test"]  # relevant, then fetched
    b = dict(best)["b.test"]
    assert (b.requests, b.fetched, b.relevant, b.waste, b.value()) == (4, 4, 3, 1, 0.75)
    assert dict(counter.best_hosts(10))["c.test"].waste == 2
    assert counter.pages == 21 - 4 and counter.relevant == 7


def test_latest_relevant_pages_come_newest_first_and_are_bounded():
    counter = ProgressCounter(latest_kept=5, clock=Clock())
    for n in range(12):
        counter.found("a.test", page(n))
    assert [p["url"] for p in counter.latest_relevant(3)] == [f"http://a.test/{n}" for n in (11, 10, 9)]
    assert len(counter.latest_relevant(50)) == 5 and counter.latest_relevant(0) == []


def test_host_states():
    now = 50.0
    state = lambda **kw: host_state(**{"in_flight": False, "queued": 3, "ready_at": None, "blocked": False,  # noqa: E731
                                       "now": now, **kw})
    assert state(in_flight=True, blocked=True) == ACTIVE
    assert state(queued=0, blocked=True) == IDLE
    assert state(blocked=True, ready_at=now + 10) == BLOCKED
    assert state(ready_at=now + 0.5) == WAITING
    assert state(ready_at=now) == state() == READY
    assert state(queued=None, ready_at=now + 1) == WAITING  # a shared frontier: queued not known
    assert set(HOST_STATES) == {ACTIVE, WAITING, READY, BLOCKED, IDLE}


def test_the_progress_line_and_stats_say_what_is_known():
    snapshot = {"elapsed": 3725.2, "requests": 12345, "pages": 12000, "relevant": 6100, "harvest": 0.49413,
                "harvest_recent": 0.6, "recent_window": 200, "pages_per_second": 3.2, "frontier": 98765,
                "hosts": {"active": 8, "waiting": 20, "blocked": 1}, "budget": 20000, "eta_seconds": 130.0,
                "finished": False}
    assert progress_line(snapshot) == (
        "1h02m elapsed, 12,345 requests, 12,000 pages, 6,100 relevant, harvest 0.494 (0.600 over the last 200 "
        "requests), frontier 98,765, hosts 8 active / 20 waiting / 1 blocked, budget 20,000: 61% spent, 2m10s left")
    shared = {**snapshot, "budget": None, "eta_seconds": None, "frontier": None, "harvest": None,
              "hosts": {"active": 2, "waiting": None, "blocked": 0}}
    line = progress_line(shared)
    assert "frontier ?" in line and "harvest - (" in line and "/ ? waiting /" in line and line.endswith("no budget")
    stats = progress_stats(shared)
    assert stats["focus/progress/requests"] == 12345 and stats["focus/progress/hosts_active"] == 2
    assert not {"focus/progress/frontier", "focus/progress/harvest", "focus/progress/hosts_waiting",
                "focus/progress/eta_seconds"} & set(stats)
    assert budget_text({"budget": 100, "requests": 100, "finished": True}) == "budget 100: 100% spent"
    assert budget_text({"budget": 100, "requests": 10, "crawl_requests": 50, "eta_seconds": None}) == \
        "budget 100: 50% spent, ? left"
    assert [duration(s) for s in (None, 0, 59.4, 61, 7199)] == ["?", "0s", "59s", "1m01s", "1h59m"]


# --- a real crawl: the progress line in the log, the figures in the stats ---------------------------
BUDGET = 150
DELAY = 0.1
LINE = re.compile(
    r"progress(?P<final> \(finished\))?: (?P<elapsed>\S+) elapsed, (?P<requests>[\d,]+) requests, "
    r"(?P<pages>[\d,]+) pages, (?P<relevant>[\d,]+) relevant, harvest (?P<harvest>[\d.]+|-) "
    r"\((?P<recent>[\d.]+|-) over the last 200 requests\), frontier (?P<frontier>[\d,]+), "
    r"hosts (?P<active>\d+) active / (?P<waiting>\d+) waiting / (?P<blocked>\d+) blocked, "
    r"budget 150: (?P<share>\d+)% spent")


def _stats(stderr: str) -> dict:
    """The final stats dump of a crawl's log, as a dict."""
    marker = "Dumping Scrapy stats:"
    assert marker in stderr, stderr[-3000:]
    text = stderr[stderr.rfind(marker) + len(marker):]
    text = text[:text.index("}") + 1]
    return ast.literal_eval(re.sub(r"datetime\.datetime\([^)]*\)", "None", text))


@pytest.fixture(scope="module")
def logged_crawl(demo_web, demo_files, demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("progress")
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={demo_files['seeds']}", "-a", f"model={demo_model}",
             "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"FOCUS_BUDGET={BUDGET}",
             "-s", "FOCUS_PROGRESS_SECONDS=1", "-s", "LOG_LEVEL=INFO", "-O", str(out / "relevant.jsonl")],
            cwd=out, env={"http_proxy": proxy.url})
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [(match.groupdict(), line) for line in result.stderr.splitlines() if (match := LINE.search(line))]
    return {"lines": lines, "stats": _stats(result.stderr), "stderr": result.stderr,
            "exported": len((out / "relevant.jsonl").read_text().splitlines())}


@pytest.mark.slow
def test_the_crawl_logs_a_progress_line_every_second_and_a_final_one(logged_crawl, demo_web):
    lines = logged_crawl["lines"]
    periodic = [fields for fields, _ in lines if not fields["final"]]
    final = [fields for fields, _ in lines if fields["final"]]
    assert len(final) == 1 and lines[-1][0]["final"], [line for _, line in lines]
    assert len(periodic) >= 2, logged_crawl["stderr"][-3000:]
    assert "progress:" not in logged_crawl["stderr"].split("progress (finished)")[1]  # nothing after the end
    number = lambda fields, key: int(fields[key].replace(",", ""))  # noqa: E731
    rows = periodic + final
    for key in ("requests", "pages", "relevant"):
        values = [number(fields, key) for fields in rows]
        assert values == sorted(values), (key, values)
    assert number(rows[0], "requests") < BUDGET
    for fields in rows:
        requests, pages, relevant = (number(fields, k) for k in ("requests", "pages", "relevant"))
        assert relevant <= pages <= requests
        if requests:
            assert float(fields["harvest"]) == pytest.approx(relevant / requests, abs=0.0006)
        if requests <= 200:  # fewer requests than the window: the recent harvest is the harvest
            assert fields["recent"] == fields["harvest"]
        assert int(fields["share"]) == min(100, 100 * requests // BUDGET)
        assert int(fields["active"]) + int(fields["waiting"]) + int(fields["blocked"]) <= len(demo_web.robots)
    assert number(final[0], "requests") == BUDGET
    assert int(final[0]["active"]) == 0  # nothing in flight once finished
    assert "left" in next(line for fields, line in lines if not fields["final"])


@pytest.mark.slow
def test_the_final_figures_are_the_crawls_own_counts_and_go_to_the_stats(logged_crawl):
    stats = logged_crawl["stats"]
    final = next(fields for fields, _ in logged_crawl["lines"] if fields["final"])
    assert stats["focus/progress/requests"] == stats["focus/requests_released"] == BUDGET
    assert stats["focus/progress/pages"] == stats["focus/pages/scored"] == int(final["pages"].replace(",", ""))
    assert stats["focus/progress/relevant"] == stats["focus/items/relevant"] == logged_crawl["exported"] > 0
    assert stats["focus/progress/relevant"] == int(final["relevant"].replace(",", ""))
    assert stats["focus/progress/harvest"] == pytest.approx(stats["focus/items/relevant"] / BUDGET, abs=1e-4)
    assert stats["focus/progress/frontier"] == stats["focus/frontier/left"] == int(final["frontier"].replace(",", ""))
    assert stats["focus/progress/eta_seconds"] == 0.0
    assert stats["focus/progress/elapsed_seconds"] > 1.0 and stats["focus/progress/pages_per_second"] > 0
    assert {"focus/progress/hosts_active", "focus/progress/hosts_waiting", "focus/progress/hosts_blocked",
            "focus/progress/harvest_recent"} <= set(stats)


@pytest.mark.slow
def test_no_progress_line_when_it_is_turned_off(demo_model, tmp_path):
    """FOCUS_PROGRESS_SECONDS=0: the extension says why it is off, and no line is shown."""
    result = run_scrapy(["crawl", "focused", "-a", "seeds=http://127.0.0.1:9/", "-a", f"model={demo_model}",
                         "-s", "FOCUS_ALLOWED_NETWORKS=127.0.0.1", "-s", "FOCUS_PROGRESS_SECONDS=0",
                         "-s", "LOG_LEVEL=INFO"], cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Spider closed" in result.stderr
    assert "no progress line (FOCUS_PROGRESS_SECONDS=0)" in result.stderr
    assert "progress:" not in result.stderr and "progress (finished)" not in result.stderr


# --- the live status of an in-process crawl: the console's contract ---------------------------------
IN_PROCESS = textwrap.dedent('''
    import json, sys
    from scrapy import signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings
    from focuscrawl.frontier.entries import decode
    from focuscrawl.meta import ROBOTS_FOR
    from focuscrawl.observe.progress import Progress
    from focuscrawl.observe.status import CrawlStatus

    seeds, model, store, out = sys.argv[1:5]
    frontier_url = sys.argv[5] if len(sys.argv) > 5 else None  # a crawl shared on Redis
    settings = get_project_settings()
    settings.setdict({"FOCUS_STORE": store, "DOWNLOAD_DELAY": 0.05, "FOCUS_BUDGET": 120, "LOG_LEVEL": "INFO",
                      "FOCUS_PROGRESS_SECONDS": 1}, priority="cmdline")
    if frontier_url:
        settings.set("FOCUS_FRONTIER_URL", frontier_url, priority="cmdline")
    process = CrawlerProcess(settings)
    crawler = process.create_crawler("focused")
    seen = {}

    def everything(status):
        return {"snapshot": status.snapshot(), "curve": status.curve(), "hosts": status.hosts(limit=50),
                "top": status.top_urls(10), "latest": status.latest_relevant(5)}

    def on_item(item, response=None, spider=None):
        status = CrawlStatus.of(crawler)
        if "mid" in seen or status.counter.relevant < 15:
            return
        seen["mid"] = everything(status)
        if frontier_url:
            return  # its queues are in Redis: nothing to read the slow way here
        scheduler = crawler.engine._slot.scheduler  # the status' view hides it: the test reads it directly
        # every entry of the frontier, read the slow way: the best of each host, and why the scheduler
        # would say it chose the URL (its explanation at release)
        best, why = {}, {}
        for host, entry in scheduler.frontier.entries():
            meta = getattr(entry.payload, "meta", {}) or {}
            if meta.get(ROBOTS_FOR):
                continue
            best[host] = max(best.get(host, float("-inf")), entry.priority)
            why[entry.url] = [[n, v] for n, v in scheduler.strategy.explain(entry.url, meta)]
        seen["best_per_host"] = best
        seen["release_why"] = {row["url"]: why.get(row["url"]) for row in seen["mid"]["top"]}
        seen["queued"] = {host: scheduler.frontier.host_size(host) for host in best}

    crawler.signals.connect(on_item, signal=signals.item_scraped)
    process.crawl(crawler, seeds=seeds, model=model)
    process.start()
    status = CrawlStatus.of(crawler)
    progress = [ext for ext in crawler.extensions.middlewares if isinstance(ext, Progress)]
    seen["final"] = everything(status)
    seen["shared_instance"] = len(progress) == 1 and progress[0].status is status is CrawlStatus.of(crawler)
    seen["stats"] = {k: v for k, v in crawler.stats.get_stats().items() if isinstance(v, (int, float))}
    with open(out, "w") as fh:
        json.dump(seen, fh)
''')


def crawl_in_process(demo_web, demo_files, demo_model, tmp, *extra: str) -> dict:
    (tmp / "crawl.py").write_text(IN_PROCESS)
    web = RecordedWeb.from_records(demo_web.records)
    with ReplayProxy(web, robots=demo_web.robots) as proxy:
        result = subprocess.run(
            [sys.executable, str(tmp / "crawl.py"), str(demo_files["seeds"]), str(demo_model), str(tmp / "crawl.db"),
             str(tmp / "seen.json"), *extra], cwd=tmp, env=proxy.crawl_env(), capture_output=True, text=True,
            timeout=240)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "crawl status:" not in result.stderr, result.stderr[-3000:]  # no figure failed to be read
    seen = json.loads((tmp / "seen.json").read_text())
    assert "mid" in seen, "the crawl found too few relevant pages to look at it mid-way"
    return seen


@pytest.fixture(scope="module")
def live(demo_web, demo_files, demo_model, tmp_path_factory):
    return crawl_in_process(demo_web, demo_files, demo_model, tmp_path_factory.mktemp("live"))


@pytest.mark.slow
def test_one_status_per_crawler_shared_with_the_progress_extension(live):
    assert live["shared_instance"]


@pytest.mark.slow
def test_the_snapshot_mid_crawl_and_at_the_end(live):
    mid, final, stats = live["mid"]["snapshot"], live["final"]["snapshot"], live["stats"]
    assert set(mid) >= {"elapsed", "requests", "pages", "relevant", "harvest", "harvest_recent", "recent_window",
                        "pages_per_second", "frontier", "hosts", "budget", "eta_seconds", "finished"}
    assert not mid["finished"] and final["finished"]
    assert mid["relevant"] >= 15
    assert 0 < mid["requests"] < final["requests"] == 120 == mid["budget"] == stats["focus/requests_released"]
    assert mid["frontier"] > 0 and mid["eta_seconds"] > 0 and final["eta_seconds"] == 0.0
    assert mid["recent_window"] == 200 and mid["harvest"] == pytest.approx(mid["relevant"] / mid["requests"], abs=1e-4)
    assert set(mid["hosts"]) >= {"active", "waiting", "blocked"}
    assert all(isinstance(v, int) for v in mid["hosts"].values())
    assert final["relevant"] == stats["focus/items/relevant"] and final["pages"] == stats["focus/pages/scored"]
    assert final["hosts"]["active"] == 0


@pytest.mark.slow
def test_the_curve_ends_at_the_current_figures(live):
    for when in ("mid", "final"):
        curve, snapshot = live[when]["curve"], live[when]["snapshot"]
        assert curve[0] == {"requests": 0, "seconds": 0.0, "relevant": 0}
        assert (curve[-1]["requests"], curve[-1]["relevant"]) == (snapshot["requests"], snapshot["relevant"])
        assert [p["requests"] for p in curve] == sorted({p["requests"] for p in curve})
    assert len(live["final"]["curve"]) == 121  # a point a request, and the start


@pytest.mark.slow
def test_hosts_are_the_crawls_hosts_best_first_with_their_state(live):
    rows, final = live["final"]["hosts"], live["final"]["snapshot"]
    assert rows and all(set(row) >= {"host", "state", "fetched", "relevant", "yield", "waste", "delay", "queued"}
                        for row in rows)
    assert [(-r["relevant"], -r["fetched"]) for r in rows] == sorted((-r["relevant"], -r["fetched"]) for r in rows)
    assert sum(r["relevant"] for r in rows) == final["relevant"]
    assert sum(r["requests"] for r in rows) == final["requests"]
    assert all(r["state"] in HOST_STATES and r["state"] != ACTIVE for r in rows)
    for row in rows:
        assert row["yield"] == pytest.approx(row["relevant"] / row["fetched"] if row["fetched"] else 0.0, abs=1e-4)
        assert row["delay"] >= DELAY_IN_PROCESS and row["waste"] <= row["fetched"]
    assert sum(r["queued"] for r in rows) <= final["frontier"]
    mid_rows = live["mid"]["hosts"]
    assert {r["host"]: r["queued"] for r in mid_rows if r["host"] in live["queued"]} == {
        host: n for host, n in live["queued"].items() if host in {r["host"] for r in mid_rows}}


DELAY_IN_PROCESS = 0.05


@pytest.mark.slow
def test_top_urls_are_the_frontiers_best_and_say_why_as_the_scheduler_does(live):
    top = live["mid"]["top"]
    best = live["best_per_host"]
    assert len(top) == min(10, len(best)) > 0
    assert [row["priority"] for row in top] == sorted((row["priority"] for row in top), reverse=True)
    # the best URL of each of the best hosts, as a full read of the frontier finds them
    expected = sorted(best.values(), reverse=True)[:len(top)]
    assert [row["priority"] for row in top] == pytest.approx([round(p, 4) for p in expected], abs=1e-4)
    assert len({row["host"] for row in top}) == len(top)
    for row in top:
        assert row["url"].startswith(f"http://{row['host']}/")
        assert row["why"] and row["why"] == live["release_why"][row["url"]]


@pytest.mark.slow
def test_latest_relevant_pages(live):
    latest = live["final"]["latest"]
    assert len(latest) == 5
    assert all(set(p) == {"url", "title", "score", "fetched_at"} and p["score"] >= 0.5 for p in latest)
    assert [p["fetched_at"] for p in latest] == sorted((p["fetched_at"] for p in latest), reverse=True)


def test_a_crawl_shared_on_redis_gives_what_can_be_known(demo_web, demo_files, demo_model, redis_url, tmp_path):
    seen = crawl_in_process(demo_web, demo_files, demo_model, tmp_path, redis_url)
    mid, final = seen["mid"], seen["final"]
    assert seen["shared_instance"]
    assert mid["snapshot"]["shared"] and not mid["snapshot"]["finished"] and final["snapshot"]["finished"]
    assert final["snapshot"]["requests"] == final["snapshot"]["crawl_requests"] == 120  # the only worker
    assert final["snapshot"]["relevant"] == seen["stats"]["focus/items/relevant"] > 0
    assert mid["snapshot"]["frontier"] > 0 and mid["snapshot"]["eta_seconds"] > 0
    assert mid["snapshot"]["hosts"]["waiting"] is None and isinstance(mid["snapshot"]["hosts"]["active"], int)
    assert mid["top"] == []  # its queues are in Redis
    assert mid["hosts"] and all(isinstance(row["queued"], int) and row["state"] in HOST_STATES for row in mid["hosts"])
    assert sum(row["queued"] for row in mid["hosts"]) <= mid["snapshot"]["frontier"]
    assert final["curve"][-1]["requests"] == 120 and len(final["latest"]) == 5


def test_the_package_stays_import_light():
    code = "import sys, focuscrawl.observe; print(sorted(m for m in ('scrapy', 'matplotlib', 'rich') if m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
