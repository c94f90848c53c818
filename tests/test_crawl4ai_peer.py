"""bench/peers/crawl4ai_peer.py's own parts: the budget split, the capped replay, the scoring glue,
the politeness audit, the arguments, the runner's reading of the server's log. crawl4ai is not
needed (it lives in its own environment); the one test that crawls with it is slow and skipped
where that environment is absent."""

from __future__ import annotations

import importlib.util
import json
import socket
import sys
import urllib.request
from pathlib import Path

import pytest

from focuscrawl.replay import RecordedWeb
from focuscrawl.replay.metrics import Relevance
from focuscrawl.replay.recorded import RecordedResponse

PEERS = Path(__file__).resolve().parents[1] / "bench" / "peers"


def load(name: str):
    module_name = f"focuscrawl_bench_peers_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, PEERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


peer = load("crawl4ai_peer")
runner = load("crawl4ai_runner")


def rec(url, status=200, t=0.0, dt=0.01, **extra):
    host = url.split("/")[2]
    path = "/" + url.split("/", 3)[3] if url.count("/") > 2 else "/"
    return {"t_start": t, "t_end": t + dt, "method": "GET", "url": url, "host": host, "path": path,
            "status": status, "bytes": 10, "conn": 1, **extra}


# --- the budget split --------------------------------------------------------------------------------


def test_seed_caps_split_the_budget_evenly_and_pass_on_what_is_left():
    assert peer.seed_cap(0, 1000, 4) == 250
    assert peer.seed_cap(250, 1000, 3) == 500
    assert peer.seed_cap(400, 1000, 2) == 700  # the second start URL used 150 of its 250
    assert peer.seed_cap(700, 1000, 1) == 1000
    assert peer.seed_cap(1003, 1000, 1) == 1003  # past the budget: nothing more
    with pytest.raises(ValueError):
        peer.seed_cap(0, 1000, 0)


# --- the capped replay ------------------------------------------------------------------------------


def fetch(proxy, url):
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))
    try:
        with opener.open(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_the_replay_serves_up_to_its_cap_and_refuses_the_rest(tmp_path):
    web = RecordedWeb([RecordedResponse(f"http://a.test/{i}", 200, (("Content-Type", "text/html"),), b"<p>x</p>")
                       for i in range(5)])
    log = tmp_path / "server.jsonl"
    proxy = peer.CappedReplayProxy(web, cap=2, log_path=str(log)).start()
    try:
        got = [fetch(proxy, f"http://a.test/{i}")[0] for i in range(3)]
        robots = fetch(proxy, "http://a.test/robots.txt")[0]
        proxy.cap = 4  # the next start URL's share
        more = [fetch(proxy, f"http://a.test/{i}")[0] for i in range(3, 5)] + [fetch(proxy, "http://a.test/0")[0]]
        proxy.wait_idle()
    finally:
        proxy.stop()
    assert got == [200, 200, 429]
    assert robots == 404  # robots.txt is never counted, never refused
    assert more == [200, 200, 429]
    assert (proxy.served, proxy.refused) == (4, 2)
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["status"] for r in records if r.get("refused")] == [429, 429]
    # the runner counts what the replay served, as the scoring does
    assert runner.ServerLog(str(log)).refresh() == 4


def test_the_runner_reads_the_log_as_it_grows(tmp_path):
    log = tmp_path / "server.jsonl"
    server = runner.ServerLog(str(log))
    assert server.refresh() == 0  # not there yet
    lines = [rec("http://a.test/1"), rec("http://a.test/robots.txt"), {**rec("http://a.test/2"), "refused": True},
             {"t_start": 0, "t_end": 0, "method": "CONNECT", "url": "b.test:443", "host": "", "path": "",
              "status": 501}]
    text = "".join(json.dumps(r) + "\n" for r in lines)
    log.write_text(text[:-5])  # the last line half written
    assert server.refresh() == 1
    log.write_text(text + json.dumps(rec("http://a.test/3")) + "\n")
    assert server.refresh() == 2
    budget = runner.Budget(server)
    budget.cap = 2
    assert budget.spent()
    budget.cap = 3
    assert not budget.spent()


def test_keywords_are_single_words_each_once():
    assert runner.keyword_list("Professor faculty research associate professor".split()) == [
        "professor", "faculty", "research", "associate"]


def test_the_runner_refuses_everything_but_loopback():
    runner.install_network_guard()  # idempotent enough for a test process: loopback still works
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("example.org", 80)
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("192.0.2.1", 80))  # TEST-NET-1: refused before any packet
    assert any("example.org" in b for b in runner.BLOCKED)
    assert any("192.0.2.1" in b for b in runner.BLOCKED)
    assert socket.getaddrinfo("127.0.0.1", 80)


