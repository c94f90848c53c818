"""``scrapy evaluate`` and ``scrapy replay``: scoring a real server log, the table, the report, the
plot, user errors, and (when the focused crawl runs) the whole command end to end."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.commands.evaluate import crawl_command, evaluate_logs, format_table, plot_curves
from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.linkgraph import LinkGraph, SamePage
from focuscrawl.replay.metrics import Relevance, crawl_seconds, relevant_per_minute

PROJECT = Path(__file__).resolve().parents[1]
H = "http://ev.test"


def page(*links: str, title: str = "p") -> bytes:
    anchors = " ".join(f'<a href="{link}">{link}</a>' for link in links)
    return f"<html><head><title>{title}</title></head><body>{anchors}</body></html>".encode()


#: home -> a, b, gone(404);  a -> t1 (relevant), b -> old =301=> t2 (relevant);  t1 -> t1copy (a copy)
HTML = [("Content-Type", "text/html")]
RECORDS = {
    f"{H}/": (200, HTML, page("/a", "/b", "/gone")),
    f"{H}/a": (200, HTML, page("/t1")),
    f"{H}/b": (200, HTML, page("/old")),
    f"{H}/old": (301, [("Location", "/t2")], b""),
    f"{H}/t1": (200, HTML, page("/t1copy", title="topic one")),
    f"{H}/t1copy": (200, HTML, page("/t1copy", title="topic one")),
    f"{H}/t2": (200, HTML, page(title="topic two")),
}
LABELS = {f"{H}/": "other", f"{H}/a": "other", f"{H}/b": "other", f"{H}/t1": "topic", f"{H}/t2": "topic"}


def fetch_through(proxy: ReplayProxy, urls: list[str]) -> None:
    """A stand-in crawler: fetch these URLs in order through the proxy (redirects not followed)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}), NoRedirect)
    for url in urls:
        try:
            opener.open(url, timeout=10).read()
        except urllib.error.HTTPError as err:
            err.read()
    assert proxy.wait_idle(timeout=10)


@pytest.fixture
def scored(tmp_path):
    web = RecordedWeb.from_records(RECORDS)
    graph = LinkGraph.from_web(web)
    relevance = Relevance(LABELS, ["topic"], SamePage.for_graph(graph))
    with ReplayProxy(web, robots={"ev.test": "User-agent: *\nAllow: /\n"}) as proxy:
        fetch_through(proxy, [f"{H}/robots.txt", f"{H}/", f"{H}/b", f"{H}/old", f"{H}/t2", f"{H}/gone",
                              f"{H}/a", f"{H}/t1copy", f"{H}/t1"])
        log = proxy.log
    return evaluate_logs([log], graph, relevance, [f"{H}/"], budget=6, random_runs=3)


def test_evaluate_log_scores_the_crawl_and_the_baselines(scored):
    report = scored
    assert report["reachable_relevant"] == 2
    assert report["points"] == [6]
    crawl = report["crawlers"]["focuscrawl"]
    # robots.txt not counted; truncated at the budget: /, b, old, t2, gone, a
    assert crawl["curve"] == [0, 0, 0, 1, 1, 1]
    assert crawl["harvest"]["6"] == pytest.approx(1 / 6) and crawl["recall"]["6"] == 0.5
    # BFS: /, a, b, gone, t1, old, ... -> t1 at request 5
    assert report["crawlers"]["bfs"]["curve"] == [0, 0, 0, 0, 1, 1]
    # oracle: /, a, t1, b, old, t2
    assert report["crawlers"]["oracle"]["curve"] == [0, 0, 1, 1, 1, 2]
    assert report["crawlers"]["oracle"]["recall"]["6"] == 1.0
    assert len(report["crawlers"]["random"]["curve"]) == 6


