"""What the shared frontier's background re-scoring costs a record, in the worker and in Redis.

    python bench/shared_rescoring.py [--urls 20000] [--hosts 8] [--passes 3] [--limit 2048]

A throwaway ``redis-server`` (tests/redis_server.py) holds ``--urls`` crawler-shaped records
(bench/frontier.py's: the focused spider's Request with its link meta and features, packed by the
scheduler's codec) over ``--hosts`` hosts, deep ones as a crawl's department hosts are. Each pass
moves the scoring version and re-scores every record with ``SharedFrontier.rescore_stale``, calls
of ``--limit`` records as the crawl's background pass makes them. The rescorer gives each record
its priority back (the entries decoded by the codec's preview, as in the crawl), so what is
measured is the pass's own work: reading the stale records, decoding them, writing their headers
back. The in-process ``Frontier`` does the same passes over the same records as the baseline.

Reported a record re-scored: the worker's CPU (``time.process_time``), redis-server's (``INFO
cpu``), and the part of it spent in the commands the scripts run (``INFO commandstats``: ZRANGE,
ZRANGEBYLEX, ZREM, ZADD), the rest being the scripts' Lua and the replies; the in-process CPU.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from frontier import UrlMaker, crawler_codec  # noqa: E402

from focuscrawl.distributed.connection import Keys  # noqa: E402
from focuscrawl.distributed.frontier import SharedFrontier  # noqa: E402
from focuscrawl.frontier import Entry, Frontier  # noqa: E402
from focuscrawl.scheduling.requests import RequestSerializer  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

COMMANDS = ("zrange", "zrangebylex", "zrem", "zadd")


def same(entries: list[Entry]) -> list[float]:
    return [e.priority for e in entries]


def passes(frontier, count: int, limit: int, flush=lambda: None) -> int:
    """``count`` whole passes of background re-scoring; the records re-scored."""
    done = 0
    for _ in range(count):
        frontier.version += 1
        flush()
        goal = done + len(frontier)
        while done < goal and (n := frontier.rescore_stale(same, limit=limit)):
            done += n
        flush()
    return done


def redis_cpu(client) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=20_000)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--limit", type=int, default=2048, help="records a call (the crawl's CHUNK)")
    args = parser.parse_args()
    if min(args.urls, args.hosts, args.passes, args.limit) < 1:
        print("error: --urls, --hosts, --passes and --limit take whole numbers of at least 1", file=sys.stderr)
        return 2
    rows = UrlMaker(args.hosts).chunk(args.urls, "crawler")
    with tempfile.TemporaryDirectory() as folder:
        server = RedisServer.start(Path(folder))
        if server is None:
            print("error: no redis-server on the PATH", file=sys.stderr)
            return 2
        try:
            import redis

            client = redis.Redis.from_url(server.url)
            shared = SharedFrontier(client, Keys("bench"), crawler_codec(), RequestSerializer(), worker="w0",
                                    capacity=10**9, write_behind=0.05)
            for host, url, priority, payload, feats in rows:
                shared.push(host, Entry(priority, url, payload, feats, 0))
            shared.flush()
            size = sum(len(r) for r in client.zrange(shared.keys("q", rows[0][0]), 0, 99)) / 100
            client.config_resetstat()
            cpu, rcpu = time.process_time(), redis_cpu(client)
            done = passes(shared, args.passes, args.limit, shared.flush)
            cpu, rcpu = time.process_time() - cpu, redis_cpu(client) - rcpu
            stats = client.info("commandstats")
            commands = sum(stats.get(f"cmdstat_{name}", {}).get("usec", 0) for name in COMMANDS) / 1e6
            client.close()
        finally:
            server.stop()
    local = Frontier(capacity=10**9, codec=crawler_codec())
    for host, url, priority, payload, feats in rows:
        local.push(host, Entry(priority, url, payload, feats, 0))
    base = time.process_time()
    base_done = passes(local, args.passes, args.limit)
    base = time.process_time() - base
    per = 1e6 / max(1, done)
    print(f"{args.urls:,} records over {args.hosts} hosts (~{size:.0f} B a record in its host's sorted set), "
          f"{args.passes} passes, "
          f"{args.limit} a call: {done:,} re-scored shared, {base_done:,} in process\n")
    print("| us a record re-scored | shared: worker | shared: redis-server | of which its commands | in process |")
    print("|---|---:|---:|---:|---:|")
    print(f"| CPU | {cpu * per:.2f} | {rcpu * per:.2f} | {commands * per:.2f} | {base * 1e6 / max(1, base_done):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
