"""Frontier and seen-set throughput and memory at 10^6 / 10^7 URLs (a benchmark, not a test).

    python bench/frontier.py --urls 1000000 --hosts 100000 [--seen] [--features]
    python bench/frontier.py --urls 1000000,10000000 --hosts 100000 --seen
    python bench/frontier.py --urls 100000,1000000 --hosts 100000 --crawler --no-baseline

Every measurement runs in a fresh child process (this script re-invokes itself), so one run's
memory never pollutes another's. Memory is the resident set (VmRSS from /proc/self/status) after
all pushes minus VmRSS just before the first URL was built, divided by the URL count; URLs are
built in chunks of 100,000 (5,000 crawler-shaped ones) that are dropped after being pushed, and
freed memory is handed back (malloc_trim) before the second reading, so the figure is what the
structure retains (URL strings included), not the benchmark's own URL list.

URLs: https://<host>/<path>, 60-90 characters in all (uniform), host names of 14-30 characters,
priorities uniform in [0, 1). Payload None and features None (what the frontier must keep at
least); ``--features`` adds a run at the first size whose entries carry a features tuple of 25
(name, value) pairs with interned names and per-URL float values, as link_features makes.
``--crawler`` adds two runs at every size with entries shaped like the crawler's: a scrapy Request
(the focused spider's callbacks and link meta: depth, focus_link with anchor, context, parent_url,
parent_score, hops, link_score) and a 30-feature hashed vector (int32 indices, uniform in 2^20:
pessimistic for deflate, a crawl's links share most of theirs; float32 values), kept as objects
("crawler objects", no codec) or packed by the scheduler's RequestCodec ("crawler packed"); the
entry's URL is the request's.

Phases (timed separately, URL building excluded from the timing):
- push: every URL pushed;
- pop: pops interleaved with releases, the way the scheduler drives it: pop(now) hands out the
  best entry among ready hosts and marks the host busy; the host is released at once with a
  ready time 1-2 s (virtual) later; when nothing is ready, now jumps to next_ready_time();
- mixed: steady state, one pop + release and one push of a new URL per step (push+pop ops/s);
- probes: next_ready_time() and best_soon(now, 2 s, []) calls per second on the full frontier;
- rescore: background re-scoring (rescore_stale, limit 200,000) with a rescorer that keeps each
  priority: entries per second the frontier takes out, hands over and puts back.
The baseline is a plain heapq of (-priority, seq, url) tuples holding the same URLs (no hosts,
no politeness): figures read as ratios to it, since the machine is shared and noisy. The seen
set is compared to a Python set of the canonical URL strings.
"""

from __future__ import annotations

import argparse
import gc
import heapq
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHUNK = 100_000
WORDS = ("news data shop blog city art music science sport health travel food world tech code open "
         "home green red blue north south star media net web cloud sun river park school lab info "
         "people market power light").split()
TLDS = ("com", "org", "net", "de", "fr", "co.uk", "edu", "io", "info", "nl")
FEATURE_NAMES = tuple(sys.intern(f"feat_{name}") for name in (
    "anchor_topic anchor_len context_topic context_len url_topic url_depth url_len parent_score "
    "parent_relevant depth hops same_host same_domain path_tokens query has_digits ext_html "
    "ext_other sibling_rate host_rate host_pages host_relevant link_score bias explore").split())


def trim() -> None:
    """Hand freed heap memory back to the system (glibc), so that RSS counts what is retained."""
    import ctypes
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


