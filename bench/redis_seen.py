"""Redis memory a URL and adds a second of the shared seen set, against the obvious layouts.

    python bench/redis_seen.py [--urls 1000000] [--single 20000] [--near-pages 3000]

Runs a throwaway ``redis-server`` (default config, no persistence) of its own. Each layout gets an
emptied server and the same ``--urls`` distinct canonical URLs; bytes a URL are the growth of
``INFO memory used_memory`` over them (what the allocator holds, key overhead and all):

- ``RedisSeenSet`` (focuscrawl.distributed.seen): linear-hashed intset buckets, added through its
  script, pipelined 1000 at a time; then ``--single`` more, one round trip each;
- one SET of 8-byte fingerprints (SADD, likewise pipelined and one at a time): the layout a plain
  dupefilter would use, fingerprints rather than URLs;
- for memory only, loaded in bulk: a fixed 2^11 and 2^12 SETs of integers (intsets while a set
  holds at most 512), and 2^14 HASHes of integer fields (listpacks while at most 128).

``µs in Redis`` is the server's own time an add (INFO commandstats): the CPU a Redis core spends,
which bounds the adds a second all workers together get from one instance.

With ``--near-pages``, also the near-duplicate index (focuscrawl.distributed.dedup.RedisNearIndex)
over pages written like bench/dedup.py's: Redis bytes a kept page and milliseconds a page.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis  # noqa: E402

from focuscrawl.distributed.connection import Keys  # noqa: E402
from focuscrawl.distributed.seen import MIN_LEVEL, RedisSeenSet  # noqa: E402
from focuscrawl.frontier.seen import url_fingerprint  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

BATCH = 1000


def canonical_urls(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"http://host{rng.randrange(100_000)}.example/section/{i}/page-{rng.randrange(10**6)}.html"
            for i in range(count)]


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def server_usec(client: redis.Redis, command: str) -> float:
    stats = client.info("commandstats").get(f"cmdstat_{command}")
    return float(stats["usec_per_call"]) if stats else float("nan")


def encodings(client: redis.Redis) -> str:
    """How Redis encodes the layout's keys: ``intset 5000`` or ``hashtable 1``."""
    counts: dict[str, int] = defaultdict(int)
    names = list(client.scan_iter(count=10_000))
    for start in range(0, len(names), BATCH):
        pipe = client.pipeline(transaction=False)
        for name in names[start : start + BATCH]:
            pipe.object("encoding", name)
        for encoding in pipe.execute():
            counts[encoding.decode()] += 1
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def bench_seen_set(client: redis.Redis, urls: list[str], single: list[str]) -> dict:
    seen = RedisSeenSet(client, Keys("bench"))
    client.config_resetstat()
    before = used_memory(client)
    seconds = timed(lambda: seen.add_many(urls, batch=BATCH))
    grown = used_memory(client) - before
    usec = server_usec(client, "evalsha")
    assert len(seen) == len(urls)
    estimate = seen.memory_bytes()
    single_seconds = timed(lambda: [seen.add(url) for url in single])
    level, split = (int(value or default) for value, default in
                    zip(client.hmget(Keys("bench")("seen"), "level", "split"), (MIN_LEVEL, 0), strict=True))
    names = list(client.scan_iter(match=Keys("bench")("seen", "*"), count=10_000))
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.scard(name)
    largest = max(pipe.execute())
    return {"bytes": grown, "pipelined": len(urls) / seconds, "single": len(single) / single_seconds,
            "usec": usec, "encodings": encodings(client), "estimate": estimate,
            "buckets": f"level {level}, split {split}: {2 ** level + split} buckets, largest {largest}"}


def bench_plain_set(client: redis.Redis, urls: list[str], single: list[str]) -> dict:
    key = Keys("bench")("seen")

    def fill() -> None:
        for start in range(0, len(urls), BATCH):
            pipe = client.pipeline(transaction=False)
            for url in urls[start : start + BATCH]:
                pipe.sadd(key, url_fingerprint(url).to_bytes(8, "little"))
            pipe.execute()

    client.config_resetstat()
    before = used_memory(client)
    seconds = timed(fill)
    grown = used_memory(client) - before
    usec = server_usec(client, "sadd")
    single_seconds = timed(lambda: [client.sadd(key, url_fingerprint(url).to_bytes(8, "little")) for url in single])
    return {"bytes": grown, "pipelined": len(urls) / seconds, "single": len(single) / single_seconds,
            "usec": usec, "encodings": encodings(client)}


