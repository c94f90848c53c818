"""JOBDIR checkpoint and resume of a big frontier, at 10^5 / 10^6 queued URLs (a benchmark, not a test).

    python bench/checkpoint.py --urls 100000,1000000 --hosts 10000
    python bench/checkpoint.py --urls 100000,1000000 --hosts 10000 --against c27a3ba

A FocusScheduler with JOBDIR (a temporary directory) and the focused spider holds N queued
requests shaped like the spider's: https URLs of 60-90 characters over ``--hosts`` hosts (as in
bench/frontier.py), callback ``parse``, errback ``fetch_failed``, meta ``depth`` + ``focus_link``
(anchor, context, parent_url, parent_score, hops, link_score), a 30-feature int32/float32 vector,
priorities uniform in [0, 1); packed by the scheduler's codec (FOCUS_FRONTIER_PACK, the default).
They are pushed into its frontier directly (enqueue_request's filters and scoring are not what is
measured); the seen set holds their URLs, as a crawl's would. Then, timed:

- checkpoint: one checkpoint (``Persistence.checkpoint``), what blocks the reactor every
  FOCUS_CHECKPOINT_SECONDS (and at close); and the snapshot's size on disk;
- resume: a fresh scheduler opened on that JOBDIR (``open()``: the snapshot read, the frontier
  rebuilt, and the checkpoint a resume ends with, also shown on its own);
- peak MB: the child process's peak resident memory (building the URLs included).

Each size runs in a fresh child process (this script re-invokes itself). With ``--against REV``,
each size also runs on git revision REV's code (``git archive`` into a temporary directory; this
script and its URLs as they are), and the table adds the ratios REV / working tree.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
CHUNK = 5_000  # requests built at a time (~2.5 KB each as objects)


def child(args) -> dict:
    sys.path.insert(0, str(BENCH))
    from frontier import UrlMaker, crawler_spider  # noqa: E402 - bench/frontier.py (it puts ROOT on sys.path)

    sys.path.insert(0, args.code)  # the code under test: the working tree or an older revision
    import focuscrawl
    from scrapy.utils.test import get_crawler

    from focuscrawl.frontier import Entry
    from focuscrawl.scheduler import FocusScheduler
    from focuscrawl.urls import canonicalize

    try:  # the scheduler's parts; a revision before them (--against) has it all in FocusScheduler
        from focuscrawl.scheduling.downloader import DownloaderAdapter
        from focuscrawl.scheduling.persistence import Persistence

        class NoWakeups(DownloaderAdapter):
            def wake_at(self, monotonic_at, now, soon=False):
                pass  # no reactor here
    except ImportError:
        Persistence = None

    spider = crawler_spider()

    def opened(jobdir: str) -> FocusScheduler:
        """A scheduler opened on the JOBDIR as a crawl opens it (a stand-in engine: no downloads)."""
        crawler = get_crawler(type(spider), {"ROBOTSTXT_OBEY": False, "JOBDIR": jobdir})
        crawler.engine = SimpleNamespace(downloader=SimpleNamespace(_delay=0.0, _jitter=0.0, per_slot_settings={}))
        if Persistence is None:
            scheduler = FocusScheduler(crawler)
            scheduler._schedule_wakeup = lambda soon=False: None  # no reactor here
        else:
            scheduler = FocusScheduler.from_crawler(crawler)
            scheduler.downloader = NoWakeups(crawler)
        scheduler.open(spider)
        return scheduler

    def checkpoint(scheduler) -> None:
        if Persistence is None:
            scheduler._checkpoint()
        else:
            getattr(scheduler, "backend", scheduler).persistence.checkpoint(scheduler.learner, scheduler.released)

    checkpoints = []
    owner, name = (FocusScheduler, "_checkpoint") if Persistence is None else (Persistence, "checkpoint")
    untimed = getattr(owner, name)

    def timed_checkpoint(*args):
        t = time.perf_counter()
        untimed(*args)
        checkpoints.append(time.perf_counter() - t)

    with tempfile.TemporaryDirectory(prefix="focus-ckpt-") as jobdir:
        scheduler = opened(jobdir)
        maker, rng = UrlMaker(args.hosts), random.Random(3)
        for start in range(0, args.n, CHUNK):
            for host, url, _, _, _ in maker.chunk(min(CHUNK, args.n - start)):
                request, vector = maker.crawler_entry(host, url)
                canonical = canonicalize(url)
                (scheduler.seen if Persistence is None else scheduler.admission.seen).add(canonical)
                scheduler.frontier.push(host, Entry(rng.random(), canonical, request, vector))
        frontier = scheduler.frontier
        assert not any(True for _ in frontier.rich_entries()), "every entry is packed"
        cold = (sum(queue.cold_size() for _, queue in frontier.queues()) if hasattr(frontier, "queues")
                else sum(h.cold for h in frontier._hosts.values()))
        t = time.perf_counter()
        checkpoint(scheduler)
        t_checkpoint = time.perf_counter() - t
        snapshot = os.path.getsize(os.path.join(jobdir, "focus-frontier.pickle"))
        scheduler.close("finished")  # its own checkpoint (not timed): the same state again
        del scheduler, frontier

        setattr(owner, name, timed_checkpoint)
        t = time.perf_counter()
        resumed = opened(jobdir)
        t_resume = time.perf_counter() - t
        assert len(resumed.frontier) == args.n, (len(resumed.frontier), args.n)
    return {"code": os.path.dirname(os.path.dirname(focuscrawl.__file__)), "n": args.n, "hosts": args.hosts,
            "checkpoint_s": t_checkpoint, "snapshot_mb": snapshot / 2**20, "resume_s": t_resume,
            "resume_checkpoint_s": sum(checkpoints), "cold_share": cold / args.n,
            "peak_rss_mb": int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024}


def revision_tree(rev: str, into: str) -> str:
    """The focuscrawl package of git revision ``rev``, extracted under ``into`` (nothing in the
    repository or its working tree changes)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "focuscrawl"], capture_output=True, check=True)
    path = os.path.join(into, rev)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(path, filter="data")
    return path


