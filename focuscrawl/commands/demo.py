"""``scrapy demo``: the whole job end to end on a generated web, with no internet.

Generate the demo web, train the topic model on some of its hosts, serve it all through the
replay proxy, crawl the other hosts with the focused spider, export the harvest and score it
against the labels. Each step runs as the user would run it (``python -m scrapy ...``), so the
demo shows the real commands and exercises them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, TextIO
from urllib.parse import urlsplit

from focuscrawl.commandbase import CommandError, FocusCommand
from focuscrawl.demo import DemoWeb, generate_web
from focuscrawl.urls import w3lib_canonical

DEFAULT_DIR = "demo-run"
#: enough for the crawl to reach the whole demo web (about 620 requests: it ends when its frontier
#: is empty), so the summary's "of N" are pages the crawl could have found: the application host
#: renders one page at a time (one connection a host, about 2 s a render), and a smaller budget
#: is spent by the other hosts before the browser gets far into it
DEFAULT_BUDGET = 700
DEFAULT_DELAY = 0.2
PROGRESS_SECONDS = 1  # the crawl step's progress line (FOCUS_PROGRESS_SECONDS)


class Command(FocusCommand):
    requires_project = False
    requires_crawler_process = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--dir DIR] [--budget N] [--seed S] [--delay SECONDS]"

    def short_desc(self) -> str:
        return "Run the whole job on a generated demo web served locally: train, crawl, export, score"

    def long_desc(self) -> str:
        return (
            "Generate a small web about astronomy (several hosts, lots of off-topic pages), train "
            "the topic model on some hosts, serve the web through the local replay proxy, crawl "
            "the other hosts with the focused spider within a request budget, export the relevant "
            "pages and report precision and recall against the known labels. Needs no internet."
        )

    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.add_argument("--dir", default=DEFAULT_DIR, help=f"output directory (default {DEFAULT_DIR})")
        parser.add_argument("--budget", default=str(DEFAULT_BUDGET),
                            help=f"requests the crawl may make, robots.txt excluded (default {DEFAULT_BUDGET})")
        parser.add_argument("--seed", default="0", help="seed of the generated web (default 0)")
        parser.add_argument("--delay", default=str(DEFAULT_DELAY),
                            help=f"seconds between two requests to one host (default {DEFAULT_DELAY})")

    def execute(self, args: list[str], opts) -> None:
        if args:
            raise CommandError(f"unexpected argument(s): {' '.join(args)}")
        budget = _parse_number(opts.budget, "--budget", int, minimum=1)
        delay = _parse_number(opts.delay, "--delay", float, minimum=0.0)
        seed = _parse_number(opts.seed, "--seed", int, minimum=None)
        DemoRun(Path(opts.dir), budget=budget, seed=seed, delay=delay,
                render_skipped=render_skipped(self.config(), self.settings)).run()


def render_skipped(config, settings) -> str | None:
    """Why the demo's crawl will not render (no browser, no render extra, FOCUS_RENDER=never), or
    None: the summary says it rather than counting the application's pages as missed."""
    from focuscrawl.rendering.availability import missing_backend

    if config.render == "never":
        return "FOCUS_RENDER=never"
    return missing_backend(config, settings)


def _parse_number(text: str, option: str, kind, minimum):
    try:
        value = kind(text)
    except (TypeError, ValueError):
        raise CommandError(f"{option} must be {'an integer' if kind is int else 'a number'}, not {text!r}") from None
    if minimum is not None and value < minimum:
        raise CommandError(f"{option} must be at least {minimum}, not {text}")
    return value


# --- the run ------------------------------------------------------------------------------------


