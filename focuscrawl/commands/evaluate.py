"""``scrapy evaluate WARC --labels --positive --seeds --model --budget``: how much better than
breadth-first is the focused crawl, on a recorded web with known labels?

It replays the WARC through a ReplayProxy, runs ``scrapy crawl focused`` through it as a
separate process, then scores the server's log (the server's view is the truth: every request
that reached it counts) against breadth-first, random and oracle crawls simulated on the same
link graph with the same accounting (see ``focuscrawl.replay.metrics``).

With ``--strategies learned,bestfirst,shark,bfs`` it crawls once (or ``--runs`` times) with each
ordering strategy (``FOCUS_STRATEGY``: the same crawler, frontier and politeness, only the order
differs), each crawl through a fresh replay, and reports them side by side with the simulated
baselines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.config import STRATEGIES
from focuscrawl.commands.replay import load_web, start_proxy
from focuscrawl.replay.baselines import baseline_curves, mean_curve
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases
from focuscrawl.replay.metrics import (
    Relevance,
    counted_requests,
    crawl_seconds,
    found_curve,
    load_labels,
    reachable_relevant,
    read_log,
    relevant_per_minute,
    report_points,
    score_curve,
)

CRAWLERS = ("focuscrawl", "bfs", "random", "oracle")
BASELINES = CRAWLERS[1:]
TITLES = {"focuscrawl": "focuscrawl", "bfs": "BFS", "random": "random", "oracle": "oracle"}
#: a strategy's crawls in a report of several (``--strategies``): "strategy:NAME", apart from the
#: simulated baselines (the crawled "bfs" strategy is not the simulated "bfs")
STRATEGY_KEY = "strategy:"


def evaluate_logs(logs: list[list[dict]], graph: LinkGraph, relevance: Relevance, seeds: list[str],
                  budget: int, random_runs: int = 10) -> dict:
    """The report: the crawls' logs (first ``budget`` counted requests each) and the three
    baselines, each with its found curve and harvest@N / recall@N at the report points. With
    several crawls of the same web (a replayed crawl's order depends on timing, so one run can
    mislead), "focuscrawl" is their mean curve and "runs" holds each crawl's own scores and curve."""
    reach = len(reachable_relevant(graph, seeds, relevance))
    points = report_points(budget)
    runs = [found_curve(counted_requests(log)[:budget], relevance) for log in logs]
    curves = {"focuscrawl": runs[0] if len(runs) == 1 else mean_curve(runs)}
    curves.update(baseline_curves(graph, seeds, relevance, budget, random_runs=random_runs))
    crawlers = {}
    for name in CRAWLERS:
        crawlers[name] = score_curve(curves[name], reach, points)
        crawlers[name]["curve"] = curves[name]
    report = {
        "budget": budget, "seeds": seeds, "positive": sorted(relevance.positive),
        "reachable_relevant": reach, "points": points, "random_runs": random_runs,
        "crawlers": crawlers,
    }
    per_minute = [relevant_per_minute(log, relevance, budget) for log in logs]
    seconds = [crawl_seconds(log, budget) for log in logs]
    crawlers["focuscrawl"]["per_minute"] = sum(per_minute) / len(per_minute)
    crawlers["focuscrawl"]["seconds"] = sum(seconds) / len(seconds)
    if len(runs) > 1:
        report["runs"] = [{**score_curve(curve, reach, points), "curve": curve, "per_minute": rate, "seconds": span}
                          for curve, rate, span in zip(runs, per_minute, seconds)]
    return report


def evaluate_strategies(logs: dict[str, list[list[dict]]], graph: LinkGraph, relevance: Relevance,
                        seeds: list[str], budget: int, random_runs: int = 10) -> dict:
    """The report of crawls with several ordering strategies: ``logs`` maps a strategy to its
    crawls' logs. Each strategy's crawls are scored as ``evaluate_logs`` scores a crawl (their mean
    curve), under "strategy:NAME" in "crawlers" beside the simulated baselines; "strategies" lists
    them in order, and with several crawls a strategy "runs" holds each crawl's scores and curve."""
    reach = len(reachable_relevant(graph, seeds, relevance))
    points = report_points(budget)
    baselines = baseline_curves(graph, seeds, relevance, budget, random_runs=random_runs)
    crawlers, each = {}, {}
    for name, crawls in logs.items():
        curves = [found_curve(counted_requests(log)[:budget], relevance) for log in crawls]
        rates = [relevant_per_minute(log, relevance, budget) for log in crawls]
        spans = [crawl_seconds(log, budget) for log in crawls]
        curve = curves[0] if len(curves) == 1 else mean_curve(curves)
        crawlers[STRATEGY_KEY + name] = {**score_curve(curve, reach, points), "curve": curve,
                                         "per_minute": sum(rates) / len(rates), "seconds": sum(spans) / len(spans)}
        each[name] = [{**score_curve(c, reach, points), "curve": c, "per_minute": r, "seconds": t}
                      for c, r, t in zip(curves, rates, spans)]
    for name in BASELINES:
        crawlers[name] = {**score_curve(baselines[name], reach, points), "curve": baselines[name]}
    report = {
        "budget": budget, "seeds": seeds, "positive": sorted(relevance.positive),
        "reachable_relevant": reach, "points": points, "random_runs": random_runs,
        "strategies": list(logs), "crawlers": crawlers,
    }
    if any(len(crawls) > 1 for crawls in logs.values()):
        report["runs"] = each
    return report