def test_a_real_log_of_the_bfs_order_scores_exactly_like_the_bfs_simulation():
    """The two accountings agree: served through the proxy (404s, the 301, a copy), the BFS
    request order gives the BFS baseline's curve."""
    from focuscrawl.replay.baselines import bfs_requests

    web = RecordedWeb.from_records(RECORDS)
    graph = LinkGraph.from_web(web)
    relevance = Relevance(LABELS, ["topic"], SamePage.for_graph(graph))
    order = bfs_requests(graph, [f"{H}/"], budget=100)
    assert [status for _, status in order] == [200, 200, 200, 404, 200, 301, 200, 200]
    with ReplayProxy(web) as proxy:
        fetch_through(proxy, [url for url, _ in order])
        report = evaluate_logs([proxy.log], graph, relevance, [f"{H}/"], budget=8, random_runs=2)
    assert [r for r in report["crawlers"]["focuscrawl"]["curve"]] == report["crawlers"]["bfs"]["curve"]
    assert report["crawlers"]["bfs"]["curve"] == [0, 0, 0, 0, 1, 1, 1, 2]


def test_table_report_and_plot(scored, tmp_path):
    table = format_table(scored)
    lines = table.splitlines()
    assert "2 relevant pages reachable" in lines[0]
    row = [ln for ln in lines if ln.strip().startswith("6 |")][0]
    assert "0.167" in row and "50.0%" in row and "100.0%" in row
    json.dumps(scored)  # the report is JSON-ready
    plot_curves(scored, str(tmp_path / "curve.png"))
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_several_crawls_are_reported_as_their_mean_and_each_one(tmp_path):
    web = RecordedWeb.from_records(RECORDS)
    graph = LinkGraph.from_web(web)
    relevance = Relevance(LABELS, ["topic"], SamePage.for_graph(graph))
    logs = []
    for order in (["/", "/b", "/old", "/t2", "/gone", "/a"], ["/", "/a", "/t1", "/b", "/old", "/t2"]):
        with ReplayProxy(web) as proxy:
            fetch_through(proxy, [f"{H}{path}" for path in order])
            logs.append(proxy.log)
    report = evaluate_logs(logs, graph, relevance, [f"{H}/"], budget=6, random_runs=2)
    assert [run["curve"] for run in report["runs"]] == [[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 2]]
    assert [run["recall"]["6"] for run in report["runs"]] == [0.5, 1.0]
    crawl = report["crawlers"]["focuscrawl"]
    assert crawl["curve"] == [0, 0, 0.5, 1, 1, 1.5] and crawl["recall"]["6"] == 0.75
    table = format_table(report)
    assert "the mean of 2 crawls" in table
    lines = table.splitlines()
    each = lines[lines.index("focuscrawl, each crawl (harvest / recall at N; relevant pages per minute):") + 2:]
    assert [row.split()[:4] for row in each] == [["1", "|", "0.167", "50.0%"], ["2", "|", "0.333", "100.0%"]]
    rates = [run["per_minute"] for run in report["runs"]]
    assert all(rate > 0 for rate in rates) and crawl["per_minute"] == pytest.approx(sum(rates) / 2)
    assert [float(row.split()[-1]) for row in each] == [round(rate, 1) for rate in rates]
    json.dumps(report)
    plot_curves(report, str(tmp_path / "curve.png"))
    assert (tmp_path / "curve.png").stat().st_size > 1000
    # one crawl: the report keeps its single-crawl shape
    assert "runs" not in evaluate_logs(logs[:1], graph, relevance, [f"{H}/"], budget=6, random_runs=2)


def timed(*rows):
    """A server log: (path, status, t_start, t_end) per request."""
    return [{"url": f"{H}{path}", "path": path, "method": "GET", "status": status, "t_start": start, "t_end": end}
            for path, status, start, end in rows]


