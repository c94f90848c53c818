"""A sample of the priorities queued in an in-process frontier: what the budget's price of a wait
reads (``focuscrawl.scheduling.budget``), through the frontier's ``queues()``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from focuscrawl.frontier.records import record_priority
from focuscrawl.frontier.storage import HostQueue


def draw_counts(weights: Sequence[float], k: int, rng) -> Counter[int]:
    """How many of ``k`` draws with replacement (``rng``: a ``random.Random``), each index drawn in
    proportion to its weight, fell on each index; indices in the order first drawn. A sample drawn
    from buckets (hosts, runs, blocks) draws within each bucket once, however often it was drawn."""
    return Counter(rng.choices(range(len(weights)), weights=weights, k=k))


def queue_priority_sample(queues: Iterable[tuple[str, HostQueue]], k: int, rng) -> list[float]:
    """The priorities of ``k`` queued entries drawn at random with replacement (``rng``: a
    ``random.Random``), as they are recorded now (stale ones too: the background re-scoring catches
    them up); empty when nothing is queued. A host is drawn in proportion to its queue, a record
    within it by the queue's ``sample`` (a queue without one is read whole): O(hosts + k log
    hosts), plus an inflated block per cold block drawn from, so a caller that wants it cheap per
    decision reads one now and then. Entries lent out (a busy host's popped one) are not drawn."""
    held = [q for _, q in queues if q.top is not None]
    if not held or k <= 0:
        return []
    out: list[float] = []
    for i, m in draw_counts([q.size() for q in held], k, rng).items():
        q = held[i]
        sample = getattr(q, "sample", None)
        if sample is not None:
            records = sample(m, rng)
        else:
            every = list(q.records())
            records = [every[rng.randrange(len(every))] for _ in range(m)]
        out += [record_priority(r) for r in records]
    return out


__all__ = ["draw_counts", "queue_priority_sample"]