def _columns(report: dict) -> list[tuple[str, str]]:
    """(crawler key, title) of the table's columns: the strategies' crawls (or the one crawl), then
    the simulated baselines."""
    if "strategies" in report:
        return ([(STRATEGY_KEY + name, name) for name in report["strategies"]]
                + [(name, TITLES[name] + " (sim)") for name in BASELINES])
    return [(name, TITLES[name]) for name in CRAWLERS]


def format_table(report: dict) -> str:
    """One table: a row per N, harvest@N and recall@N for each crawler."""
    head = (f"relevant = {', '.join(report['positive'])}; {report['reachable_relevant']} relevant pages "
            f"reachable from the seeds; every request counts (404s and redirects too, robots.txt not)")
    if "strategies" in report:
        return _strategies_table(report, head)
    runs = report.get("runs", [])
    made = [run["requests"] for run in runs] or [report["crawlers"]["focuscrawl"]["requests"]]
    if runs:
        span = f"{min(made)}" if min(made) == max(made) else f"{min(made)}-{max(made)}"
        crawls = f"focuscrawl: the mean of {len(runs)} crawls, each of {span} counted requests"
    else:
        crawls = f"focuscrawl made {made[0]} counted request{'s' if made[0] != 1 else ''}"
    lines = [head, f"{crawls} (budget {report['budget']})", ""]
    cell = 18
    lines.append(f"{'N':>6} | " + " | ".join(f"{TITLES[c]:^{cell}}" for c in CRAWLERS))
    lines.append(f"{'':>6} | " + " | ".join(f"{'harvest':>8} {'recall':>9}" for _ in CRAWLERS))
    lines.append("-" * 7 + "+" + "+".join("-" * (cell + 2) for _ in CRAWLERS))
    for n in report["points"]:
        cells = []
        for name in CRAWLERS:
            score = report["crawlers"][name]
            cells.append(f"{score['harvest'][str(n)]:>8.3f} {score['recall'][str(n)]:>9.1%}")
        lines.append(f"{n:>6} | " + " | ".join(cells))
    lines += ["", per_minute_line("focuscrawl", report["crawlers"]["focuscrawl"], runs)]
    if runs:
        lines += ["", "focuscrawl, each crawl (harvest / recall at N; relevant pages per minute):",
                  f"{'crawl':>6} | " + " | ".join(f"{n:^{cell}}" for n in report["points"]) + " | per min"]
        for i, run in enumerate(runs, 1):
            lines.append(f"{i:>6} | " + " | ".join(
                f"{run['harvest'][str(n)]:>8.3f} {run['recall'][str(n)]:>9.1%}" for n in report["points"])
                + f" | {run.get('per_minute', 0.0):>7.1f}")
    return "\n".join(lines)


def per_minute_line(name: str, score: dict, runs: list[dict]) -> str:
    """Relevant pages found per minute (the server's clock), beside harvest per request at the
    budget: the crawl's mean, and each crawl's when there are several."""
    last = str(max(int(n) for n in score["harvest"]))
    line = (f"{name}: {score.get('per_minute', 0.0):.1f} relevant pages per minute "
            f"({score['harvest'][last]:.3f} per request at {last})")
    if runs:
        line += "; each crawl: " + ", ".join(f"{run.get('per_minute', 0.0):.1f}" for run in runs)
    return line


