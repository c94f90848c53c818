"""Rendering on demand, measured on the demo web: a JavaScript-only host, plain hosts and on-topic
PDFs, served through the replay proxy and crawled under each ``FOCUS_RENDER`` mode.

    python bench/rendering.py [--modes never,auto,always] [--splash] [--budget 600] [--delay 0.05]
                              [--seed 0] [--runs 1] [--out DIR]

The demo web (``focuscrawl.demo``, seed ``--seed``) is generated, its topic model trained on its
training hosts (``scrapy train``, as ``scrapy demo`` does), and each mode crawls the same seeds
within the same budget. ``--splash`` adds a crawl in ``auto`` mode through
``FOCUS_RENDER_BACKEND=splash`` and ``scrapy render-server`` (the render server goes through the
same replay proxy).

Reported for each crawl, from the server's log and the crawl's request log:

- ``js_relevant``: relevant pages of the JavaScript-only host read as rendered (their text and
  links exist only after the script ran), of ``js_labelled`` labelled relevant there;
- ``plain_rendered``: the share of requests for pages of the other hosts that went to the browser
  (the goal is under 5%: a plain page rendered is a wasted browser);
- ``pdfs``: the relevant PDFs fetched and read, of ``pdfs_labelled``;
- ``relevant``: relevant pages found in all (WebKB-style accounting: first 200 fetch of a
  labelled relevant URL);
- ``pages_per_s``: pages (2xx answers to page requests) per second of the crawl, and
  ``requests`` (the crawl's own: a render is one), ``render_loads`` (the scripts and data the
  rendered pages loaded), ``seconds``;
- ``browser_mb``: the largest memory of the crawl's Chromium processes (proportional set size:
  pages shared between them counted once), sampled every half second (0: no browser started).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from focuscrawl.commands.demo import DemoRun  # noqa: E402
from focuscrawl.commands.evaluate import crawl_command  # noqa: E402
from focuscrawl.politeness.audit import load_log  # noqa: E402
from focuscrawl.rendering.chromium import browser_memory_mb  # noqa: E402
from focuscrawl.replay import RecordedWeb, ReplayProxy  # noqa: E402
from focuscrawl.urls import host_key  # noqa: E402
from summary import markdown_table  # noqa: E402


class MemoryWatch:
    """The largest resident memory of a process's Chromium descendants, sampled on a thread."""

    def __init__(self, pid: int, every: float = 0.5):
        self.pid, self.every, self.peak = pid, every, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, browser_memory_mb(self.pid))

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return self.peak


def start_render_server(env: dict, workdir: Path) -> tuple[subprocess.Popen, str]:
    """``scrapy render-server`` on a free port; (process, its URL)."""
    log = (workdir / "render-server.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "scrapy", "render-server", "--port", "0"], env=env,
                            cwd=workdir, stdout=subprocess.PIPE, stderr=log, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line or "")
        if match:
            return proc, f"http://127.0.0.1:{match.group(1)}"
        if proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"scrapy render-server did not start: see {workdir}/render-server.log")


def crawl(demo: DemoRun, mode: str, opts, workdir: Path, backend: str = "playwright") -> dict:
    web = demo.web
    workdir.mkdir(parents=True, exist_ok=True)
    settings = [f"DOWNLOAD_DELAY={opts.delay}", f"FOCUS_RENDER={mode}", f"FOCUS_CRAWL_LOG={workdir / 'requests.jsonl'}",
                "LOG_LEVEL=INFO"]
    server = None
    with ReplayProxy(RecordedWeb.from_records(web.records), robots=web.robots,
                     log_path=str(workdir / "server.jsonl")) as proxy:
        env = proxy.crawl_env(base=dict(os.environ, SCRAPY_SETTINGS_MODULE="focuscrawl.settings"))
        try:
            if backend == "splash":
                server, url = start_render_server(env, workdir)
                settings += ["FOCUS_RENDER_BACKEND=splash", f"SPLASH_URL={url}"]
                env = dict(env, no_proxy="127.0.0.1,localhost")  # the render server is asked directly
            argv = crawl_command(str(demo.seeds), str(demo.model), opts.budget, str(workdir / "crawl.db"), settings)
            started = time.monotonic()
            with (workdir / "crawl.log").open("w") as log:
                proc = subprocess.Popen(argv, env=env, cwd=workdir, stdout=subprocess.DEVNULL, stderr=log)
                watch = MemoryWatch(proc.pid if backend == "playwright" else (server.pid if server else proc.pid))
                code = proc.wait(timeout=opts.timeout)
                peak = watch.stop()
            seconds = time.monotonic() - started
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        proxy.wait_idle(timeout=5.0)
    if code != 0:
        raise RuntimeError(f"the crawl failed: see {workdir}/crawl.log")
    return figures(demo, workdir, seconds, peak)


