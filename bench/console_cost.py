"""What watching a crawl costs it: pages per second with the progress line and the web console on
(a browser's polling imitated) and with both off, in alternated runs of one invocation.

    python bench/console_cost.py [--web webkb|demo] [--pages N] [--runs K]

Each crawl is ``scrapy crawl focused`` against its own ReplayProxy (latency 0, DOWNLOAD_DELAY=0)
over the same recorded web. "off": FOCUS_PROGRESS_SECONDS=0 and no console. "on": the progress
line every second and the console on a free port, read as the page reads it: the state every 2
seconds, the curve's SVG whenever its version changes, the labelling queue every 10 seconds.
Throughput is the server's: counted requests (robots.txt not counted) over the span from the first
request to the last response, so start-up is left out (``bench/throughput.py``'s measure).
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from throughput import load_web, rate, relevance_of, train_model  # noqa: E402

from focuscrawl.replay import ReplayProxy  # noqa: E402

URL_LINE = re.compile(r"(http://127\.0\.0\.1:\d+/\?token=[\w-]+)")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Reader(threading.Thread):
    """A browser's polling of the console, until stopped; counts what it read."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.base, self.token = url.split("/?token=")
        self.stop = threading.Event()
        self.reads = 0
        self.failures = 0

    def get(self, path: str) -> bytes:
        sep = "&" if "?" in path else "?"
        with urllib.request.urlopen(f"{self.base}/{path}{sep}token={self.token}", timeout=10) as answer:
            self.reads += 1
            return answer.read()

    def run(self) -> None:
        version, last_queue = None, 0.0
        while not self.stop.is_set():
            try:
                state = json.loads(self.get("api/state?latest=12"))
                if state.get("curve_version") != version:
                    version = state.get("curve_version")
                    self.get("api/curve.svg?x=requests")
                    self.get("api/curve.svg?x=seconds")
                if time.monotonic() - last_queue >= 10:
                    last_queue = time.monotonic()
                    self.get("api/queue?n=10")
            except Exception:  # the crawl ending closes the console
                self.failures += 1
            self.stop.wait(2.0)


def crawl(argv: list[str], proxy: ReplayProxy, cwd: Path, watch: bool, timeout: float) -> tuple[float, int]:
    env = {**proxy.crawl_env(settings_module="focuscrawl.settings")}
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "scrapy", *argv], cwd=cwd, env=env, text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    reader = None
    for line in process.stderr:
        if watch and reader is None and (found := URL_LINE.search(line)):
            reader = Reader(found.group(1))
            reader.start()
    process.wait(timeout=timeout)
    if reader is not None:
        reader.stop.set()
        reader.join(5)
    if process.returncode != 0:
        sys.exit(f"error: the crawl failed (exit {process.returncode})")
    if watch and reader is None:
        sys.exit("error: the console's URL was not logged")
    return time.monotonic() - started, reader.reads if reader else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--web", choices=["demo", "webkb"], default="webkb")
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3, help="alternated pairs of crawls")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="focuscrawl-console-cost-") as tmp:
        work = Path(tmp)
        web, robots, seeds, warc, labels, positive = load_web(args.web, work)
        (work / "seeds.txt").write_text("\n".join(seeds) + "\n")
        model = train_model(warc, labels, positive, work / "model.joblib")
        relevance = relevance_of(web, labels, positive)
        for run in range(args.runs):
            for mode in ("off", "on") if run % 2 == 0 else ("on", "off"):
                argv = ["crawl", "focused", "-a", f"seeds={work / 'seeds.txt'}", "-a", f"model={model}",
                        "-s", f"FOCUS_BUDGET={args.pages}", "-s", f"FOCUS_STORE={work / f'{mode}{run}.db'}",
                        "-s", "DOWNLOAD_DELAY=0", "-s", "TELNETCONSOLE_ENABLED=False", "-s", "LOG_LEVEL=INFO"]
                argv += (["-s", "FOCUS_PROGRESS_SECONDS=1", "-s", f"FOCUS_CONSOLE_PORT={free_port()}"] if mode == "on"
                         else ["-s", "FOCUS_PROGRESS_SECONDS=0"])
                with ReplayProxy(web, robots=robots) as proxy:
                    wall, reads = crawl(argv, proxy, work, mode == "on", args.timeout)
                    n, per_second, pages, found, _ = rate(proxy, relevance)
                results[mode].append(per_second)
                print(f"run {run + 1} {mode:>3}: {n} requests, {per_second:.1f} requests/s, {pages:.1f} pages/s, "
                      f"wall {wall:.1f} s" + (f", {reads} console reads" if mode == "on" else ""), flush=True)
    off, on = statistics.mean(results["off"]), statistics.mean(results["on"])
    print(f"requests/s, mean of {args.runs}: off {off:.1f}, on {on:.1f}; on / off = {on / off:.3f} "
          f"(pairs: {', '.join(f'{b / a:.3f}' for a, b in zip(results['off'], results['on']))})")


if __name__ == "__main__":
    main()
