"""When a worker of a shared crawl should look for a ready host again.

Nothing tells a worker that another one queued URLs or freed a host, so it reads the crawl's
ready and waiting hosts from Redis, trusting a reading for ``cache_seconds``; what it learns
itself (a pop that found nothing and said how long the earliest host waits, a host it released
with its delay) moves the time without a round trip.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only names: a shared crawl's parts, which need the redis extra
    from focuscrawl.distributed.batch import WriteBehind
    from focuscrawl.distributed.connection import Keys


class NextReady:
    def __init__(self, writes: WriteBehind, keys: Keys, clock: Callable[[], float], cache_seconds: float):
        self.writes = writes
        self.keys = keys
        self.clock = clock
        self.cache_seconds = cache_seconds
        self._wait: float | None = None  # when the earliest host may be contacted (this clock); None: none waits
        self._wait_at = -1.0  # when that was read

    def heard(self, wait: float) -> None:
        """Redis said the earliest host waits ``wait`` seconds (negative: no host waits)."""
        now = self.clock()
        self._wait = None if wait < 0 else now + wait
        self._wait_at = now

    def released(self, at: float) -> None:
        """This worker released a host that may be contacted at ``at``: known before Redis says it."""
        if self._wait is None or self._wait > at:
            self._wait = at

    def next_wait(self, now: float) -> float | None:
        """When the earliest host nobody holds may be contacted (``now`` when one is ready; None
        when none waits), as read at most ``cache_seconds`` ago."""
        if now - self._wait_at <= self.cache_seconds:
            return self._wait
        ready, waiting, (seconds, micros) = self.writes.call_many([
            ("ZCARD", self.keys("ready")), ("ZRANGE", self.keys("waiting"), 0, 0, "WITHSCORES"), ("TIME",)])
        if ready:
            self._wait = now
        elif waiting:
            self._wait = now + max(0.0, float(waiting[-1]) - (seconds + micros / 1e6))
        else:
            self._wait = None
        self._wait_at = now
        return self._wait


__all__ = ["NextReady"]
