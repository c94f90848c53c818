"""Chaos loop: one crawl killed with SIGKILL at random moments and resumed each time, against the
same crawl never killed.

    python bench/chaos.py [--kills 10] [--seed 0] [--out DIR]

The demo web (``focuscrawl.demo.generate_web(seed=0)``, its HTML hosts and PDFs) is served by a
ReplayProxy whose log is the ground truth. The reference crawl runs once to its end. The chaos crawl is the same command
with a JOBDIR, a crawl store, a request log (``FOCUS_CRAWL_LOG``) and a JSON-lines feed per run
(``-O feed-N.jsonl``); it is killed with SIGKILL when the server has answered the next of
``--kills`` page counts drawn at random below the reference's, and started again, until a run
ends by itself. Both crawls have no budget, so both fetch every reachable page and can be compared.

What is counted:
- lost: relevant, non-duplicate pages of the store's crawl that no run's feed holds;
- fetched twice: pages answered 200 more than once, and of those, the ones answered within
  IN_FLIGHT seconds before a kill (in flight: the page may not have reached the store);
- torn: request-log lines that are not whole JSON (a record cut by a kill);
- unlogged: pages answered 200 that the request log does not name, beyond those in flight;
- the pages answered 200, and the relevant pages by their own words (``page_score``: independent
  of the order of the crawl), of the chaos crawl against the reference's; the store's crawl ids.
``tests/test_chaos.py`` runs the same loop and asserts on these figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402
from focuscrawl.store import CrawlStore  # noqa: E402
from focuscrawl.urls import canonicalize  # noqa: E402

DELAY = 0.02
CHECKPOINT_SECONDS = 0.5
IN_FLIGHT = 1.0  # seconds before a kill in which an answered page may not have reached the store
RUN_TIMEOUT = 300.0


def _pages(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("path") != "/robots.txt" and r.get("method") != "CONNECT" and r.get("url")]


def _answered_200(records: list[dict]) -> list[str]:
    return [canonicalize(r["url"]) for r in _pages(records) if r.get("status") == 200]


def crawl_args(seeds: Path, model: Path, out: Path, feed: Path | None, jobdir: Path | None) -> list[str]:
    args = ["crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={model}", "-s", f"DOWNLOAD_DELAY={DELAY}",
            "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
            "-s", "LOG_LEVEL=INFO"]
    if jobdir is not None:
        args += ["-s", f"JOBDIR={jobdir}", "-s", f"FOCUS_CHECKPOINT_SECONDS={CHECKPOINT_SECONDS}"]
    if feed is not None:
        args += ["-O", str(feed)]
    return args


def _run(args: list[str], cwd: Path, env: dict, log: Path, proxy: ReplayProxy | None = None,
         kill_at: int | None = None) -> tuple[int, float | None]:
    """Run the crawler; with ``kill_at``, SIGKILL it once the server has answered that many page
    requests in all. Returns (exit code, time of the kill or None)."""
    with open(log, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "scrapy", *args], cwd=cwd, env=env,
                                stdout=handle, stderr=subprocess.STDOUT)
        t_kill = None
        deadline = time.monotonic() + RUN_TIMEOUT
        try:
            while proc.poll() is None:
                if time.monotonic() > deadline:
                    proc.kill()
                    raise RuntimeError(f"a crawl ran over {RUN_TIMEOUT:.0f}s: see {log}")
                if kill_at is not None and len(_pages(proxy.log)) >= kill_at:
                    t_kill = time.time()
                    os.kill(proc.pid, signal.SIGKILL)
                    break
                time.sleep(0.005)
        finally:
            proc.wait(timeout=60)
    return proc.returncode, t_kill


def _feed_urls(path: Path) -> tuple[list[str], int]:
    """The feed's URLs, and how many of its lines are not whole JSON (none, for a durable feed)."""
    urls, torn = [], 0
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                urls.append(json.loads(line)["url"])
            except (ValueError, KeyError, TypeError):
                torn += 1
    return urls, torn


