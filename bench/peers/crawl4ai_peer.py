"""crawl4ai, an external peer of the benchmark suite: the same recorded webs, the same replay, the
same scoring as ``scrapy evaluate``.

    python bench/peers/crawl4ai_peer.py [--webs webkb,demo,langdocs,tooldocs] [--topics NAME,...]
        [--strategies bestfirst,adaptive] [--runs K] [--logs DIR]
        [--python /root/.cache/focus-bench/crawl4ai-venv/bin/python] -o FILE.json

crawl4ai is never a dependency of focuscrawl: it lives in its own virtual environment
(``python3 -m venv /root/.cache/focus-bench/crawl4ai-venv && .../bin/pip install crawl4ai==0.9.5``;
no ``crawl4ai-setup``, no browser: only its HTTP fetcher ``AsyncHTTPCrawlerStrategy`` is used).
This script is the driver, run in focuscrawl's environment; ``crawl4ai_runner.py`` beside it is
the crawler, run by that environment's python and importing only crawl4ai and the standard
library. For each web of the catalogue (``bench/webs.py``, ``webs.suite()``), topic, strategy and
run, the driver

1. replays the web's WARC through a fresh ``ReplayProxy`` on 127.0.0.1 with a server log, as
   ``scrapy evaluate`` does (``focuscrawl/commands/evaluate.py``);
2. starts the runner, which crawls the web's start URLs one after the other through the replay,
   the budget split evenly between them: before each start URL it asks, and the driver sets the
   replay's cap to the requests already answered plus an even share of what is left (what one
   start URL leaves unused goes to the next); WebKB's four seeds get 250 requests each of 1,000;
3. scores the server's log with focuscrawl's own metrics (``focuscrawl.replay.metrics``): recall at
   the budget over the relevant pages reachable from the seeds, harvest@100/500/budget, relevant
   pages per minute, every request counted as evaluate counts it (404s and redirects too,
   robots.txt not), over the first ``budget`` counted requests;
4. audits the same log for politeness: robots.txt requests, requests open at once per host, gaps
   between requests to one host.

The hard request cap is the replay's: ``CappedReplayProxy`` answers every counted request past the
cap with 429 and serves nothing (the refused requests are logged with ``"refused": true`` and never
scored). The replay is the one place that sees every request crawl4ai sends, whichever of its
clients sends it: the HTTP strategy's fetches and each redirect they follow inside aiohttp, and
AdaptiveCrawler's link previews, which go through another client (httpx, in its URL seeder) that no
hook of the strategy sees. A cap counted inside crawl4ai would miss those. The runner also stops by
itself at the cap (it reads the server's log as it grows: ``should_cancel`` for best-first, the
stopping rule for adaptive, the fetch hook for single fetches), so the cap is rarely hit; and the
scoring reads only the first ``budget`` counted requests in any case.

The strategies, as crawl4ai 0.9.5 is configured here (the runner's docstring says how each is
routed through the replay):

- ``bestfirst``: ``BestFirstCrawlingStrategy`` with ``KeywordRelevanceScorer(keywords)``,
  ``include_external=True`` (the documentation webs' portal links to other hosts),
  ``max_depth=budget`` and ``max_pages=budget`` (neither is the limit: ``max_pages`` counts only
  successful pages), ``should_cancel`` at the cap, ``CacheMode.BYPASS``. The keyword scorer scores
  the URL string only: the share of the keywords that occur in it.
- ``adaptive``: ``AdaptiveCrawler`` (statistical strategy) with the words as its query, its own
  stopping rules turned off (``confidence_threshold=1``, ``saturation_threshold=1``,
  ``min_gain_threshold=0``, ``max_pages`` and ``max_depth`` at the budget) so that the budget is the
  only limit; it follows only links to the page's own site (it keeps no external links).

The words are ``Topic.words`` in ``bench/webs.py``, where the suite writes down once what a user
would type for each topic; the runner splits them into single words, each once (a multi-word
keyword could never occur in a URL).

The results file is ``{"peer": "crawl4ai", "version": V, "rows": [ROW, ...], "politeness": [...],
"skipped": {...}}``, a ROW per crawl in the shape ``bench/suite.py --peer-results`` reads::

    {"web": "tooldocs", "topic": "testing", "crawler": "crawl4ai-bestfirst", "run": 0,
     "requests": 1000, "recall": 0.88, "harvest": {"100": 0.1, "500": 0.1, "1000": 0.1},
     "relevant_per_minute": 12.3, "seconds": 40.0}

A missing crawl4ai environment or web is one line and a skip; a crawl that fails is one line, its
runner's output kept (``--logs``), and the others go on. Traffic goes only to the replay on
127.0.0.1: the runner refuses any other connection or name look-up and reports it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]
ROOT = BENCH.parent
for path in (str(ROOT), str(BENCH)):
    if path not in sys.path:
        sys.path.insert(0, path)

import webs  # noqa: E402  (bench/webs.py, the catalogue)
from focuscrawl.politeness.audit import (  # noqa: E402
    concurrency_violations,
    disallowed_hits,
    max_concurrency,
    min_gaps,
)
from focuscrawl.replay import RecordedWeb, RecordError, ReplayProxy  # noqa: E402
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases  # noqa: E402
from focuscrawl.replay.metrics import (  # noqa: E402
    Relevance,
    counted_requests,
    crawl_seconds,
    found_curve,
    load_labels,
    reachable_relevant,
    read_log,
    relevant_per_minute,
    score_curve,
)

PEER = "crawl4ai"
STRATEGIES = ("bestfirst", "adaptive")
DEFAULT_PYTHON = webs.CACHE / "crawl4ai-venv" / "bin" / "python"
RUNNER = Path(__file__).resolve().parent / "crawl4ai_runner.py"
HARVEST_POINTS = (100, 500)  # and the budget: the harvest keys bench/suite.py reads
CRAWL_TIMEOUT = 3600.0  # seconds: a hung crawl is stopped, reported, and the others go on
ROBOTS_PATH = "/robots.txt"
#: the User-Agent crawl4ai's HTTP fetcher sends (AsyncHTTPCrawlerStrategy._BASE_HEADERS in 0.9.5):
#: a browser's, so robots.txt's "*" group is the one that applies to it
USER_AGENT = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36"
REFUSED_BODY = b"request budget spent: the replay answers no more requests of this crawl\n"


class PeerError(Exception):
    """A one-line reason to stop (bad arguments, an unwritable output)."""


# --- the replay, capped ----------------------------------------------------------------------------


class CappedReplayProxy(ReplayProxy):
    """A ReplayProxy that serves at most ``cap`` counted requests (robots.txt not counted) and
    answers the rest 429 without content, logging them with ``"refused": true``. ``served`` is
    the count so far. Requests are counted on the proxy's one event-loop thread, in the order
    their heads arrived, so the cap falls exactly on the first ``cap`` of the log's ``t_start``
    order; ``cap`` is set from the driver's thread (one integer, read once per request)."""

    def __init__(self, web, cap: int = 0, **kwargs):
        super().__init__(web, **kwargs)
        self.cap = cap
        self.served = 0
        self.refused = 0

    async def _respond(self, writer, conn: int, t_start: float, method: str, url: str, host: str, path: str,
                       keep_alive: bool) -> bool:
        if path != ROBOTS_PATH:
            if self.served >= self.cap:
                self.refused += 1
                await self._send(writer, conn, t_start, method, url, host, path, 429,
                                 [("Content-Type", "text/plain; charset=utf-8")], REFUSED_BODY,
                                 keep_alive=keep_alive, head_only=(method == "HEAD"), extra={"refused": True})
                return keep_alive
            self.served += 1
        return await super()._respond(writer, conn, t_start, method, url, host, path, keep_alive)