def test_relevant_pages_per_minute_are_counted_on_the_servers_clock():
    web = RecordedWeb.from_records(RECORDS)
    graph = LinkGraph.from_web(web)
    relevance = Relevance(LABELS, ["topic"], SamePage.for_graph(graph))
    # two relevant pages (t1, and t2 behind a redirect) in 30 s from the first start to the last end;
    # robots.txt counts neither as a request nor in the time
    log = timed(("/robots.txt", 200, 0.0, 1.0), ("/", 200, 10.0, 11.0), ("/a", 200, 12.0, 13.0),
                ("/t1", 200, 14.0, 15.0), ("/old", 301, 20.0, 21.0), ("/t2", 200, 39.0, 40.0))
    assert relevant_per_minute(log, relevance) == pytest.approx(2 * 60 / 30)
    assert relevant_per_minute(log, relevance, budget=3) == pytest.approx(1 * 60 / 5)  # the first 3 requests
    assert relevant_per_minute([], relevance) == 0.0
    report = evaluate_logs([log], graph, relevance, [f"{H}/"], budget=5, random_runs=2)
    assert report["crawlers"]["focuscrawl"]["per_minute"] == pytest.approx(4.0)
    assert "focuscrawl: 4.0 relevant pages per minute (0.400 per request at 5)" in format_table(report)
    # the crawl's seconds: the span those figures divide by
    assert crawl_seconds(log) == pytest.approx(30.0) and crawl_seconds(log, budget=3) == pytest.approx(5.0)
    assert crawl_seconds([]) == 0.0
    assert report["crawlers"]["focuscrawl"]["seconds"] == pytest.approx(30.0)


def test_a_users_download_delay_wins_over_the_replays_zero():
    argv = crawl_command("seeds.txt", "m.joblib", 50, "/tmp/x/crawl.db", ["DOWNLOAD_DELAY=1"])
    assert [a for a in argv if a.startswith("DOWNLOAD_DELAY")] == ["DOWNLOAD_DELAY=1"]
    argv = crawl_command("seeds.txt", "m.joblib", 50, "/tmp/x/crawl.db", ["FOCUS_PATIENCE=0"])
    assert [a for a in argv if a.startswith("DOWNLOAD_DELAY")] == ["DOWNLOAD_DELAY=0"]


def test_crawl_command_passes_budget_and_user_settings_last():
    argv = crawl_command("seeds.txt", "m.joblib", 50, "/tmp/x/crawl.db", ["DOWNLOAD_DELAY=0.5"])
    assert argv[1:5] == ["-m", "scrapy", "crawl", "focused"]
    joined = " ".join(argv)
    assert "FOCUS_BUDGET=50" in joined and "FOCUS_STORE=/tmp/x/crawl.db" in joined
    assert argv[-2:] == ["-s", "DOWNLOAD_DELAY=0.5"]


# --- the commands as a user runs them --------------------------------------------------------

def scrapy(args, cwd, timeout=120, **kwargs):
    env = dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings")
    env.pop("http_proxy", None)
    return subprocess.run([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def write_warc(path: Path, records: dict) -> Path:
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, (status, headers, body) in records.items():
            http_headers = StatusAndHeaders(f"{status} X", headers, protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                          http_headers=http_headers))
    return path


@pytest.fixture
def files(tmp_path):
    write_warc(tmp_path / "ev.warc.gz", RECORDS)
    (tmp_path / "labels.tsv").write_text("url\tlabel\n" + "".join(f"{u}\t{l}\n" for u, l in LABELS.items()))
    (tmp_path / "seeds.txt").write_text(f"{H}/\n")
    (tmp_path / "model.joblib").write_bytes(b"not used before the crawl starts")
    return tmp_path


@pytest.mark.parametrize("change, message", [
    ({"--budget": "0"}, "--budget must be at least 1"),
    ({"--runs": "two"}, "--runs must be a whole number of crawls"),
    ({"--latency-ms": "slow"}, "--latency-ms must be a number of milliseconds"),
    ({"--latency-ms": "-5"}, "--latency-ms must not be negative"),
    ({"--positive": "nosuch"}, "no such label"),
    ({"--labels": "missing.tsv"}, "labels file not found"),
    ({"--model": "missing.joblib"}, "model file not found"),
    ({"WARC": "missing.warc.gz"}, "WARC file not found"),
    ({"--labels": None}, "missing --labels"),
])
@pytest.mark.slow
def test_evaluate_user_errors_are_one_line(files, change, message):
    opts = {"WARC": "ev.warc.gz", "--labels": "labels.tsv", "--positive": "topic", "--seeds": "seeds.txt",
            "--model": "model.joblib", "--budget": "5"}
    opts.update(change)
    args = ["evaluate", opts.pop("WARC")]
    for name, value in opts.items():
        if value is not None:
            args += [name, value]
    result = scrapy(args, cwd=files)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [line for line in result.stderr.strip().splitlines()
                                                  if line.startswith("error: ")]
    assert message in result.stderr


@pytest.mark.slow
def test_replay_command_serves_until_sigterm(files):
    log = files / "server.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "replay", "ev.warc.gz", "--log", str(log)],
                            cwd=files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings"))
    try:
        first = proc.stdout.readline()
        assert "at http://127.0.0.1:" in first, first + proc.stderr.read() if proc.poll() is not None else first
        url = first.rsplit(" ", 1)[-1].strip()
        assert f"http_proxy={url}" in proc.stdout.readline()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
        assert opener.open(f"{H}/t2", timeout=10).status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert "stopped after 1 requests" in out
    assert json.loads(log.read_text().splitlines()[0])["url"] == f"{H}/t2"


@pytest.mark.slow
def test_replay_command_serves_a_changing_web(files):
    """--changing: the pages carry validators and a conditional request is answered 304."""
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "replay", "ev.warc.gz", "--changing", "7"],
                            cwd=files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings"))
    try:
        first = proc.stdout.readline()
        assert "at http://127.0.0.1:" in first, first + proc.stderr.read() if proc.poll() is not None else first
        url = first.rsplit(" ", 1)[-1].strip()
        assert "change as they are crawled" in proc.stdout.readline()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": url}))
        etag = opener.open(f"{H}/t2", timeout=10).headers["ETag"]
        assert etag
        with pytest.raises(urllib.error.HTTPError) as answer:
            opener.open(urllib.request.Request(f"{H}/t2", headers={"If-None-Match": etag}), timeout=10)
        assert answer.value.code == 304
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]


