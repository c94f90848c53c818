"""Several crawler processes sharing one crawl on Redis, on the WebKB replay: politeness audited
from the server's side, a worker killed with SIGKILL, and scaling.

    python bench/shared_crawl.py --workers 1,2,4 [--budget 1000] [--delay 0.25] [--topic course]
    python bench/shared_crawl.py --workers 3 --kill 0.4 --runs 3     # kill -9 one of 3 at 40%
    python bench/shared_crawl.py --workers 0,1,2 --delay 0 --runs 3 -s FOCUS_PATIENCE=0   # scaling
    python bench/shared_crawl.py --workers 1 --delay 0 --runs 4 -s FOCUS_PATIENCE=0 \
        --tree before=../focuscrawl-base --tree after=.      # two versions of the code, alternated

Each configuration runs ``--runs`` times, alternated, each time with a fresh crawl on a throwaway
``redis-server`` and a fresh ReplayProxy over WebKB's WARC (``../shared/webkb``): ``N`` processes
``scrapy crawl focused -s FOCUS_FRONTIER_URL=redis://... -s FOCUS_BUDGET=B`` started together
with the same seeds (the first to get there seeds the crawl), each with its own store and feed.
``--workers 0`` is the baseline: one process whose frontier is in the process (no Redis).
With ``--kill F``, worker 0 is killed with SIGKILL once the server has answered F x budget
requests; the others finish the crawl.

Reported for each run, from the server's log: counted requests and their span (pages per second:
counted requests over the seconds from the first to the last), relevant pages found (WebKB's
labels, one page per alias), the politeness audit (``focuscrawl.politeness.audit``: gaps under
the host's delay, two connections to one host, disallowed paths, robots.txt not first), pages
answered 200 more than once, and from Redis the leases reaped and the pages queued again; from the
workers' feeds, relevant pages exported more than once across workers. CPU, not wall time, is what a
shared machine measures well: ``worker_cpu_ms`` is the workers' CPU (user and system, from the
kernel's accounting of the waited children, start-up included) per counted request, ``redis_cpu_ms``
redis-server's (``INFO cpu``) over the same run; ``round_trips`` the commands and pipelines the
workers sent Redis and waited for per counted request (``sent_ahead``: those not waited for),
``rescored`` the records the shared frontier re-scored and ``links_read`` those whose link features a
worker read from Redis, not having them (from the workers' logs); ``--commandstats`` prints Redis's
time by command after each run.

With ``--tree NAME=PATH`` (repeatable) the workers run the focuscrawl of each tree in turn (its
``PYTHONPATH``), alternated run by run with the worker counts, and the table has a row per tree and
count: a before/after comparison under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.commands.evaluate import crawl_command  # noqa: E402
from focuscrawl.politeness.audit import audit_report  # noqa: E402
from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases  # noqa: E402
from focuscrawl.replay.metrics import Relevance, counted_requests, load_labels, read_log  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402
from summary import markdown_table  # noqa: E402

WEBKB = ROOT.parent / "shared" / "webkb"
SEEDS = "http://www.cs.cornell.edu/,http://www.cs.utexas.edu/,http://www.cs.washington.edu/,http://www.cs.wisc.edu/"
CRAWL_ID = "bench"


def lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return sum(1 for _ in fh)
    except FileNotFoundError:
        return 0


def children_cpu() -> float:
    """CPU seconds (user and system) of this process's children waited so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def redis_cpu(server: RedisServer) -> float:
    """redis-server's CPU seconds so far (its main thread and its children)."""
    with server.client() as client:
        info = client.info("cpu")
    return sum(float(info.get(key, 0.0)) for key in ("used_cpu_user", "used_cpu_sys"))


