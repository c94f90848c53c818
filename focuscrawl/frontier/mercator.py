"""A Mercator frontier with priority that is global across hosts: the scheduling.

Each host has a back queue ordered by priority (a ``storage.HostQueue``: by default
``hostqueue.MemoryHostQueue``). A host is *ready* when its politeness time has come and no
request to it is in flight. ``pop(now)`` returns the best entry among the ready hosts only, and
marks its host busy until ``release(host, ready_at)``: so priority decides which ready host goes
next, and never whether a host may be hit.

Heaps:
- ``_waiting``: (ready_at, host) for idle hosts whose time has not come; at most one live item per
  host (``_Slot.wkey``), stale items are dropped when they reach the top;
- ``_ready``: (key, host) for ready hosts, key = the host's best record's key (lazy: an item whose
  key is not the host's ``rkey`` is stale; a host whose best changed is re-filed).

Entries are stored as records (``records``, ``entries``): what ``pop``/``entries``/``prune``/
``drop_host`` hand back is an equal ``Entry``, or the same object for one kept as an object. A
packed entry just popped and ``requeue``d goes back as its record, not packed again, and if popped
next, comes back as that same object (a request held back and tried again is not unpacked twice).

Re-scoring is lazy: every entry carries the scorer ``version`` it was scored under; when
``version`` moves on, stale entries are re-scored as they reach the top of their host queue and in
bounded background batches (``rescore_stale``: whole hosts, or a deep host a part at a time, longest
stale first), never by a full scan on the hot path.

Checkpoints take the records as they are stored, since decoding 10^6 packed entries (and packing
them again) takes minutes: ``stored`` hands over each host's compact and packed records (loose
ones and deflated blocks, nothing inflated or unpacked), ``read_stored`` reads their URLs and
blobs, ``load`` puts them into a frontier under fresh seq numbers.
"""

from __future__ import annotations

import heapq
import sys
from collections.abc import Iterator

from focuscrawl.frontier.checkpoint import FrontierCheckpoint
from focuscrawl.frontier.entries import decode, encode
from focuscrawl.frontier.entry import Codec, Entry
from focuscrawl.frontier.hostqueue import memory_queue
from focuscrawl.frontier.records import FLAG, KEY, PACKED, read_stored, record_priority, record_version, restamp
from focuscrawl.frontier.rescoring import PackedRescorer, Rescorer, Restamper, background_pass
from focuscrawl.frontier.storage import HostQueue, QueueFactory

# importable from here as they were before the storage moved out of this module
__all__ = ["Frontier", "Entry", "Codec", "PackedRescorer", "Rescorer", "read_stored", "record_priority"]


#: the idle hosts ``best_soon`` looks at, soonest free first: its cost, bounded
SOON_LIMIT = 64
#: stale items the ready heap may hold beyond two per host before it is rebuilt (``_compact_ready``):
#: a rebuild costs O(hosts), so it comes at most once every that many re-files
READY_HEAP_SLACK = 1024

# a host's state: idle (filed in the waiting heap, if it has work), in the ready heap, or busy
# (popped, not released yet)
IDLE, READY, BUSY = 0, 1, 2


class _Slot:
    """A host as the scheduler sees it: its queue (``q``), its politeness time, its state and its
    place in the heaps. Small: a frontier may know 10^5 hosts or more."""

    __slots__ = ("name", "q", "ready_at", "state", "rkey", "wkey")

    def __init__(self, name: str, q: HostQueue) -> None:
        self.name = name
        self.q = q
        self.ready_at = 0.0
        self.state = IDLE
        self.rkey: bytes | None = None  # key of the live item in the ready heap
        self.wkey: float | None = None  # ready_at of the live item in the waiting heap


