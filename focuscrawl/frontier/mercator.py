"""A Mercator frontier with priority that is global across hosts.

Each host has a back queue ordered by priority. A host is *ready* when its politeness time has
come and no request to it is in flight. ``pop(now)`` returns the best entry among the ready
hosts only, and marks its host busy until ``release(host, ready_at)``: so priority decides
which ready host goes next, and never whether a host may be hit.

Heaps:
- ``_waiting``: (ready_at, host) for idle hosts whose time has not come; at most one live item per
  host (``_Host.wkey``), stale items are dropped when they reach the top;
- ``_ready``: (key, host) for ready hosts, key = the host's best record header (lazy: an item
  whose key is not the host's ``rkey`` is stale; a host whose best changed is re-filed).

Compact storage: a host queue is a heap of ``bytes`` records, compared by ``memcmp`` in C:
``record = order_key(priority) [8] + seq [4] + version [4] + flag [1] + url``. The order key
sorts the best priority first, seq keeps FIFO order among equal priorities. An entry with no
payload and no features is stored only as its record (the URL as UTF-8, without the host's
``scheme://netloc`` prefix when it has it: about 100 bytes per URL instead of ~500 as Python
objects) and comes back from ``pop``/``entries``/``prune``/``drop_host`` as an equal ``Entry``
(same priority, url, version), not the same object. An entry with a payload or features is kept
as the object itself (``_Host.rich``, keyed by seq) and handed back as that object.

Re-scoring is lazy: every entry carries the scorer ``version`` it was scored under; when
``version`` moves on, stale entries are re-scored as they reach the top of their host queue
(and in bounded background batches), never by a full scan on the hot path.
"""

from __future__ import annotations

import heapq
import struct
import sys
from collections.abc import Callable, Iterable
from typing import Any

# rescore(entries) -> new priorities, one per entry
Rescorer = Callable[[list["Entry"]], list[float]]

_HEAD = struct.Struct(">QIi")  # order key, seq, version
_KEY = 12  # bytes of a record that order it (order key + seq)
_FLAG = 16
_PREFIXED, _FULL, _RICH = 0, 1, 2
_D = struct.Struct(">d")
_Q = struct.Struct(">Q")
_MAX = (1 << 64) - 1
_SIGN = 1 << 63


def _order_key(priority: float) -> int:
    """A uint64 that sorts ascending as ``priority`` sorts descending."""
    (u,) = _Q.unpack(_D.pack(priority))
    return (u ^ _MAX if u & _SIGN else u | _SIGN) ^ _MAX


def _priority(key: int) -> float:
    asc = key ^ _MAX
    (p,) = _D.unpack(_Q.pack(asc & ~_SIGN if asc & _SIGN else asc ^ _MAX))
    return p


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
    __slots__ = ("name", "queue", "rich", "prefix", "ready_at", "busy", "in_ready", "rkey", "wkey")

    def __init__(self, name: str) -> None:
        self.name = name
        self.queue: list[bytes] = []  # heap of records
        self.rich: dict[int, Entry] | None = None  # seq -> entry kept as an object
        self.prefix: str | None = None  # scheme://netloc of the first URL
        self.ready_at = 0.0
        self.busy = False
        self.in_ready = False
        self.rkey: bytes | None = None  # key of the live item in the ready heap
        self.wkey: float | None = None  # ready_at of the live item in the waiting heap

    def best(self) -> float:
        return _priority(_Q.unpack_from(self.queue[0])[0])

    def top_version(self) -> int:
        return _HEAD.unpack_from(self.queue[0])[2]

    def encode(self, entry: Entry, seq: int) -> bytes:
        head = _HEAD.pack(_order_key(entry.priority), seq, entry.version)
        if entry.payload is not None or entry.features is not None:
            if self.rich is None:
                self.rich = {}
            self.rich[seq] = entry
            return head + b"\x02"
        url = entry.url
        prefix = self.prefix
        if prefix is None:
            cut = url.find("/", url.find("://") + 3) if "://" in url else -1
            prefix = self.prefix = sys.intern(url[:cut] if cut > 0 else url)
        if url.startswith(prefix):
            return head + b"\x00" + url[len(prefix):].encode("utf-8", "surrogatepass")
        return head + b"\x01" + url.encode("utf-8", "surrogatepass")

    def decode(self, record: bytes, forget: bool = False) -> Entry:
        key, seq, version = _HEAD.unpack_from(record)
        flag = record[_FLAG]
        if flag == _RICH:
            return self.rich.pop(seq) if forget else self.rich[seq]
        url = record[_FLAG + 1:].decode("utf-8", "surrogatepass")
        return Entry(_priority(key), self.prefix + url if flag == _PREFIXED else url, None, None, version)


