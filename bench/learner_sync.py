"""What sharing the learner costs a worker: one sync's time and bytes, by how much was learned
between syncs (a benchmark, not a test).

    python bench/learner_sync.py [--observations 100,1000,10000] [--rounds 5] [--seed 0]

Two workers of one crawl on a throwaway ``redis-server`` (tests/redis_server.py): worker A
observes N pages, then syncs (it pushes one batch: ``push``); worker B, which learned nothing,
syncs and applies it (``pull``). The pages are shaped like a crawl's: links with a dozen anchor,
context and URL words from a Zipf-distributed vocabulary of 50,000 words, over 2,000 hosts, each
page's parent one of the pages before it. The learners learn their links' words (no link model),
the larger case: their word counts are synced too. Each figure is the median over ``--rounds``
rounds, the learners growing from round to round as in a crawl. Also reported: the price of a
``maybe_sync`` that is not due, what the bookkeeping of the shared counts adds to ``observe``, and
the snapshot (its size, writing it, a late worker joining from it) of the final learner.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis  # noqa: E402

from focuscrawl.distributed import learner_sync  # noqa: E402
from focuscrawl.distributed.connection import Keys  # noqa: E402
from focuscrawl.learning import LinkContext, LinkRewardLearner, link_features  # noqa: E402
from tests.redis_server import RedisServer  # noqa: E402

VOCABULARY = 50_000
HOSTS = 2_000


def word(i: int) -> str:
    """The i-th word of the vocabulary: letters only, as the link features' tokenizer wants them."""
    out = "q"
    while True:
        i, letter = divmod(i, 26)
        out += chr(97 + letter)
        if not i:
            return out


def zipf(rng: random.Random, names: list[str], k: int, exponent: float) -> list[str]:
    """``k`` draws from ``names`` by a Zipf law (rank r drawn in proportion to 1 / r ** exponent)."""
    return rng.choices(names, [1.0 / (rank + 1) ** exponent for rank in range(len(names))], k=k)


class Pages:
    """An endless crawl's worth of fetched pages, as ``observe`` takes them."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.words = zipf(self.rng, [word(i) for i in range(VOCABULARY)], 400_000, 1.1)
        self.hosts = zipf(self.rng, [f"{word(i)}.test" for i in range(HOSTS)], 100_000, 0.8)
        self.urls: list[str] = []
        self.seed = seed

    def _text(self, n: int) -> str:
        return " ".join(self.rng.choice(self.words) for _ in range(n))

    def take(self, n: int) -> list[tuple]:
        rng, out = self.rng, []
        for _ in range(n):
            host = rng.choice(self.hosts)
            url = f"http://{host}/{rng.choice(self.words)}/{self.seed}-{len(self.urls)}-{rng.choice(self.words)}.html"
            parent = rng.choice(self.urls[-5000:]) if self.urls else None
            feats = link_features(LinkContext(url, self._text(4), self._text(12), parent or f"http://{host}/",
                                              rng.random(), 3, link_score=rng.random()))
            relevant = rng.random() < 0.2
            wasted = not relevant and rng.random() < 0.15
            out.append((url, parent, feats, -0.2 if wasted else (1.0 if relevant else 0.1), relevant, wasted))
            self.urls.append(url)
        return out


def learner() -> LinkRewardLearner:
    return LinkRewardLearner(link_model=False)


def observe_all(target: LinkRewardLearner, pages: list[tuple]) -> float:
    started = time.perf_counter()
    for args in pages:
        target.observe(*args)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--observations", default="100,1000,10000", help="pages observed between syncs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(n) for n in args.observations.split(",")]

    server = RedisServer.start(Path(tempfile.mkdtemp(prefix="learner-sync-")))
    if server is None:
        sys.exit("redis-server is not installed")
    try:
        client = redis.Redis(port=server.port)
        rows = []
        a, b = learner(), learner()
        sync_a = learner_sync.LearnerSync(client, Keys("bench"), "a")
        sync_b = learner_sync.LearnerSync(client, Keys("bench"), "b")
        sync_a.sync(a)
        sync_b.sync(b)
        pages = Pages(args.seed)
        for n in sizes:
            push, pull, sent, moved, learning = [], [], [], [], []
            for _ in range(args.rounds):
                learning.append(observe_all(a, pages.take(n)))
                before = sync_a.stats["pushed_bytes"]
                started = time.perf_counter()
                sync_a.sync(a)
                push.append(time.perf_counter() - started)
                sent.append(sync_a.stats["pushed_bytes"] - before)
                started = time.perf_counter()
                sync_b.sync(b)
                pull.append(time.perf_counter() - started)
                moved.append(int((b.model.coef_ != 0).sum()))
            rows.append((n, statistics.median(push), statistics.median(pull), statistics.median(sent),
                         statistics.median(learning)))
            print(f"  {n} observations a sync: done ({len(a.hosts)} hosts, {len(a.children)} parent pages, "
                  f"{moved[-1]} non-zero weights so far)", file=sys.stderr, flush=True)

        # a sync that is not due: what every scheduler call pays
        calls = 1_000_000
        started = time.perf_counter()
        for i in range(calls):
            sync_a.maybe_sync(a, 0.0)
        not_due = (time.perf_counter() - started) / calls

        # the bookkeeping of the shared counts, on observe: tracked learner against a plain one
        sample = Pages(args.seed + 1).take(3000)
        tracked = learner()
        learner_sync.LearnerSync(client, Keys("bench-observe"), "t").sync(tracked)
        tracked_s, plain_s = observe_all(tracked, sample), observe_all(learner(), sample)

        # the snapshot of the learner as it stands, and a late worker joining from it
        started = time.perf_counter()
        blob = sync_a._snapshot(sync_a.last_id, sync_a.last_n)
        encode_s = time.perf_counter() - started
        started = time.perf_counter()
        sync_a._put_snapshot(sync_a.last_id, sync_a.last_n)
        write_s = time.perf_counter() - started
        c = learner()
        started = time.perf_counter()
        learner_sync.LearnerSync(client, Keys("bench"), "c").sync(c)
        join_s = time.perf_counter() - started
        assert (c.model.coef_ == b.model.coef_).all() or abs(c.model.coef_ - b.model.coef_).max() < 1e-9

        print("\n| observations between syncs | A observing them | A's sync (push) | B's sync (pull, apply) "
              "| batch | bytes an observation |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n, push_s, pull_s, size, learn_s in rows:
            print(f"| {n:,} | {learn_s * 1e3:,.0f} ms | {push_s * 1e3:.1f} ms | {pull_s * 1e3:.1f} ms "
                  f"| {size / 1024:,.0f} KiB | {size / n:,.0f} |")
        print(f"\nmaybe_sync not due: {not_due * 1e9:.0f} ns a call; observe with the shared counts' "
              f"bookkeeping {tracked_s / len(sample) * 1e6:.1f} us, without {plain_s / len(sample) * 1e6:.1f} us "
              f"(3,000 pages)")
        print(f"snapshot after {sum(sizes) * args.rounds:,} observations ({len(a.hosts):,} hosts, "
              f"{len(a.prefixes):,} prefixes, {len(a.children):,} parent pages, "
              f"{int((a.model.coef_ != 0).sum()):,} weights): {len(blob) / 2 ** 20:.1f} MiB, encoded in "
              f"{encode_s * 1e3:.0f} ms, encoded and written in {write_s * 1e3:.0f} ms; a late worker joins in "
              f"{join_s * 1e3:.0f} ms")
        client.close()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