@pytest.fixture
def restore_socket():
    saved = (socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto, socket.getaddrinfo)
    yield
    socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto, socket.getaddrinfo = saved


test_the_runner_refuses_everything_but_loopback = pytest.mark.usefixtures("restore_socket")(
    test_the_runner_refuses_everything_but_loopback)


# --- scoring -----------------------------------------------------------------------------------------


def test_a_crawl_is_scored_over_its_first_budget_counted_requests():
    labels = {f"http://a.test/r{i}": "topic" for i in range(4)} | {"http://a.test/o": "other"}
    relevance = Relevance(labels, ["topic"])
    log = [rec("http://a.test/robots.txt", 404, t=0.0),  # not counted
           rec("http://a.test/r0", t=1.0), rec("http://a.test/o", t=2.0), rec("http://a.test/r1", 404, t=3.0),
           rec("http://a.test/r2", t=4.0), rec("http://a.test/r0", t=5.0),  # fetched twice: found once
           rec("http://a.test/r3", t=6.0, dt=1.0),  # the 6th counted request: past a budget of 5
           {**rec("http://a.test/r3", 429, t=7.0), "refused": True}]
    row = peer.score_row(log, relevance, reachable=4, budget=5, web="w", topic="topic", crawler="crawl4ai-x", run=0)
    assert set(row) == {"web", "topic", "crawler", "run", "requests", "recall", "harvest", "relevant_per_minute",
                        "seconds"}
    assert row["requests"] == 5
    assert row["recall"] == pytest.approx(2 / 4)
    assert row["harvest"] == {"5": pytest.approx(2 / 5)}
    assert row["seconds"] == pytest.approx(4.01)  # first counted start to the fifth's end
    assert row["relevant_per_minute"] == pytest.approx(60 * 2 / 4.01)


def test_harvest_is_reported_at_100_500_and_the_budget():
    assert peer.harvest_points(1000) == [100, 500, 1000]
    assert peer.harvest_points(300) == [100, 300]
    assert peer.harvest_points(500) == [100, 500]
    assert peer.harvest_points(50) == [50]


def test_a_crawl_that_stopped_early_found_nothing_with_the_requests_it_did_not_make():
    relevance = Relevance({"http://a.test/r": "topic"}, ["topic"])
    row = peer.score_row([rec("http://a.test/r", t=1.0)], relevance, reachable=2, budget=100, web="w", topic="t",
                         crawler="c", run=1)
    assert (row["requests"], row["recall"], row["harvest"]) == (1, 0.5, {"100": 0.01})
    assert row["seconds"] == pytest.approx(0.01)  # one request, 10 ms by the server's clock
    assert row["relevant_per_minute"] == pytest.approx(60 * 1 / 0.01)


def test_recall_of_the_pages_kept_counts_each_relevant_page_once():
    relevance = Relevance({"http://a.test/r": "topic", "http://a.test/s": "topic", "http://a.test/o": "other"},
                          ["topic"])
    kept = ["http://a.test/r", "http://a.test/r", "http://a.test/o", "http://a.test/unknown"]
    assert peer.kept_recall(kept, relevance, 4) == 0.25
    assert peer.kept_recall(kept, relevance, 0) == 0.0


# --- politeness --------------------------------------------------------------------------------------


def test_politeness_counts_robots_overlaps_and_gaps():
    log = [rec("http://a.test/1", t=0.0, dt=0.5), rec("http://a.test/2", t=0.1, dt=0.5),  # open at once
           rec("http://a.test/3", t=2.0), rec("http://b.test/1", t=0.0), rec("http://b.test/robots.txt", 404, t=5.0),
           {**rec("http://b.test/2", 429, t=6.0), "refused": True},
           {"t_start": 1.0, "t_end": 1.0, "method": "CONNECT", "url": "c.test:443", "host": "", "path": "", "status": 501}]
    audit = peer.politeness(log + [rec("http://b.test/private/x", t=9.0), rec("http://b.test/private/x", t=10.0)],
                            robots={"b.test": "User-agent: *\nDisallow: /private/\n"})
    assert audit["disallowed"] == 2 and audit["repeated"] == 1  # private/x, twice
    audit = peer.politeness(log)
    assert audit["disallowed"] == 0
    assert audit["requests"] == 6 and audit["hosts"] == 2
    assert audit["robots_txt"] == 1 and audit["refused"] == 1
    assert audit["max_open_per_host"] == 2
    assert audit["overlapping_share"] == pytest.approx(1 / 6)
    assert audit["median_gap"] == pytest.approx((1.0 + 1.9) / 2)  # of 0.1, 1.9 (a.test) and 5.0, 1.0 (b.test)
    assert audit["gaps_under_1s"] == pytest.approx(1 / 4)
    assert audit["min_end_gap"] == pytest.approx(-0.4)
    assert peer.politeness([])["median_gap"] is None


