"""A Scrapy extension for the soak benchmark: what the crawl holds, sampled inside the crawler.

Resident memory says *whether* a crawl grows; this says *what* grows. Every ``SOAK_PROBE_SECONDS``
(default 30) it appends one JSON line to ``SOAK_PROBE_FILE``: the resident memory, Python's
allocated blocks, and the size of every structure of the crawl that can grow with it (frontier
and its heaps, seen set, per-host tables, learner, duplicate indexes, the request log's pending
records, Scrapy's download slots). With ``SOAK_PROBE_TYPES`` it also counts the objects created
since the scheduler froze the heap by type (``gc.get_objects()`` leaves frozen ones out): the few
types whose count climbs are the leak. With ``SOAK_PROBE_TRACEMALLOC`` it traces allocations from
the spider's opening on (one frame: the line that allocated) and writes the biggest files and
lines still holding memory: where growth comes from, structures nobody thought to list included.
Tracing slows the crawl a lot (a snapshot holds the reactor for seconds): a way to find a leak,
not to measure one. The probe reads and never changes; a structure it cannot find is left out of
the line, so it survives a refactoring of what it looks at.

    scrapy crawl focused ... -s EXTENSIONS='{"soakprobe.SoakProbe": 0}' -s SOAK_PROBE_FILE=probe.jsonl
    (with bench/ on PYTHONPATH)
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
import time
import tracemalloc
from collections import Counter
from pathlib import Path

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

REPO = str(Path(__file__).resolve().parents[1]) + "/"

#: name -> attribute path from the scheduler, the item pipelines or the downloader; len() is taken
SCHEDULER_SIZES = {
    "frontier": "frontier", "frontier_hosts": "frontier._hosts", "frontier_lent": "frontier._lent",
    "frontier_ready_heap": "frontier._ready", "frontier_waiting_heap": "frontier._waiting",
    "seen": "admission.seen", "host_admitted": "admission.host_admitted",
    "gate_robots": "gate.robots", "gate_timing": "gate.timing", "gate_inflight": "gate.inflight",
    "gate_robots_pending": "gate.robots_pending",
    "learner_hosts": "learner.hosts", "learner_prefixes": "learner.prefixes",
    "learner_children": "learner.children", "learner_nodes": "learner.nodes",
    "strategy_urls": "strategy.urls", "unfinished": "backend.persistence.unfinished",
}


def _attr(obj, path: str):
    for name in path.split("."):
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return obj


def rss_kib(pid: str = "self") -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in KiB, from /proc."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    out[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def traced(files: int = 15, lines: int = 25) -> dict[str, int]:
    """KiB held by the biggest allocating files and lines (``file:`` and ``file:LINE`` keys, paths
    from the package on), of what was allocated since tracing started."""
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
    out = {}
    for group, top in (("filename", files), ("lineno", lines)):
        for stat in snapshot.statistics(group)[:top]:
            frame = stat.traceback[0]
            name = _short(frame.filename) + (f":{frame.lineno}" if group == "lineno" else ":")
            out[name] = stat.size // 1024
    return out


def pymalloc_kib() -> dict[str, int]:
    """What Python's small-object allocator holds (KiB): ``arenas`` (1 MiB each, what it takes from
    the system), ``used`` (blocks in use) and ``free`` (blocks free in pools in use, plus free
    pools): arenas far above use are memory fragmented by objects that outlived their neighbours.
    From ``sys._debugmallocstats``, which writes only to the C stderr."""
    import tempfile

    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(out.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode("ascii", "replace")
    fields = {"arenas": r"# arenas allocated current\s*=\s*([\d,]+)", "used": r"# bytes in allocated blocks\s*=\s*([\d,]+)",
              "free": r"# bytes in available blocks\s*=\s*([\d,]+)", "unused_pools": r"(\d+) unused pools \*"}
    found = {}
    for name, pattern in fields.items():
        m = re.search(pattern, text)
        if m:
            found[name] = int(m.group(1).replace(",", ""))
    if "arenas" in found:
        found["arenas"] *= 1024  # KiB: an arena is 1 MiB
    for name in ("used", "free"):
        if name in found:
            found[name] //= 1024
    if "unused_pools" in found:
        found["unused_pools"] *= 16  # KiB: a pool is 16 KiB
    return found


def _short(path: str) -> str:
    """A path from its package on: ``focuscrawl/...``, ``datasketch/...``, ``asyncio/...``."""
    return re.sub(r"^.*/(?:site-packages|python3\.\d+)/", "", path.replace(REPO, ""))


class SoakProbe:
    def __init__(self, crawler, path: str, every: float, types: bool, trace: bool = False):
        self.crawler = crawler
        self.path = path
        self.every = every
        self.types = types
        self.trace = trace
        self.start = time.time()
        self._loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler):
        path = crawler.settings.get("SOAK_PROBE_FILE")
        if not path:
            raise NotConfigured("SOAK_PROBE_FILE not set")
        probe = cls(crawler, path, crawler.settings.getfloat("SOAK_PROBE_SECONDS", 30.0),
                    crawler.settings.getbool("SOAK_PROBE_TYPES", False),
                    crawler.settings.getbool("SOAK_PROBE_TRACEMALLOC", False))
        crawler.signals.connect(probe.opened, signal=signals.spider_opened)
        crawler.signals.connect(probe.closed, signal=signals.spider_closed)
        return probe

    def opened(self, spider=None):
        if self.trace and not tracemalloc.is_tracing():
            tracemalloc.start(1)
        self._loop = task.LoopingCall(self.sample)
        self._loop.start(self.every, now=False)

    def closed(self, spider=None, reason=None):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.sample(final=True)

    def sample(self, final: bool = False) -> None:
        t0 = time.perf_counter()
        line = {"t": round(time.time() - self.start, 1), **rss_kib(), "blocks": sys.getallocatedblocks(),
                "gc_counts": gc.get_count(), "sizes": self.sizes()}
        if final:
            line["final"] = True
        if self.types:
            line["types"] = dict(Counter(type(o).__name__ for o in gc.get_objects()).most_common(25))
        if self.trace and tracemalloc.is_tracing():
            line["malloc"] = traced()
        line["pymalloc"] = pymalloc_kib()
        line["probe_ms"] = round(1000 * (time.perf_counter() - t0), 1)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")

    def sizes(self) -> dict[str, int]:
        out = {}
        engine = self.crawler.engine
        scheduler = getattr(engine, "scheduler", None) or _attr(engine, "_slot.scheduler")
        for name, path in SCHEDULER_SIZES.items():
            self._size(out, name, _attr(scheduler, path))
        seen = _attr(scheduler, "admission.seen")
        if seen is not None and hasattr(seen, "memory_bytes"):
            out["seen_bytes"] = seen.memory_bytes()
        for pipe in _attr(engine, "scraper.itemproc.middlewares") or ():
            if hasattr(pipe, "exact") and hasattr(pipe, "near"):
                self._size(out, "dedup_exact", pipe.exact)
                self._size(out, "dedup_near", pipe.near)
        for mw in _attr(engine, "downloader.middleware.middlewares") or ():
            self._size(out, "crawl_log_waiting", getattr(mw, "_waiting_for_score", None))
        self._size(out, "download_slots", _attr(engine, "downloader.slots"))
        self._size(out, "download_active", _attr(engine, "downloader.active"))
        self._size(out, "scraper_active", _attr(engine, "scraper.slot.active"))
        return out

    @staticmethod
    def _size(out: dict, name: str, obj) -> None:
        if obj is None:
            return
        try:
            out[name] = len(obj)
        except TypeError:
            pass
