"""The benchmark suite: every web and topic, every crawler, in one table.

``python bench/suite.py [--runs K] [--webs webkb,demo,langdocs,tooldocs] [--topics NAME,...]
[--strategies learned,bestfirst,shark,bfs] [-o report.json] [--peer-results FILE.json ...]
[-s NAME=VALUE ...] [--latency-ms MS] [--from report.json]``

For each web of the catalogue (``bench/webs.py``) this machine has, and each of its topics, it does
what ``scrapy evaluate --strategies ... --runs K`` does, with evaluate's own code: ``--runs`` crawls
with each ordering strategy (``FOCUS_STRATEGY``), each through a fresh replay of the web's WARC and
with the topic model trained from the training hosts' example pages only, scored from the replay
server's log (focuscrawl/replay/metrics.py) beside the simulated breadth-first and oracle crawls.
Only the web's link graph is built once for all its topics. A web that is absent is skipped with
its reason; a topic whose crawl fails is reported and the others go on.

It prints one table: a row per web/topic; for each crawler its recall at the web's budget (the mean
over runs, ± its standard error with several runs), harvest@100, @500 and @budget, relevant pages
per minute; the simulated BFS and oracle; the mean over topics; and for ``learned`` its recall over
its best peer's on each topic (every other crawler that crawled, in-crawler or external), and the
worst of those ratios.

Every crawl is one row, the shape the external peers' scripts write (``bench/peers/``) and
``--peer-results`` reads::

    {"web": "tooldocs", "topic": "testing", "crawler": "learned", "run": 0, "requests": 1000,
     "recall": 0.88, "harvest": {"100": 0.1, "500": 0.1, "1000": 0.1},
     "relevant_per_minute": 12.3, "seconds": 40.0}

- ``crawler``: the strategy's name for our crawls, the peer's own name for a peer (one peer may
  bring several crawlers, e.g. ``crawl4ai-bestfirst``).
- ``run``: 0, 1, ... among that crawler's crawls of the topic.
- ``requests``: counted requests made (robots.txt not counted; 404s and redirects counted).
- ``recall``: recall at the web's budget; ``harvest``: harvest@N, keyed by str(N), for N of
  100, 500 and the budget that are not above the budget.
- ``relevant_per_minute``: relevant pages found per minute by the server's clock; ``seconds``: the
  time the counted requests span by that clock (start-up not included). Both null when unknown.

A peer results file is ``{"peer": NAME, "version": VERSION, "rows": [ROW, ...]}``; ``-o`` writes
the same shape (``"peer": "focuscrawl"``) with every row, the simulated baselines (crawler
``sim-bfs``, ``sim-oracle``) and the summary, so ``--from`` shows it again (beside any
``--peer-results``) without crawling.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import webs  # noqa: E402  (bench/webs.py, the catalogue)

ROOT = Path(__file__).resolve().parent.parent
STRATEGIES = ("learned", "bestfirst", "shark", "bfs")
LEARNER = "learned"
SIMULATED = ("sim-bfs", "sim-oracle")  # evaluate's simulated "bfs" and "oracle", renamed
HARVEST_AT = (100, 500)  # and the budget
ROW_KEYS = ("web", "topic", "crawler", "run", "requests", "recall", "harvest", "relevant_per_minute", "seconds")


class SuiteError(Exception):
    """Bad input: one ``error:`` line, exit 2."""


# --- crawling: scrapy evaluate's own parts ---------------------------------------------------


def evaluate_web(web: webs.Web, topics, strategies, runs: int, workdir: Path, settings=(), models=None,
                 latency_ms: float = 0.0):
    """``scrapy evaluate --strategies ... --runs ...`` of each topic of ``web``, yielding
    (topic, its report) or (topic, the reason it failed). It is evaluate's code (every crawl
    through a fresh replay by ``crawl_replay``, scored by ``evaluate_strategies``), with the web's
    link graph built once for all its topics rather than once a topic (it parses every recorded
    page: the costliest step after the crawls).
    ``models`` maps a topic's name to its model (default: trained from the web's example pages).
    ``latency_ms``: the replay answers each request that late (a crawl's speed is part of what
    it is measured at: the crawl's order depends on it).
    Each topic's report and evaluate's table and output go to ``workdir``."""
    from focuscrawl.commandbase import CommandError
    from focuscrawl.commands.evaluate import crawl_replay, evaluate_strategies, format_table as evaluate_table
    from focuscrawl.commands.replay import load_web
    from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases
    from focuscrawl.replay.metrics import Relevance, load_labels

    began = time.monotonic()
    recorded = load_web([str(web.warc)])
    graph = LinkGraph.from_web(recorded)
    aliases = load_aliases(web.aliases) if web.aliases is not None and web.aliases.is_file() else []
    same_page = SamePage.for_graph(graph, aliases)
    labels = load_labels(web.labels)
    graph_seconds = time.monotonic() - began
    seeds = workdir / f"{web.name}-seeds.txt"
    seeds.write_text("".join(f"{s}\n" for s in web.seeds), encoding="utf-8")
    for topic in topics:
        transcript = workdir / f"{web.name}-{topic.name}.log"
        try:
            model = (models or {}).get(topic.name) or webs.train_model(web, topic)
            relevance = Relevance(labels, topic.positive, same_page)
            walls = []
            with transcript.open("w", encoding="utf-8") as out, contextlib.redirect_stdout(out):
                logs = {name: [] for name in strategies}
                for name in strategies:
                    for run in range(1, runs + 1):
                        began = time.monotonic()
                        logs[name].append(crawl_replay(recorded, str(seeds), str(model), web.budget,
                                                       [*settings, f"FOCUS_STRATEGY={name}"], latency_ms=latency_ms,
                                                       which=f" (FOCUS_STRATEGY={name}, crawl {run} of {runs})"))
                        walls.append(time.monotonic() - began)
                began = time.monotonic()
                report = evaluate_strategies(logs, graph, relevance, list(web.seeds), web.budget, random_runs=1)
                scoring = time.monotonic() - began
                print(evaluate_table(report))
        except (CommandError, RuntimeError) as exc:
            yield topic, f"{exc} (output in {transcript})"
            continue
        (workdir / f"{web.name}-{topic.name}.json").write_text(json.dumps(report) + "\n", encoding="utf-8")
        # where the time went: the web's graph (with its first topic), each crawl from start to exit
        # (its requests' span is in the report), scoring with the simulated baselines
        report["wall_seconds"] = {"graph": graph_seconds, "crawls": walls, "scoring": scoring}
        graph_seconds = 0.0
        yield topic, report


def harvest_points(budget: int) -> list[int]:
    return [n for n in HARVEST_AT if n < budget] + [budget]


def _row(web: str, topic: str, crawler: str, run: int, score: dict, budget: int) -> dict:
    return {
        "web": web, "topic": topic, "crawler": crawler, "run": run, "requests": score["requests"],
        "recall": score["recall"][str(budget)],
        "harvest": {str(n): score["harvest"][str(n)] for n in harvest_points(budget)},
        "relevant_per_minute": score.get("per_minute"), "seconds": score.get("seconds"),
    }


def rows_of_report(web: str, topic: str, report: dict) -> list[dict]:
    """Every crawl of an evaluate report of several strategies as a row, and the simulated BFS and
    oracle as one row each (crawler ``sim-bfs``, ``sim-oracle``)."""
    budget = report["budget"]
    rows = []
    for name in report["strategies"]:
        runs = report.get("runs", {}).get(name) or [report["crawlers"]["strategy:" + name]]
        rows += [_row(web, topic, name, i, score, budget) for i, score in enumerate(runs)]
    for name in SIMULATED:
        score = dict(report["crawlers"][name.removeprefix("sim-")])
        score.pop("per_minute", None)
        rows.append(_row(web, topic, name, 0, score, budget))
    return rows


# --- peer results -----------------------------------------------------------------------------


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_row(row, where: str) -> dict:
    """``row`` if it has the row shape (see the module docstring), else SuiteError saying why."""
    if not isinstance(row, dict):
        raise SuiteError(f"{where}: a row must be a JSON object")
    missing = [key for key in ROW_KEYS if key not in row]
    if missing:
        raise SuiteError(f"{where}: missing {', '.join(missing)}")
    for key in ("web", "topic", "crawler"):
        if not isinstance(row[key], str) or not row[key]:
            raise SuiteError(f"{where}: {key} must be a non-empty string")
    for key in ("run", "requests"):
        if not isinstance(row[key], int) or isinstance(row[key], bool) or row[key] < 0:
            raise SuiteError(f"{where}: {key} must be a whole number")
    if not _number(row["recall"]):
        raise SuiteError(f"{where}: recall must be a number")
    harvest = row["harvest"]
    if not isinstance(harvest, dict) or not all(
            isinstance(n, str) and n.isdigit() and _number(v) for n, v in harvest.items()):
        raise SuiteError(f"{where}: harvest must map request counts (\"100\") to numbers")
    for key in ("relevant_per_minute", "seconds"):
        if row[key] is not None and not _number(row[key]):
            raise SuiteError(f"{where}: {key} must be a number or null")
    return row


def read_peer_results(path: str | Path, option: str = "--peer-results") -> tuple[dict, list[dict]]:
    """({"peer", "version", "file"}, rows) of a peer results file; SuiteError if it is unreadable
    or not of the documented shape."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SuiteError(f"{option} {path}: no such file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SuiteError(f"{option} {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) or not isinstance(data.get("peer"), str):
        raise SuiteError(f"{option} {path}: expected an object with \"peer\" and \"rows\" (see bench/suite.py)")
    rows = [check_row(row, f"{option} {path}, row {i}") for i, row in enumerate(data["rows"])]
    return {"peer": data["peer"], "version": str(data.get("version", "")), "file": str(path)}, rows


# --- aggregation ------------------------------------------------------------------------------


@dataclass
class Cell:
    """One crawler on one topic: the mean of its runs."""

    runs: int
    recall: float
    recall_se: float | None  # standard error of the mean recall; None with one run
    harvest: dict  # str(N) -> mean harvest@N, at the points every run has
    per_minute: float | None

    @classmethod
    def of(cls, rows: list[dict]) -> "Cell":
        recalls = [row["recall"] for row in rows]
        mean = sum(recalls) / len(recalls)
        se = None
        if len(recalls) > 1:
            var = sum((r - mean) ** 2 for r in recalls) / (len(recalls) - 1)
            se = math.sqrt(var / len(recalls))
        points = sorted(set.intersection(*(set(row["harvest"]) for row in rows)), key=int)
        harvest = {n: sum(row["harvest"][n] for row in rows) / len(rows) for n in points}
        rates = [row["relevant_per_minute"] for row in rows if row["relevant_per_minute"] is not None]
        return cls(len(rows), mean, se, harvest, sum(rates) / len(rates) if rates else None)

    def shown(self) -> dict:
        """The table's figures: recall, harvest@100, @500 and @budget (the largest point), per minute."""
        last = max(self.harvest, key=int) if self.harvest else None
        return {"recall": self.recall, "h100": self.harvest.get("100"), "h500": self.harvest.get("500"),
                "hB": self.harvest.get(last) if last else None, "per_minute": self.per_minute}


def aggregate(rows: list[dict]) -> dict[tuple[str, str], dict[str, Cell]]:
    """{(web, topic): {crawler: Cell}} over every row, in the rows' order."""
    grouped: dict[tuple[str, str], dict[str, list[dict]]] = {}
    for row in rows:
        grouped.setdefault((row["web"], row["topic"]), {}).setdefault(row["crawler"], []).append(row)
    return {pair: {crawler: Cell.of(each) for crawler, each in crawlers.items()}
            for pair, crawlers in grouped.items()}


def crawler_order(rows: list[dict], strategies=STRATEGIES) -> list[str]:
    """The columns: our strategies in their order, then the peers' crawlers as first seen, then
    the simulated baselines."""
    seen = list(dict.fromkeys(row["crawler"] for row in rows))
    ours = [name for name in strategies if name in seen]
    peers = [name for name in seen if name not in ours and name not in SIMULATED]
    return ours + peers + [name for name in SIMULATED if name in seen]


def ratios(cells: dict[tuple[str, str], dict[str, Cell]], learner: str = LEARNER) -> dict[tuple[str, str], dict]:
    """For each topic the learner crawled beside at least one peer: its mean recall over the best
    peer's (every crawler but the learner and the simulated ones), and that peer."""
    out = {}
    for pair, crawlers in cells.items():
        peers = {name: cell for name, cell in crawlers.items() if name != learner and name not in SIMULATED}
        if learner not in crawlers or not peers:
            continue
        best = max(peers, key=lambda name: peers[name].recall)
        top = peers[best].recall
        ratio = crawlers[learner].recall / top if top > 0 else (1.0 if crawlers[learner].recall == 0 else math.inf)
        out[pair] = {"ratio": ratio, "best_peer": best, "best_peer_recall": top}
    return out


def means(cells: dict[tuple[str, str], dict[str, Cell]], crawlers: list[str]) -> dict[str, dict]:
    """Each crawler's mean over the topics it crawled (every topic weighs the same; a figure a
    topic lacks, harvest@500 under a budget of 300, is the mean over the others)."""
    out = {}
    for name in crawlers:
        mine = [topic[name].shown() for topic in cells.values() if name in topic]
        if not mine:
            continue
        out[name] = {"topics": len(mine)}
        for key in mine[0]:
            values = [figures[key] for figures in mine if figures[key] is not None]
            out[name][key] = sum(values) / len(values) if values else None
    return out


# --- the table --------------------------------------------------------------------------------

TITLES = {"sim-bfs": "BFS (sim)", "sim-oracle": "oracle (sim)"}
FIGURES = ("h100", "h500", "hB")


def _harvest(value) -> str:
    """A harvest in four characters: .052, 1.00, or - when the crawl has no such point."""
    if value is None:
        return f"{'-':>4}"
    return f"{value:.3f}"[1:] if value < 1 else f"{value:.2f}"


def _cell(figures: dict, recall_width: int, rate: bool, se: float | None = None) -> str:
    recall = f"{figures['recall']:.3f}" + (f"±{se:.3f}" if se is not None else "")
    text = f"{recall:<{recall_width}} " + " ".join(_harvest(figures[key]) for key in FIGURES)
    if rate:
        text += " " + (f"{'-':>5}" if figures["per_minute"] is None else f"{figures['per_minute']:>5.0f}")
    return text


def budgets_of(rows: list[dict]) -> dict[str, int]:
    """Each web's budget: the largest harvest point of its rows."""
    out: dict[str, int] = {}
    for row in rows:
        top = max((int(n) for n in row["harvest"]), default=0)
        out[row["web"]] = max(out.get(row["web"], 0), top)
    return out


def format_table(rows: list[dict], strategies=STRATEGIES, learner: str = LEARNER) -> str:
    """The suite's table (see the module docstring) from every row, ours and the peers'."""
    cells = aggregate(rows)
    columns = crawler_order(rows, strategies)
    ratio = ratios(cells, learner)
    averaged = means(cells, columns)
    several = any(c.recall_se is not None for crawlers in cells.values() for c in crawlers.values())
    recall_width = 11 if several else 6  # "0.500±0.012" or "recall"
    rate = {name: name not in SIMULATED for name in columns}
    width = {name: recall_width + 15 + (6 if rate[name] else 0) for name in columns}
    label = max([len(f"{w}/{t}") for w, t in cells] + [len("mean over topics")])

    def line(first: str, cells_: list[str], last: str | None) -> str:
        text = f"{first:<{label}} | " + " | ".join(cells_)
        return text + (f" | {last}" if last is not None and ratio else "")

    head = line("", [f"{TITLES.get(name, name):^{width[name]}}" for name in columns],
                f"{learner + ' / best peer':<19}")
    sub = line("web/topic", [f"{'recall':<{recall_width}} {'h100':>4} {'h500':>4} {'hB':>4}"
                             + (f" {'/min':>5}" if rate[name] else "") for name in columns],
               f"{'ratio':>5} {'peer':<13}")
    rule = "-" * len(head)
    lines = [head, sub, rule]
    for (web, topic), crawlers in cells.items():
        shown = [_cell(c.shown(), recall_width, rate[name], c.recall_se) if (c := crawlers.get(name))
                 else f"{'-':^{width[name]}}" for name in columns]
        r = ratio.get((web, topic))
        last = f"{r['ratio']:>5.2f} {r['best_peer']:<13}" if r else f"{'-':>5} {'':<13}"
        lines.append(line(f"{web}/{topic}", shown, last))
    lines.append(rule)
    shown = [_cell(m, recall_width, rate[name]) if (m := averaged.get(name)) else f"{'-':^{width[name]}}"
             for name in columns]
    worst = min(ratio, key=lambda pair: ratio[pair]["ratio"]) if ratio else None
    lines.append(line("mean over topics", shown, f"{ratio[worst]['ratio']:>5.2f} (worst)" if worst else ""))
    lines.append("")
    runs = sorted({c.runs for crawlers in cells.values() for name, c in crawlers.items() if name not in SIMULATED})
    budgets = budgets_of(rows)
    lines.append(f"recall: at the web's budget ({', '.join(f'{w} {b}' for w, b in budgets.items())} requests), "
                 f"the mean of {' or '.join(map(str, runs))} run{'s' if runs != [1] else ''}"
                 + (" ± its standard error" if several else "") + "; h100, h500, hB: harvest@100, @500, @budget; "
                 "/min: relevant pages per minute by the replay server's clock; (sim): simulated on the recorded "
                 "link graph.")
    partial = {name: m["topics"] for name, m in averaged.items() if m["topics"] < len(cells)}
    if partial:
        lines.append("crawled on fewer topics (their mean is over those): "
                     + ", ".join(f"{name} {n} of {len(cells)}" for name, n in partial.items()) + ".")
    if worst:
        lines.append(f"{learner} / best peer: its recall over the best other crawler's on the topic (our other "
                     f"strategies and the external peers); worst {ratio[worst]['ratio']:.2f} on {'/'.join(worst)} "
                     f"(best peer {ratio[worst]['best_peer']}).")
    return "\n".join(line.rstrip() for line in lines)


def summary(rows: list[dict], strategies=STRATEGIES, learner: str = LEARNER) -> dict:
    """The table's figures as JSON: each topic's cells, each crawler's mean, the learner's ratios."""
    cells = aggregate(rows)
    columns = crawler_order(rows, strategies)
    ratio = ratios(cells, learner)
    worst = min(ratio, key=lambda pair: ratio[pair]["ratio"]) if ratio else None
    return {
        "topics": [{"web": web, "topic": topic,
                    "crawlers": {name: vars(cell) for name, cell in crawlers.items()},
                    **({"ratio": ratio[(web, topic)]} if (web, topic) in ratio else {})}
                   for (web, topic), crawlers in cells.items()],
        "mean": means(cells, columns),
        "worst_ratio": ({"web": worst[0], "topic": worst[1], **ratio[worst]} if worst else None),
    }


# --- the command ------------------------------------------------------------------------------


def parse_names(value: str | None, known, option: str) -> list[str] | None:
    if value is None:
        return None
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if known is not None and name not in known]
    if not names or unknown:
        raise SuiteError(f"{option} {value!r}: each must be one of {', '.join(known)}")
    return names


def select(found: webs.Suite, topics: list[str] | None) -> list[tuple[webs.Web, webs.Topic]]:
    pairs = found.pairs()
    if topics is None:
        return pairs
    known = {topic.name for _, topic in pairs} | {f"{web.name}/{topic.name}" for web, topic in pairs}
    unknown = [name for name in topics if name not in known]
    if unknown:
        raise SuiteError(f"--topics: no topic {', '.join(unknown)} on the webs here "
                         f"(topics: {', '.join(sorted(known))})")
    return [(web, topic) for web, topic in pairs if topic.name in topics or f"{web.name}/{topic.name}" in topics]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench/suite.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, metavar="K", help="crawls per strategy and topic (default 1)")
    parser.add_argument("--webs", default=",".join(webs.WEB_NAMES), metavar="NAME[,NAME]",
                        help=f"the webs (default all: {', '.join(webs.WEB_NAMES)})")
    parser.add_argument("--topics", metavar="NAME[,NAME]", help="only these topics (NAME or WEB/NAME)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), metavar="NAME[,NAME]",
                        help=f"the ordering strategies to crawl with (default {','.join(STRATEGIES)})")
    parser.add_argument("--peer-results", nargs="+", action="extend", default=[], metavar="FILE.json",
                        help="rows of external peers' crawls (e.g. bench/peers/crawl4ai_peer.py), shown as "
                             "more crawlers")
    parser.add_argument("-o", "--output", metavar="FILE.json", help="write every row and the summary as JSON")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for every crawl (passed to scrapy evaluate)")
    parser.add_argument("--latency-ms", type=float, default=0.0, metavar="MS",
                        help="the replay answers each request MS milliseconds late (default 0): the suite at "
                             "another speed")
    parser.add_argument("--from", dest="previous", metavar="REPORT.json",
                        help="crawl nothing: the table of a previous run's -o report (with any --peer-results)")
    parser.add_argument("--workdir", metavar="DIR",
                        help="keep each topic's evaluate report and output here (default: a temporary folder)")
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return run(args)
    except SuiteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def run(args) -> int:
    from focuscrawl.config import STRATEGIES as KNOWN

    if args.runs < 1:
        raise SuiteError(f"--runs must be at least 1, not {args.runs}")
    if not args.latency_ms >= 0:
        raise SuiteError(f"--latency-ms must not be negative, not {args.latency_ms}")
    strategies = parse_names(args.strategies, KNOWN, "--strategies")
    names = parse_names(args.webs, webs.WEB_NAMES, "--webs")
    topics = parse_names(args.topics, None, "--topics")
    for item in args.set:
        if "=" not in item:
            raise SuiteError(f"-s {item!r}: expected NAME=VALUE")
        if item.split("=", 1)[0].strip() == "FOCUS_STRATEGY":
            raise SuiteError("-s FOCUS_STRATEGY: give the strategies in --strategies")
    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise SuiteError(f"cannot write {args.output}: no such directory")
    peers, peer_rows = [], []
    for path in args.peer_results:
        info, rows = read_peer_results(path)
        clash = sorted({row["crawler"] for row in rows} & (set(strategies) | set(SIMULATED)))
        if clash:
            raise SuiteError(f"--peer-results {path}: crawler {', '.join(clash)} is one the suite runs itself")
        peers.append(info)
        peer_rows += rows

    if args.previous:
        return show_previous(args, strategies, peers, peer_rows)
    found = webs.suite(names)
    for name, why in found.skipped.items():
        print(f"{name}: skipped, {why}", flush=True)
    pairs = select(found, topics)
    wanted = {(web.name, topic.name) for web, topic in pairs}
    ignored = [row for row in peer_rows if (row["web"], row["topic"]) not in wanted]
    if ignored:
        print(f"peer results: {len(ignored)} rows of webs/topics not in this run left out "
              f"({', '.join(sorted({row['web'] + '/' + row['topic'] for row in ignored}))})")
    peer_rows = [row for row in peer_rows if (row["web"], row["topic"]) in wanted]

    workdir = (Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="focus-suite-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    rows, failed, timings = [], {}, {}
    spent = {"graph": 0.0, "crawls": 0.0, "requests": 0.0, "scoring": 0.0}
    started = time.monotonic()
    for web in found.webs:
        topics = [topic for w, topic in pairs if w.name == web.name]
        if not topics:
            continue
        print(f"{web.name}: {', '.join(t.name for t in topics)} with {', '.join(strategies)}, "
              f"{args.runs} run{'s' if args.runs > 1 else ''} each, budget {web.budget} ...", flush=True)
        began = time.monotonic()
        for topic, report in evaluate_web(web, topics, strategies, args.runs, workdir, args.set,
                                          latency_ms=args.latency_ms):
            key = f"{web.name}/{topic.name}"
            timings[key] = round(time.monotonic() - began, 1)  # the first topic's includes the web's graph
            began = time.monotonic()
            if isinstance(report, str):
                failed[key] = report
                print(f"{key}: failed, {report}", flush=True)
                continue
            topic_rows = rows_of_report(web.name, topic.name, report)
            rows += topic_rows
            wall = report["wall_seconds"]
            spent["graph"] += wall["graph"]
            spent["crawls"] += sum(wall["crawls"])
            spent["scoring"] += wall["scoring"]
            spent["requests"] += sum(row["seconds"] or 0.0 for row in topic_rows)
            print(f"{key}: done in {timings[key]:.0f} s", flush=True)
            if args.output:  # after every topic, so a long run that stops leaves what it measured
                write_output(args, strategies, found, rows + peer_rows, peers, failed, timings, started, spent)
    elapsed = time.monotonic() - started
    everything = rows + peer_rows
    print()
    if everything:
        print(format_table(everything, strategies))
    print(f"\n{len(pairs) - len(failed)} of {len(pairs)} topics crawled in {elapsed / 60:.1f} min"
          + (f"; failed: {', '.join(failed)}" if failed else "")
          + (f"; skipped webs: {', '.join(found.skipped)}" if found.skipped else ""))
    if spent["crawls"]:
        print(f"where the time went: the webs' link graphs {spent['graph']:.0f} s, the crawls {spent['crawls']:.0f} s "
              f"(their requests {spent['requests']:.0f} s by the replay server's clock, the rest start-up and "
              f"wind-down), scoring with the simulated baselines {spent['scoring']:.0f} s")
    if args.output:
        write_output(args, strategies, found, everything, peers, failed, timings, started, spent)
        print(f"report written to {args.output}")
    if failed or args.workdir:
        print(f"each topic's evaluate report and output: {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


def show_previous(args, strategies, peers, peer_rows) -> int:
    """``--from``: the table of a previous run's rows and the peers' (no crawl)."""
    _, rows = read_peer_results(args.previous, "--from")
    everything = rows + peer_rows
    if not everything:
        raise SuiteError(f"--from {args.previous}: no rows")
    print(format_table(everything, strategies))
    if args.output:
        previous = json.loads(Path(args.previous).read_text(encoding="utf-8"))
        previous.update(rows=everything, peers=[*previous.get("peers", []), *peers],
                        summary=summary(everything, strategies))
        Path(args.output).write_text(json.dumps(previous, indent=1) + "\n", encoding="utf-8")
        print(f"report written to {args.output}")
    return 0


def write_output(args, strategies, found: webs.Suite, rows, peers, failed, timings, started, spent=None) -> None:
    report = {
        "peer": "focuscrawl", "version": focuscrawl_version(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/suite.py", *sys.argv[1:]]),
        "runs": args.runs, "strategies": strategies, "settings": args.set,
        "latency_ms": getattr(args, "latency_ms", 0.0), "load": load_average(),
        "budgets": {web.name: web.budget for web in found.webs},
        "skipped": found.skipped, "failed": failed, "peers": peers,
        "seconds": {"total": round(time.monotonic() - started, 1), "per_topic": timings,
                    "spent": {key: round(value, 1) for key, value in (spent or {}).items()}},
        "rows": rows, "summary": summary(rows, strategies),
    }
    partial = Path(args.output).with_suffix(".partial")
    partial.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    os.replace(partial, args.output)


def load_average() -> list[float] | None:
    """The machine's load over 1, 5 and 15 minutes as the report is written: a crawl's order depends
    on its speed, and a shared machine's load is part of it."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def focuscrawl_version() -> str:
    try:
        done = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