class Frontier(FrontierCheckpoint):
    """Up to ``capacity`` entries (``prune_slack`` more before a prune), packed by ``codec`` when
    it can, in host queues made by ``queue_factory`` (one per host)."""

    def __init__(self, capacity: int = 1_000_000, prune_slack: float = 0.05, codec: Codec | None = None,
                 deflate_from: int = 0, queue_factory: QueueFactory = memory_queue):
        if capacity < 1:
            raise ValueError("frontier capacity must be at least 1")
        self.capacity = capacity
        self.prune_slack = prune_slack
        self.codec = codec  # packs entries with a payload or features (None: they stay objects)
        # how packed records are decoded, resolved once: in full, and for re-scoring (the codec's
        # cheaper preview when it has one)
        self._unpack = codec.unpack if codec is not None else None
        self._preview = getattr(codec, "preview", self._unpack)
        self.deflate_from = deflate_from  # from this many entries on, storage favours memory: see _deflate()
        self._new_queue = queue_factory
        self.version = 0
        self._hosts: dict[str, _Slot] = {}
        self._waiting: list[tuple[float, str]] = []
        self._ready: list[tuple[bytes, str]] = []
        self._seq = 0
        self._size = 0
        self._rescore_cursor = 0
        self._kept: tuple[bytes, Entry] | None = None  # the packed entry last put back, and its record
        self._lent: dict[str, tuple[Entry, bytes]] = {}  # busy host -> the packed entry popped, and its record
        self.rescored = 0
        self.pruned = 0

    def _deflate(self) -> bool:
        """Whether storage written now favours memory (the in-memory queues deflate new cold runs):
        that saves memory only a big frontier needs, and costs CPU every time a run is written (a
        spill, a merge, a background re-scoring). Raw runs are only written below ``deflate_from``
        entries, so they hold fewer records than that in all, whatever the frontier grows to."""
        return self._size >= self.deflate_from

    def _next_seq(self) -> int:
        self._seq = seq = (self._seq + 1) & 0xFFFFFFFF
        return seq

    def _host(self, host: str) -> _Slot:
        h = self._hosts.get(host)
        if h is None:
            host = sys.intern(host)
            h = self._hosts[host] = _Slot(host, self._new_queue(host))
        return h

    def _add(self, h: _Slot, entry: Entry, record: bytes | None = None) -> bytes:
        q = h.q
        if record is None:
            record = encode(entry, self._next_seq(), self.codec, q)
        q.push(record, self._size >= self.deflate_from)  # self._deflate(), inlined: every push
        self._size += 1
        return record

    # --- size ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    def host_size(self, host: str) -> int:
        h = self._hosts.get(host)
        return h.q.size() if h else 0

    def host_views(self) -> dict[str, tuple[float, HostQueue]]:
        """host -> (the time it may next be contacted, its queue), for observers that must not
        change the frontier (the crawl's live status); a fresh dict, built in O(hosts)."""
        return {name: (slot.ready_at, slot.q) for name, slot in self._hosts.items()}

    def queues(self) -> Iterator[tuple[str, HostQueue]]:
        """Each host's queue, to look at (tests, benchmarks, a sample of priorities:
        ``sampling``): changing one breaks the heaps."""
        for name, h in self._hosts.items():
            yield name, h.q

    # --- push ---------------------------------------------------------------------------------
    def push(self, host: str, entry: Entry) -> list[Entry]:
        """Add an entry; returns the entries pruned to stay within capacity (usually none)."""
        h = self._host(host)
        record = self._add(h, entry)
        if h.state != BUSY:
            if h.state == READY:
                if record[:KEY] < h.rkey:  # a better best: re-file the host (the old item goes stale)
                    h.rkey = record[:KEY]
                    self._push_ready(h)
            else:
                self._file_waiting(h)
        if self._size > self.capacity * (1 + self.prune_slack):
            return self.prune()
        return []

    def _file_waiting(self, h: _Slot) -> None:
        if h.wkey != h.ready_at:
            h.wkey = h.ready_at
            heapq.heappush(self._waiting, (h.ready_at, h.name))

    def _file_ready(self, h: _Slot) -> None:
        h.rkey = h.q.top[:KEY]
        self._push_ready(h)

    def _push_ready(self, h: _Slot) -> None:
        heapq.heappush(self._ready, (h.rkey, h.name))
        if len(self._ready) > 2 * len(self._hosts) + READY_HEAP_SLACK:
            self._compact_ready()

    def _compact_ready(self) -> None:
        """The ready heap rebuilt from its live items, one per ready host. A host re-filed under a
        new best (a better URL pushed, its top re-scored) leaves its old item behind, and an old
        item worse than every live one is never popped: without this the heap grew with every
        re-file, not with the hosts (bench/soak.py: ~10^5 stale items after 20 minutes)."""
        self._ready = [(h.rkey, h.name) for h in self._hosts.values() if h.state == READY and h.rkey is not None]
        heapq.heapify(self._ready)

    def _refile(self, h: _Slot) -> None:
        """A ready host's best may have changed: re-file it."""
        if h.state == READY:
            self._schedule(h)

    def _schedule(self, h: _Slot) -> None:
        """Make sure an idle host with work sits in one of the two heaps."""
        top = h.q.top
        if top is None:
            return
        if h.state == IDLE:
            self._file_waiting(h)
        elif h.state == READY and h.rkey != top[:KEY]:
            self._file_ready(h)

    # --- pop ----------------------------------------------------------------------------------
    def _promote(self, now: float) -> None:
        waiting, hosts = self._waiting, self._hosts
        while waiting and waiting[0][0] <= now:
            ready_at, host = heapq.heappop(waiting)
            h = hosts[host]
            if h.wkey != ready_at:
                continue  # stale item
            h.wkey = None
            if h.state != IDLE or h.q.top is None or h.ready_at != ready_at:
                continue
            h.state = READY
            self._file_ready(h)

    def pop(self, now: float, rescore: Rescorer | None = None, max_rescore: int = 256) -> tuple[str, Entry] | None:
        """The best entry among hosts ready at ``now``; its host becomes busy. None if no host is ready."""
        self._promote(now)
        ready, hosts = self._ready, self._hosts
        while ready:
            key, host = heapq.heappop(ready)
            h = hosts[host]
            q = h.q
            if h.state != READY or q.top is None or key != h.rkey:
                continue
            if rescore is not None:
                self._refresh_top(q, rescore, max_rescore)
            if key != q.top[:KEY]:
                # stale key: re-file the host under its true best and look again
                self._file_ready(h)
                continue
            record = q.pop()
            kept, self._kept = self._kept, None
            if kept is not None and kept[0] is record:  # put back and popped again: not unpacked again
                entry = kept[1]
            else:
                entry = decode(record, q, self._unpack, forget=True)
            if record[FLAG] & PACKED:  # (nothing is lent to a host that was not busy: see release)
                self._lent[host] = (entry, record)
            self._size -= 1
            h.state = BUSY
            h.rkey = None
            return host, entry
        return None

    # --- re-scoring ---------------------------------------------------------------------------
    def _restamper(self, rescore: Rescorer) -> Restamper:
        return Restamper(rescore, self.version, self._next_seq, self._preview)

    def _refresh_top(self, q: HostQueue, rescore: Rescorer, budget: int) -> None:
        """Re-score stale entries at the top of a host queue until the top is fresh (cold ones
        once they are back at the top)."""
        version = self.version
        if q.top is None or record_version(q.top) == version:
            return
        restamper = self._restamper(rescore)
        deflate = self._deflate()
        while budget > 0 and q.top is not None and record_version(q.top) != version:
            batch = []
            while q.top is not None and record_version(q.top) != version and len(batch) < min(budget, 32):
                batch.append(q.pop())
            for record in restamper.once([q] * len(batch), batch):
                q.push(record, deflate)
            budget -= len(batch)
            self.rescored += len(batch)

    def rescore_stale(self, rescore: Rescorer, limit: int = 1000) -> int:
        """Background re-scoring: bring up to ``limit`` stale entries up to date, host by host
        (``rescoring.background_pass``). The next call starts after the last host this one
        reached (round robin; a deep host done in part had its turn): every host is refreshed in
        turn, the big ones as often as the small, a deep one its longest-stale part each turn."""
        hosts = [(h, h.q) for h in self._hosts.values() if h.q.top is not None]
        if not hosts:
            return 0
        done, visited = background_pass(hosts, self._rescore_cursor, limit, self._restamper(rescore),
                                        self._deflate(), self._refile)
        self._rescore_cursor = (self._rescore_cursor + visited) % len(hosts)
        self.rescored += done
        return done

    # --- host state ---------------------------------------------------------------------------
    def requeue(self, host: str, entry: Entry) -> None:
        """Put back an entry that was popped but not fetched (the host stays busy). The packed
        entry last popped from the host goes back as its record, not packed again: with its
        priority and version as they are now, its payload and features as they were popped. If
        that record is the next one popped (a request held back and tried again), the entry comes
        back as this same object, not unpacked again: put entries back unchanged."""
        h = self._host(host)
        lent = self._lent.pop(host, None)
        if lent is not None and lent[0] is entry:
            record = restamp(lent[1], entry.priority, self._next_seq(), entry.version)
            self._add(h, entry, record)
            self._kept = (record, entry)
        else:
            self._add(h, entry)
        self._refile(h)

    def release(self, host: str, ready_at: float) -> None:
        """The host's request finished; it may be contacted again from ``ready_at``."""
        h = self._host(host)
        h.state = IDLE
        h.rkey = None
        if self._lent:  # (empty without a codec)
            self._lent.pop(host, None)
        h.ready_at = max(h.ready_at, ready_at)
        self._schedule(h)

    def _clean_tops(self) -> None:
        hosts = self._hosts
        ready = self._ready
        while ready:
            key, host = ready[0]
            h = hosts[host]
            if h.state == READY and h.q.top is not None and key == h.rkey:
                break
            heapq.heappop(ready)
            if key == h.rkey:  # the live item of a ready host with nothing left (a busy one has none)
                h.rkey = None
                h.state = IDLE
                self._schedule(h)
        waiting = self._waiting
        while waiting:
            ready_at, host = waiting[0]
            h = hosts[host]
            if h.wkey == ready_at and h.state == IDLE and h.q.top is not None and h.ready_at == ready_at:
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

    def best_soon(self, now: float, horizon: float, busy_hosts=(), limit: int = SOON_LIMIT) -> float:
        """The best priority queued at hosts that are busy now (``busy_hosts``) or whose delay ends
        within ``horizon`` seconds: what waiting a little could buy. -inf when there is none.

        Of the idle hosts only the ``limit`` soonest free are looked at (the waiting heap's items in
        order of ready time, stale ones included), so a call costs O(limit log limit) however many
        hosts a frontier knows: a wait is for a host about to be free, and with more than ``limit``
        hosts that close, a better URL among them is all the more likely to be in the soonest."""
        best = float("-inf")
        for host in busy_hosts:
            h = self._hosts.get(host)
            if h is not None and h.q.top is not None:
                best = max(best, record_priority(h.q.top))
        bound = now + horizon
        heap, hosts = self._waiting, self._hosts
        n = len(heap)
        if not n or heap[0][0] > bound:
            return best
        top = None  # best record among the hosts found
        todo = [(heap[0][0], 0)]  # heap nodes within the bound, soonest first
        push, pop = heapq.heappush, heapq.heappop
        for _ in range(limit):
            if not todo:
                break
            _, i = pop(todo)
            ready_at, host = heap[i]
            h = hosts[host]
            if h.wkey == ready_at and h.q.top is not None and h.state != BUSY and h.ready_at == ready_at:
                key = h.q.top
                if top is None or key < top:
                    top = key
            for j in (2 * i + 1, 2 * i + 2):
                if j < n and heap[j][0] <= bound:
                    push(todo, (heap[j][0], j))
        if top is not None:
            best = max(best, record_priority(top))
        return best

    def drop_host(self, host: str) -> list[Entry]:
        """Remove every queued entry of a host (e.g. excluded, or its Crawl-delay is over the cap)."""
        h = self._hosts.get(host)
        if h is None:
            return []
        q = h.q
        entries = [decode(r, q, self._unpack) for r in q.records()]
        q.clear()
        if h.state == READY:
            h.state = IDLE
        h.rkey = None
        self._size -= len(entries)
        return entries

    # --- capacity -----------------------------------------------------------------------------
    def prune(self) -> list[Entry]:
        """Drop the lowest-priority entries so that ``capacity`` remain; return them. O(n): every
        key is looked at (rare: the frontier grows by ``prune_slack`` between two prunes)."""
        excess = self._size - self.capacity
        if excess <= 0:
            return []
        # largest records = lowest priorities (ties: the newest first)
        victims = heapq.nlargest(excess, ((r[:KEY], h) for h in self._hosts.values() for r in h.q.records()),
                                 key=lambda row: row[0])
        removed: dict[str, set[bytes]] = {}
        for key, h in victims:
            removed.setdefault(h.name, set()).add(key)
        out = []
        for name, keys in removed.items():
            h = self._hosts[name]
            q = h.q
            out += [decode(r, q, self._unpack, forget=True) for r in q.drop(keys)]
            self._refile(h)
        self._size -= len(out)
        self.pruned += len(out)
        return out