class Frontier:
    def __init__(self, capacity: int = 1_000_000, prune_slack: float = 0.05):
        if capacity < 1:
            raise ValueError("frontier capacity must be at least 1")
        self.capacity = capacity
        self.prune_slack = prune_slack
        self.version = 0
        self._hosts: dict[str, _Host] = {}
        self._waiting: list[tuple[float, str]] = []
        self._ready: list[tuple[bytes, str]] = []
        self._seq = 0
        self._size = 0
        self._rescore_cursor = 0
        self.rescored = 0
        self.pruned = 0

    def _next_seq(self) -> int:
        self._seq = seq = (self._seq + 1) & 0xFFFFFFFF
        return seq

    def _host(self, host: str) -> _Host:
        h = self._hosts.get(host)
        if h is None:
            host = sys.intern(host)
            h = self._hosts[host] = _Host(host)
        return h

    def _add(self, h: _Host, entry: Entry) -> bytes:
        record = h.encode(entry, self._next_seq())
        heapq.heappush(h.queue, record)
        self._size += 1
        return record

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
        h = self._host(host)
        record = self._add(h, entry)
        if not h.busy:
            if h.in_ready:
                if record[:_KEY] < h.rkey:  # a better best: re-file the host (the old item goes stale)
                    h.rkey = record[:_KEY]
                    heapq.heappush(self._ready, (h.rkey, h.name))
            else:
                self._file_waiting(h)
        if self._size > self.capacity * (1 + self.prune_slack):
            return self.prune()
        return []

    def _file_waiting(self, h: _Host) -> None:
        if h.wkey != h.ready_at:
            h.wkey = h.ready_at
            heapq.heappush(self._waiting, (h.ready_at, h.name))

    def _file_ready(self, h: _Host) -> None:
        h.rkey = h.queue[0][:_KEY]
        heapq.heappush(self._ready, (h.rkey, h.name))

    def _schedule(self, h: _Host) -> None:
        """Make sure an idle host with work sits in one of the two heaps."""
        if h.busy or not h.queue:
            return
        if h.in_ready:
            if h.rkey != h.queue[0][:_KEY]:
                self._file_ready(h)
        else:
            self._file_waiting(h)

    # --- pop ----------------------------------------------------------------------------------
    def _promote(self, now: float) -> None:
        waiting, hosts = self._waiting, self._hosts
        while waiting and waiting[0][0] <= now:
            ready_at, host = heapq.heappop(waiting)
            h = hosts[host]
            if h.wkey != ready_at:
                continue  # stale item
            h.wkey = None
            if h.busy or h.in_ready or not h.queue or h.ready_at != ready_at:
                continue
            h.in_ready = True
            self._file_ready(h)

    def pop(self, now: float, rescore: Rescorer | None = None, max_rescore: int = 256) -> tuple[str, Entry] | None:
        """The best entry among hosts ready at ``now``; its host becomes busy. None if no host is ready."""
        self._promote(now)
        ready, hosts = self._ready, self._hosts
        while ready:
            key, host = heapq.heappop(ready)
            h = hosts[host]
            if h.busy or not h.queue or not h.in_ready or key != h.rkey:
                continue
            if rescore is not None:
                self._refresh_top(h, rescore, max_rescore)
            if key != h.queue[0][:_KEY]:
                # stale key: re-file the host under its true best and look again
                self._file_ready(h)
                continue
            entry = h.decode(heapq.heappop(h.queue), forget=True)
            self._size -= 1
            h.busy = True
            h.in_ready = False
            h.rkey = None
            return host, entry
        return None

    def _rescored_record(self, h: _Host, entry: Entry, priority: float) -> bytes:
        entry.priority, entry.version = priority, self.version
        return h.encode(entry, self._next_seq())

    def _refresh_top(self, h: _Host, rescore: Rescorer, budget: int) -> None:
        """Re-score stale entries at the top of a host queue until the top is fresh."""
        queue, version = h.queue, self.version
        while budget > 0 and queue and h.top_version() != version:
            batch = []
            while queue and h.top_version() != version and len(batch) < min(budget, 32):
                batch.append(h.decode(heapq.heappop(queue), forget=True))
            for entry, priority in zip(batch, rescore(batch)):
                heapq.heappush(queue, self._rescored_record(h, entry, priority))
            budget -= len(batch)
            self.rescored += len(batch)

    def rescore_stale(self, rescore: Rescorer, limit: int = 1000) -> int:
        """Background re-scoring: bring up to ``limit`` stale entries up to date, host by host."""
        hosts = [name for name, h in self._hosts.items() if h.queue]
        if not hosts:
            return 0
        done = 0
        version = self.version
        for step in range(len(hosts)):
            if done >= limit:
                break
            name = hosts[(self._rescore_cursor + step) % len(hosts)]
            h = self._hosts[name]
            stale_records = [r for r in h.queue if _HEAD.unpack_from(r)[2] != version]
            if not stale_records:
                continue
            stale = [h.decode(r, forget=True) for r in stale_records]
            fresh = [r for r in h.queue if _HEAD.unpack_from(r)[2] == version]
            for entry, priority in zip(stale, rescore(stale)):
                fresh.append(self._rescored_record(h, entry, priority))
            heapq.heapify(fresh)
            h.queue = fresh
            done += len(stale)
            if h.in_ready and not h.busy:
                self._schedule(h)
        self._rescore_cursor += 1
        self.rescored += done
        return done

    # --- host state ---------------------------------------------------------------------------
    def requeue(self, host: str, entry: Entry) -> None:
        """Put back an entry that was popped but not fetched (the host stays busy)."""
        h = self._host(host)
        self._add(h, entry)
        if h.in_ready and not h.busy:
            self._schedule(h)

    def acquire(self, host: str) -> None:
        """Mark a host busy without popping (e.g. while its robots.txt is fetched)."""
        h = self._host(host)
        h.busy, h.in_ready, h.rkey = True, False, None

    def release(self, host: str, ready_at: float) -> None:
        """The host's request finished; it may be contacted again from ``ready_at``."""
        h = self._host(host)
        h.busy = False
        h.in_ready = False
        h.rkey = None
        h.ready_at = max(h.ready_at, ready_at)
        self._schedule(h)

    def delay_host(self, host: str, ready_at: float) -> None:
        """Push a host's next contact back (Retry-After, back-off) whether or not it is busy."""
        h = self._host(host)
        if ready_at > h.ready_at:
            h.ready_at = ready_at
            if not h.busy:
                h.in_ready = False
                h.rkey = None
                self._schedule(h)

    def ready_at(self, host: str) -> float:
        h = self._hosts.get(host)
        return h.ready_at if h else 0.0

    def _clean_tops(self) -> None:
        hosts = self._hosts
        ready = self._ready
        while ready:
            key, host = ready[0]
            h = hosts[host]
            if not h.busy and h.queue and h.in_ready and key == h.rkey:
                break
            heapq.heappop(ready)
            if key == h.rkey:
                h.rkey = None
                h.in_ready = False
                self._schedule(h)
        waiting = self._waiting
        while waiting:
            ready_at, host = waiting[0]
            h = hosts[host]
            if h.wkey == ready_at and not h.busy and not h.in_ready and h.queue and h.ready_at == ready_at:
                break
            heapq.heappop(waiting)
            if h.wkey == ready_at:
                h.wkey = None

    def next_ready_time(self) -> float | None:
        """When the earliest idle host with work may be contacted (None if none waits).

        O(log hosts) amortised: the tops of the two heaps, stale items dropped on the way."""
        self._clean_tops()
        times = []
        if self._ready:
            times.append(self._hosts[self._ready[0][1]].ready_at)
        if self._waiting:
            times.append(self._waiting[0][0])
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
        top = None  # best record header among the hosts found
        heap, stack, hosts = self._waiting, [0], self._hosts
        while stack:  # visit only heap nodes whose ready time is within the bound
            i = stack.pop()
            if i >= len(heap) or heap[i][0] > bound:
                continue
            ready_at, host = heap[i]
            h = hosts[host]
            if h.wkey == ready_at and h.queue and not h.busy and h.ready_at == ready_at:
                key = h.queue[0]
                if top is None or key < top:
                    top = key
            stack.extend((2 * i + 1, 2 * i + 2))
        if top is not None:
            best = max(best, _priority(_Q.unpack_from(top)[0]))
        return best

    def has_ready(self, now: float) -> bool:
        self._promote(now)
        self._clean_tops()
        return bool(self._ready)

    def drop_host(self, host: str) -> list[Entry]:
        """Remove every queued entry of a host (e.g. excluded, or its Crawl-delay is over the cap)."""
        h = self._hosts.get(host)
        if h is None:
            return []
        entries = [h.decode(r) for r in h.queue]
        h.queue = []
        h.rich = None
        h.in_ready = False
        h.rkey = None
        self._size -= len(entries)
        return entries

    # --- capacity -----------------------------------------------------------------------------
    def prune(self) -> list[Entry]:
        """Drop the lowest-priority entries so that ``capacity`` remain; return them."""
        excess = self._size - self.capacity
        if excess <= 0:
            return []
        # largest records = lowest priorities (ties: the newest first)
        victims = heapq.nlargest(excess, ((r[:_KEY], h) for h in self._hosts.values() for r in h.queue),
                                 key=lambda row: row[0])
        removed: dict[str, set[bytes]] = {}
        for key, h in victims:
            removed.setdefault(h.name, set()).add(key)
        out = []
        for name, keys in removed.items():
            h = self._hosts[name]
            keep = []
            for r in h.queue:
                if r[:_KEY] in keys:
                    out.append(h.decode(r, forget=True))
                else:
                    keep.append(r)
            heapq.heapify(keep)
            h.queue = keep
            if h.in_ready and not h.busy:
                self._schedule(h)
        self._size -= len(out)
        self.pruned += len(out)
        return out

    # --- checkpoint ---------------------------------------------------------------------------
    def entries(self) -> Iterable[tuple[str, Entry]]:
        for name, h in self._hosts.items():
            for record in h.queue:
                yield name, h.decode(record)

    def __getstate__(self):
        hosts = {name: ([h.decode(r) for r in h.queue], h.ready_at) for name, h in self._hosts.items()}
        return {"capacity": self.capacity, "prune_slack": self.prune_slack, "version": self.version,
                "hosts": hosts, "pruned": self.pruned, "rescored": self.rescored}

    def __setstate__(self, state):
        self.__init__(state["capacity"], state["prune_slack"])
        self.version, self.pruned, self.rescored = state["version"], state["pruned"], state["rescored"]
        for name, (entries, ready_at) in state["hosts"].items():
            h = self._host(name)
            h.ready_at = ready_at
            for e in entries:
                h.queue.append(h.encode(e, self._next_seq()))
            heapq.heapify(h.queue)
            self._size += len(entries)
            self._schedule(h)