@pytest.mark.slow
def test_replay_command_user_errors(files):
    result = scrapy(["replay", "ev.warc.gz", "--port", "70000"], cwd=files)
    assert result.returncode == 2 and result.stderr.startswith("error: --port")
    (files / "robots.json").write_text("[1, 2]")
    result = scrapy(["replay", "ev.warc.gz", "--robots", "robots.json"], cwd=files)
    assert result.returncode == 2 and "JSON object" in result.stderr
    result = scrapy(["replay"], cwd=files)
    assert result.returncode == 2 and "no WARC" in result.stderr
    result = scrapy(["replay", "ev.warc.gz", "--changing", "x"], cwd=files)
    assert result.returncode == 2 and "--changing" in result.stderr
    result = scrapy(["replay", "ev.warc.gz", "--changing", "1", "--labels", "labels.tsv"], cwd=files)
    assert result.returncode == 2 and "--topic" in result.stderr


@pytest.mark.e2e
def test_evaluate_end_to_end_on_the_demo_web(demo_web, demo_files, demo_model, tmp_path):
    seeds = demo_files["seeds"]
    budget = 120
    result = scrapy(["evaluate", str(demo_files["warc"]), "--labels", str(demo_files["labels"]),
                     "--positive", demo_web.topic, "--seeds", str(seeds), "--model", str(demo_model),
                     "--budget", str(budget), "--runs", "2", "-o", "report.json", "--plot", "curve.png"],
                    cwd=tmp_path, timeout=280)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    crawl = report["crawlers"]["focuscrawl"]
    assert 0 < crawl["requests"] <= budget
    assert crawl["found"] > 0
    assert len(report["runs"]) == 2 and all(0 < run["requests"] <= budget and run["found"] for run in report["runs"])
    assert crawl["found"] == pytest.approx(sum(run["found"] for run in report["runs"]) / 2)
    assert "(crawl 2 of 2)" in result.stdout and "each crawl" in result.stdout
    assert report["crawlers"]["oracle"]["found_at"][str(budget)] >= crawl["found"]
    assert (tmp_path / "curve.png").stat().st_size > 1000
    assert "focuscrawl" in result.stdout and "oracle" in result.stdout