def run(web: RecordedWeb, server: RedisServer, model: str, workers: int, opts, workdir: Path,
        tree: str | None = None) -> dict:
    server.flush()
    log = workdir / "server.jsonl"
    killed_at = None
    if opts.commandstats:
        with server.client() as client:
            client.config_resetstat()
    cpu_start, redis_start = children_cpu(), redis_cpu(server)
    with ReplayProxy(web, log_path=str(log), latency_ms=opts.latency_ms) as proxy:
        procs = []
        # 0 workers: one process with its frontier in the process, the baseline without Redis
        shared = [f"FOCUS_FRONTIER_URL={server.url}", f"FOCUS_CRAWL_ID={CRAWL_ID}"] if workers else []
        for i in range(max(1, workers)):
            folder = workdir / f"w{i}"
            folder.mkdir()
            argv = crawl_command(SEEDS, model, opts.budget, str(folder / "crawl.db"),
                                 [f"DOWNLOAD_DELAY={opts.delay}", *shared, *opts.set]) + ["-O", str(folder / "relevant.jsonl")]
            env = proxy.crawl_env()
            if tree:
                env["PYTHONPATH"] = tree
            procs.append(subprocess.Popen(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL,
                                          stderr=(folder / "crawl.log").open("w")))
        deadline = time.monotonic() + opts.timeout
        if opts.kill:
            while lines(log) < opts.kill * opts.budget and procs[0].poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            if procs[0].poll() is None:
                os.kill(procs[0].pid, signal.SIGKILL)
                killed_at = lines(log)
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
        proxy.wait_idle(timeout=5.0)
    worker_cpu, server_cpu = children_cpu() - cpu_start, redis_cpu(server) - redis_start
    codes = [p.returncode for p in procs]
    failed = [i for i, c in enumerate(codes) if c != 0 and not (opts.kill and i == 0)]
    if failed:
        raise RuntimeError(f"worker(s) {failed} failed: see {workdir}/w*/crawl.log")
    client = server.client()
    stats = {k.decode(): int(v) for k, v in client.hgetall(f"focus:{{{CRAWL_ID}}}:stats").items()}
    records = read_log(log)
    if opts.commandstats:
        print_commandstats(client, len(counted_requests(records)))
    return {"records": records, "stats": stats, "killed_at": killed_at,
            "exported": exported(workdir, max(1, workers)), "worker_cpu": worker_cpu, "redis_cpu": server_cpu,
            "counts": worker_counts(workdir, workers)}


def print_commandstats(client, requests: int) -> None:
    """Redis's time in each command over the run (``INFO commandstats``; a script's inner commands
    counted in their own rows too), per counted request, the costliest first."""
    stats = client.info("commandstats")
    rows = sorted(((name.removeprefix("cmdstat_"), s["calls"], s["usec"]) for name, s in stats.items()),
                  key=lambda row: -row[2])
    per = 1000.0 / max(1, requests)
    print("  redis commandstats (us a counted request, calls a counted request):", flush=True)
    for name, calls, usec in rows[:14]:
        print(f"    {name:<14} {usec * per / 1000:8.1f} us {calls * per / 1000:7.2f} calls", flush=True)


ROUND_TRIPS = re.compile(r"shared crawl: (\d+) round trips to Redis, \d+ page requests counted by this worker"
                         r"(?:, (\d+) writes sent ahead, (\d+) records re-scored)?"
                         r"(?: \(link features of (\d+) read from Redis)?")


def worker_counts(workdir: Path, workers: int) -> dict[str, int]:
    """What the workers' logs say at their close: round trips to Redis (commands and pipelines sent and
    waited for), pipelines sent ahead (not waited for), records re-scored by the shared frontier and
    the link features it read from Redis for them (summed over the workers)."""
    total = {"round_trips": 0, "sent_ahead": 0, "rescored": 0, "links_read": 0}
    for i in range(workers):
        log = workdir / f"w{i}" / "crawl.log"
        found = ROUND_TRIPS.search(log.read_text(errors="replace")) if log.exists() else None
        if found:
            for key, value in zip(total, found.groups(), strict=True):
                total[key] += int(value or 0)
    return total


def exported(workdir: Path, workers: int) -> Counter:
    urls: Counter = Counter()
    for i in range(workers):
        path = workdir / f"w{i}" / "relevant.jsonl"
        if path.exists():
            for line in path.read_text().splitlines():
                try:
                    urls[json.loads(line)["url"]] += 1
                except (ValueError, KeyError):
                    pass  # a line torn by the kill
    return urls