def seed_cap(served: int, budget: int, seeds_left: int) -> int:
    """The replay's cap for the next start URL: what is answered so far plus an even share of
    the rest of the budget (what an earlier start URL left unused goes to the later ones)."""
    if seeds_left < 1:
        raise ValueError("no start URL left")
    left = max(0, budget - served)
    return served + left // seeds_left


# --- scoring ---------------------------------------------------------------------------------------


def served_records(log: list[dict]) -> list[dict]:
    """The log without the requests the replay refused past the cap: what crawl4ai was served."""
    return [rec for rec in log if not rec.get("refused")]


def harvest_points(budget: int) -> list[int]:
    """100, 500 and the budget, those not above the budget."""
    return sorted({n for n in HARVEST_POINTS if n <= budget} | {budget})


def score_row(log: list[dict], relevance: Relevance, reachable: int, budget: int, *, web: str, topic: str,
              crawler: str, run: int) -> dict:
    """One crawl's row, scored as ``scrapy evaluate`` scores a crawl: the first ``budget`` counted
    requests of what the replay served."""
    served = served_records(log)
    requests = counted_requests(served)[:budget]
    score = score_curve(found_curve(requests, relevance), reachable, harvest_points(budget))
    return {
        "web": web, "topic": topic, "crawler": crawler, "run": run, "requests": len(requests),
        "recall": score["recall"][str(budget)],
        "harvest": {str(n): score["harvest"][str(n)] for n in harvest_points(budget)},
        "relevant_per_minute": relevant_per_minute(served, relevance, budget),
        "seconds": crawl_seconds(served, budget),
    }