def _rows(report: dict, columns: list[tuple[str, str]], cell: int) -> list[str]:
    """The table's head and a row per report point: harvest@N and recall@N for each column."""
    lines = [f"{'N':>6} | " + " | ".join(f"{title:^{cell}}" for _, title in columns),
             f"{'':>6} | " + " | ".join(f"{'harvest':>8} {'recall':>9}" for _ in columns),
             "-" * 7 + "+" + "+".join("-" * (cell + 2) for _ in columns)]
    for n in report["points"]:
        lines.append(f"{n:>6} | " + " | ".join(
            f"{report['crawlers'][key]['harvest'][str(n)]:>8.3f} {report['crawlers'][key]['recall'][str(n)]:>9.1%}"
            for key, _ in columns))
    return lines


def _strategies_table(report: dict, head: str) -> str:
    """``format_table`` of a report of several strategies: a column per strategy (the mean of its
    crawls), then the simulated baselines; with several crawls, each strategy's crawls below."""
    runs = report.get("runs", {})
    made = [report["crawlers"][STRATEGY_KEY + name]["requests"] for name in report["strategies"]]
    if runs:
        made = [run["requests"] for name in report["strategies"] for run in runs[name]]
        crawls = f"each strategy: the mean of {len(next(iter(runs.values())))} crawls"
    else:
        crawls = "each strategy: one crawl"
    span = f"{min(made)}" if min(made) == max(made) else f"{min(made)}-{max(made)}"
    lines = [head, f"{crawls} through a fresh replay, each of {span} counted requests (budget {report['budget']}); "
                   f"(sim): simulated on the recorded link graph", ""]
    cell = 18
    lines += _rows(report, _columns(report), cell)
    lines.append("")
    lines += [per_minute_line(name, report["crawlers"][STRATEGY_KEY + name], runs.get(name, []))
              for name in report["strategies"]]
    for name in report["strategies"] if runs else ():
        lines += ["", f"{name}, each crawl (harvest / recall at N):",
                  f"{'crawl':>6} | " + " | ".join(f"{n:^{cell}}" for n in report["points"])]
        for i, run in enumerate(runs[name], 1):
            lines.append(f"{i:>6} | " + " | ".join(
                f"{run['harvest'][str(n)]:>8.3f} {run['recall'][str(n)]:>9.1%}" for n in report["points"]))
    return "\n".join(lines)


def plot_curves(report: dict, path: str) -> None:
    """Relevant pages found against requests made, one line per crawler, as a PNG: a crawl solid
    (the mean of its runs, each run faint behind it), the simulated baselines dashed
    (focuscrawl/observe/plot.py, the drawing every harvest curve shares)."""
    from focuscrawl.observe.plot import found_series, harvest_figure, write_figure

    if "strategies" in report:
        names = [(STRATEGY_KEY + name, name, report.get("runs", {}).get(name)) for name in report["strategies"]]
    else:
        names = [("focuscrawl", TITLES["focuscrawl"], report.get("runs"))]
    series = []
    for colour, (key, title, runs) in enumerate(names):
        series += [found_series(run["curve"], kind="run", colour=colour) for run in runs or ()]
        if runs:
            title += f" (mean of {len(runs)})"
        series.append(found_series(report["crawlers"][key]["curve"], title, colour=colour))
    for colour, name in enumerate(BASELINES, start=len(names)):
        series.append(found_series(report["crawlers"][name]["curve"], TITLES[name] + " (sim)", "baseline", colour))
    fig = harvest_figure(series, x_label="requests (404s and redirects included)",
                         y_label=f"relevant pages found ({', '.join(report['positive'])})",
                         x_max=report["budget"], ceiling=report["reachable_relevant"])
    write_figure(fig, path)


def crawl_command(seeds: str, model: str, budget: int, store: str, settings: list[str]) -> list[str]:
    """The ``scrapy crawl focused`` argv; the user's ``-s`` come last, so they win (a replay is
    crawled with DOWNLOAD_DELAY=0 unless the user gives one: ``-s DOWNLOAD_DELAY=1`` with
    ``--latency-ms`` times a crawl under real politeness)."""
    argv = [sys.executable, "-m", "scrapy", "crawl", "focused", "-a", f"seeds={seeds}", "-a", f"model={model}",
            "-s", f"FOCUS_BUDGET={budget}", "-s", f"FOCUS_STORE={store}"]
    if not any(item.split("=", 1)[0].strip() == "DOWNLOAD_DELAY" for item in settings):
        argv += ["-s", "DOWNLOAD_DELAY=0"]
    for item in settings:
        argv += ["-s", item]
    return argv


def read_seed_urls(seeds: str) -> list[str]:
    """The seed URLs as the spider reads them (a file, one URL a line, or URL[,URL])."""
    from focuscrawl.spiders.focused import SeedsError, read_seeds

    try:
        return read_seeds(seeds)
    except SeedsError as exc:
        raise CommandError(str(exc)) from None