def figures(result: dict, relevance: Relevance, budget: int, delay: float) -> dict:
    records = result["records"]
    counted = [r for r in records if r.get("path") != "/robots.txt"]
    counted.sort(key=lambda r: r["t_start"])
    span = counted[-1]["t_end"] - counted[0]["t_start"] if len(counted) > 1 else 0.0
    requests = counted_requests(records)
    found = {relevance.page(url) for url, status in requests[:budget] if 200 <= status < 300 and relevance.is_relevant(url)}
    twice = sum(n - 1 for n in Counter(r["url"] for r in counted if r["status"] == 200).values() if n > 1)
    report = audit_report(records, delays=delay)
    violations = report["violation_counts"]
    per_request = 1000.0 / len(counted) if counted else 0.0
    return {"requests": len(counted), "pages_per_s": len(counted) / span if span else 0.0,
            "worker_cpu_ms": result["worker_cpu"] * per_request, "redis_cpu_ms": result["redis_cpu"] * per_request,
            "round_trips": result["counts"]["round_trips"] * per_request / 1000.0,
            "sent_ahead": result["counts"]["sent_ahead"] * per_request / 1000.0,
            "rescored": result["counts"]["rescored"], "links_read": result["counts"]["links_read"],
            "relevant": len(found), "gap": violations.get("gap", 0), "concurrency": violations.get("concurrency", 0),
            "disallowed": violations.get("disallowed", 0), "robots_not_first": violations.get("robots_not_first", 0),
            "fetched_twice": twice, "leases_reaped": result["stats"].get("leases_reaped", 0),
            "work_requeued": result["stats"].get("work_requeued", 0),
            "exported_twice": sum(n - 1 for n in result["exported"].values() if n > 1),
            "killed_at": result["killed_at"]}


def label(tree: str | None, workers: int) -> str:
    return f"{tree} {workers}" if tree else str(workers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="1,2,4",
                        help="worker counts to run, comma-separated (0: one process without Redis, the baseline)")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--delay", type=float, default=0.25, help="DOWNLOAD_DELAY (default 0.25 s)")
    parser.add_argument("--latency-ms", type=float, default=0.0, metavar="MS",
                        help="the replay answers each request this late (default 0: as fast as it can)")
    parser.add_argument("--kill", type=float, default=0.0, help="SIGKILL worker 0 at this share of the budget")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--topic", default="course")
    parser.add_argument("--model", default=None, help="default: ../models/TOPIC.joblib beside the project")
    parser.add_argument("--webkb", type=Path, default=WEBKB, help=f"WebKB's folder (default {WEBKB})")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--commandstats", action="store_true",
                        help="print redis-server's time by command after each run (INFO commandstats)")
    parser.add_argument("--tree", action="append", default=[], metavar="NAME=PATH",
                        help="run the workers on this tree's focuscrawl (repeatable: alternated, a row each)")
    opts = parser.parse_args()
    model = opts.model or str(ROOT.parent / "models" / f"{opts.topic}.joblib")
    counts = [int(n) for n in opts.workers.split(",")]
    trees = {}
    for item in opts.tree:
        name, sep, path = item.partition("=")
        if not sep or not Path(path, "focuscrawl", "__init__.py").is_file():
            parser.error(f"--tree {item!r}: give NAME=PATH, PATH a tree with focuscrawl/ in it")
        trees[name] = str(Path(path).resolve())
    configs = [(name, path, n) for n in counts for name, path in (trees.items() or [(None, None)])]
    web = RecordedWeb.from_warcs([str(opts.webkb / "webkb.warc.gz")])
    relevance = Relevance(load_labels(opts.webkb / "labels.tsv"), [opts.topic],
                          SamePage.for_graph(LinkGraph.from_web(web), load_aliases(opts.webkb / "aliases.tsv")))
    results: dict[str, list[dict]] = {label(name, n): [] for name, _path, n in configs}
    with tempfile.TemporaryDirectory(prefix="focus-shared-") as tmp:
        server = RedisServer.start(Path(tmp))
        try:
            for run_no in range(opts.runs):
                for name, path, n in configs:
                    workdir = Path(tempfile.mkdtemp(prefix=f"focus-shared-{n}w-"))
                    row = figures(run(web, server, model, n, opts, workdir, path), relevance, opts.budget, opts.delay)
                    results[label(name, n)].append(row)
                    print(f"run {run_no + 1}, {label(name, n)} worker(s): {row}  ({workdir})", flush=True)
        finally:
            server.stop()
    keys = ["requests", "pages_per_s", "worker_cpu_ms", "redis_cpu_ms", "round_trips", "sent_ahead", "rescored",
            "links_read", "relevant", "gap", "concurrency", "disallowed", "robots_not_first",
            "fetched_twice", "leases_reaped", "work_requeued", "exported_twice"]
    print(f"\nWebKB, topic {opts.topic}, budget {opts.budget}, DOWNLOAD_DELAY {opts.delay}, latency {opts.latency_ms:g} ms, "
          f"{opts.runs} run(s) each{f', worker 0 killed at {opts.kill:.0%}' if opts.kill else ''} (mean; min-max)\n")
    print(markdown_table("workers", results, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
