"""The in-memory host queue: a small *hot* heap of records as objects plus *cold* runs.

Only the hot heap holds records as ``bytes`` objects: every rich record, and the host's best
compact ones (packed ones are compact here). When a push takes it past ``HOT_MAX`` compact records
(or 1/32 of the host's cold records, if more), its worst compact ones *spill* to a new cold run
(``runs``): all but the best ``HOT_KEEP``, and at most half of ``runs.MERGE_MAX`` in a push, so a
deep host's best thousands stay hot (uninflated, and re-scored in place by background passes).

Invariant: the hot heap holds the host's best record (``heap[0]`` is no worse than any run's
head). When a pop breaks it, the best cold record moves to the hot heap: one record, not a block
(a block's worth would make the next push spill and deflate them all again). So ``top`` is the
host's true best and pops come in exact priority order.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from focuscrawl.frontier import runs
from focuscrawl.frontier.entry import Entry
from focuscrawl.frontier.records import FLAG, KEY, RICH
from focuscrawl.frontier.storage import Restamp

HOT_KEEP = 8  # compact records left in the hot heap by a spill
HOT_MAX = 40  # compact records in the hot heap that make a push spill (at least)


class MemoryHostQueue:
    """One host's records in this process (``storage.HostQueue``): ``heap`` (hot), ``cold``
    (``runs.ColdRuns``, None while nothing is cold) and ``rich`` (seq -> entry kept as an object,
    None while there is none)."""

    __slots__ = ("heap", "rich", "prefix", "cold", "top")

    def __init__(self) -> None:
        self.heap: list[bytes] = []
        self.rich: dict[int, Entry] | None = None
        self.prefix: str | None = None
        self.cold: runs.ColdRuns | None = None
        self.top: bytes | None = None

    def size(self) -> int:
        return len(self.heap) + self.cold_size()

    def cold_size(self) -> int:
        """The records in cold runs."""
        return self.cold.size if self.cold is not None else 0

    def cold_runs(self) -> list[runs.Run]:
        """The cold runs (to look at: changing them breaks the queue)."""
        return self.cold.runs if self.cold is not None else []

    def _hot_max(self) -> int:
        """Records the hot heap may hold: every rich one, and ``HOT_MAX`` compact ones or 1/32 of
        the cold ones if more. A deep host's best records stay hot; a spill then writes only its
        worst ones (``_spill``)."""
        cold = self.cold.size if self.cold is not None else 0  # cold_size(), inlined: a deep host's every push
        return max(HOT_MAX, cold >> 5) + (len(self.rich) if self.rich else 0)

    def push(self, record: bytes, deflate: bool) -> None:
        heap = self.heap
        heapq.heappush(heap, record)
        self.top = heap[0]
        if len(heap) > HOT_MAX and len(heap) > self._hot_max():  # (never less than HOT_MAX)
            self._spill(deflate)

    def pop(self) -> bytes:
        """Remove the best record; if the best left is cold, move it to the hot heap."""
        heap = self.heap
        record = heapq.heappop(heap)
        if self.cold is not None and (not heap or self.cold.head < heap[0]):
            self._refill()
        self.top = heap[0] if heap else None
        return record

    def _refill(self) -> None:
        """Move the best cold record to the hot heap, which restores the invariant."""
        cold = self.cold
        heapq.heappush(self.heap, cold.take())
        if not cold.size:
            self.cold = None

    def records(self) -> Iterator[bytes]:
        """Every record, hot then cold (in no particular order)."""
        yield from self.heap
        if self.cold is not None:
            yield from self.cold.records()

    def sample(self, n: int, rng) -> list[bytes]:
        """``n`` records drawn at random (with replacement; ``rng``: a ``random.Random``), hot or
        cold in proportion to their counts: O(n) and one inflated block per cold block drawn from."""
        heap, cold = self.heap, self.cold
        hot = len(heap)
        total = hot + (cold.size if cold is not None else 0)
        if not total:
            return []
        from_cold = sum(rng.randrange(total) >= hot for _ in range(n))
        out = [heap[rng.randrange(hot)] for _ in range(n - from_cold)]
        if from_cold:
            out += cold.sample(from_cold, rng)
        return out

    def has_stale(self, version: bytes) -> bool:
        return (any(r[KEY:FLAG] != version for r in self.heap)
                or (self.cold is not None and self.cold.has_stale(version)))

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key is in ``keys``, the worst keys of the frontier
        (a prune): a suffix of each run. The hot best stays, unless every record of the host goes."""
        heap = self.heap
        gone = [r for r in heap if r[:KEY] in keys]
        if gone:
            self.heap = heap = [r for r in heap if r[:KEY] not in keys]
            heapq.heapify(heap)
        cold = self.cold
        if cold is not None:
            gone += cold.drop(keys)
            if not cold.size:
                self.cold = None
        self.top = heap[0] if heap else None
        return gone

    def stored(self) -> tuple[list[bytes], list[bytes]]:
        """The compact and packed records as they are: the loose ones (hot, inflated fronts, raw
        runs), and the deflated blocks. Rich records are left out."""
        loose = [r for r in self.heap if r[FLAG] != RICH]
        blocks: list[bytes] = []
        if self.cold is not None:
            self.cold.stored(loose, blocks)
        return loose, blocks

    def replace(self, records: list[bytes], deflate: bool) -> None:
        """Hold ``records`` (takes the list) instead of the records held: hot, past ``_hot_max``
        spilled into one run (a resumed or re-scored host is written once, whole)."""
        self.cold = None
        heapq.heapify(records)
        self.heap = records
        if len(records) > self._hot_max():
            self._spill(deflate, whole=True)
        self.top = records[0] if records else None

    def clear(self) -> None:
        self.heap, self.cold, self.rich, self.top = [], None, None, None

    def _spill(self, deflate: bool, whole: bool = False) -> None:
        """Move the worst compact records of the hot heap to a new run: all but the best
        ``HOT_KEEP`` (every rich one stays), at most half of ``runs.MERGE_MAX`` in a push (a deep
        host's hot heap holds thousands: its best stay hot), all of them when ``whole``. The hot
        best does not change, so the invariant holds."""
        records = sorted(self.heap)
        if self.rich:
            rich = [r for r in records if r[FLAG] == RICH]
            records = [r for r in records if r[FLAG] != RICH]
        keep = HOT_KEEP if whole else max(HOT_KEEP, len(records) - (runs.MERGE_MAX >> 1))
        hot = records[:keep]  # sorted: already a heap
        if self.rich:
            hot += rich
            heapq.heapify(hot)
        self.heap = hot
        if self.cold is None:
            self.cold = runs.ColdRuns()
        self.cold.add_run(records[keep:], deflate)

    def rescore_part(self, budget: int, version: bytes, restamp: Restamp, deflate: bool) -> int:
        """The longest-stale records first: the stale hot records scored no later than the oldest
        stale cold run (re-scored in place), then the stale cold runs, the oldest first, which
        become a lot (``runs.ColdRuns.rescore_stalest``), then the other stale hot records."""
        stale_hot = sorted((r for r in self.heap if r[KEY:FLAG] != version), key=lambda r: (r[KEY:FLAG], r))
        cold = self.cold
        oldest = cold.oldest_stale(version) if cold is not None else None
        first = stale_hot if oldest is None else [r for r in stale_hot if r[KEY:FLAG] <= oldest]
        done = self._rescore_hot(first[:budget], restamp)
        if cold is not None and done < budget:
            done += cold.rescore_stalest(budget - done, version, restamp, deflate)
            if not cold.size:
                self.cold = None
        if done < budget and len(first) < len(stale_hot):
            done += self._rescore_hot(stale_hot[len(first):][:budget - done], restamp)
        heap = self.heap
        if self.cold is not None and (not heap or self.cold.head < heap[0]):
            self._refill()  # the best cold record, better than the hot best now: hot again
        self.top = heap[0] if heap else None
        return done

    def _rescore_hot(self, records: list[bytes], restamp: Restamp) -> int:
        """Re-score ``records`` of the hot heap in place."""
        if records:
            taken = set(records)
            self.heap = heap = [r for r in self.heap if r not in taken] + restamp(records)
            heapq.heapify(heap)
        return len(records)

    def keep(self, seq: int, entry: Entry) -> None:
        if self.rich is None:
            self.rich = {}
        self.rich[seq] = entry

    def kept(self, seq: int, forget: bool = False) -> Entry:
        return self.rich.pop(seq) if forget else self.rich[seq]

    def kept_entries(self) -> Iterator[Entry]:
        return iter((self.rich or {}).values())


def memory_queue(host: str) -> MemoryHostQueue:
    """The default ``storage.QueueFactory``: every host's queue in this process."""
    return MemoryHostQueue()
