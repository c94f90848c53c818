"""Does a crawl's order depend on how fast it runs? The same crawl at several replay latencies, and
where, in request space, two crawls part.

``python bench/cadence.py [--web webkb] [--topics faculty,course] [--latencies 0,20,100] [--runs K]
[--order 200] [-s NAME=VALUE ...] [-o report.json]``

Each round crawls every topic once at every latency (rounds alternate the speeds, so that a machine
whose load changes meets them all alike), each through a fresh replay of the web with
``scrapy evaluate``'s own code (``crawl_replay``: the suite's seeds, budget and topic models), and
records with each crawl the machine's load, the crawl's stats (what its release policies did: held
requests, re-scored entries, and ``focus/requests_released/unseen``, the requests released whose
pages the spider had not finished with, summed over releases) and, from the replay server's log,
the order of its counted requests.

It prints, per topic and latency, recall at the budget and the relevant pages found by request
N, the crawl's speed and the requests not yet seen at a decision; then for pairs of crawls of a
topic, the first request at which their orders differ and how many of their first ``--order``
requests they share, within a speed and across speeds: if crawls at one speed agree with each
other longer than with crawls at another, the speed decides the order.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from itertools import combinations
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))

import webs  # noqa: E402  (bench/webs.py, the catalogue)

FOUND_AT = (50, 100, 200, 500, 1000)
#: the crawl's own stats worth keeping beside its order (Scrapy's stats dump at the end of its log)
STATS = ("focus/requests_released", "focus/requests_released/unseen", "focus/frontier/held",
         "focus/frontier/rescored", "focus/learner/duplicates_punished", "focus/head/requests")
_STAT = re.compile(r"'(focus/[^']+)': (-?\d+(?:\.\d+)?)")


def crawl_stats(text: str) -> dict[str, float]:
    """The focus/* figures of the last Scrapy stats dump in a crawl's output."""
    dump = text.rsplit("Dumping Scrapy stats", 1)[-1]
    return {name: float(value) for name, value in _STAT.findall(dump)}


def found_by(curve: list[int], points=FOUND_AT) -> dict[str, int]:
    """Relevant pages found by request N (the curve's value at N, or its last)."""
    return {str(n): curve[min(n, len(curve)) - 1] if curve else 0 for n in points}


def first_difference(a: list[str], b: list[str]) -> int:
    """The 1-based position of the first request at which two crawls' orders differ (len+1: never)."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i + 1
    return min(len(a), len(b)) + 1


def shared(a: list[str], b: list[str], n: int) -> int:
    """How many URLs the first ``n`` requests of two crawls have in common."""
    return len(set(a[:n]) & set(b[:n]))


def divergence(crawls: list[dict], order: int) -> list[dict]:
    """For each pair of crawls: their latencies, first difference and shared first ``order``."""
    pairs = []
    for a, b in combinations(crawls, 2):
        pairs.append({"latencies": [a["latency_ms"], b["latency_ms"]], "runs": [a["run"], b["run"]],
                      "first_difference": first_difference(a["order"], b["order"]),
                      "shared": shared(a["order"], b["order"], order)})
    return pairs


def summarise_pairs(pairs: list[dict]) -> dict[str, dict]:
    """Pairs grouped as within one speed ("20 ms") or across two ("0 vs 100 ms"): the mean first
    difference and shared first requests."""
    groups: dict[str, list[dict]] = {}
    for pair in pairs:
        low, high = sorted(pair["latencies"])
        key = f"{low:g} ms" if low == high else f"{low:g} vs {high:g} ms"
        groups.setdefault(key, []).append(pair)
    return {key: {"pairs": len(items),
                  "first_difference": statistics.mean(p["first_difference"] for p in items),
                  "shared": statistics.mean(p["shared"] for p in items)}
            for key, items in groups.items()}


def load() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def crawl(web, recorded, topic, model, seeds: Path, latency: float, settings, relevance, scratch: Path,
          order: int, run: int) -> dict:
    from focuscrawl.commands.evaluate import crawl_replay
    from focuscrawl.replay.metrics import counted_requests, crawl_seconds, found_curve

    output = scratch / f"{topic.name}-{latency:g}ms-{run}.log"
    load_before = load()
    began = time.monotonic()
    log = crawl_replay(recorded, str(seeds), str(model), web.budget, list(settings), latency_ms=latency,
                       which=f" ({topic.name}, {latency:g} ms, run {run})", keep_output=output)
    wall = time.monotonic() - began
    counted = counted_requests(log)[:web.budget]
    curve = found_curve(counted, relevance)
    stats = crawl_stats(output.read_text(encoding="utf-8", errors="replace"))
    released = stats.get("focus/requests_released") or 0
    seed_hosts = {urlsplit(seed).hostname for seed in web.seeds}
    on_seeds = sum(1 for url, _ in counted if urlsplit(url).hostname in seed_hosts)
    answered = sum(1 for _, status in counted if 200 <= status < 300)
    return {"topic": topic.name, "latency_ms": latency, "run": run, "load": [load_before, load()],
            "requests": len(counted), "found": found_by(curve), "seconds": round(crawl_seconds(log, web.budget), 1),
            "wall": round(wall, 1), "seed_hosts_share": round(on_seeds / len(counted), 3) if counted else None,
            "ok_share": round(answered / len(counted), 3) if counted else None, "stats": {name: stats.get(name) for name in STATS},
            "unseen_per_release": round(stats.get("focus/requests_released/unseen", 0) / released, 2) if released else None,
            "order": [url for url, _ in counted[:order]], "curve": curve}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/cadence.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", default="webkb", choices=webs.WEB_NAMES)
    parser.add_argument("--topics", default="faculty,course", metavar="NAME[,NAME]")
    parser.add_argument("--latencies", default="0,20,100", metavar="MS[,MS]")
    parser.add_argument("--runs", type=int, default=2, metavar="K", help="rounds (each crawls every topic at every latency)")
    parser.add_argument("--order", type=int, default=200, metavar="N", help="requests whose order is compared")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE", help="a setting for every crawl")
    parser.add_argument("-o", "--output", metavar="FILE.json")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        latencies = [float(x) for x in args.latencies.split(",") if x.strip()]
    except ValueError:
        print(f"error: --latencies {args.latencies!r}: milliseconds, comma-separated", file=sys.stderr)
        return 2
    if not latencies or min(latencies) < 0 or args.runs < 1 or args.order < 1:
        print("error: --latencies must be >= 0, --runs and --order >= 1", file=sys.stderr)
        return 2
    found = webs.suite([args.web])
    if not found.webs:
        print(f"error: web {args.web}: {found.skipped.get(args.web, 'not available')}", file=sys.stderr)
        return 2
    web = found.webs[0]
    try:
        topics = [web.topic(name.strip()) for name in args.topics.split(",") if name.strip()]
    except KeyError as exc:
        print(f"error: {exc.args[0]}", file=sys.stderr)
        return 2

    from focuscrawl.commands.replay import load_web
    from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases
    from focuscrawl.replay.metrics import Relevance, load_labels

    recorded = load_web([str(web.warc)])
    graph = LinkGraph.from_web(recorded)
    aliases = load_aliases(web.aliases) if web.aliases is not None and web.aliases.is_file() else []
    same_page = SamePage.for_graph(graph, aliases)
    labels = load_labels(web.labels)
    scratch = Path(tempfile.mkdtemp(prefix="focus-cadence-"))
    seeds = scratch / "seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.seeds), encoding="utf-8")
    models = {topic.name: webs.train_model(web, topic) for topic in topics}
    relevances = {topic.name: Relevance(labels, topic.positive, same_page) for topic in topics}
    crawls: list[dict] = []
    for run in range(1, args.runs + 1):
        # alternate the order of the speeds from round to round
        for latency in (latencies if run % 2 else latencies[::-1]):
            for topic in topics:
                result = crawl(web, recorded, topic, models[topic.name], seeds, latency, args.set,
                               relevances[topic.name], scratch, args.order, run)
                crawls.append(result)
                print(f"{topic.name:8} {latency:5g} ms run {run}: found {result['found']}  "
                      f"{result['seconds']:.0f} s  unseen/release {result['unseen_per_release']}  "
                      f"held {result['stats']['focus/frontier/held']}  on the seeds' hosts {result['seed_hosts_share']}  "
                      f"2xx {result['ok_share']}  load {result['load']}", flush=True)
                if args.output:
                    write(args, web, crawls)
    print()
    for topic in topics:
        mine = [c for c in crawls if c["topic"] == topic.name]
        for latency in latencies:
            at = [c for c in mine if c["latency_ms"] == latency]
            final = [c["found"][str(FOUND_AT[-1])] for c in at]
            print(f"{topic.name:8} {latency:5g} ms: found@{FOUND_AT[-1]} {final}, mean {statistics.mean(final):.1f}; "
                  f"unseen/release {[c['unseen_per_release'] for c in at]}")
        for key, figures in summarise_pairs(divergence(mine, args.order)).items():
            print(f"{topic.name:8} pairs {key:14}: first difference at request {figures['first_difference']:.0f}, "
                  f"{figures['shared']:.0f} of the first {args.order} shared ({figures['pairs']} pairs)")
    if args.output:
        write(args, web, crawls)
        print(f"report written to {args.output}")
    print(f"crawl outputs in {scratch}")
    return 0


def write(args, web, crawls) -> None:
    report = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": " ".join(["python", "bench/cadence.py", *sys.argv[1:]]), "web": web.name,
              "budget": web.budget, "settings": args.set, "crawls": crawls,
              "pairs": {topic: summarise_pairs(divergence([c for c in crawls if c["topic"] == topic], args.order))
                        for topic in sorted({c["topic"] for c in crawls})}}
    Path(args.output).write_text(json.dumps(report) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