class DemoRun:
    """The steps of the demo, in order; each failing step raises one CommandError naming its log."""

    def __init__(self, directory: Path, budget: int = DEFAULT_BUDGET, seed: int = 0,
                 delay: float = DEFAULT_DELAY, out: TextIO | None = None, render_skipped: str | None = None):
        self.dir = Path(directory)
        self.budget, self.seed, self.delay = budget, seed, delay
        self.render_skipped = render_skipped  # why the crawl will not render, or None
        self.out = out or sys.stdout
        self.web: DemoWeb | None = None
        self.proxy = None
        d = self.dir
        self.warc, self.labels, self.seeds = d / "demo.warc.gz", d / "labels.tsv", d / "seeds.txt"
        self.model = d / "models" / "astronomy.joblib"
        self.server_log, self.store = d / "server-log.jsonl", d / "crawl.db"
        self.request_log, self.feed, self.export = d / "requests.jsonl", d / "relevant.jsonl", d / "export.jsonl"
        self.logs = d / "logs"

    def run(self) -> "Summary":
        self.generate()
        self.train()
        self.start_proxy()
        try:
            self.crawl()
        finally:
            self.stop_proxy()
        self.export_pages()
        summary = self.summarize()
        self.say(format_summary(summary, self.outputs()))
        return summary

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    # a. the web, as WARC + labels + seeds
    def generate(self) -> DemoWeb:
        if self.dir.exists() and not self.dir.is_dir():
            raise CommandError(f"--dir {self.dir} is a file, not a directory")
        self.say(f"== 1/5 generate the demo web (seed {self.seed}) into {self.dir}")
        try:
            self.logs.mkdir(parents=True, exist_ok=True)
            for stale in (self.server_log, self.store, self.request_log, self.feed, self.export):
                stale.unlink(missing_ok=True)  # a fresh run: the proxy log and the store append
            self.web = web = generate_web(seed=self.seed)
            web.write_warc(self.warc)
            web.write_labels(self.labels)
            self.seeds.write_text("".join(f"{s}\n" for s in web.seeds), encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"step 'generate' failed: {exc}") from None
        relevant = len(web.relevant_urls())
        self.say(f"   {len(web.labels)} pages on {len(web.robots)} hosts, {relevant} about {web.topic}; "
                 f"training on {', '.join(web.train_hosts)}; crawling from {len(web.seeds)} seeds")
        return web

    # b. the topic model, trained on the train hosts only
    def train(self) -> None:
        web = self._web()
        self.say(f"== 2/5 train the {web.topic} model on {len(web.train_hosts)} hosts")
        self.model.parent.mkdir(parents=True, exist_ok=True)
        run_step("train", scrapy_argv(
            "train", str(self.warc), "--labels", str(self.labels), "--positive", web.topic,
            "--include-host", host_regex(web.train_hosts), "-o", str(self.model),
        ), self.logs / "train.log", env=child_env(), out=self.out)

    # c. the recorded web, served on 127.0.0.1
    def start_proxy(self):
        self.say("== 3/5 serve the demo web through the replay proxy")
        try:
            from focuscrawl.replay import RecordedWeb, ReplayProxy

            recorded = RecordedWeb.from_warcs([str(self.warc)])
            self.proxy = ReplayProxy(recorded, log_path=str(self.server_log)).start()
        except (ImportError, OSError, ValueError) as exc:
            raise CommandError(f"step 'replay' failed: {exc}") from None
        self.say(f"   listening on 127.0.0.1:{self.proxy.port}, logging to {self.server_log}")
        return self.proxy

    def stop_proxy(self) -> None:
        if self.proxy is not None:
            self.proxy.stop()
            self.proxy = None

    # d. the focused crawl, through the proxy
    def crawl(self) -> None:
        if self.proxy is None:
            raise CommandError("step 'crawl' failed: the replay proxy is not running")
        self.say(f"== 4/5 crawl (budget {self.budget} requests, {self.delay}s between requests to a host)")
        if self.render_skipped:
            self.say(f"   rendering skipped: {self.render_skipped}")
        run_step("crawl", scrapy_argv(
            "crawl", "focused", "-a", f"seeds={self.seeds}", "-a", f"model={self.model}",
            "-O", str(self.feed), "-s", f"FOCUS_STORE={self.store}",
            "-s", f"FOCUS_CRAWL_LOG={self.request_log}", "-s", f"DOWNLOAD_DELAY={self.delay}",
            "-s", f"FOCUS_BUDGET={self.budget}",
            # a short crawl: its progress line every second, in the output streamed below
            "-s", f"FOCUS_PROGRESS_SECONDS={PROGRESS_SECONDS}",
        ), self.logs / "crawl.log", env=self.proxy.crawl_env(base=child_env()), out=self.out)

    # e. the harvest, from the crawl store
    def export_pages(self) -> None:
        self.say("== 5/5 export the relevant pages from the crawl store")
        run_step("export", scrapy_argv("export", "-o", str(self.export), "-s", f"FOCUS_STORE={self.store}"),
                 self.logs / "export.log", env=child_env(), out=self.out)

    # f. the score
    def summarize(self) -> "Summary":
        for path, step in ((self.server_log, "crawl"), (self.export, "export")):
            if not path.is_file():
                raise CommandError(f"step '{step}' left no {path.name}; see {self.logs / (step + '.log')}")
        return summarize(self._web(), read_jsonl(self.export), read_jsonl(self.server_log),
                         render_skipped=self.render_skipped)

    def outputs(self) -> list[tuple[str, Path]]:
        return [
            ("relevant pages (export)", self.export), ("crawl feed", self.feed),
            ("crawl store", self.store), ("request log", self.request_log),
            ("server log", self.server_log), ("model", self.model), ("web (WARC)", self.warc),
            ("labels", self.labels), ("step logs", self.logs),
        ]

    def _web(self) -> DemoWeb:
        if self.web is None:
            self.web = generate_web(seed=self.seed)
        return self.web


# --- running a step -----------------------------------------------------------------------------


def scrapy_argv(*args: str) -> list[str]:
    """A ``scrapy`` command line run by this Python, as the user would type it."""
    return [sys.executable, "-m", "scrapy", *args]