def _request_log(path: Path) -> tuple[set[str], int]:
    urls, torn = set(), 0
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                torn += 1
                continue
            if record.get("status") == 200 and record.get("url"):
                urls.add(canonicalize(record["url"]))
    return urls, torn


def _store_summary(path: Path, threshold: float) -> dict:
    with CrawlStore(path, create=False) as store:
        pages = list(store.iter_pages())
        crawls = [c["id"] for c in store.crawls()]
    return {
        "crawls": crawls,
        "relevant_unique": {p["url"] for p in pages if p["relevant"] and not p["duplicate_of"]},
        "relevant_by_words": {canonicalize(p["final_url"] or p["url"]) for p in pages
                              if p["page_score"] is not None and p["page_score"] >= threshold},
    }


def chaos_loop(web, robots: dict, seeds: Path, model: Path, out: Path, kills: int = 10, seed: int = 0,
               threshold: float = 0.5) -> dict:
    """The reference crawl, then the chaos crawl killed ``kills`` times; the figures as a dict."""
    out.mkdir(parents=True, exist_ok=True)
    reference, chaos = out / "reference", out / "chaos"
    reference.mkdir(exist_ok=True)
    chaos.mkdir(exist_ok=True)
    # --- the reference: never killed ------------------------------------------------------------
    with ReplayProxy(web, robots=robots) as proxy:
        code, _ = _run(crawl_args(seeds, model, reference, reference / "feed.jsonl", None), reference,
                       proxy.crawl_env(), reference / "crawl.log")
        proxy.wait_idle(timeout=5.0)
        ref_log = list(proxy.log)
    if code != 0:
        raise RuntimeError(f"the reference crawl failed (rc {code}): see {reference / 'crawl.log'}")
    ref_pages = len(_pages(ref_log))
    # --- the chaos crawl: killed at random page counts, resumed each time --------------------------
    rng = random.Random(seed)
    kill_points = sorted(rng.sample(range(5, max(ref_pages - 5, kills + 6)), kills))
    runs, kill_times, codes = 0, [], []
    with ReplayProxy(web, robots=robots, log_path=str(chaos / "server.jsonl")) as proxy:
        env = proxy.crawl_env()
        for point in [*kill_points, None]:
            runs += 1
            args = crawl_args(seeds, model, chaos, chaos / f"feed-{runs}.jsonl", chaos / "job")
            code, t_kill = _run(args, chaos, env, chaos / f"run-{runs}.log", proxy, kill_at=point)
            codes.append(code)
            if t_kill is not None:
                kill_times.append(t_kill)
                proxy.wait_idle(timeout=5.0)
            elif point is not None:
                break  # the crawl ended before this kill point: nothing left to kill
        proxy.wait_idle(timeout=5.0)
        log = list(proxy.log)
    # --- the figures ------------------------------------------------------------------------------
    in_flight = {canonicalize(r["url"]) for r in _pages(log) for t in kill_times
                 if r.get("status") == 200 and t - IN_FLIGHT <= r["t_end"] and r["t_start"] <= t + IN_FLIGHT}
    fetched = Counter(_answered_200(log))
    twice = {url for url, n in fetched.items() if n > 1}
    feeds, feed_torn = [], 0
    for n in range(1, runs + 1):
        urls, torn = _feed_urls(chaos / f"feed-{n}.jsonl")
        feeds += urls
        feed_torn += torn
    fed = Counter(feeds)
    store = _store_summary(chaos / "crawl.db", threshold)
    ref_store = _store_summary(reference / "crawl.db", threshold)
    logged, log_torn = _request_log(chaos / "requests.jsonl")
    ref_fetched = set(_answered_200(ref_log))
    return {
        "kills": len(kill_times), "runs": runs, "exit_codes": codes, "kill_points": kill_points,
        "reference_pages": ref_pages, "pages": len(_pages(log)),
        "lost": sorted(store["relevant_unique"] - set(fed)),
        "fed_twice": sorted(url for url, n in fed.items() if n > 1),
        "feed_torn": feed_torn,
        "fetched_twice": sorted(twice), "fetched_twice_not_in_flight": sorted(twice - in_flight),
        "in_flight": len(in_flight),
        "unlogged": sorted(set(fetched) - logged - in_flight), "log_torn": log_torn,
        "missing_vs_reference": sorted(ref_fetched - set(fetched)),
        "extra_vs_reference": sorted(set(fetched) - ref_fetched),
        "relevant_by_words": len(store["relevant_by_words"]),
        "reference_relevant_by_words": len(ref_store["relevant_by_words"]),
        "relevant_by_words_missing": sorted(ref_store["relevant_by_words"] - store["relevant_by_words"]),
        "relevant_unique": len(store["relevant_unique"]),
        "reference_relevant_unique": len(ref_store["relevant_unique"]),
        "crawl_ids": store["crawls"], "kill_times": kill_times,
    }


