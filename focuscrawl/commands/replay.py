"""``scrapy replay WARC...``: serve a recorded web as an HTTP proxy on 127.0.0.1 until stopped.

A crawl pointed at it with ``http_proxy`` sees the recorded pages as if they were live; its log
(``--log``) is the server's record of every request, for harvest and politeness audits.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.replay import ChangingWeb, RecordedWeb, RecordError, ReplayProxy
from focuscrawl.replay.changing import OTHER_MIX, RELEVANT_MIX
from focuscrawl.replay.metrics import load_labels


def load_robots(path: str | None) -> dict[str, str]:
    """{host: robots.txt text} from a JSON object file; CommandError when it is not one."""
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CommandError(f"robots file not found: {path}") from None
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot read robots file {path}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise CommandError(f"robots file {path} must be a JSON object of host -> robots.txt text")
    return data


def load_web(paths: list[str]) -> RecordedWeb:
    if not paths:
        raise CommandError("no WARC file given")
    try:
        web = RecordedWeb.from_warcs(paths)
    except RecordError as exc:
        raise CommandError(str(exc)) from None
    if not len(web):
        raise CommandError(f"no response records in {', '.join(paths)}")
    return web


def parse_port(value) -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise CommandError(f"--port must be a number from 0 to 65535, not {value!r}") from None
    if not 0 <= port <= 65535:
        raise CommandError(f"--port must be a number from 0 to 65535, not {value!r}")
    return port


def parse_latency(value) -> float:
    try:
        latency = float(value)
    except (TypeError, ValueError):
        raise CommandError(f"--latency-ms must be a number of milliseconds, not {value!r}") from None
    if latency < 0:
        raise CommandError(f"--latency-ms must not be negative, not {value!r}")
    return latency


def changing_web(web: RecordedWeb, opts) -> ChangingWeb | None:
    """The web as it changes (``--changing SEED``), its relevant pages (``--labels`` and
    ``--topic``) changing as the relevant pages' mix says; None without ``--changing``."""
    if opts.changing is None:
        return None
    try:
        seed, scale = int(opts.changing), float(opts.time_scale)
    except ValueError:
        raise CommandError(f"--changing takes a whole number (a seed) and --time-scale a number, not "
                           f"{opts.changing!r} and {opts.time_scale!r}") from None
    if not scale > 0:
        raise CommandError(f"--time-scale must be positive, not {opts.time_scale!r}")
    relevant: set[str] = set()
    if opts.labels:
        if not opts.topic:
            raise CommandError("--labels needs --topic: the label of the relevant pages")
        try:
            relevant = {url for url, label in load_labels(opts.labels).items() if label == opts.topic}
        except (OSError, ValueError) as exc:
            raise CommandError(f"cannot read labels file {opts.labels}: {exc}") from None
    return ChangingWeb(web, relevant, seed=seed, relevant_mix=RELEVANT_MIX.faster(scale),
                       other_mix=OTHER_MIX.faster(scale))


def start_proxy(web: RecordedWeb, **kwargs) -> ReplayProxy:
    try:
        return ReplayProxy(web, **kwargs).start()
    except OSError as exc:
        raise CommandError(f"cannot listen on 127.0.0.1:{kwargs.get('port', 0)}: {exc.strerror or exc}") from None


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return ("WARC [WARC...] [--port N] [--robots FILE.json] [--latency-ms MS] [--log FILE] "
                "[--changing SEED [--time-scale S] [--labels FILE --topic NAME]]")

    def short_desc(self) -> str:
        return "Serve a recorded web (WARC) as an HTTP proxy on 127.0.0.1, logging every request"

    def long_desc(self) -> str:
        return (
            "Serve the response records of the WARC files as an HTTP/1.1 forward proxy on 127.0.0.1: "
            "recorded URLs get their recorded answer, anything else 404. robots.txt comes from the WARC, "
            "else from --robots (a JSON object host -> text), else 404. Every request is logged as one "
            "JSON line to --log. Point a crawl at it with http_proxy=http://127.0.0.1:PORT. Ctrl-C stops it. "
            "With --changing SEED the pages change as they are crawled (each a Poisson process: ETag, "
            "Last-Modified and 304s, a feed and a sitemap with lastmod per host; the log says which version "
            "each answer was), --time-scale S times faster than the default mixes, the pages labelled --topic "
            "in --labels changing as relevant pages do; measure with focuscrawl.replay.freshness_report."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--port", default="0", metavar="N", help="port to listen on (default any free port)")
        parser.add_argument("--robots", metavar="FILE.json", help="robots.txt for hosts the WARC has none for")
        parser.add_argument("--latency-ms", default="0", metavar="MS", help="delay every answer by MS milliseconds")
        parser.add_argument("--log", metavar="FILE", help="append one JSON line per request to FILE")
        parser.add_argument("--changing", metavar="SEED", help="pages change while crawled, drawn from SEED")
        parser.add_argument("--time-scale", default="1", metavar="S", help="changes S times faster (default 1)")
        parser.add_argument("--labels", metavar="FILE", help="a labels TSV (url and label columns) naming the relevant pages")
        parser.add_argument("--topic", metavar="NAME", help="the label of the relevant pages in --labels")

    def execute(self, args: list[str], opts) -> None:
        port = parse_port(opts.port)
        latency = parse_latency(opts.latency_ms)
        robots = load_robots(opts.robots)
        web = load_web(args)
        changes = changing_web(web, opts)
        proxy = start_proxy(web, port=port, robots=robots, latency_ms=latency, log_path=opts.log, changes=changes)
        stop = threading.Event()
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            print(f"replaying {len(web)} recorded responses from {len(web.hosts())} hosts at {proxy.url}", flush=True)
            if changes is not None:
                print(f"its pages change as they are crawled (seed {opts.changing}, time scale {opts.time_scale})",
                      flush=True)
            print(f"crawl it with: http_proxy={proxy.url} scrapy crawl focused -a seeds=SEEDS -a model=MODEL", flush=True)
            if opts.log:
                print(f"logging every request to {opts.log}", flush=True)
            print("Ctrl-C to stop", flush=True)
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            signal.signal(signal.SIGTERM, previous)
            proxy.stop()
            print(f"stopped after {len(proxy.log)} requests", flush=True)
