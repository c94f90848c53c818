"""A Mercator frontier with priority that is global across hosts.

Each host has a back queue ordered by priority. A host is *ready* when its politeness time has
come and no request to it is in flight. ``pop(now)`` returns the best entry among the ready
hosts only, and marks its host busy until ``release(host, ready_at)``: so priority decides
which ready host goes next, and never whether a host may be hit.

Heaps:
- ``_waiting``: (ready_at, host) for idle hosts whose time has not come (lazy deletion);
- ``_ready``: (-best priority, tie, host) for ready hosts (lazy: re-keyed when stale).

Re-scoring is lazy: every entry carries the scorer ``version`` it was scored under; when
``version`` moves on, stale entries are re-scored as they reach the top of their host queue
(and in bounded background batches), never by a full scan on the hot path.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from typing import Any

# rescore(entries) -> new priorities, one per entry
Rescorer = Callable[[list["Entry"]], list[float]]


class Entry:
    __slots__ = ("priority", "url", "payload", "features", "version")

    def __init__(self, priority: float, url: str, payload: Any = None, features: Any = None, version: int = 0):
        self.priority = priority
        self.url = url
        self.payload = payload
        self.features = features
        self.version = version

    def __repr__(self) -> str:
        return f"Entry({self.priority:.3f}, {self.url!r})"

    def __getstate__(self):
        return (self.priority, self.url, self.payload, self.features, self.version)

    def __setstate__(self, state):
        self.priority, self.url, self.payload, self.features, self.version = state


class _Host:
    __slots__ = ("queue", "ready_at", "busy", "in_ready")

    def __init__(self) -> None:
        self.queue: list[tuple[float, int, Entry]] = []  # (-priority, seq, entry)
        self.ready_at = 0.0
        self.busy = False
        self.in_ready = False

    def best(self) -> float:
        return -self.queue[0][0]


class Frontier:
    def __init__(self, capacity: int = 1_000_000, prune_slack: float = 0.05):
        if capacity < 1:
            raise ValueError("frontier capacity must be at least 1")
        self.capacity = capacity
        self.prune_slack = prune_slack
        self.version = 0
        self._hosts: dict[str, _Host] = {}
        self._waiting: list[tuple[float, str]] = []
        self._ready: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._size = 0
        self._rescore_cursor = 0
        self.rescored = 0
        self.pruned = 0

    # --- size ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    def host_count(self) -> int:
        return sum(1 for h in self._hosts.values() if h.queue)

    def host_size(self, host: str) -> int:
        h = self._hosts.get(host)
        return len(h.queue) if h else 0

    def is_busy(self, host: str) -> bool:
        h = self._hosts.get(host)
        return bool(h and h.busy)

    # --- push ---------------------------------------------------------------------------------
    def push(self, host: str, entry: Entry) -> list[Entry]:
        """Add an entry; returns the entries pruned to stay within capacity (usually none)."""
        h = self._hosts.get(host)
        if h is None:
            h = self._hosts[host] = _Host()
        heapq.heappush(h.queue, (-entry.priority, next(self._seq), entry))
        self._size += 1
        self._schedule(host, h)
        if self._size > self.capacity * (1 + self.prune_slack):
            return self.prune()
        return []

    def _schedule(self, host: str, h: _Host) -> None:
        """Make sure an idle host with work sits in one of the two heaps."""
        if h.busy or not h.queue:
            return
        if h.in_ready:
            # the heap key may now understate the host's best entry; push a fresher key (lazy)
            heapq.heappush(self._ready, (-h.best(), next(self._seq), host))
        else:
            heapq.heappush(self._waiting, (h.ready_at, host))

    # --- pop ----------------------------------------------------------------------------------
    def _promote(self, now: float) -> None:
        waiting = self._waiting
        while waiting and waiting[0][0] <= now:
            ready_at, host = heapq.heappop(waiting)
            h = self._hosts.get(host)
            if h is None or h.busy or h.in_ready or not h.queue or h.ready_at != ready_at:
                continue
            h.in_ready = True
            heapq.heappush(self._ready, (-h.best(), next(self._seq), host))

    def pop(self, now: float, rescore: Rescorer | None = None, max_rescore: int = 256) -> tuple[str, Entry] | None:
        """The best entry among hosts ready at ``now``; its host becomes busy. None if no host is ready."""
        self._promote(now)
        ready = self._ready
        while ready:
            key, _, host = heapq.heappop(ready)
            h = self._hosts[host]
            if h.busy or not h.queue or not h.in_ready:
                continue
            if rescore is not None:
                self._refresh_top(h, rescore, max_rescore)
            best = h.best()
            if -key != best:
                # stale key: re-file the host under its true best and look again
                heapq.heappush(ready, (-best, next(self._seq), host))
                continue
            _, _, entry = heapq.heappop(h.queue)
            self._size -= 1
            h.busy = True
            h.in_ready = False
            return host, entry
        return None

    def _refresh_top(self, h: _Host, rescore: Rescorer, budget: int) -> None:
        """Re-score stale entries at the top of a host queue until the top is fresh."""
        queue = h.queue
        while budget > 0 and queue and queue[0][2].version != self.version:
            batch = []
            while queue and queue[0][2].version != self.version and len(batch) < min(budget, 32):
                batch.append(heapq.heappop(queue)[2])
            for entry, priority in zip(batch, rescore(batch)):
                entry.priority, entry.version = priority, self.version
                heapq.heappush(queue, (-priority, next(self._seq), entry))
            budget -= len(batch)
            self.rescored += len(batch)

    def rescore_stale(self, rescore: Rescorer, limit: int = 1000) -> int:
        """Background re-scoring: bring up to ``limit`` stale entries up to date, host by host."""
        hosts = [name for name, h in self._hosts.items() if h.queue]
        if not hosts:
            return 0
        done = 0
        for step in range(len(hosts)):
            if done >= limit:
                break
            name = hosts[(self._rescore_cursor + step) % len(hosts)]
            h = self._hosts[name]
            stale = [item[2] for item in h.queue if item[2].version != self.version]
            if not stale:
                continue
            for entry, priority in zip(stale, rescore(stale)):
                entry.priority, entry.version = priority, self.version
            h.queue = [(-e.priority, next(self._seq), e) for _, _, e in h.queue]
            heapq.heapify(h.queue)
            done += len(stale)
            if h.in_ready and not h.busy:
                heapq.heappush(self._ready, (-h.best(), next(self._seq), name))
        self._rescore_cursor += 1
        self.rescored += done
        return done

    # --- host state ---------------------------------------------------------------------------
    def requeue(self, host: str, entry: Entry) -> None:
        """Put back an entry that was popped but not fetched (the host stays busy)."""
        h = self._hosts.setdefault(host, _Host())
        heapq.heappush(h.queue, (-entry.priority, next(self._seq), entry))
        self._size += 1

    def acquire(self, host: str) -> None:
        """Mark a host busy without popping (e.g. while its robots.txt is fetched)."""
        h = self._hosts.setdefault(host, _Host())
        h.busy, h.in_ready = True, False

    def release(self, host: str, ready_at: float) -> None:
        """The host's request finished; it may be contacted again from ``ready_at``."""
        h = self._hosts.setdefault(host, _Host())
        h.busy = False
        h.in_ready = False
        h.ready_at = max(h.ready_at, ready_at)
        self._schedule(host, h)

    def delay_host(self, host: str, ready_at: float) -> None:
        """Push a host's next contact back (Retry-After, back-off) whether or not it is busy."""
        h = self._hosts.setdefault(host, _Host())
        if ready_at > h.ready_at:
            h.ready_at = ready_at
            if not h.busy:
                h.in_ready = False
                self._schedule(host, h)

    def ready_at(self, host: str) -> float:
        h = self._hosts.get(host)
        return h.ready_at if h else 0.0

    def next_ready_time(self) -> float | None:
        """When the earliest idle host with work may be contacted (None if none waits)."""
        times = [h.ready_at for h in self._hosts.values() if h.queue and not h.busy]
        return min(times) if times else None

    def best_soon(self, now: float, horizon: float, busy_hosts=()) -> float:
        """The best priority queued at hosts that are busy now (``busy_hosts``) or whose delay ends
        within ``horizon`` seconds: what waiting a little could buy. -inf when there is none."""
        best = float("-inf")
        for host in busy_hosts:
            h = self._hosts.get(host)
            if h is not None and h.queue:
                best = max(best, h.best())
        bound = now + horizon
        heap, stack = self._waiting, [0]
        while stack:  # visit only heap nodes whose ready time is within the bound
            i = stack.pop()
            if i >= len(heap) or heap[i][0] > bound:
                continue
            ready_at, host = heap[i]
            h = self._hosts.get(host)
            if h is not None and h.queue and not h.busy and h.ready_at == ready_at:
                best = max(best, h.best())
            stack.extend((2 * i + 1, 2 * i + 2))
        return best

    def has_ready(self, now: float) -> bool:
        return any(h.queue and not h.busy and h.ready_at <= now for h in self._hosts.values())

    def drop_host(self, host: str) -> list[Entry]:
        """Remove every queued entry of a host (e.g. excluded, or its Crawl-delay is over the cap)."""
        h = self._hosts.get(host)
        if h is None:
            return []
        entries = [item[2] for item in h.queue]
        h.queue = []
        h.in_ready = False
        self._size -= len(entries)
        return entries

    # --- capacity -----------------------------------------------------------------------------
    def prune(self) -> list[Entry]:
        """Drop the lowest-priority entries so that ``capacity`` remain; return them."""
        excess = self._size - self.capacity
        if excess <= 0:
            return []
        everything = [(item[0], name, item) for name, h in self._hosts.items() for item in h.queue]
        everything.sort(key=lambda row: row[0], reverse=True)  # lowest priority first (keys are -priority)
        victims = everything[:excess]
        removed: dict[str, set[int]] = {}
        for _, name, item in victims:
            removed.setdefault(name, set()).add(item[1])
        for name, seqs in removed.items():
            h = self._hosts[name]
            h.queue = [item for item in h.queue if item[1] not in seqs]
            heapq.heapify(h.queue)
            if h.in_ready and h.queue and not h.busy:
                heapq.heappush(self._ready, (-h.best(), next(self._seq), name))
        self._size -= len(victims)
        self.pruned += len(victims)
        return [item[2] for _, _, item in victims]

    # --- checkpoint ---------------------------------------------------------------------------
    def entries(self) -> Iterable[tuple[str, Entry]]:
        for name, h in self._hosts.items():
            for item in h.queue:
                yield name, item[2]

    def __getstate__(self):
        hosts = {name: ([item[2] for item in h.queue], h.ready_at) for name, h in self._hosts.items()}
        return {"capacity": self.capacity, "prune_slack": self.prune_slack, "version": self.version,
                "hosts": hosts, "pruned": self.pruned, "rescored": self.rescored}

    def __setstate__(self, state):
        self.__init__(state["capacity"], state["prune_slack"])
        self.version, self.pruned, self.rescored = state["version"], state["pruned"], state["rescored"]
        for name, (entries, ready_at) in state["hosts"].items():
            h = self._hosts[name] = _Host()
            h.ready_at = ready_at
            h.queue = [(-e.priority, next(self._seq), e) for e in entries]
            heapq.heapify(h.queue)
            self._size += len(entries)
            self._schedule(name, h)