class UrlMaker:
    """Deterministic realistic URLs: host i of H, a path that brings the URL to 60-90 chars."""

    def __init__(self, hosts: int, seed: int = 1):
        rng = random.Random(seed)
        self.hosts = []
        for i in range(hosts):
            name = f"{rng.choice(('www.', '', 'en.', 'blog.'))}{rng.choice(WORDS)}{rng.choice(WORDS)}{i}.{rng.choice(TLDS)}"
            self.hosts.append(sys.intern(name))
        self.segments = ["-".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(4096)]
        self.rng = random.Random(seed + 1)
        self.count = 0

    def chunk(self, n: int, shape: str = "plain") -> list[tuple[str, str, float, object, object]]:
        """(host, url, priority, payload, features) rows; ``shape``: plain, features or crawler."""
        rng, hosts, segs = self.rng, self.hosts, self.segments
        out = []
        for _ in range(n):
            i = self.count
            self.count += 1
            host = hosts[rng.randrange(len(hosts))]
            target = rng.randint(60, 90)
            tail = f"/{i:x}.html"
            url = f"https://{host}"
            while len(url) + len(tail) < target:
                url += "/" + segs[rng.randrange(4096)]
            url = url[:max(target - len(tail), len(host) + 8)] + tail
            payload = feats = None
            if shape == "features":
                feats = tuple((name, rng.random()) for name in FEATURE_NAMES)
            elif shape == "crawler":
                payload, feats = self.crawler_entry(host, url)
            out.append((host, url, rng.random(), payload, feats))
        return out

    def crawler_entry(self, host: str, url: str):
        """A Request as the focused spider yields it for a link, and its 30-feature vector (most
        values 1.0 or 0.5, as link_features makes them)."""
        import numpy as np
        from scrapy import Request

        rng, segs = self.rng, self.segments
        spider = crawler_spider()

        def words(k: int) -> str:
            return " ".join(rng.choice(WORDS) for _ in range(k))

        parent = f"https://{host}/{segs[rng.randrange(4096)]}/{segs[rng.randrange(4096)]}.html"
        request = Request(url, callback=spider.parse, errback=spider.fetch_failed, meta={
            "depth": rng.randint(1, 8), "focus_link": {
                "anchor": words(rng.randint(1, 6)), "context": words(rng.randint(8, 20)), "parent_url": parent,
                "parent_score": rng.random(), "hops": rng.randint(0, 3), "link_score": round(rng.random(), 4)}})
        idx = np.array([rng.randrange(1 << 20) for _ in range(30)], dtype=np.int32)
        val = np.array([rng.random() if k % 6 == 5 else (1.0, 0.5)[k % 2] for k in range(30)], dtype=np.float32)
        return request, (idx, val)


_SPIDER = None


def crawler_spider():
    """The focused spider (no model needed): its methods are the requests' callbacks."""
    global _SPIDER
    if _SPIDER is None:
        from focuscrawl.spiders.focused import FocusedSpider
        _SPIDER = FocusedSpider()
    return _SPIDER


def crawler_codec():
    """The codec a crawl's scheduler packs its entries with (its spider-aware conversions)."""
    from scrapy.utils.test import get_crawler

    from focuscrawl.scheduler import FocusScheduler
    spider = crawler_spider()
    crawler = get_crawler(type(spider), {"ROBOTSTXT_OBEY": False, "FOCUS_FRONTIER_PACK": True})
    scheduler = FocusScheduler.from_crawler(crawler)
    scheduler.spider = spider  # what open() sets
    if hasattr(scheduler, "serializer"):  # the scheduler's parts (a revision before them has none)
        scheduler.serializer.spider = spider
    return scheduler.frontier.codec


PHASE_LIMIT = 60.0  # seconds: a phase that is this slow stops early and reports its rate so far


def timed_calls(fn) -> float:
    """Seconds per call (at most 200 calls or ~5 s)."""
    t = time.perf_counter()
    for k in range(1, 201):
        fn()
        if time.perf_counter() - t > 5.0:
            break
    return (time.perf_counter() - t) / k


KINDS = {"frontier": "plain", "features": "features", "crawler": "crawler", "packed": "crawler"}
NAMES = {"frontier": "frontier", "features": "frontier+features", "crawler": "crawler objects",
         "packed": "crawler packed"}