# --- arguments and skips -----------------------------------------------------------------------------


def test_names_are_checked():
    assert peer.parse_names("bestfirst, adaptive", peer.STRATEGIES, "--strategies") == ["bestfirst", "adaptive"]
    assert peer.parse_names(None, peer.STRATEGIES, "--strategies") is None
    for bad in ("bfs", "", "bestfirst,bestfirst"):
        with pytest.raises(peer.PeerError, match="--strategies"):
            peer.parse_names(bad, peer.STRATEGIES, "--strategies")
    assert peer.parse_runs("2") == 2
    for bad in ("0", "two", None):
        with pytest.raises(peer.PeerError, match="--runs"):
            peer.parse_runs(bad)


def test_bad_arguments_are_one_line_errors(tmp_path, capsys):
    assert peer.main(["--strategies", "bfs", "-o", str(tmp_path / "r.json")]) == 2
    assert peer.main(["--runs", "0", "-o", str(tmp_path / "r.json")]) == 2
    assert peer.main(["-o", str(tmp_path / "no" / "such" / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and all(line.startswith("error: ") for line in err)


def test_a_missing_crawl4ai_environment_is_one_line_and_a_skip(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert peer.main(["--python", str(tmp_path / "venv" / "bin" / "python"), "-o", str(out)]) == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert len(printed) == 1 and printed[0].startswith("crawl4ai: skipped: no python at")
    result = json.loads(out.read_text())
    assert result["peer"] == "crawl4ai" and result["rows"] == [] and "crawl4ai" in result["skipped"]


def test_the_runner_environment_is_its_own(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    monkeypatch.setenv("NO_PROXY", "*")
    env = peer.runner_env("http://127.0.0.1:1234", tmp_path)
    assert env["HOME"] == env["CRAWL4_AI_BASE_DIRECTORY"] == str(tmp_path)
    assert env["http_proxy"] == env["https_proxy"] == "http://127.0.0.1:1234"
    assert "PYTHONPATH" not in env and "NO_PROXY" not in env


def test_the_table_has_a_line_per_crawl():
    row = {"web": "demo", "topic": "astronomy", "crawler": "crawl4ai-bestfirst", "run": 0, "requests": 300,
           "recall": 0.5, "harvest": {"100": 0.5, "300": 0.25}, "relevant_per_minute": 10.0, "seconds": 30.0}
    audit = {"web": "demo", "topic": "astronomy", "crawler": "crawl4ai-bestfirst", "run": 0, "robots_txt": 0,
             "max_open_per_host": 5, "overlapping_share": 0.3, "median_gap": 0.01, "gaps_under_1s": 0.9,
             "refused": 1, "blocked": 0}
    table = peer.format_table([row], [audit])
    assert "crawl4ai-bestfirst" in table and "50.0%" in table and "0.250" in table


# --- with crawl4ai -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.e2e
def test_crawl4ai_crawls_only_through_the_replay_and_within_its_cap(tmp_path, demo_files):
    version, why = peer.crawl4ai_version(str(peer.DEFAULT_PYTHON))
    if version is None:
        pytest.skip(why)
    web = RecordedWeb.from_warcs([demo_files["warc"]])
    seeds = demo_files["seeds"].read_text().split()[:2]
    log, said = peer.run_crawl(str(peer.DEFAULT_PYTHON), "bestfirst", web, seeds, ["astronomy", "telescope"], 40,
                               tmp_path, timeout=300)
    served = peer.served_records(log)
    counted = [r for r in served if r.get("path") != "/robots.txt" and r.get("method") != "CONNECT"]
    assert 0 < len(counted) <= 40
    assert said["blocked"] == []
    assert [s["index"] for s in said["seeds"]] == [0, 1]
    assert all(s["counted"] <= cap for s, cap in zip(said["seeds"], (20, 40)))
    kept = [url for s in said["seeds"] for url in s["kept"]]
    assert kept and set(kept) <= {r["url"] for r in served if 200 <= r["status"] < 300}
