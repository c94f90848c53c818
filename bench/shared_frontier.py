"""The shared frontier on Redis: memory per queued URL and frontier operations per second.

    python bench/shared_frontier.py [--urls 1000000] [--hosts 100000] [--ops 20000] [--workers 2]

A throwaway ``redis-server`` (tests/redis_server.py) holds a crawl of ``--urls`` crawler-shaped
entries (bench/frontier.py's: the focused spider's Request with its link meta and a 30-feature
vector, packed by the scheduler's codec) over ``--hosts`` hosts. Memory is Redis's own account
(INFO memory ``used_memory``) after the pushes minus before, per URL (a record in its host's sorted
set and its codec bytes in the crawl's ``blobs`` hash); the records are pushed in pipelines of the
PUSH script (the crawl pushes one at a time: the same records, faster to build).

Operations per second, each on ``--ops`` operations against the full frontier, one worker:
push (``SharedFrontier.push``, one script call), pop + release (``pop`` then ``release`` of the
host with no delay: the steady state of a crawl, two script calls), and the same pop + release by
``--workers`` worker processes at once (they share the one Redis: its single thread is the
limit). The baseline is the in-process ``Frontier`` (packed by the same codec) doing the same
operations in this invocation: figures read as ratios to it on a shared machine.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from frontier import UrlMaker, crawler_codec  # noqa: E402

from focuscrawl.distributed import scripts  # noqa: E402
from focuscrawl.distributed.connection import Keys  # noqa: E402
from focuscrawl.distributed.frontier import SharedFrontier  # noqa: E402
from focuscrawl.frontier import Entry, Frontier  # noqa: E402
from focuscrawl.scheduling.requests import RequestSerializer  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def shared(url: str, worker: str) -> SharedFrontier:
    import redis

    return SharedFrontier(redis.Redis.from_url(url), Keys("bench"), crawler_codec(), RequestSerializer(),
                          worker=worker, capacity=10**9)


def fill(frontier: SharedFrontier, maker: UrlMaker, n: int, chunk: int = 2000) -> None:
    push = frontier.client.register_script(scripts.PUSH)
    for start in range(0, n, chunk):
        pipe = frontier.client.pipeline(transaction=False)
        for host, url, priority, payload, feats in maker.chunk(min(chunk, n - start), "crawler"):
            record, blob = frontier.records.record(Entry(priority, url, payload, feats, 0))
            push(args=[frontier.prefix, host, 1, record, blob], client=pipe)
        pipe.execute()


def pop_release(frontier, ops: int) -> float:
    """pop + release pairs per second (``frontier``: shared or in-process)."""
    t = time.perf_counter()
    done = 0
    now = 0.0
    while done < ops:
        popped = frontier.pop(now)
        if popped is None:
            now += 1.0
            continue
        frontier.release(popped[0], 0.0)
        done += 1
    return ops / (time.perf_counter() - t)


def _worker(url: str, name: str, ops: int, out) -> None:
    out.put(pop_release(shared(url, name), ops))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--ops", type=int, default=20_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = RedisServer.start(Path(folder))
        if server is None:
            sys.exit("redis-server is not installed")
        try:
            run(server, args)
        finally:
            server.stop()


def run(server: RedisServer, args) -> None:
    client = server.client()
    frontier = shared(server.url, "w0")
    maker = UrlMaker(args.hosts)
    maker.chunk(1, "crawler")  # imports before the first reading
    before = int(client.info("memory")["used_memory"])
    t = time.perf_counter()
    fill(frontier, maker, args.urls)
    fill_seconds = time.perf_counter() - t
    after = int(client.info("memory")["used_memory"])
    per_url = (after - before) / args.urls
    print(f"{args.urls:,} URLs over {args.hosts:,} hosts pushed in {fill_seconds:.0f} s (pipelined); "
          f"Redis used_memory {after / 2**20:,.0f} MiB")

    rows = maker.chunk(args.ops, "crawler")
    t = time.perf_counter()
    for host, url, priority, payload, feats in rows:
        frontier.push(host, Entry(priority, url, payload, feats, 0))
    push_ops = args.ops / (time.perf_counter() - t)
    pop_ops = pop_release(frontier, args.ops)

    queue = multiprocessing.get_context("spawn").Queue()
    procs = [multiprocessing.get_context("spawn").Process(target=_worker, args=(server.url, f"w{i + 1}", args.ops, queue))
             for i in range(args.workers)]
    for p in procs:
        p.start()
    rates = [queue.get(timeout=600) for _ in procs]
    for p in procs:
        p.join()

    # the in-process baseline: the same operations on a frontier of the same entries (fewer of them:
    # its cost per operation does not depend on the size here)
    local = Frontier(capacity=10**9, codec=crawler_codec())
    base_maker = UrlMaker(args.hosts, seed=2)
    for host, url, priority, payload, feats in base_maker.chunk(min(args.urls, 100_000), "crawler"):
        local.push(host, Entry(priority, url, payload, feats, 0))
    rows = base_maker.chunk(args.ops, "crawler")
    t = time.perf_counter()
    for host, url, priority, payload, feats in rows:
        local.push(host, Entry(priority, url, payload, feats, 0))
    base_push = args.ops / (time.perf_counter() - t)
    base_pop = pop_release(local, args.ops)

    print("\n| measure | shared (Redis) | in-process | ratio |\n|---|---:|---:|---:|")
    print(f"| Redis memory per queued URL | {per_url:,.0f} B | | |")
    print(f"| push / s (one worker) | {push_ops:,.0f} | {base_push:,.0f} | {push_ops / base_push:.2f} |")
    print(f"| pop + release / s (one worker) | {pop_ops:,.0f} | {base_pop:,.0f} | {pop_ops / base_pop:.2f} |")
    print(f"| pop + release / s ({args.workers} workers at once, total) | {sum(rates):,.0f} | | |")
    print(f"\ncommand: python bench/shared_frontier.py --urls {args.urls} --hosts {args.hosts} --ops {args.ops} "
          f"--workers {args.workers}")


if __name__ == "__main__":
    main()
