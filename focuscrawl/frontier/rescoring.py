"""Re-scoring stored records: new priorities under the scorer's current version, nothing packed again.

A re-scored record keeps its URL and blob; only its header is new (priority, a fresh seq number,
the version). The rescorer gets entries with their features and payload: packed ones as the
codec's ``preview`` shows them when it has one (else unpacked), a bounded batch at a time, or,
when it is a ``PackedRescorer``, their URLs and codec bytes as they are stored, so that no Entry
is built for each of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from focuscrawl.frontier.entries import decode, rich_record
from focuscrawl.frontier.entry import Entry, Unpack
from focuscrawl.frontier.records import FLAG, PACKED, RICH, VERSION, by_version, header, read, restamp
from focuscrawl.frontier.storage import HostQueue

H = TypeVar("H")  # what the caller knows a host by

# rescore(entries) -> new priorities, one per entry; it may also be a PackedRescorer
Rescorer = Callable[[list[Entry]], list[float]]

RESCORE_BATCH = 1024  # entries unpacked at a time by background re-scoring (bounds the memory)


class PackedRescorer:
    """A rescorer that also takes packed records as they are stored: ``packed(urls, blobs)`` gets
    their URLs and codec bytes and gives their new priorities, so background re-scoring builds no
    Entry (nor the codec's preview) for each of them. Other records go to ``entries``."""

    __slots__ = ("entries", "packed")

    def __init__(self, entries: Rescorer, packed: Callable[[list[str], list[bytes]], list[float]]):
        self.entries = entries
        self.packed = packed

    def __call__(self, entries: list[Entry]) -> list[float]:
        return self.entries(entries)


class Restamper:
    """Re-scores records taken out of their host queues under ``version``: each gets the next seq
    number of ``next_seq`` in the order given (a rich record's entry is kept again under it, with its
    new priority and version); packed ones are decoded for the rescorer by ``preview``."""

    __slots__ = ("rescore", "version", "next_seq", "preview")

    def __init__(self, rescore: Rescorer, version: int, next_seq: Callable[[], int], preview: Unpack | None):
        self.rescore = rescore
        self.version = version
        self.next_seq = next_seq
        self.preview = preview

    def __call__(self, queues: list[HostQueue], records: list[bytes]) -> list[bytes]:
        """``once``, ``RESCORE_BATCH`` records at a time (bounds the memory)."""
        out: list[bytes] = []
        for i in range(0, len(records), RESCORE_BATCH):
            out += self.once(queues[i:i + RESCORE_BATCH], records[i:i + RESCORE_BATCH])
        return out

    def of(self, queue: HostQueue) -> Callable[[list[bytes]], list[bytes]]:
        """Re-scoring for records of one queue (``HostQueue.rescore_part``'s ``restamp``)."""
        return lambda records: self([queue] * len(records), records)

    def once(self, queues: list[HostQueue], records: list[bytes]) -> list[bytes]:
        """The records (``queues`` alongside) re-scored in one call of the rescorer."""
        entries, priorities = self._priorities(queues, records)
        version, next_seq, out = self.version, self.next_seq, []
        for q, record, entry, priority in zip(queues, records, entries, priorities):
            seq = next_seq()
            if record[FLAG] == RICH:
                entry.priority, entry.version = priority, version
                out.append(rich_record(q, entry, seq, header(priority, seq, version)))
            else:  # the entry (a preview) is dropped: only its record is kept
                out.append(restamp(record, priority, seq, version))
        return out

    def _priorities(self, queues: list[HostQueue], records: list[bytes]) -> tuple[list, list[float]]:
        """The records' entries (None where none was built) and their new priorities: packed
        records straight from their bytes when the rescorer takes them so (``PackedRescorer``),
        the others decoded (packed ones by the preview) and re-scored as entries."""
        rescore = self.rescore
        packed = rescore.packed if isinstance(rescore, PackedRescorer) else None
        entries = [None if packed is not None and r[FLAG] & PACKED else decode(r, q, self.preview, forget=True)
                   for q, r in zip(queues, records)]
        decoded = [e for e in entries if e is not None]
        if len(decoded) == len(entries):
            return entries, rescore(entries)
        urls, blobs = zip(*[read(r, q.prefix) for q, r, e in zip(queues, records, entries) if e is None])
        fast, slow = iter(packed(list(urls), list(blobs))), iter(rescore(decoded) if decoded else ())
        return entries, [next(fast) if e is None else next(slow) for e in entries]


def background_pass(hosts: list[tuple[H, HostQueue]], start: int, limit: int, restamper: Restamper, deflate: bool,
                    rewritten: Callable[[H], None]) -> tuple[int, int]:
    """Bring up to ``limit`` stale records up to date, host by host from ``hosts[start]`` on (a
    whole host at a time, its cold records too: an entry whose value rose must surface), calling
    ``rewritten`` for each host whose records changed. Small hosts are re-scored together,
    ``RESCORE_BATCH`` entries a call: a call costs the learner more than a few entries do. A host
    bigger than what is left of ``limit`` gets its longest-stale entries re-scored (a block more
    at most: never a whole deep host in one pass) and the pass ends there; that was its turn, and
    the next pass begins with the hosts after it (it comes back to the deep host, whose next
    part is then the longest stale). Returns the records re-scored and the hosts visited."""
    done = visited = 0
    version = VERSION.pack(restamper.version)
    pending: list[tuple[H, HostQueue, list[bytes], list[bytes]]] = []  # (host, queue, fresh, stale records)
    waiting = 0
    for step in range(len(hosts)):
        if done >= limit:
            break
        h, q = hosts[(start + step) % len(hosts)]
        if not q.has_stale(version):
            visited += 1
            continue
        if q.size() > max(limit - done, RESCORE_BATCH):
            _rewrite(pending, restamper, deflate, rewritten)
            pending, waiting = [], 0
            done += q.rescore_part(limit - done, version, restamper.of(q), deflate)
            rewritten(h)
            # its turn, though only a part: the pass after this one begins with the hosts after it
            # (a learner update makes every record stale again, so going on with this host would
            # re-score it, and never them, as long as it is bigger than a pass)
            visited += 1
            break
        visited += 1
        fresh, stale = by_version(q.records(), version)
        pending.append((h, q, fresh, stale))
        done += len(stale)
        waiting += len(stale)
        if waiting >= RESCORE_BATCH:
            _rewrite(pending, restamper, deflate, rewritten)
            pending, waiting = [], 0
    _rewrite(pending, restamper, deflate, rewritten)
    return done, visited


def _rewrite(pending: list[tuple[H, HostQueue, list[bytes], list[bytes]]], restamper: Restamper, deflate: bool,
             rewritten: Callable[[H], None]) -> None:
    """Re-score the stale records of the hosts, ``RESCORE_BATCH`` at a time (new sequence numbers
    in host order, as one host at a time would give them), and store each host anew."""
    rescored = restamper([q for _, q, _, stale in pending for _ in stale], [r for *_, stale in pending for r in stale])
    start = 0
    for h, q, fresh, stale in pending:
        fresh += rescored[start:start + len(stale)]
        start += len(stale)
        q.replace(fresh, deflate)
        rewritten(h)