def test_several_strategies_are_reported_side_by_side_with_the_baselines(tmp_path):
    from focuscrawl.commands.evaluate import evaluate_strategies

    web = RecordedWeb.from_records(RECORDS)
    graph = LinkGraph.from_web(web)
    relevance = Relevance(LABELS, ["topic"], SamePage.for_graph(graph))
    logs = {}
    for name, orders in (("bestfirst", [["/", "/a", "/t1", "/b", "/old", "/t2"]]),
                         ("bfs", [["/", "/a", "/b", "/gone", "/t1", "/old"], ["/", "/b", "/old", "/t2", "/gone", "/a"]])):
        logs[name] = []
        for order in orders:
            with ReplayProxy(web) as proxy:
                fetch_through(proxy, [f"{H}{path}" for path in order])
                logs[name].append(proxy.log)
    report = evaluate_strategies(logs, graph, relevance, [f"{H}/"], budget=6, random_runs=2)
    assert report["strategies"] == ["bestfirst", "bfs"]
    assert report["crawlers"]["strategy:bestfirst"]["curve"] == [0, 0, 1, 1, 1, 2]
    assert report["crawlers"]["strategy:bfs"]["curve"] == [0, 0, 0, 0.5, 1, 1]  # the mean of its two crawls
    assert report["crawlers"]["bfs"]["curve"] == [0, 0, 0, 0, 1, 1]  # the simulated baseline, apart
    assert [len(report["runs"][name]) for name in report["strategies"]] == [1, 2]
    spans = [run["seconds"] for run in report["runs"]["bfs"]]
    assert all(span >= 0 for span in spans)
    assert report["crawlers"]["strategy:bfs"]["seconds"] == pytest.approx(sum(spans) / 2)
    table = format_table(report)
    head = [ln for ln in table.splitlines() if ln.lstrip().startswith("N |")][0]
    assert [c.strip() for c in head.split("|")[1:]] == ["bestfirst", "bfs", "BFS (sim)", "random (sim)", "oracle (sim)"]
    row = [ln for ln in table.splitlines() if ln.strip().startswith("6 |")][0]
    assert row.split()[2:4] == ["0.333", "100.0%"] and "bfs, each crawl" in table
    json.dumps(report)
    plot_curves(report, str(tmp_path / "curve.png"))
    assert (tmp_path / "curve.png").stat().st_size > 1000


@pytest.mark.slow
def test_evaluate_with_strategies_on_the_demo_web(demo_web, demo_files, demo_model, tmp_path):
    budget = 25
    result = scrapy(["evaluate", str(demo_files["warc"]), "--labels", str(demo_files["labels"]),
                     "--positive", demo_web.topic, "--seeds", str(demo_files["seeds"]), "--model", str(demo_model),
                     "--budget", str(budget), "--runs", "1", "--strategies", "learned,bestfirst,shark,bfs",
                     "-o", "report.json"], cwd=tmp_path, timeout=280)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-2000:]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["strategies"] == ["learned", "bestfirst", "shark", "bfs"] and "runs" not in report
    for name in report["strategies"]:
        crawl = report["crawlers"]["strategy:" + name]
        assert 0 < crawl["requests"] <= budget, name
        assert f"(FOCUS_STRATEGY={name})" in result.stdout
    assert {"bfs", "random", "oracle"} <= set(report["crawlers"])
    assert "shark" in result.stdout and "oracle (sim)" in result.stdout


@pytest.mark.slow
def test_evaluate_strategies_user_errors_are_one_line(files):
    base = ["evaluate", "ev.warc.gz", "--labels", "labels.tsv", "--positive", "topic", "--seeds", "seeds.txt",
            "--model", "model.joblib", "--budget", "5"]
    for extra, message in ((["--strategies", "learned,best"], "each must be one of"),
                           (["--strategies", "bfs,bfs"], "twice"),
                           (["--strategies", "bfs", "-s", "FOCUS_STRATEGY=shark"], "FOCUS_STRATEGY")):
        result = scrapy(base + extra, cwd=files)
        assert result.returncode == 2 and message in result.stderr, result.stderr[-2000:]
        assert all(line.startswith("error: ") for line in result.stderr.strip().splitlines())