def kept_recall(kept: list[str], relevance: Relevance, reachable: int) -> float:
    """The share of the reachable relevant pages among the pages crawl4ai kept (its results; for
    AdaptiveCrawler its knowledge base): the server's log also counts a page it only previewed."""
    found = {relevance.page(url) for url in kept if relevance.is_relevant(url)}
    return len(found) / reachable if reachable else 0.0


def politeness(log: list[dict], robots: dict[str, str] | None = None) -> dict:
    """What the server's log says of the crawl's manners: robots.txt requests, requests to paths
    the recorded robots.txt files (``robots``, {host: text}) disallow, requests open at once per
    host (the most, and the share of requests sent while another to their host was open), the
    gaps between consecutive requests to one host (start to start), and repeated requests (a URL
    requested again in the same crawl)."""
    records = [rec for rec in log if rec.get("url") and rec.get("host")]
    urls = [rec["url"] for rec in records if rec.get("path") != ROBOTS_PATH]
    by_host: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        by_host[rec["host"]].append(float(rec["t_start"]))
    gaps = []
    for starts in by_host.values():
        starts.sort()
        gaps += [b - a for a, b in zip(starts, starts[1:])]
    concurrency = max_concurrency(records) if records else {}
    end_gaps = min_gaps(records) if records else {}
    return {
        "requests": len(records),
        "robots_txt": sum(1 for rec in records if rec.get("path") == ROBOTS_PATH),
        "disallowed": len(disallowed_hits(records, robots, USER_AGENT)) if robots else 0,
        "repeated": len(urls) - len(set(urls)),
        "refused": sum(1 for rec in records if rec.get("refused")),
        "hosts": len(by_host),
        "max_open_per_host": max(concurrency.values(), default=0),
        "overlapping_share": (len(concurrency_violations(records, 1)) / len(records)) if records else 0.0,
        "median_gap": statistics.median(gaps) if gaps else None,
        "gaps_under_1s": (sum(1 for g in gaps if g < 1.0) / len(gaps)) if gaps else None,
        "min_end_gap": min(end_gaps.values(), default=None),
    }


# --- arguments -------------------------------------------------------------------------------------


def parse_names(value: str | None, known, option: str) -> list[str] | None:
    """A comma-separated list of known names, each once, or PeerError; None stays None."""
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if not names or unknown:
        raise PeerError(f"{option} {value!r}: each must be one of {', '.join(known)}")
    if len(set(names)) != len(names):
        raise PeerError(f"{option} {value!r} names one twice")
    return names


