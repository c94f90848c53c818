"""Duplicate fetches on the WebKB replay with and without learned URL aliases (FOCUS_URL_ALIASES).

    python bench/aliases.py [--topic course] [--budget 1000] [--runs 3] [--model MODEL]

WebKB's servers answered many pages under several spellings: ``dir`` redirects to ``dir/`` (840
slash redirects in the WARC), and ``dir/``, ``dir/index.html`` or ``www.host`` and ``host`` serve
the same page (501 copies, ``aliases.tsv``). Each crawl runs as its own process through a fresh
ReplayProxy (DOWNLOAD_DELAY=0), alternating aliases on and off, ``--runs`` times each. From the
server's log, over the first ``--budget`` counted requests:

- redirects: requests answered 3xx (a request spent on a spelling the server corrects);
- repeats: pages answered 200 that the crawl had already fetched under another spelling (one page
  by WebKB's aliases and the link graph's redirects, ``SamePage``);
- duplicate fetches = redirects + repeats; and the relevant pages found (recall@budget), so a
  saving that costs relevant pages would show.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.commands.evaluate import crawl_command  # noqa: E402
from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases  # noqa: E402
from focuscrawl.replay.metrics import Relevance, counted_requests, load_labels, read_log  # noqa: E402

WEBKB = ROOT.parent / "shared" / "webkb"
SEEDS = "http://www.cs.cornell.edu/,http://www.cs.utexas.edu/,http://www.cs.washington.edu/,http://www.cs.wisc.edu/"


def duplicate_fetches(log: list[dict], relevance: Relevance, budget: int) -> dict:
    requests = counted_requests(log)[:budget]
    seen, repeats, redirects, found = set(), 0, 0, set()
    for url, status in requests:
        if 300 <= status < 400:
            redirects += 1
        elif 200 <= status < 300:
            page = relevance.page(url)
            if page in seen:
                repeats += 1
            seen.add(page)
            if relevance.is_relevant(url):
                found.add(page)
    return {"requests": len(requests), "redirects": redirects, "repeats": repeats,
            "duplicates": redirects + repeats, "relevant": len(found)}


def crawl(web: RecordedWeb, model: str, budget: int, aliases_on: bool, workdir: Path) -> list[dict]:
    server_log = workdir / "server.jsonl"
    with ReplayProxy(web, log_path=str(server_log)) as proxy:
        argv = crawl_command(SEEDS, model, budget, str(workdir / "crawl.db"),
                             ["DOWNLOAD_DELAY=0", f"FOCUS_URL_ALIASES={aliases_on}"])
        with open(workdir / "crawl.log", "w") as out:
            result = subprocess.run(argv, env=proxy.crawl_env(), stdout=out, stderr=subprocess.STDOUT, timeout=1800)
        proxy.wait_idle(timeout=5.0)
    if result.returncode != 0:
        raise RuntimeError(f"crawl failed: see {workdir / 'crawl.log'}")
    return read_log(server_log)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topic", default="course")
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--model", default=None, help="default: ../models/TOPIC.joblib beside the project")
    opts = parser.parse_args()
    model = opts.model or str(ROOT.parent / "models" / f"{opts.topic}.joblib")
    web = RecordedWeb.from_warcs([str(WEBKB / "webkb.warc.gz")])
    graph = LinkGraph.from_web(web)
    relevance = Relevance(load_labels(WEBKB / "labels.tsv"), [opts.topic],
                          SamePage.for_graph(graph, load_aliases(WEBKB / "aliases.tsv")))
    results: dict[bool, list[dict]] = {False: [], True: []}
    for run in range(opts.runs):
        for aliases_on in (False, True):
            workdir = Path(tempfile.mkdtemp(prefix="focus-aliases-"))
            figures = duplicate_fetches(crawl(web, model, opts.budget, aliases_on, workdir), relevance, opts.budget)
            results[aliases_on].append(figures)
            print(f"run {run + 1}, aliases {'on ' if aliases_on else 'off'}: {figures}", flush=True)
    print(f"\nWebKB, topic {opts.topic}, budget {opts.budget}, {opts.runs} runs each (mean, min-max)")
    print(f"{'':<12}{'redirects':>18}{'repeats':>18}{'duplicates':>18}{'relevant':>18}")
    for aliases_on in (False, True):
        rows = results[aliases_on]
        cells = []
        for key in ("redirects", "repeats", "duplicates", "relevant"):
            values = [r[key] for r in rows]
            cells.append(f"{statistics.mean(values):.1f} ({min(values)}-{max(values)})")
        print(f"{'aliases ' + ('on' if aliases_on else 'off'):<12}" + "".join(f"{c:>18}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
