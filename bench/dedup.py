"""Memory and time of the near-duplicate indexes a page, against datasketch's in-memory MinHashLSH.

    python bench/dedup.py [--pages 10000] [--seed 0] [--threshold 0.9] [--no-redis]

Both index the same MinHash signatures (128 permutations, the bands ``band_params`` picks) of pages
written like the soak web's (one vocabulary, a third of the pages near copies of another) under
URL keys, with the same duplicate check: query the bands, verify the similarity, keep the page if
it is new. The baseline is the index focuscrawl used before ``BandIndex``: datasketch's MinHashLSH
plus each kept page's MinHash object. ``BandIndex`` is the in-process index (no crawl store); the
crawl store's index (``focuscrawl.store.dedup``, what a crawl uses) writes into a crawl store in
a temporary directory and commits after every page, as the crawl's store does. Bytes a page are
the Python allocations tracemalloc sees (numpy's included) while the index is built and kept;
SQLite's own page cache is not among them (bounded: 2 MB by default), the store's file size a
page is printed beside. The shared index (``focuscrawl.distributed.dedup``, what the workers of a
crawl on Redis use) talks to a throwaway ``redis-server`` on 127.0.0.1 (skipped where none is
installed): its bytes are the server's (``used_memory`` before and after), and its round trips a
page are counted at the client (one a command sent, one a pipeline or script).
All run in the same invocation, so their ratios hold on a noisy machine.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from datasketch import MinHash, MinHashLSH  # noqa: E402

from focuscrawl.dedup import NearDuplicateIndex  # noqa: E402
from focuscrawl.dedup.fingerprints import band_params, word_shingles  # noqa: E402
from focuscrawl.store import CrawlStore  # noqa: E402
from focuscrawl.store.dedup import StoreNearIndex  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402


def pages(count: int, seed: int) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    vocabulary = [f"word{i}" for i in range(20000)]
    texts: list[str] = []
    out = []
    for i in range(count):
        if texts and rng.random() < 1 / 3:
            words = rng.choice(texts).split()
            for _ in range(rng.randrange(1, 6)):
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
            text = " ".join(words)
        else:
            text = " ".join(rng.choice(vocabulary) for _ in range(rng.randrange(150, 600)))
        texts.append(text)
        out.append((f"http://host{rng.randrange(1000)}.example/path/{i}/page-{rng.randrange(10**6)}.html", text))
    return out


class DatasketchIndex:
    def __init__(self, threshold: float) -> None:
        self.threshold = threshold
        self.lsh = MinHashLSH(num_perm=128, params=band_params(threshold, 128))
        self.kept: dict[str, MinHash] = {}

    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        for candidate in self.lsh.query(m):
            if candidate != key and m.jaccard(self.kept[candidate]) >= self.threshold:
                return candidate
        self.lsh.insert(key, m)
        self.kept[key] = m
        return None


class CommittedStoreIndex:
    """The crawl store's index, committed after each page as the crawl commits each page."""

    def __init__(self, directory: str, threshold: float) -> None:
        self.store = CrawlStore(Path(directory) / "crawl.db")
        self.store.begin_crawl()
        self.index = StoreNearIndex(self.store.connection, self.store.crawl_id, threshold=threshold)
        self.store.connection.commit()

    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        found = self.index.find_or_add_minhash(key, m)
        self.store.connection.commit()
        return found


class SharedIndex:
    """The shared index of one crawl on a throwaway redis-server; counts the round trips it makes."""

    def __init__(self, server: RedisServer, threshold: float) -> None:
        import redis

        from focuscrawl.distributed.connection import Keys
        from focuscrawl.distributed.dedup import RedisNearIndex

        self.server = server
        server.flush()
        self.client = redis.Redis(port=server.port)
        self.round_trips = 0
        send = redis.connection.Connection.send_packed_command

        def counted(connection, *args, **kwargs):
            self.round_trips += 1
            return send(connection, *args, **kwargs)

        self._restore = lambda: setattr(redis.connection.Connection, "send_packed_command", send)
        redis.connection.Connection.send_packed_command = counted
        self.index = RedisNearIndex(self.client, Keys("bench"), threshold=threshold)
        self.memory_before = self.used_memory()
        self.round_trips = 0

    def used_memory(self) -> int:
        return int(self.client.info("memory")["used_memory"])

    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        return self.index.find_or_add_minhash(key, m)

    def close(self) -> None:
        self._restore()
        self.client.close()


def measure(index, signed: list[tuple[str, MinHash]]) -> tuple[int, float, int]:
    """(bytes allocated and kept, seconds, duplicates found) for indexing ``signed``."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    # a fresh key string and a fresh signature a page, as a crawl hands them over
    duplicates = sum(index.find_or_add_minhash("".join(key), m.copy()) is not None for key, m in signed)
    seconds = time.perf_counter() - t0
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return used, seconds, duplicates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--no-redis", action="store_true", help="leave the shared index (Redis) out")
    args = parser.parse_args()
    maker = NearDuplicateIndex(threshold=args.threshold)
    signed = [(key, maker.minhash(word_shingles(text, maker.shingle_size))) for key, text in pages(args.pages, args.seed)]
    print(f"{args.pages} pages, 128 permutations, threshold {args.threshold}, "
          f"(bands, rows) {band_params(args.threshold, 128)}\n")
    print("| index | bytes a page | µs a page | duplicates |\n|---|---:|---:|---:|")
    results = {}
    makers = [("datasketch MinHashLSH + MinHash objects", lambda: DatasketchIndex(args.threshold)),
              ("BandIndex (in process)", lambda: NearDuplicateIndex(threshold=args.threshold)),
              ("crawl store (on disk)", lambda: CommittedStoreIndex(directory, args.threshold))]
    server = None
    with tempfile.TemporaryDirectory() as directory:
        if not args.no_redis:
            server = RedisServer.start(Path(directory))
            if server is None:
                print("(redis-server is not installed: the shared index is left out)")
            else:
                makers.append(("shared (Redis)", lambda: SharedIndex(server, args.threshold)))
        try:
            for name, make in makers:
                index = make()
                used, seconds, duplicates = results[name] = measure(index, signed)
                if isinstance(index, SharedIndex):
                    used = index.used_memory() - index.memory_before
                    round_trips = index.round_trips
                    index.close()
                print(f"| {name} | {used / args.pages:,.0f} | {1e6 * seconds / args.pages:,.0f} | {duplicates} |")
                if isinstance(index, CommittedStoreIndex):
                    index.store.close()
                    size = sum(p.stat().st_size for p in Path(directory).iterdir() if p.name.startswith("crawl"))
                del index
        finally:
            if server is not None:
                server.stop()
    (base, base_s, _), (bands, bands_s, _), (store, store_s, _) = list(results.values())[:3]
    print(f"\nthe crawl store's file: {size / args.pages:,.0f} bytes a page on disk")
    print(f"ratio to datasketch: BandIndex memory {bands / base:.2f}, time {bands_s / base_s:.2f}; "
          f"crawl store memory {store / base:.3f}, time {store_s / base_s:.2f}")
    if "shared (Redis)" in results:
        shared_s = results["shared (Redis)"][1]
        print(f"shared index: {round_trips / args.pages:.2f} round trips a page, time to datasketch {shared_s / base_s:.2f} "
              f"(bytes a page: the server's used_memory)")


if __name__ == "__main__":
    main()