def child_env() -> dict[str, str]:
    """The environment of a step: focuscrawl's settings, importable."""
    env = dict(os.environ)
    env["SCRAPY_SETTINGS_MODULE"] = "focuscrawl.settings"
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def run_step(name: str, argv: list[str], log_path: Path, env: Mapping[str, str] | None = None,
             out: TextIO | None = None) -> None:
    """Run one step, streaming its output (indented) and keeping it in ``log_path``."""
    out = out or sys.stdout
    log_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(log_path, "w", encoding="utf-8") as log:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                    text=True, encoding="utf-8", errors="replace", bufsize=1)
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                out.write("   " + line)
                out.flush()
            code = proc.wait()
    except OSError as exc:
        raise CommandError(f"step '{name}' could not start: {exc}") from None
    if code != 0:
        raise CommandError(f"step '{name}' failed (exit code {code}); see {log_path}")


def host_regex(hosts: Iterable[str]) -> str:
    """A regular expression matching exactly these host names."""
    return "^(?:" + "|".join(re.escape(h) for h in hosts) + ")$"


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a JSON-lines file; other lines are skipped."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            try:
                row = json.loads(line)
            except ValueError:
                continue
            if isinstance(row, dict):
                rows.append(row)
    return rows


# --- the score ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    requests: int  # answered by the server, robots.txt excluded
    exported: int  # items in the export
    exported_relevant: int  # of them, labelled with the topic
    found: int  # distinct relevant pages found (duplicates and redirects count once)
    reachable: int  # distinct relevant pages on the crawl hosts a crawl can reach
    found_reachable: int  # of those, found
    found_rendered: int = 0  # relevant pages of the JavaScript-only host found (read as rendered)
    rendered_relevant: int = 0  # of its pages, labelled relevant
    found_documents: int = 0  # relevant PDFs found (read as documents)
    documents_relevant: int = 0  # PDFs labelled relevant
    render_skipped: str | None = None  # why the crawl did not render, or None

    @property
    def precision(self) -> float | None:
        return self.exported_relevant / self.exported if self.exported else None

    @property
    def recall(self) -> float | None:
        return self.found_reachable / self.reachable if self.reachable else None

    @property
    def per_request(self) -> float | None:
        return self.found / self.requests if self.requests else None


def summarize(web: DemoWeb, export_rows: Iterable[Mapping], server_log: Iterable[Mapping],
              render_skipped: str | None = None) -> Summary:
    """Score a crawl: the export against the labels, the server log for the requests made.

    A page is counted once however many URLs serve it: a redirect counts as its target, and an
    exact or near copy as its original (the dedup pipeline keeps only one of them).
    """
    labels = {w3lib_canonical(u): label for u, label in web.labels.items()}
    same = {w3lib_canonical(old): w3lib_canonical(new) for old, new in web.redirects.items()}
    same.update({w3lib_canonical(copy): w3lib_canonical(original) for copy, original, _ in web.duplicates})

    def page(url: str) -> str:
        key = w3lib_canonical(url)
        return same.get(key, key)

    requests = sum(
        1 for rec in server_log
        if rec.get("url") and rec.get("method", "GET") != "CONNECT"
        and urlsplit(str(rec["url"])).path != "/robots.txt"
    )
    exported = exported_relevant = 0
    found: set[str] = set()
    for row in export_rows:
        url = row.get("final_url") or row.get("url")
        if not url:
            continue
        exported += 1
        if labels.get(w3lib_canonical(url)) == web.topic:
            exported_relevant += 1
            found.add(page(url))
    crawl_hosts = set(web.crawl_hosts)
    reachable = {page(u) for u in web.reachable_relevant(web.seeds, rendered=True)
                 if urlsplit(u).netloc in crawl_hosts}
    rendered = {page(u) for u in web.javascript_pages if labels.get(w3lib_canonical(u)) == web.topic}
    documents = {page(u) for u in web.documents if labels.get(w3lib_canonical(u)) == web.topic}
    return Summary(requests, exported, exported_relevant, len(found), len(reachable), len(found & reachable),
                   len(found & rendered), len(rendered), len(found & documents), len(documents), render_skipped)


def format_summary(s: Summary, outputs: Iterable[tuple[str, Path]] = ()) -> str:
    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f}"

    lines = [
        "== summary",
        f"   requests answered by the server (robots.txt excluded): {s.requests}",
        f"   relevant pages found: {s.found} ({s.exported} exported, precision {num(s.precision)})",
        f"   recall on the crawl hosts: {num(s.recall)} "
        f"({s.found_reachable} of {s.reachable} reachable relevant pages)",
        f"   relevant pages per request: {num(s.per_request)}",
    ]
    if s.rendered_relevant and s.render_skipped:
        lines.append(f"   built by JavaScript: {s.rendered_relevant} relevant pages, not rendered "
                     f"(rendering skipped: {s.render_skipped})")
    elif s.rendered_relevant:
        lines.append(f"   built by JavaScript, found by rendering: {s.found_rendered} of {s.rendered_relevant} "
                     "relevant pages")
    if s.documents_relevant:
        lines.append(f"   PDFs read: {s.found_documents} of {s.documents_relevant} relevant documents")
    outputs = list(outputs)
    if outputs:
        width = max(len(name) for name, _ in outputs)
        lines.append("   outputs:")
        lines += [f"     {name:<{width}}  {path}" for name, path in outputs]
    return "\n".join(lines)