def run_frontier(n: int, hosts: int, kind: str, mixed_steps: int, pops: int) -> dict:
    from focuscrawl.frontier import Entry, Frontier

    shape = KINDS[kind]
    maker = UrlMaker(hosts)
    if shape == "crawler":
        maker.chunk(1, shape)  # imports scrapy and numpy before the baseline
    gc.collect()
    f = Frontier(capacity=2 * n + 10 * mixed_steps, codec=crawler_codec() if kind == "packed" else None)
    rss0 = rss_bytes()
    t_push = 0.0
    # a chunk of crawler rows is ~2.5 KB a URL: smaller chunks, freed memory handed back before measuring
    chunk = CHUNK // 20 if shape == "crawler" else CHUNK
    for start in range(0, n, chunk):
        rows = maker.chunk(min(chunk, n - start), shape)
        t = time.perf_counter()
        push = f.push
        for host, url, priority, payload, feats in rows:
            push(host, Entry(priority, url, payload, feats, 0))
        t_push += time.perf_counter() - t
        del rows
    gc.collect()
    trim()
    rss1 = rss_bytes()
    rich = sum(1 for _ in f.rich_entries())
    cold = sum(q.cold_size() for _, q in f.queues())

    # probes on the full frontier (all hosts ready at 0: next_ready_time has an answer)
    t_next = timed_calls(f.next_ready_time)
    t_soon = timed_calls(lambda: f.best_soon(0.0, 2.0, ()))

    rng = random.Random(7)
    now = 0.0
    idle = 0

    def pop_release() -> None:
        nonlocal now, idle
        while True:
            popped = f.pop(now)
            if popped is not None:
                f.release(popped[0], now + 1.0 + rng.random())
                return
            idle += 1
            nxt = f.next_ready_time()
            if nxt is None:
                raise RuntimeError("frontier ran dry")
            now = max(now + 1e-6, nxt)

    t = time.perf_counter()
    for done in range(1, pops + 1):
        pop_release()
        if done % 1000 == 0 and time.perf_counter() - t > PHASE_LIMIT:
            break
    pops, t_pop = done, time.perf_counter() - t

    done, t_mixed = 0, 0.0
    while done < mixed_steps and t_mixed < PHASE_LIMIT:
        rows = maker.chunk(min(chunk, mixed_steps - done), shape)
        t = time.perf_counter()
        for host, url, priority, payload, feats in rows:
            pop_release()
            f.push(host, Entry(priority, url, payload, feats, 0))
        t_mixed += time.perf_counter() - t
        done += len(rows)
        del rows
    mixed_steps = done

    f.version += 1
    t = time.perf_counter()
    rescored = f.rescore_stale(lambda entries: [e.priority for e in entries], limit=200_000)
    t_rescore = time.perf_counter() - t
    return {"kind": NAMES[kind], "n": n, "hosts": hosts,
            "push_ops": n / t_push, "pop_ops": pops / t_pop, "mixed_ops": 2 * mixed_steps / t_mixed,
            "rescore_ops": rescored / t_rescore, "bytes_per_url": (rss1 - rss0) / n, "rss_mb": rss_bytes() / 2**20,
            "next_ready_us": t_next * 1e6, "best_soon_us": t_soon * 1e6, "idle_pops": idle, "len": len(f),
            "rich_share": rich / n, "cold_share": cold / n}


def run_heapq(n: int, hosts: int, mixed_steps: int, pops: int) -> dict:
    maker = UrlMaker(hosts)
    gc.collect()
    heap: list = []
    seq = 0
    rss0 = rss_bytes()
    t_push = 0.0
    for start in range(0, n, CHUNK):
        rows = maker.chunk(min(CHUNK, n - start))
        t = time.perf_counter()
        for _host, url, priority, _, _ in rows:
            heapq.heappush(heap, (-priority, seq, url))
            seq += 1
        t_push += time.perf_counter() - t
        del rows
    gc.collect()
    rss1 = rss_bytes()
    t = time.perf_counter()
    for _ in range(pops):
        heapq.heappop(heap)
    t_pop = time.perf_counter() - t
    rows = maker.chunk(mixed_steps)
    t = time.perf_counter()
    for _host, url, priority, _, _ in rows:
        heapq.heappop(heap)
        heapq.heappush(heap, (-priority, seq, url))
        seq += 1
    t_mixed = time.perf_counter() - t
    return {"kind": "heapq baseline", "n": n, "hosts": hosts, "push_ops": n / t_push, "pop_ops": pops / t_pop,
            "mixed_ops": 2 * mixed_steps / t_mixed, "bytes_per_url": (rss1 - rss0) / n,
            "rss_mb": rss_bytes() / 2**20}


