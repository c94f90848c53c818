"""A sample of the priorities queued in an in-process frontier: what the budget's price of a wait
reads (``focuscrawl.scheduling.budget``), through the frontier's ``queues()``."""

from __future__ import annotations

from collections.abc import Iterable

from focuscrawl.frontier.records import record_priority
from focuscrawl.frontier.storage import HostQueue


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
    counts: dict[int, int] = {}
    for i in rng.choices(range(len(held)), weights=[q.size() for q in held], k=k):
        counts[i] = counts.get(i, 0) + 1
    out: list[float] = []
    for i, m in counts.items():
        q = held[i]
        sample = getattr(q, "sample", None)
        if sample is not None:
            records = sample(m, rng)
        else:
            every = list(q.records())
            records = [every[rng.randrange(len(every))] for _ in range(m)]
        out += [record_priority(r) for r in records]
    return out


__all__ = ["queue_priority_sample"]
