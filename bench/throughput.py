"""Pages per second of ``scrapy crawl focused`` beside stock Scrapy, on the same replayed web.

    python bench/throughput.py [--web demo|webkb] [--pages N] [--concurrency C] [--model MODEL]

Both crawls run in this one invocation, each as its own ``python -m scrapy`` process against its
own ReplayProxy (latency 0) over the same recorded web, with DOWNLOAD_DELAY=0, the same
CONCURRENT_REQUESTS, one request at a time per host (focuscrawl's rule; given to stock Scrapy
too so only the crawl machinery differs) and ROBOTSTXT_OBEY=True. Stock Scrapy is a plain
CrawlSpider following every link with the default scheduler; it stops after N page
responses (robots.txt and redirects not counted), focuscrawl after N requests (FOCUS_BUDGET).

Throughput is measured on the server's log: counted requests (robots.txt not counted) divided by
the time from the first request's start to the last response's end, so process start-up and
model loading are left out; wall time is printed too. On WebKB most links lead to pages never
recorded (404s, which cost the server and the crawler almost nothing), and a crawl that avoids them
does more work per request; so the pages actually served (status 200) per second are printed too.
Relevant pages found per minute (the web's labels, ``focuscrawl.replay.metrics``) are printed for
both crawlers: what a user feels, where requests per second measure only the machinery.
A last line per crawler says why it runs at its rate: how many hosts it works at once and, on its
busiest hosts, the median gap between one response and the next request.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402
from focuscrawl.replay.linkgraph import LinkGraph, SamePage, load_aliases  # noqa: E402
from focuscrawl.replay.metrics import Relevance, counted_requests, load_labels, relevant_per_minute  # noqa: E402

WEBKB = ROOT.parent / "shared" / "webkb"
WEBKB_SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/",
               "http://www.cs.washington.edu/", "http://www.cs.wisc.edu/"]

STOCK_SPIDER = textwrap.dedent('''
    from scrapy.exceptions import CloseSpider
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule

    class Stock(CrawlSpider):
        name = "stock"
        rules = [Rule(LinkExtractor(), callback="parse_page", follow=True)]

        def __init__(self, seeds="", pages="1000", *args, **kwargs):
            self.start_urls = [u for u in open(seeds).read().split() if u]
            self.pages, self.seen = int(pages), 0
            super().__init__(*args, **kwargs)

        def parse_page(self, response):
            self.seen += 1  # robots.txt and redirects never reach here: like FOCUS_BUDGET
            if self.seen >= self.pages:
                raise CloseSpider("pages")
            return None
''')


def load_web(which: str, workdir: Path):
    """(RecordedWeb, robots, seeds, warc path, labels path, positive label)."""
    if which == "webkb":
        warc = WEBKB / "webkb.warc.gz"
        return RecordedWeb.from_warcs([warc]), {}, WEBKB_SEEDS, warc, WEBKB / "labels.tsv", "course"
    from focuscrawl.demo import generate_web

    demo = generate_web(seed=0)
    warc = demo.write_warc(workdir / "demo.warc.gz")
    labels = demo.write_labels(workdir / "labels.tsv")
    return RecordedWeb.from_records(demo.records), demo.robots, demo.seeds, warc, labels, demo.topic


def train_model(warc, labels, positive, path: Path) -> Path:
    """A topic model for the focused crawl (its quality does not matter for throughput)."""
    from focuscrawl.relevance import load_examples, train_topic_model

    model, _ = train_topic_model(load_examples([str(warc)], labels_path=str(labels)), [positive], cv_folds=2)
    model.save(str(path))
    return path


def run(argv: list[str], proxy: ReplayProxy, cwd: Path, env_extra: dict, timeout: float) -> float:
    env = proxy.crawl_env(settings_module=None)
    env.update(env_extra)
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "scrapy", *argv], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=timeout)
    wall = time.monotonic() - start
    if result.returncode != 0:
        sys.exit(f"error: `scrapy {' '.join(argv[:2])}` failed (exit {result.returncode}):\n{result.stderr[-2000:]}")
    return wall


def relevance_of(web: RecordedWeb, labels, positive: str) -> Relevance:
    """Which pages count as relevant (WebKB's aliases too, when present)."""
    aliases = load_aliases(WEBKB / "aliases.tsv") if str(labels).startswith(str(WEBKB)) else []
    return Relevance(load_labels(labels), [positive], SamePage.for_graph(LinkGraph.from_web(web), aliases))


def rate(proxy: ReplayProxy, relevance: Relevance) -> tuple[int, float, float, float, str]:
    """(counted requests, requests per second and pages served with status 200 per second, between
    the first start and the last end, relevant pages found per minute, and how the crawl used the
    hosts: ``host_use``)."""
    proxy.wait_idle()
    log = [r for r in proxy.log if r.get("path") != "/robots.txt" and r.get("url")]
    n = len(counted_requests(log))
    if n < 2:
        return n, 0.0, 0.0, 0.0, ""
    span = max(r["t_end"] for r in log) - min(r["t_start"] for r in log)
    if span <= 0:
        return n, float("inf"), float("inf"), 0.0, ""
    return (n, n / span, sum(1 for r in log if r.get("status") == 200) / span, relevant_per_minute(log, relevance),
            host_use(log))


def host_use(log: list[dict], busiest: int = 4) -> str:
    """Why a crawl runs at its rate, from the server's log: how many hosts it works at once (distinct
    hosts per 100 ms) and, on its busiest hosts, the median time from one response's end to the
    host's next request (politeness delay plus the crawler's own reaction) and the server's time per
    request."""
    start = min(r["t_start"] for r in log)
    windows: dict[int, set] = {}
    per_host: dict[str, list[dict]] = {}
    for r in sorted(log, key=lambda r: r["t_start"]):
        windows.setdefault(int((r["t_start"] - start) * 10), set()).add(r["host"])
        per_host.setdefault(r["host"], []).append(r)
    top = sorted(per_host.values(), key=len, reverse=True)[:busiest]
    gaps = [b["t_start"] - a["t_end"] for rows in top for a, b in itertools.pairwise(rows)]
    service = [r["t_end"] - r["t_start"] for rows in top for r in rows]
    return (f"{statistics.mean(len(h) for h in windows.values()):.1f} hosts per 100 ms; busiest {len(top)} hosts: "
            f"{sum(map(len, top))} requests, median gap {1000 * statistics.median(gaps or [0]):.1f} ms, "
            f"median service {1000 * statistics.median(service):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", choices=["demo", "webkb"], default="webkb" if (WEBKB / "webkb.warc.gz").is_file() else "demo")
    parser.add_argument("--pages", type=int, default=1000, help="requests per crawl (default 1000)")
    parser.add_argument("--concurrency", type=int, default=16, help="CONCURRENT_REQUESTS (default 16)")
    parser.add_argument("--model", help="topic model for the focused crawl (default: train one on the web's labels)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per crawl")
    parser.add_argument("-s", "--set", action="append", default=[], metavar="NAME=VALUE",
                        help="extra setting for the focused crawl only (e.g. FOCUS_PATIENCE=0)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="focuscrawl-bench-") as tmp:
        work = Path(tmp)
        web, robots, seeds, warc, labels, positive = load_web(args.web, work)
        (work / "seeds.txt").write_text("\n".join(seeds) + "\n")
        model = Path(args.model) if args.model else train_model(warc, labels, positive, work / "model.joblib")
        relevance = relevance_of(web, labels, positive)
        common = ["-s", f"CONCURRENT_REQUESTS={args.concurrency}", "-s", "DOWNLOAD_DELAY=0",
                  "-s", "ROBOTSTXT_OBEY=True", "-s", "LOG_LEVEL=WARNING", "-s", "TELNETCONSOLE_ENABLED=False"]
        print(f"web: {args.web} ({len(web)} recorded responses), {args.pages} requests per crawl, "
              f"CONCURRENT_REQUESTS={args.concurrency}, DOWNLOAD_DELAY=0, latency 0", flush=True)

        with ReplayProxy(web, robots=robots) as proxy:
            focus_wall = run(["crawl", "focused", "-a", f"seeds={work / 'seeds.txt'}", "-a", f"model={model}",
                              "-s", f"FOCUS_BUDGET={args.pages}", "-s", f"FOCUS_STORE={work / 'crawl.db'}", *common,
                              *[arg for setting in args.set for arg in ("-s", setting)]],
                             proxy, work, {"SCRAPY_SETTINGS_MODULE": "focuscrawl.settings"}, args.timeout)
            focus_n, focus_rate, focus_pages, focus_found, focus_use = rate(proxy, relevance)

        spider = work / "stock_spider.py"
        spider.write_text(STOCK_SPIDER)
        with ReplayProxy(web, robots=robots) as proxy:
            stock_wall = run(["runspider", str(spider), "-a", f"seeds={work / 'seeds.txt'}",
                              "-a", f"pages={args.pages}", "-s", "CONCURRENT_REQUESTS_PER_DOMAIN=1",
                              "-s", "HTTPERROR_ALLOW_ALL=True", *common],
                             proxy, work, {}, args.timeout)
            stock_n, stock_rate, stock_pages, stock_found, stock_use = rate(proxy, relevance)

    print(f"{'crawler':<14}{'requests':>10}{'req/s':>10}{'200s/s':>9}{'relevant/min':>14}{'wall s':>9}")
    print(f"{'focuscrawl':<14}{focus_n:>10}{focus_rate:>10.1f}{focus_pages:>9.1f}{focus_found:>14.1f}{focus_wall:>9.1f}")
    print(f"{'stock Scrapy':<14}{stock_n:>10}{stock_rate:>10.1f}{stock_pages:>9.1f}{stock_found:>14.1f}{stock_wall:>9.1f}")
    print(f"focuscrawl: {focus_use}\nstock Scrapy: {stock_use}")
    if stock_rate:
        print(f"focuscrawl / stock = {focus_rate / stock_rate:.2f} (requests), "
              f"{focus_pages / stock_pages if stock_pages else float('nan'):.2f} (pages served with status 200)")
    if len(web.hosts()) < 4 * args.concurrency:
        print(f"note: only {len(web.hosts())} hosts; focuscrawl obeys Crawl-delay and its adaptive per-host "
              "delay (stock Scrapy does neither), so on this web the ratio measures politeness, not machinery")


if __name__ == "__main__":
    main()