def run_seen(n: int, hosts: int, baseline: bool) -> dict:
    from focuscrawl.frontier import SeenSet

    maker = UrlMaker(hosts)
    gc.collect()
    s: object = set() if baseline else SeenSet()
    rss0 = rss_bytes()
    t_add = 0.0
    probes: list[str] = []
    for start in range(0, n, CHUNK):
        rows = maker.chunk(min(CHUNK, n - start))
        urls = [r[1] for r in rows]
        del rows
        if len(probes) < 100_000:
            probes += urls[:1000]
        t = time.perf_counter()
        if baseline:
            add = s.add
            for url in urls:
                add(url)
        else:
            add = s.add
            for url in urls:
                add(url)
        t_add += time.perf_counter() - t
        del urls
    gc.collect()
    rss1 = rss_bytes()
    absent = [r[1] for r in maker.chunk(len(probes))]
    lookups = probes + absent
    t = time.perf_counter()
    hits = sum(1 for url in lookups if url in s)
    t_look = time.perf_counter() - t
    assert hits == len(probes), (hits, len(probes))
    return {"kind": "set(str) baseline" if baseline else "SeenSet", "n": n, "hosts": hosts,
            "push_ops": n / t_add, "pop_ops": len(lookups) / t_look, "mixed_ops": None,
            "bytes_per_url": (rss1 - rss0) / n, "rss_mb": rss_bytes() / 2**20}


def child(args) -> None:
    n = args.urls_one
    mixed, pops = min(n // 4, 500_000), min(n // 2, 1_000_000)
    if args.child in KINDS:
        res = run_frontier(n, args.hosts, args.child, mixed, pops)
    elif args.child == "heapq":
        res = run_heapq(n, args.hosts, mixed, pops)
    elif args.child == "seen":
        res = run_seen(n, args.hosts, False)
    else:
        res = run_seen(n, args.hosts, True)
    res["peak_rss_mb"] = int(open("/proc/self/status").read().split("VmHWM:")[1].split()[0]) / 1024
    print(json.dumps(res))


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--urls", default="1000000", help="comma-separated sizes, e.g. 1000000,10000000")
    ap.add_argument("--hosts", type=int, default=100_000)
    ap.add_argument("--seen", action="store_true", help="also the seen set (and a set(str) baseline)")
    ap.add_argument("--features", action="store_true", help="also entries with a 25-pair features tuple "
                    "(first size only: ~2 KB per URL)")
    ap.add_argument("--crawler", action="store_true", help="also entries shaped like the crawler's (a Request "
                    "and a 30-feature vector), as objects and packed by the scheduler's codec (every size)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--urls-one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    sizes = [int(float(s)) for s in args.urls.split(",")]
    jobs = []
    for i, n in enumerate(sizes):
        jobs.append(("frontier", n))
        if args.features and i == 0:
            jobs.append(("features", n))
        if args.crawler:
            jobs += [("crawler", n), ("packed", n)]
        if not args.no_baseline:
            jobs.append(("heapq", n))
        if args.seen:
            jobs.append(("seen", n))
            if not args.no_baseline:
                jobs.append(("set", n))
    results = []
    print(f"hosts={args.hosts}  python {sys.version.split()[0]}  memory = VmRSS delta / URLs", flush=True)
    head = (f"{'structure':<18} {'URLs':>9} {'push/add op/s':>13} {'pop/lookup op/s':>15} {'push+pop op/s':>13} "
            f"{'B/URL':>6} {'peak MB':>8} {'next_ready us':>13} {'best_soon us':>12} {'rescore op/s':>12} "
            f"{'cold %':>6}")
    print(head, flush=True)
    for kind, n in jobs:
        t = time.time()
        out = subprocess.run([sys.executable, __file__, "--child", kind, "--urls-one", str(n),
                              "--hosts", str(args.hosts)], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{kind} {n}: failed\n{out.stderr[-2000:]}", flush=True)
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        results.append(r)
        print(f"{r['kind']:<18} {n:>9.0e} {r['push_ops']:>13,.0f} {r['pop_ops']:>15,.0f} "
              f"{fmt(r['mixed_ops'], '>13,.0f')} {r['bytes_per_url']:>6.0f} {r['peak_rss_mb']:>8.0f} "
              f"{fmt(r.get('next_ready_us'), '>13.1f')} {fmt(r.get('best_soon_us'), '>12.1f')} "
              f"{fmt(r.get('rescore_ops'), '>12,.0f')} {fmt(r.get('cold_share') and 100 * r['cold_share'], '>6.0f')}"
              f"   ({time.time() - t:.0f} s)", flush=True)
    if os.environ.get("BENCH_JSON"):
        Path(os.environ["BENCH_JSON"]).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