def bench_bulk(client: redis.Redis, urls: list[str], bits: int, kind: str) -> dict:
    """A fixed 2^bits buckets by the fingerprint's top bits, loaded a bucket a command."""
    buckets: dict[int, list[int]] = defaultdict(list)
    for url in urls:
        fp = url_fingerprint(url)
        buckets[fp >> (64 - bits)].append(fp & ((1 << (64 - bits)) - 1))
    base = Keys("bench")("seen", "")
    before = used_memory(client)
    pipe = client.pipeline(transaction=False)
    for i, (bucket, members) in enumerate(buckets.items()):
        if kind == "set":
            pipe.sadd(f"{base}{bucket}", *members)
        else:
            pipe.hset(f"{base}{bucket}", mapping=dict.fromkeys(members, 1))
        if i % 100 == 99:
            pipe.execute()
    pipe.execute()
    return {"bytes": used_memory(client) - before, "encodings": encodings(client),
            "buckets": f"largest {max(len(m) for m in buckets.values())}"}


def bench_near(client: redis.Redis, count: int) -> dict:
    from bench.dedup import pages
    from focuscrawl.dedup.fingerprints import word_shingles
    from focuscrawl.distributed.dedup import RedisNearIndex

    index = RedisNearIndex(client, Keys("bench"))
    signed = [(key, index.minhash(word_shingles(text, index.shingle_size))) for key, text in pages(count, 0)]
    client.config_resetstat()
    before = used_memory(client)
    seconds = timed(lambda: [index.find_or_add_minhash(key, m) for key, m in signed])
    calls = sum(int(stats["calls"]) for stats in client.info("commandstats").values())
    kept = len(index)
    return {"kept": kept, "bytes": (used_memory(client) - before) / kept, "ms": 1000 * seconds / count,
            "commands": calls / count, "bands": index.bands}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--single", type=int, default=20_000, help="adds timed one round trip each")
    parser.add_argument("--near-pages", type=int, default=3000, help="0: skip the near-duplicate index")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    urls = canonical_urls(args.urls + args.single, args.seed)
    urls, single = urls[: args.urls], urls[args.urls :]
    with tempfile.TemporaryDirectory(prefix="redis-seen-") as folder:
        server = RedisServer.start(Path(folder))
        if server is None:
            sys.exit("redis-server is not installed (apt-get install redis-server)")
        try:
            client = server.client()
            version = client.info("server")["redis_version"]
            rows = []
            for name, run in (("RedisSeenSet (linear-hashed intsets, Lua)", lambda: bench_seen_set(client, urls, single)),
                              ("one SET of 8-byte members", lambda: bench_plain_set(client, urls, single)),
                              ("2^11 SETs of integers", lambda: bench_bulk(client, urls, 11, "set")),
                              ("2^12 SETs of integers", lambda: bench_bulk(client, urls, 12, "set")),
                              ("2^14 HASHes of integer fields", lambda: bench_bulk(client, urls, 14, "hash"))):
                server.flush()
                rows.append((name, run()))
                print(f"  {name}: done", file=sys.stderr, flush=True)
            near = None
            if args.near_pages:
                server.flush()
                near = bench_near(client, args.near_pages)
        finally:
            server.stop()

    print("`" + " ".join(["python", "bench/redis_seen.py", *sys.argv[1:]]) + "`")
    print(f"\nredis-server {version}, default config; {args.urls:,} distinct URLs; "
          f"pipelined {BATCH} a round trip; {args.single:,} adds one at a time\n")
    print("| layout | bytes/URL | adds/s pipelined | adds/s one at a time | µs in Redis an add | keys |")
    print("|---|---:|---:|---:|---:|---|")
    for name, row in rows:
        rate = lambda key: f"{row[key]:,.0f}" if key in row else "(bulk load)"  # noqa: E731
        usec = f"{row['usec']:.1f}" if "usec" in row else ""
        keys = row["encodings"] + (f"; {row['buckets']}" if "buckets" in row else "")
        print(f"| {name} | {row['bytes'] / args.urls:.2f} | {rate('pipelined')} | {rate('single')} | {usec} | {keys} |")
    ours = rows[0][1]
    print(f"\nRedisSeenSet.memory_bytes() estimate: {ours['estimate'] / args.urls:.2f} bytes/URL "
          f"(used_memory growth: {ours['bytes'] / args.urls:.2f})")
    if near:
        print(f"\nRedisNearIndex, {args.near_pages:,} pages (threshold 0.9, {near['bands']} bands): "
              f"{near['kept']:,} kept, {near['bytes']:,.0f} bytes a kept page, {near['ms']:.2f} ms a page, "
              f"{near['commands']:.1f} commands a page")


if __name__ == "__main__":
    main()
