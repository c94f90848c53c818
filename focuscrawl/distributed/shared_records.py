"""A shared frontier's records and their scoring version: entries packed into the frontier's record bytes with a seq
number unique across the crawl's workers, and back.

The seq numbers come from Redis a block at a time (``SEQ_BLOCK``), so stamping a record costs no
round trip; a request the codec declines to pack (a robots.txt request has no features) waits in
Redis as a request dict beside its record (written behind, read when its record is popped).

A record in a host's sorted set is its header and URL only (~100 bytes); a packed entry's codec
bytes (its request and its link's features: ~750 bytes) are kept beside it in the crawl's
``blobs`` hash, named by the 8 bytes that end its record (its *ref*: the seq number it was first
queued under, in full, so unique in the crawl whatever re-scoring stamps on its header). Every
command that re-scores, compares or moves records then handles a tenth of the bytes, and the
scripts that add or remove a record write or delete its codec bytes in the same step. Re-scoring
reads only a record's features and parent: a worker keeps those of the records it queued (and
read) in a bounded cache (``LinkParts``), and reads the others from Redis once.
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from focuscrawl.config import DEFAULTS
from focuscrawl.frontier.entries import Codec, Entry, decode
from focuscrawl.frontier.records import FLAG, PACKED, compact, record_version

if TYPE_CHECKING:  # only names: a shared crawl's parts, which need the redis extra
    from focuscrawl.distributed.batch import WriteBehind
    from focuscrawl.distributed.connection import Keys
    from focuscrawl.frontier.rescoring import Restamper

#: seq numbers a worker takes from Redis at a time
SEQ_BLOCK = 4096
#: bytes of a packed record's ref, at its end (``scripts.REF_BYTES``)
REF_BYTES = 8
#: how a crawl's records are laid out in Redis: a worker of another layout would misread them
LAYOUT = "2"


class _Prefixless:
    """The in-process queues keep a host's URL prefix once; records in Redis carry their URL in
    full, so they decode against an empty prefix."""

    prefix = ""

    def kept(self, seq, forget=False):  # no entry is kept as an object: see SharedFrontier.push
        raise KeyError(seq)


#: the queue every shared record is decoded against
QUEUE = _Prefixless()


class CrawlOfAnotherLayout(RuntimeError):
    """The crawl in Redis was written by a release of another record layout; the message says which."""


def check_layout(client, keys: Keys) -> None:
    """Record this release's layout in a new crawl, or refuse to join one of another layout: its
    records would be misread (a crawl begun before layouts were recorded has queued records,
    hence a seq counter, and no layout: the first)."""
    key = keys("layout")
    if client.get(key) is None and not client.exists(keys("seq")):
        client.set(key, LAYOUT, nx=True)  # a second worker starting at once sets nothing
    stored = (client.get(key) or b"1").decode()
    if stored != LAYOUT:
        raise CrawlOfAnotherLayout(
            f"the shared crawl {keys.crawl_id!r} in Redis keeps its queued pages in layout {stored}, "
            f"this release reads layout {LAYOUT}: finish it with the release that began it, or start "
            f"a new crawl (another FOCUS_CRAWL_ID)")


class ScoringVersion:
    """The crawl's scoring version: a record scored under an older one is stale. One counter for
    all workers (their learners are synced), moved by any worker whose learner moved, so a record
    is re-scored once for a change, not once by each worker."""

    def __init__(self, writes: WriteBehind, keys: Keys):
        self.writes = writes
        self.keys = keys
        self.current = 0

    def move(self) -> None:
        """This worker's learner moved: moved here at once; the crawl's counter answers with the next
        write (other workers' moves included): records stamped meanwhile under an older number are
        only re-scored once more."""
        self.current += 1
        self.writes.defer(("INCR", self.keys("version")), self.heard)

    def heard(self, version) -> None:
        """The crawl's counter as Redis gave it (another worker's learner may have moved it on)."""
        self.current = max(self.current, int(version or 0))

    def stale(self, record: bytes) -> bool:
        version = record_version(record)
        if version > self.current:  # another worker's learner moved on since this one looked
            self.current = version
        return version < self.current


def is_packed(record: bytes) -> bool:
    """Whether a shared record names codec bytes kept in ``blobs`` (its last ``REF_BYTES``)."""
    return bool(record[FLAG] & PACKED)


class LinkParts:
    """What re-scoring reads of packed records (their codec's link part: features and parent), by
    ref, for at most ``capacity`` records: those this worker queued or read, the oldest forgotten
    first. A record whose part is not here is read from Redis (``SharedRecords.link_blobs``)."""

    def __init__(self, capacity: int = DEFAULTS.shared_link_cache):
        self.capacity = capacity
        # an OrderedDict drops its oldest in O(1); a dict's first key after many deletions from its
        # front is found by scanning their empty slots
        self._parts: OrderedDict[bytes, bytes] = OrderedDict()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._parts)

    def get(self, ref: bytes) -> bytes | None:
        return self._parts.get(ref)

    def put(self, ref: bytes, part: bytes) -> None:
        parts = self._parts
        if len(parts) >= self.capacity and ref not in parts:
            if not parts:
                return  # a capacity of 0: nothing kept
            parts.popitem(last=False)  # the oldest
        parts[ref] = part

    def forget(self, ref: bytes) -> None:
        self._parts.pop(ref, None)


class SharedRecords:
    """Entries <-> a shared frontier's records and their codec bytes (``record``, ``entry``), and
    the link parts re-scoring reads (``link_blobs``). ``link_cache``: link parts kept at most."""

    def __init__(self, writes: WriteBehind, keys: Keys, codec: Codec, serializer, link_cache: int = DEFAULTS.shared_link_cache):
        self.writes = writes
        self.keys = keys
        self.codec = codec
        self.serializer = serializer
        self._unpack = codec.unpack
        # the bytes of a blob re-scoring reads; the whole blob for a codec that cannot say
        self._link_part: Callable[[bytes], bytes] = getattr(codec, "link_part", lambda blob: blob)
        self.links = LinkParts(link_cache)
        self._seq = 0
        self._seq_end = 0

    def _next(self) -> int:
        if self._seq >= self._seq_end:
            end = int(self.writes.call("INCRBY", self.keys("seq"), SEQ_BLOCK))
            self._seq, self._seq_end = end - SEQ_BLOCK, end
        self._seq += 1
        return self._seq

    def next_seq(self) -> int:
        return self._next() & 0xFFFFFFFF

    def record(self, entry: Entry) -> tuple[bytes, bytes]:
        """``(record, codec bytes)`` of an entry (``b""`` for a record that has none): a packed
        entry's record ends in the ref its codec bytes are kept under."""
        blob = None
        if entry.payload is not None or entry.features is not None:
            blob = self.codec.pack(entry)
            if blob is None:
                # not packable (a robots.txt request has no features): its request waits in Redis as a dict
                self.writes.defer(("HSET", self.keys("requests"), entry.url,
                                   pickle.dumps(self.serializer.to_dict(entry.payload), protocol=5)))
        n = self._next()
        if blob is None:
            return compact(entry.priority, n & 0xFFFFFFFF, entry.version, entry.url, "", None), b""
        ref = n.to_bytes(REF_BYTES, "big")
        self.links.put(ref, self._link_part(blob))
        return compact(entry.priority, n & 0xFFFFFFFF, entry.version, entry.url, "", ref), blob

    def entry(self, record: bytes, blob: bytes | None = None) -> Entry:
        """The entry of a record and its codec bytes (as the script that took it out gave them)."""
        if is_packed(record):
            if blob is None:
                raise LookupError(f"the shared frontier lost the codec bytes of {record[FLAG + 1:-REF_BYTES - 1]!r}")
            return decode(record[:-REF_BYTES] + blob, QUEUE, self._unpack)
        entry = decode(record, QUEUE, self._unpack)
        if entry.payload is None:
            blob = self.writes.call("HGET", self.keys("requests"), entry.url)
            if blob is None:
                raise LookupError(f"the shared frontier lost the request of {entry.url}")
            entry.payload = self.serializer.from_dict(pickle.loads(blob))
        return entry

    def taken(self, record: bytes, blob: bytes | None) -> Entry:
        """The entry of a record taken out of the queue (popped, dropped): never re-scored again,
        so its link part is not kept."""
        if is_packed(record):
            self.links.forget(record[-REF_BYTES:])
        return self.entry(record, blob)

    def entries(self, pairs: list) -> list[Entry]:
        """The entries of a flat reply ``[RECORD, BLOB, ...]`` of records taken out (DROP, DROP_HOST)."""
        return [self.taken(r, b) for r, b in zip(pairs[::2], pairs[1::2], strict=True)]

    def read(self, records: list[bytes]) -> list[Entry]:
        """The entries of records still queued, their codec bytes read from Redis (one round trip)."""
        refs = [r[-REF_BYTES:] for r in records if is_packed(r)]
        blobs = iter(self.writes.call("HMGET", self.keys("blobs"), *refs) if refs else ())
        return [self.entry(r, next(blobs) if is_packed(r) else None) for r in records]

    def keep_link(self, record: bytes, blob: bytes | None) -> None:
        """Keep the link part of a record whose codec bytes this worker has at hand (if any)."""
        if blob is not None and is_packed(record):
            self.links.put(record[-REF_BYTES:], self._link_part(blob))

    def rescored(self, restamper: Restamper, records: list[bytes]) -> list[bytes | None]:
        """Each record re-scored by ``restamper``: its new header on its own bytes (the same URL
        and ref; a re-scored record differs from the stale one in its header alone), or None for
        one whose codec bytes left Redis before this worker read them (taken out meanwhile)."""
        readable = self.link_blobs(records)
        present = [r for r in readable if r is not None]
        new = iter(restamper([QUEUE] * len(present), present))
        return [None if full is None else next(new)[:FLAG] + record[FLAG:]
                for record, full in zip(records, readable, strict=True)]

    def link_blobs(self, records: Iterable[bytes]) -> list[bytes | None]:
        """For each record, itself with its link part in place of its ref (what re-scoring reads:
        ``Restamper`` takes it as a packed record), the record as it is when it names none, or None
        when its codec bytes are gone from Redis (popped or dropped meanwhile): those kept here, the
        others read in one round trip and kept."""
        records = list(records)
        out: list[bytes | None] = []
        missing: dict[bytes, list[int]] = {}
        links = self.links
        for i, record in enumerate(records):
            if not is_packed(record):
                out.append(record)
                continue
            ref = record[-REF_BYTES:]
            part = links.get(ref)
            if part is None:
                missing.setdefault(ref, []).append(i)
                out.append(None)
            else:
                out.append(record[:-REF_BYTES] + part)
                links.hits += 1
        if missing:
            refs = list(missing)
            links.misses += len(refs)
            for ref, blob in zip(refs, self.writes.call("HMGET", self.keys("blobs"), *refs), strict=True):
                if blob is None:
                    continue
                part = self._link_part(blob)
                links.put(ref, part)
                for i in missing[ref]:
                    out[i] = records[i][:-REF_BYTES] + part
        return out


__all__ = ["LAYOUT", "CrawlOfAnotherLayout", "check_layout", "QUEUE", "REF_BYTES", "SEQ_BLOCK", "LinkParts", "ScoringVersion", "SharedRecords",
           "is_packed"]