def parse_count(value, option: str, unit: str) -> int:
    """A whole number of at least 1 given to ``option``, or a one-line error."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise CommandError(f"{option} must be a whole number of {unit}, not {value!r}") from None
    if count <= 0:
        raise CommandError(f"{option} must be at least 1, not {value!r}")
    return count


def parse_strategies(value: str, settings: list[str]) -> list[str]:
    """The strategies named in ``--strategies`` (known, each once), or a one-line error; a -s
    FOCUS_STRATEGY beside it would be overridden, so it is refused."""
    names = [name.strip() for name in value.split(",") if name.strip()]
    unknown = [name for name in names if name not in STRATEGIES]
    if not names or unknown:
        raise CommandError(f"--strategies {value!r}: each must be one of {', '.join(STRATEGIES)}")
    if len(set(names)) != len(names):
        raise CommandError(f"--strategies {value!r} names a strategy twice")
    if any(item.split("=", 1)[0].strip() == "FOCUS_STRATEGY" for item in settings):
        raise CommandError("-s FOCUS_STRATEGY and --strategies together: give the strategies in --strategies")
    return names


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("WARC [WARC...] --labels FILE.tsv --positive LABEL[,LABEL] --seeds SEEDS --model MODEL "
                "--budget N [--aliases FILE.tsv] [--runs K] [--latency-ms MS] [--strategies NAME[,NAME]] [-o report.json] [--plot curve.png] "
                "[-s NAME=VALUE ...]")

    def short_desc(self) -> str:
        return "Crawl a recorded web and compare harvest and recall with BFS, random and an oracle"

    def long_desc(self) -> str:
        return (
            "Replay the WARC files on 127.0.0.1, run `scrapy crawl focused` through the replay with a budget "
            "of N requests (-s settings are passed on to it), and score the server's log: harvest@N "
            "(relevant pages found per request) and recall@N (share of the relevant pages reachable from the "
            "seeds), and relevant pages found per minute (the server's clock), beside breadth-first, random (mean of 10 runs) and oracle crawls simulated on the same "
            "link graph. Every request counts, 404s and redirects included; robots.txt does not. With "
            "--strategies, crawl with each ordering strategy (FOCUS_STRATEGY) in turn, --runs times each, and "
            "report them side by side."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--labels", metavar="FILE.tsv", help="url<TAB>label for the recorded pages")
        parser.add_argument("--positive", metavar="LABEL[,LABEL]", help="the labels that count as relevant")
        parser.add_argument("--seeds", metavar="SEEDS", help="a seeds file (one URL a line) or URL[,URL]")
        parser.add_argument("--model", metavar="MODEL", help="the topic model for the crawl (see `scrapy train`)")
        parser.add_argument("--budget", metavar="N", help="requests the crawl may make (robots.txt not counted)")
        parser.add_argument("--aliases", metavar="FILE.tsv",
                            help="url<TAB>same_as lines, each naming two URLs of one page")
        parser.add_argument("-o", "--output", metavar="FILE", help="write the report as JSON to FILE")
        parser.add_argument("--plot", metavar="FILE.png", help="draw relevant pages found vs requests")
        parser.add_argument("--runs", default="1", metavar="K",
                            help="crawl K times and report their mean and each crawl (default 1); a replayed "
                                 "crawl's order depends on timing, so crawls differ")
        parser.add_argument("--strategies", metavar="NAME[,NAME]",
                            help="crawl with each of these ordering strategies (FOCUS_STRATEGY, any of "
                                 f"{', '.join(STRATEGIES)}) --runs times each, and report them side by side")
        parser.add_argument("--latency-ms", default="0", metavar="MS",
                            help="the replay answers each request MS milliseconds late (default 0); with "
                                 "-s DOWNLOAD_DELAY=1 it times a crawl under real politeness")
        parser.add_argument("--random-runs", default="10", metavar="K", help=argparse.SUPPRESS)

    def execute(self, args: list[str], opts) -> None:
        for name in ("labels", "positive", "seeds", "model", "budget"):
            if not getattr(opts, name):
                raise CommandError(f"missing --{name} (see `scrapy evaluate -h`)")
        budget = parse_count(opts.budget, "--budget", "requests")
        runs = parse_count(opts.runs, "--runs", "crawls")
        strategies = parse_strategies(opts.strategies, opts.set) if opts.strategies is not None else None
        random_runs = parse_count(opts.random_runs, "--random-runs", "runs")
        try:
            opts.latency_ms = float(opts.latency_ms)
        except (TypeError, ValueError):
            raise CommandError(f"--latency-ms must be a number of milliseconds, not {opts.latency_ms!r}") from None
        if not opts.latency_ms >= 0:
            raise CommandError(f"--latency-ms must not be negative, not {opts.latency_ms!r}")
        positive = [p.strip() for p in opts.positive.split(",") if p.strip()]
        if not os.path.isfile(opts.model):
            raise CommandError(f"model file not found: {opts.model}")
        try:
            labels = load_labels(opts.labels)
            aliases = load_aliases(opts.aliases) if opts.aliases else []
        except FileNotFoundError as exc:
            raise CommandError(str(exc)) from None
        known = set(labels.values())
        unknown = [p for p in positive if p not in known]
        if not positive or unknown:
            raise CommandError(f"--positive {opts.positive!r}: no such label in {opts.labels} "
                               f"(labels there: {', '.join(sorted(known)) or 'none'})")
        seeds = read_seed_urls(opts.seeds)
        for path in (opts.output, opts.plot):
            if path and not Path(path).resolve().parent.is_dir():
                raise CommandError(f"cannot write {path}: no such directory")
        if opts.plot:  # before the crawls, not after them
            from focuscrawl.observe.plot import check_available

            check_available("--plot")
        web = load_web(args)
        graph = LinkGraph.from_web(web)
        relevance = Relevance(labels, positive, SamePage.for_graph(graph, aliases))

        if strategies is None:
            logs = [self._crawl(web, opts, budget, f" (crawl {run} of {runs})" if runs > 1 else "")
                    for run in range(1, runs + 1)]
            report = evaluate_logs(logs, graph, relevance, seeds, budget, random_runs=random_runs)
        else:
            by_strategy = {name: [self._crawl(web, opts, budget, f" (FOCUS_STRATEGY={name}"
                                              + (f", crawl {run} of {runs})" if runs > 1 else ")"),
                                              [f"FOCUS_STRATEGY={name}"])
                                  for run in range(1, runs + 1)]
                           for name in strategies}
            report = evaluate_strategies(by_strategy, graph, relevance, seeds, budget, random_runs=random_runs)
        print(format_table(report))
        if opts.output:
            Path(opts.output).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
            print(f"report written to {opts.output}")
        if opts.plot:
            plot_curves(report, opts.plot)
            print(f"curves drawn in {opts.plot}")

    @staticmethod
    def _crawl(web, opts, budget: int, which: str, settings: list[str] = ()) -> list[dict]:
        """One crawl of ``web`` with the command's options (``settings`` after the user's)."""
        return crawl_replay(web, opts.seeds, opts.model, budget, [*opts.set, *settings],
                            latency_ms=opts.latency_ms, which=which)


def crawl_replay(web, seeds: str, model: str, budget: int, settings=(), latency_ms: float = 0.0,
                 which: str = "", keep_output: str | Path | None = None) -> list[dict]:
    """One ``scrapy crawl focused`` (``settings`` as its -s, see ``crawl_command``) through a fresh
    replay of the recorded ``web``: the replay server's log. CommandError if the crawl fails (its
    output is kept and named). ``keep_output``: a file the crawl's own output (its log and stats)
    is copied to."""
    workdir = Path(tempfile.mkdtemp(prefix="focuscrawl-evaluate-"))
    server_log = workdir / "server.jsonl"
    crawl_log = workdir / "crawl.log"
    proxy = start_proxy(web, log_path=str(server_log), latency_ms=latency_ms)
    print(f"replaying {len(web)} responses at {proxy.url}; crawling with a budget of {budget} requests{which}...",
          flush=True)
    argv = crawl_command(seeds, model, budget, str(workdir / "crawl.db"), list(settings))
    try:
        with crawl_log.open("w", encoding="utf-8") as out:
            env = proxy.crawl_env(settings_module=os.environ.get("SCRAPY_SETTINGS_MODULE", "focuscrawl.settings"))
            result = subprocess.run(argv, env=env, stdout=out, stderr=subprocess.STDOUT)
    except KeyboardInterrupt:
        raise CommandError(f"interrupted; the crawl's output is in {crawl_log}") from None
    finally:
        proxy.stop()
    if result.returncode != 0:
        tail = [ln for ln in crawl_log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()][-1:]
        raise CommandError(f"the crawl failed (exit {result.returncode}): {tail[0] if tail else 'no output'}; "
                           f"full output in {crawl_log}")
    log = read_log(server_log)
    if keep_output is not None:
        shutil.copyfile(crawl_log, keep_output)
    shutil.rmtree(workdir, ignore_errors=True)
    return log
