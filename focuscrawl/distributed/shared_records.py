"""A shared frontier's records and their scoring version: entries packed into the frontier's record bytes with a seq
number unique across the crawl's workers, and back.

The seq numbers come from Redis a block at a time (``SEQ_BLOCK``), so stamping a record costs no
round trip; a request the codec declines to pack (a robots.txt request has no features) waits in
Redis as a request dict beside its record (written behind, read when its record is popped).
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING

from focuscrawl.frontier.entries import Codec, Entry, decode, encode
from focuscrawl.frontier.records import record_version

if TYPE_CHECKING:  # only names: a shared crawl's parts, which need the redis extra
    from focuscrawl.distributed.batch import WriteBehind
    from focuscrawl.distributed.connection import Keys

#: seq numbers a worker takes from Redis at a time
SEQ_BLOCK = 4096


class _Prefixless:
    """The in-process queues keep a host's URL prefix once; records in Redis carry their URL in
    full, so they decode against an empty prefix."""

    prefix = ""

    def kept(self, seq, forget=False):  # no entry is kept as an object: see SharedFrontier.push
        raise KeyError(seq)


#: the queue every shared record is decoded against
QUEUE = _Prefixless()


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


class SharedRecords:
    def __init__(self, writes: WriteBehind, keys: Keys, codec: Codec, serializer):
        self.writes = writes
        self.keys = keys
        self.codec = codec
        self.serializer = serializer
        self._unpack = codec.unpack
        self._seq = 0
        self._seq_end = 0

    def next_seq(self) -> int:
        if self._seq >= self._seq_end:
            end = int(self.writes.call("INCRBY", self.keys("seq"), SEQ_BLOCK))
            self._seq, self._seq_end = end - SEQ_BLOCK, end
        self._seq += 1
        return self._seq & 0xFFFFFFFF

    def record(self, entry: Entry) -> bytes:
        packable = entry.payload is not None or entry.features is not None
        if packable and self.codec.pack(entry) is None:
            # not packable (a robots.txt request has no features): its request waits in Redis as a dict
            self.writes.defer(("HSET", self.keys("requests"), entry.url,
                               pickle.dumps(self.serializer.to_dict(entry.payload), protocol=5)))
            entry = Entry(entry.priority, entry.url, None, None, entry.version)
        return encode(entry, self.next_seq(), self.codec, QUEUE)

    def entry(self, record: bytes) -> Entry:
        entry = decode(record, QUEUE, self._unpack)
        if entry.payload is None:
            blob = self.writes.call("HGET", self.keys("requests"), entry.url)
            if blob is None:
                raise LookupError(f"the shared frontier lost the request of {entry.url}")
            entry.payload = self.serializer.from_dict(pickle.loads(blob))
        return entry


__all__ = ["QUEUE", "SEQ_BLOCK", "ScoringVersion", "SharedRecords"]