def parse_runs(value) -> int:
    try:
        runs = int(value)
    except (TypeError, ValueError):
        raise PeerError(f"--runs must be a whole number, not {value!r}") from None
    if runs < 1:
        raise PeerError(f"--runs must be at least 1, not {value!r}")
    return runs


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawl4ai_peer.py", description=__doc__.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--webs", metavar="NAME[,NAME]",
                        help=f"webs to crawl (default all: {','.join(webs.WEB_NAMES)})")
    parser.add_argument("--topics", metavar="NAME[,NAME]", help="only these topics (default every topic of the webs)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), metavar="NAME[,NAME]",
                        help=f"crawl4ai strategies (default {','.join(STRATEGIES)})")
    parser.add_argument("--runs", default="1", metavar="K", help="crawls of each topic with each strategy (default 1)")
    parser.add_argument("--python", default=str(DEFAULT_PYTHON), metavar="PATH",
                        help=f"the python of crawl4ai's virtual environment (default {DEFAULT_PYTHON})")
    parser.add_argument("--logs", metavar="DIR", help="keep each crawl's server log and runner output in DIR")
    parser.add_argument("-o", "--output", required=True, metavar="FILE.json", help="write the results here")
    return parser


# --- running ---------------------------------------------------------------------------------------


def crawl4ai_version(python: str) -> tuple[str | None, str]:
    """(crawl4ai's version, "") in the environment of ``python``, or (None, why not)."""
    if not Path(python).is_file():
        return None, (f"no python at {python} (python3 -m venv {Path(python).parent.parent} && "
                      f"{Path(python).parent / 'pip'} install crawl4ai==0.9.5)")
    try:
        done = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('crawl4ai'))"],
                              capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{python} does not run: {exc}"
    if done.returncode != 0:
        return None, f"crawl4ai is not installed for {python} (pip install crawl4ai==0.9.5)"
    return done.stdout.strip(), ""


def runner_env(proxy_url: str, home: Path) -> dict:
    """The runner's environment: a home of its own (crawl4ai writes its cache, database and link
    preview cache under the home: nothing carries over from one crawl to the next), the replay as
    every proxy variable, no cloud banner, none of this project's Python path."""
    env = {key: value for key, value in os.environ.items()
           if key.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
           and key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "SCRAPY_SETTINGS_MODULE")}
    env.update(HOME=str(home), CRAWL4_AI_BASE_DIRECTORY=str(home), CRAWL4AI_NO_CLOUD_NOTICE="1",
               PYTHONNOUSERSITE="1", http_proxy=proxy_url, https_proxy=proxy_url)
    return env