def figures(demo: DemoRun, workdir: Path, seconds: float, peak: float) -> dict:
    web = demo.web
    relevant = web.relevant_urls()
    js_host = web.javascript_host
    js_relevant = {url for url in web.javascript_pages if url in relevant}
    pdfs = {url for url in web.documents if url in relevant}
    log = [json.loads(line) for line in (workdir / "requests.jsonl").read_text().splitlines() if line.strip()]
    # the crawl's own requests (a render's scripts and data are logged apart: render_of)
    pages = [r for r in log if r.get("url") and not r.get("robots_for") and not r.get("render_of")
             and r.get("method") == "GET"]
    loads = sum(1 for r in log if r.get("render_of") and r.get("status"))
    read_rendered = {r["url"] for r in pages if r.get("render") and r.get("status") == 200}
    plain_pages = [r for r in pages if host_key(r["url"]) != js_host and not r["url"].endswith((".xml", ".pdf"))]
    server = [r for r in load_log(str(workdir / "server.jsonl")) if r.get("path") != "/robots.txt"]
    ok = [r for r in server if r.get("status") == 200]
    fetched = {r["url"] for r in ok}
    return {
        "requests": len(pages), "render_loads": loads, "seconds": seconds,
        "pages_per_s": sum(1 for r in pages if r.get("status") == 200) / seconds,
        "relevant": len(relevant & fetched),
        "js_relevant": len(js_relevant & read_rendered), "js_labelled": len(js_relevant),
        "plain_rendered": sum(1 for r in plain_pages if r.get("render")) / max(1, len(plain_pages)),
        "pdfs": len(pdfs & fetched), "pdfs_labelled": len(pdfs),
        "browser_mb": peak,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="never,auto,always")
    parser.add_argument("--splash", action="store_true", help="also crawl in auto mode through scrapy render-server")
    parser.add_argument("--budget", type=int, default=600)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out", default=None)
    opts = parser.parse_args()
    out = Path(opts.out or tempfile.mkdtemp(prefix="focus-render-"))
    demo = DemoRun(out / "demo", budget=opts.budget, seed=opts.seed, delay=opts.delay, out=sys.stderr)
    demo.generate()
    demo.train()
    runs = [(mode, "playwright") for mode in opts.modes.split(",") if mode]
    if opts.splash:
        runs.append(("auto", "splash"))
    results: dict[str, list[dict]] = {}
    for run_no in range(opts.runs):
        for mode, backend in runs:
            name = mode if backend == "playwright" else f"{mode} (splash, render-server)"
            row = crawl(demo, mode, opts, out / f"{mode}-{backend}-{run_no}", backend)
            results.setdefault(name, []).append(row)
            print(f"run {run_no + 1}, {name}: {row}", flush=True)
    keys = ["requests", "render_loads", "seconds", "pages_per_s", "relevant", "js_relevant", "js_labelled", "plain_rendered",
            "pdfs", "pdfs_labelled", "browser_mb"]
    print(f"\nDemo web seed {opts.seed}, budget {opts.budget}, DOWNLOAD_DELAY {opts.delay}, "
          f"{opts.runs} run(s) each (mean; min-max); outputs in {out}\n")
    print(markdown_table("FOCUS_RENDER", results, keys))
    return 0


if __name__ == "__main__":
    sys.exit(main())
