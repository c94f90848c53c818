"""How busy the crawler itself is: the price of time for the release policies.

The crawler handles each response it is sent (download handling, parsing, scoring, storing) in
one thread, a single server with a queue: ``cost`` is its time per request released, measured
over the last ``window`` requests, and ``busy`` the share of the wall time since then that it was
working or waiting for a CPU to work on (so a crawler slowed by other processes on its machine
counts as busy, not idle). Pure: both clocks are passed in (the scheduler's are
``time.monotonic`` and ``runnable_time``).
"""

from __future__ import annotations

import os
import time
from collections import deque

#: busy is capped here: a crawler at full load still bounds a wait (20 requests' work)
MAX_BUSY = 0.95


class CrawlerLoad:
    def __init__(self, window: int = 16):
        if window < 1:
            raise ValueError("the load window must hold at least one request")
        self._marks: deque[tuple[float, float]] = deque(maxlen=window + 1)  # (wall, work) at each release

    def released(self, now: float, work: float) -> None:
        """A request left the scheduler at wall time ``now``, when the crawler had worked ``work``
        seconds in all (``runnable_time``)."""
        self._marks.append((now, work))

    def measure(self, now: float, work: float) -> tuple[float, float]:
        """(cost: the crawler's seconds of work per request released, busy: its share of the wall
        time) from the oldest mark in the window to now, so that a crawler that stops working
        looks less busy at once; (0, 0) before two requests have gone."""
        marks = self._marks
        if len(marks) < 2:
            return 0.0, 0.0
        wall0, work0 = marks[0]
        done = max(0.0, work - work0)
        span = now - wall0
        busy = min(MAX_BUSY, done / span) if span > 0 else MAX_BUSY
        return done / (len(marks) - 1), busy

    def sojourn(self, now: float, work: float) -> float:
        """How long a request sent now takes to get through the crawler: its own work and the
        work queued ahead of it, ``cost / (1 - busy)`` (a single server's time in system); 0
        before a measure."""
        cost, busy = self.measure(now, work)
        return cost / (1.0 - busy)


def _schedstat() -> int | None:
    try:
        return os.open("/proc/self/schedstat", os.O_RDONLY)
    except OSError:
        return None


_SCHEDSTAT = _schedstat()


def runnable_time() -> float:
    """Seconds this process's main thread (the reactor's) has run or waited for a CPU to run on
    (Linux's schedstat); elsewhere its CPU time."""
    if _SCHEDSTAT is not None:
        try:
            ran, waited = os.pread(_SCHEDSTAT, 64, 0).split()[:2]
            return (int(ran) + int(waited)) / 1e9
        except (OSError, ValueError):
            pass
    return time.process_time()