def run_crawl(python: str, strategy: str, web: RecordedWeb, seeds: list[str], words: list[str], budget: int,
              workdir: Path, timeout: float = CRAWL_TIMEOUT) -> tuple[list[dict], dict]:
    """One crawl of ``web`` by crawl4ai through a fresh capped replay: (the server's log, what the
    runner said). Raises PeerError with a one-line reason when the runner fails."""
    server_log, runner_out, home = workdir / "server.jsonl", workdir / "runner.log", workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    proxy = CappedReplayProxy(web, cap=0, log_path=str(server_log)).start()
    job = {"strategy": strategy, "proxy": proxy.url, "log": str(server_log), "seeds": seeds, "words": words,
           "budget": budget}
    said: dict = {"seeds": [], "blocked": None}
    code = None
    try:
        with runner_out.open("w", encoding="utf-8") as err:
            proc = subprocess.Popen([python, str(RUNNER), json.dumps(job)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=err, text=True, cwd=str(workdir),
                                    env=runner_env(proxy.url, home))
            timer = threading.Timer(timeout, proc.kill)
            timer.start()
            try:
                for line in proc.stdout:
                    try:
                        message = json.loads(line)
                    except ValueError:
                        continue  # not the runner's (its channel carries only JSON lines)
                    if message.get("event") == "seed":
                        proxy.wait_idle(timeout=5.0)
                        cap = seed_cap(proxy.served, budget, len(seeds) - int(message["index"]))
                        proxy.cap = cap
                        proc.stdin.write(json.dumps({"cap": cap}) + "\n")
                        proc.stdin.flush()
                    elif message.get("event") == "seed_done":
                        said["seeds"].append(message)
                    elif message.get("event") == "done":
                        said["blocked"] = message.get("blocked", [])
                code = proc.wait()
            finally:
                timer.cancel()
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    finally:
        proxy.stop()
    said["refused"] = proxy.refused
    if code != 0 or said["blocked"] is None:
        lines = [ln for ln in runner_out.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
        why = "stopped after {:.0f} s".format(timeout) if code == -9 else (lines[-1] if lines else "no output")
        raise PeerError(f"crawl4ai's runner failed (exit {code}): {why[:300]}; its output: {runner_out}")
    return read_log(server_log), said


class WebScoring:
    """A web loaded once for all its crawls: the recorded web, its link graph, its labels and
    which URLs are one page."""

    def __init__(self, web: webs.Web):
        self.web = web
        self.recorded = RecordedWeb.from_warcs([web.warc])
        self.graph = LinkGraph.from_web(self.recorded)
        self.labels = load_labels(web.labels)
        aliases = load_aliases(web.aliases) if web.aliases and Path(web.aliases).is_file() else []
        self.same_page = SamePage.for_graph(self.graph, aliases)
        self.robots = {resp.url.split("/")[2]: resp.body.decode("utf-8", "replace") for resp in self.recorded
                       if resp.status == 200 and resp.url.split("/", 3)[3:] == ["robots.txt"]}

    def relevance(self, topic: webs.Topic) -> tuple[Relevance, int]:
        """The topic's relevance and how many relevant pages are reachable from the seeds."""
        relevance = Relevance(self.labels, topic.positive, self.same_page)
        return relevance, len(reachable_relevant(self.graph, self.web.seeds, relevance))


def format_table(rows: list[dict], audits: list[dict]) -> str:
    """A row per crawl: requests, recall at the budget (and of the pages crawl4ai kept), harvest
    at 100/500/budget, relevant pages per minute; then what the server's log says of its
    politeness. ``audits`` go with ``rows``, one for one."""
    head = (f"{'web':9} {'topic':12} {'crawler':19} {'run':>3} {'requests':>8} {'recall':>7} {'kept':>7} "
            f"{'h@100':>6} {'h@500':>6} {'h@budget':>8} {'rel/min':>8} {'seconds':>8}")
    lines = [head, "-" * len(head)]
    for i, row in enumerate(rows):
        harvest = row["harvest"]
        budget = max(harvest, key=int)
        cells = [f"{harvest[n]:>6.3f}" if n in harvest and n != budget else f"{'-':>6}" for n in ("100", "500")]
        kept = audits[i].get("recall_kept") if i < len(audits) else None
        kept = f"{kept:>7.1%}" if kept is not None else f"{'-':>7}"
        lines.append(f"{row['web']:9} {row['topic']:12} {row['crawler']:19} {row['run']:>3} {row['requests']:>8} "
                     f"{row['recall']:>7.1%} {kept} {cells[0]} {cells[1]} {harvest[budget]:>8.3f} "
                     f"{row['relevant_per_minute']:>8.1f} {row['seconds']:>8.1f}")
    if audits:
        lines += ["", "politeness, from the server's log (every request, refused ones too):",
                  f"{'web':9} {'topic':12} {'crawler':19} {'run':>3} {'robots.txt':>10} {'disallowed':>10} "
                  f"{'open/host':>9} {'overlap':>7} {'median gap':>10} {'<1s gaps':>8} {'repeated':>8} "
                  f"{'refused':>7} {'blocked':>7}"]
        for a in audits:
            median = "-" if a["median_gap"] is None else f"{a['median_gap']:.3f}s"
            under = "-" if a["gaps_under_1s"] is None else f"{a['gaps_under_1s']:.0%}"
            lines.append(f"{a['web']:9} {a['topic']:12} {a['crawler']:19} {a['run']:>3} {a['robots_txt']:>10} "
                         f"{a.get('disallowed', 0):>10} {a['max_open_per_host']:>9} {a['overlapping_share']:>7.0%} "
                         f"{median:>10} {under:>8} {a.get('repeated', 0):>8} {a['refused']:>7} {a['blocked']:>7}")
    return "\n".join(lines)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except PeerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def run(args) -> int:
    names = parse_names(args.webs, webs.WEB_NAMES, "--webs") or list(webs.WEB_NAMES)
    strategies = parse_names(args.strategies, STRATEGIES, "--strategies")
    runs = parse_runs(args.runs)
    topics = [t.strip() for t in args.topics.split(",") if t.strip()] if args.topics else None
    output = Path(args.output)
    if not output.resolve().parent.is_dir():
        raise PeerError(f"cannot write {output}: no such directory")
    logs = Path(args.logs) if args.logs else None
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)

    result = {"peer": PEER, "version": None, "rows": [], "politeness": [], "skipped": {}}
    version, why = crawl4ai_version(args.python)
    if version is None:
        print(f"crawl4ai: skipped: {why}")
        result["skipped"]["crawl4ai"] = why
        output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        return 0
    result["version"] = version
    found = webs.suite(names)
    for name, reason in found.skipped.items():
        print(f"{name}: skipped: {reason}")
        result["skipped"][name] = reason
    pairs = [(web, topic) for web, topic in found.pairs() if topics is None or topic.name in topics]
    if topics is not None:
        unknown = sorted(set(topics) - {topic.name for _, topic in found.pairs()})
        for name in unknown:
            print(f"{name}: skipped: no such topic on the webs here")
            result["skipped"][name] = "no such topic on the webs here"
    print(f"crawl4ai {version} ({args.python}): {len(pairs)} topics x {len(strategies)} strategies x {runs} runs",
          flush=True)

    scoring: dict[str, WebScoring | None] = {}
    for web, topic in pairs:
        if web.name not in scoring:
            try:
                scoring[web.name] = WebScoring(web)
            except (RecordError, OSError, ValueError) as exc:
                print(f"{web.name}: skipped: cannot read it: {exc}")
                result["skipped"][web.name] = str(exc)
                scoring[web.name] = None
        scored = scoring[web.name]
        if scored is None:
            continue
        relevance, reachable = scored.relevance(topic)
        words = topic.words.split()
        for strategy in strategies:
            crawler = f"{PEER}-{strategy}"
            for run_index in range(runs):
                where = f"{web.name}/{topic.name} {crawler} run {run_index}"
                workdir = Path(tempfile.mkdtemp(prefix="crawl4ai-peer-"))
                started = time.monotonic()
                print(f"{where}: {len(web.seeds)} start URL(s), budget {web.budget} ...", flush=True)
                try:
                    log, said = run_crawl(args.python, strategy, scored.recorded, list(web.seeds), words,
                                          web.budget, workdir)
                except PeerError as exc:
                    print(f"{where}: failed: {exc}")
                    result["skipped"][where] = str(exc)
                    keep(workdir, logs, web.name, topic.name, strategy, run_index)
                    continue
                row = score_row(log, relevance, reachable, web.budget, web=web.name, topic=topic.name,
                                crawler=crawler, run=run_index)
                kept = [url for seed in said["seeds"] for url in seed.pop("kept", [])]
                audit = {"web": web.name, "topic": topic.name, "crawler": crawler, "run": run_index,
                         **politeness(log, scored.robots), "blocked": len(said["blocked"]),
                         "blocked_examples": said["blocked"][:5], "pages_kept": len(kept),
                         "recall_kept": kept_recall(kept, relevance, reachable), "seeds": said["seeds"],
                         "wall_seconds": round(time.monotonic() - started, 1)}
                result["rows"].append(row)
                result["politeness"].append(audit)
                print(f"{where}: {row['requests']} requests, recall {row['recall']:.1%} of {reachable} "
                      f"({audit['recall_kept']:.1%} in the {len(kept)} pages it kept), "
                      f"harvest@{web.budget} {row['harvest'][str(web.budget)]:.3f}, "
                      f"{audit['refused']} refused past the cap, {audit['blocked']} blocked off-loopback",
                      flush=True)
                keep(workdir, logs, web.name, topic.name, strategy, run_index)
                output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")  # partial results kept
    output.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print()
    print(format_table(result["rows"], result["politeness"]))
    print(f"\nresults written to {output}")
    return 0


def keep(workdir: Path, logs: Path | None, web: str, topic: str, strategy: str, run: int) -> None:
    """Keep the crawl's server log and runner output in ``logs`` (when given); drop the rest."""
    if logs is not None:
        dest = logs / f"{web}-{topic}-{strategy}-{run}"
        dest.mkdir(parents=True, exist_ok=True)
        for name in ("server.jsonl", "runner.log"):
            if (workdir / name).is_file():
                shutil.copy2(workdir / name, dest / name)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
