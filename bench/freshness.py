"""Keeping what was found fresh, on a web that changes while it is crawled: WebKB's replay served
through a ``ChangingWeb`` (each page a Poisson process of changes with validators, 304s, feeds
and sitemaps with lastmod), crawled continuously (``FOCUS_RECRAWL``) under each revisit policy
at the same delay and budget, and once without revisits.

    python bench/freshness.py [--policies none,optimal,uniform,proportional] [--runs 2]
                              [--budget 3000] [--delay 0.25] [--time-scale 10] [--topic course]

``--time-scale S`` runs the web's clock S times faster than the default change mixes
(``focuscrawl.replay.changing``: some relevant pages change every 1-2 minutes, most every 10-60,
some never) and divides ``FOCUS_RECRAWL_MIN_INTERVAL`` (60 s) by as much, so a run of minutes
shows what hours of crawling would: a simulated clock, as the freshness literature's experiments
use.

Reported for each run, from the server's log (the truth: ``focuscrawl.replay.freshness``): the
time-averaged freshness and age of the relevant pages the crawl had fetched (each from its first
fetch to the end of the run; freshness over the run's second half too, nearer the steady state),
the revisits (requests for a page fetched before) and the share of them answered 304, the
relevant pages found (first fetches, WebKB's labels, one page per alias), and the relevant pages
found per request in the second half of the run (exploration while revisiting). Policies
alternate; each run is a fresh crawl of a fresh web (seed: --first-seed, then the next for each
run).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.commands.evaluate import crawl_command  # noqa: E402
from focuscrawl.politeness.audit import audit_report  # noqa: E402
from focuscrawl.replay import ChangingWeb, RecordedWeb, ReplayProxy, freshness_report  # noqa: E402
from focuscrawl.replay.changing import OTHER_MIX, RELEVANT_MIX  # noqa: E402
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases  # noqa: E402
from focuscrawl.replay.metrics import Relevance, load_labels  # noqa: E402
from summary import markdown_table  # noqa: E402

WEBKB = ROOT.parent / "shared" / "webkb"
SEEDS = "http://www.cs.cornell.edu/,http://www.cs.utexas.edu/,http://www.cs.washington.edu/,http://www.cs.wisc.edu/"
MIN_INTERVAL = 60.0  # FOCUS_RECRAWL_MIN_INTERVAL's default, divided by the time scale


def run(web, relevant_urls, model, policy, seed, opts, workdir: Path) -> dict:
    changes = ChangingWeb(web, relevant_urls, seed=seed, relevant_mix=RELEVANT_MIX.faster(opts.time_scale),
                          other_mix=OTHER_MIX.faster(opts.time_scale))
    settings = [f"DOWNLOAD_DELAY={opts.delay}", *opts.set]
    if policy != "none":
        settings += ["FOCUS_RECRAWL=1", f"FOCUS_RECRAWL_POLICY={policy}",
                     f"FOCUS_RECRAWL_MIN_INTERVAL={MIN_INTERVAL / opts.time_scale:g}"]
    with ReplayProxy(web, changes=changes, log_path=str(workdir / "server.jsonl")) as proxy:
        argv = crawl_command(SEEDS, model, opts.budget, str(workdir / "crawl.db"), settings)
        with (workdir / "crawl.log").open("w") as log:
            code = subprocess.call(argv, env=proxy.crawl_env(), cwd=workdir, stdout=subprocess.DEVNULL, stderr=log,
                                   timeout=opts.timeout)
        proxy.wait_idle(timeout=5.0)
        records = list(proxy.log)
    if code != 0:
        raise RuntimeError(f"the crawl failed: see {workdir}/crawl.log")
    return {"records": records, "changes": changes}


def figures(result: dict, relevance: Relevance, relevant_urls, delay: float) -> dict:
    records = sorted(result["records"], key=lambda r: r["t_start"])
    pages = [r for r in records if r.get("path") != "/robots.txt"]
    start, end = pages[0]["t_start"], pages[-1]["t_end"]
    report = freshness_report(records, result["changes"], relevant_urls, start, end, per_page=False)
    middle = start + (end - start) / 2
    # the second half alone: nearer the steady state, where the copies fetched early have had
    # time to go stale and a schedule's revisits have come round
    second = freshness_report(records, result["changes"], relevant_urls, middle, end, per_page=False)
    fetched, revisits, not_modified, found, found_late, late = set(), 0, 0, set(), 0, 0
    for r in pages:
        url = r["url"]
        if url in fetched:
            revisits += 1
            not_modified += r["status"] == 304
        fetched.add(url)
        if r["t_start"] >= middle:
            late += 1
        if 200 <= r["status"] < 300 and relevance.is_relevant(url):
            page = relevance.page(url)
            if page not in found:
                found.add(page)
                found_late += r["t_start"] >= middle
    audit = audit_report(records, delays=delay)["violation_counts"]
    return {"requests": len(pages), "minutes": (end - start) / 60, "freshness": report["freshness"],
            "freshness_2nd_half": second["freshness"], "age_s": report["age"], "relevant_tracked": report["pages"],
            "revisits": revisits,
            "share_304": not_modified / revisits if revisits else 0.0, "relevant_found": len(found),
            "found_per_100_late": 100 * found_late / late if late else 0.0,
            "gap": audit.get("gap", 0), "concurrency": audit.get("concurrency", 0)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--policies", default="none,optimal,uniform,proportional")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--first-seed", type=int, default=1, help="the web of run i has seed first-seed + i")
    parser.add_argument("--budget", type=int, default=3000)
    parser.add_argument("--delay", type=float, default=0.25)
    parser.add_argument("--time-scale", type=float, default=10.0)
    parser.add_argument("--topic", default="course")
    parser.add_argument("--model", default=None, help="default: ../models/TOPIC.joblib beside the project")
    parser.add_argument("--timeout", type=float, default=3600)
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE")
    opts = parser.parse_args()
    model = opts.model or str(ROOT.parent / "models" / f"{opts.topic}.joblib")
    policies = opts.policies.split(",")
    web = RecordedWeb.from_warcs([str(WEBKB / "webkb.warc.gz")])
    labels = load_labels(WEBKB / "labels.tsv")
    relevance = Relevance(labels, [opts.topic], SamePage.for_graph(LinkGraph.from_web(web), load_aliases(WEBKB / "aliases.tsv")))
    relevant_urls = {url for url in labels if relevance.is_relevant(url)}
    results: dict[str, list[dict]] = {p: [] for p in policies}
    for run_no in range(opts.runs):
        for policy in policies:
            workdir = Path(tempfile.mkdtemp(prefix=f"focus-fresh-{policy}-"))
            started = time.monotonic()
            row = figures(run(web, relevant_urls, model, policy, opts.first_seed + run_no, opts, workdir), relevance,
                          relevant_urls, opts.delay)
            results[policy].append(row)
            print(f"run {run_no + 1}, {policy}: {row}  ({workdir}, {time.monotonic() - started:.0f} s)", flush=True)
    keys = ["requests", "minutes", "freshness", "freshness_2nd_half", "age_s", "relevant_tracked", "revisits",
            "share_304", "relevant_found", "found_per_100_late", "gap", "concurrency"]
    print(f"\nWebKB, topic {opts.topic}, budget {opts.budget}, DOWNLOAD_DELAY {opts.delay}, time scale "
          f"{opts.time_scale:g}, {opts.runs} run(s) each (mean; min-max)\n")
    print(markdown_table("policy", results, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