def demo_setup(out: Path, **web_options) -> tuple:
    """The demo web (``generate_web``'s defaults, or ``web_options``), its robots.txt files, a seeds
    file and a topic model trained on its training hosts (as ``tests/conftest.py`` builds them)."""
    from focuscrawl.demo import generate_web
    from focuscrawl.relevance import load_examples, train_topic_model

    demo = generate_web(seed=0, **web_options)
    out.mkdir(parents=True, exist_ok=True)
    warc = demo.write_warc(out / "demo.warc.gz")
    labels = demo.write_labels(out / "labels.tsv")
    seeds = out / "seeds.txt"
    seeds.write_text("\n".join(demo.seeds) + "\n")
    hosts = "|".join(h.replace(".", r"\.") for h in demo.train_hosts)
    examples = load_examples([str(warc)], labels_path=str(labels), include_host=f"^({hosts})$")
    model, _ = train_topic_model(examples, [demo.topic], cv_folds=3)
    model.save(str(out / "model.joblib"))
    return RecordedWeb.from_records(demo.records), demo.robots, seeds, out / "model.joblib"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    opts = parser.parse_args()
    out = opts.out or Path(tempfile.mkdtemp(prefix="focus-chaos-"))
    # without the JavaScript-only host: a page rendered after its plain fetch is fetched twice by design
    web, robots, seeds, model = demo_setup(out / "demo", javascript_host=False)
    started = time.monotonic()
    figures = chaos_loop(web, robots, seeds, model, out, kills=opts.kills, seed=opts.seed)
    (out / "report.json").write_text(json.dumps(figures, indent=1))
    print(f"chaos loop on the demo web, seed {opts.seed}: {figures['kills']} kills, {figures['runs']} runs, "
          f"{time.monotonic() - started:.0f} s (outputs in {out})")
    rows = [
        ("page requests (reference / chaos)", f"{figures['reference_pages']} / {figures['pages']}"),
        ("relevant pages lost (stored, in no feed)", len(figures["lost"])),
        ("pages in two feeds", len(figures["fed_twice"])),
        ("torn feed lines", figures["feed_torn"]),
        ("200 pages fetched twice", len(figures["fetched_twice"])),
        ("  of which not in flight at a kill", len(figures["fetched_twice_not_in_flight"])),
        ("200 pages missing from the request log (not in flight)", len(figures["unlogged"])),
        ("torn request-log lines", figures["log_torn"]),
        ("200 pages of the reference never fetched", len(figures["missing_vs_reference"])),
        ("relevant by their words (reference / chaos)",
         f"{figures['reference_relevant_by_words']} / {figures['relevant_by_words']}"),
        ("relevant unique items (reference / chaos)",
         f"{figures['reference_relevant_unique']} / {figures['relevant_unique']}"),
        ("crawl ids in the store", figures["crawl_ids"]),
    ]
    for name, value in rows:
        print(f"  {name:<58} {value}")
    bad = (figures["lost"] or figures["fetched_twice_not_in_flight"] or figures["missing_vs_reference"]
           or figures["relevant_by_words_missing"] or figures["unlogged"] or figures["feed_torn"]
           or figures["crawl_ids"] != [1])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
