"""A sample of the priorities queued in a shared crawl's frontier (``frontier.SharedFrontier``'s
host queues, on Redis): what the budget's price of a wait reads (``focuscrawl.scheduling.budget``)."""

from __future__ import annotations

from focuscrawl.distributed.connection import Keys
from focuscrawl.frontier.records import ORDER, priority_of


def shared_priority_sample(client, keys: Keys, k: int, rng) -> list[float]:
    """The priorities of ``k`` records queued in the crawl drawn at random with replacement
    (``rng``: a ``random.Random``), hosts in proportion to their queues: two pipelined round trips
    (every host's size, then one record at each index drawn), O(hosts + k). Records a worker has
    not sent yet are left out; empty when nothing is queued."""
    if k <= 0:
        return []
    hosts = [h.decode("utf-8", "surrogatepass") for h in client.hkeys(keys("state"))]
    if not hosts:
        return []
    pipe = client.pipeline(transaction=False)
    for host in hosts:
        pipe.zcard(keys("q", host))
    sizes = [int(n) for n in pipe.execute()]
    if not any(sizes):
        return []
    pipe = client.pipeline(transaction=False)
    for i in rng.choices(range(len(hosts)), weights=sizes, k=k):
        at = rng.randrange(sizes[i])
        pipe.zrange(keys("q", hosts[i]), at, at)
    return [priority_of(int.from_bytes(found[0][:ORDER], "big")) for found in pipe.execute() if found]


__all__ = ["shared_priority_sample"]