def run(code: str, n: int, hosts: int) -> dict | None:
    out = subprocess.run([sys.executable, __file__, "--child", "--code", code, "--n", str(n), "--hosts", str(hosts)],
                         capture_output=True, text=True)
    if out.returncode != 0:
        print(f"{code} {n}: failed\n{out.stderr[-3000:]}", flush=True)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def row(label: str, r: dict) -> str:
    return (f"{label:<14} {r['n']:>9.0e} {r['checkpoint_s']:>12.2f} {r['snapshot_mb']:>11.1f} {r['resume_s']:>9.2f} "
            f"{r['resume_checkpoint_s']:>17.2f} {100 * r['cold_share']:>6.0f} {r['peak_rss_mb']:>8.0f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", default="100000,1000000", help="comma-separated sizes")
    ap.add_argument("--hosts", type=int, default=10_000)
    ap.add_argument("--against", metavar="REV", help="also run on this git revision's code, with ratios")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--code", help=argparse.SUPPRESS)
    ap.add_argument("--n", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return
    print(f"hosts={args.hosts}  python {sys.version.split()[0]}  resume = open(), its closing checkpoint included",
          flush=True)
    print(f"{'code':<14} {'URLs':>9} {'checkpoint s':>12} {'snapshot MB':>11} {'resume s':>9} "
          f"{'resume ckpt s':>17} {'cold %':>6} {'peak MB':>8}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        old = revision_tree(args.against, tmp) if args.against else None
        for n in (int(float(s)) for s in args.urls.split(",")):
            new = run(str(ROOT), n, args.hosts)
            if new:
                print(row("working tree", new), flush=True)
            if old is None:
                continue
            before = run(old, n, args.hosts)
            if before:
                print(row(args.against[:14], before), flush=True)
            if new and before:
                print(f"{'ratio old/new':<14} {'':>9} {before['checkpoint_s'] / new['checkpoint_s']:>12.1f} "
                      f"{before['snapshot_mb'] / new['snapshot_mb']:>11.2f} {before['resume_s'] / new['resume_s']:>9.1f} "
                      f"{before['resume_checkpoint_s'] / new['resume_checkpoint_s']:>17.1f}", flush=True)


if __name__ == "__main__":
    main()
