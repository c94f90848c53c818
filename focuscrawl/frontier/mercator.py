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

Records: an entry is encoded as one ``bytes`` record, compared by ``memcmp`` in C:
``record = order_key(priority) [8] + seq [4] + version [4] + flag [1] + url [+ _ESC + blob]``.
The order key sorts the best priority first, seq keeps FIFO order among equal priorities; the
first 12 bytes (the *key*) are unique and order records. An entry with no payload and no features
(*compact*) is stored only as its record (the URL as UTF-8, without the host's ``scheme://netloc``
prefix when it has it) and comes back from ``pop``/``entries``/``prune``/``drop_host`` as an
equal ``Entry`` (same priority, url, version), not the same object. An entry with a payload or
features is *packed* when the frontier has a ``codec`` that packs it: a compact record followed by
``_ESC`` and the codec's bytes as they are (the ``_PACKED`` flag bit says so), which goes cold
like any compact record and comes back as an equal ``Entry`` whose payload and features the
codec unpacked (new objects; one just popped and ``requeue``d goes back as its record, not packed
again, and if popped next, comes back as that same object). Otherwise (no codec, or the codec
declines it) such an entry is *rich*: kept as the object itself (``_Host.rich``, keyed by seq)
behind a record with no URL, and handed back as that object. A crawler's entry costs ~2.5 KB as
objects (a request, its meta, a feature vector), a few hundred bytes packed (less once deflated in
a cold run).

Host queue = a small *hot* heap plus *cold* sorted runs. A ``bytes`` object costs ~50 bytes
over its content (~110 bytes a compact record, with its heap slot), so 10^7 records as objects
would not fit in 1 GiB. Only the hot heap (``_Host.queue``) holds records as objects: every rich
record, and the host's best compact ones (packed ones are compact here). When a push takes it
past ``_HOT_MAX`` compact records (or 1/32 of the host's cold records, if more), its worst compact
ones *spill* (all but the best ``_HOT_KEEP``, at most half of ``_MERGE_MAX``: a deep host's best
thousands stay hot) to a new cold run (``_Run``): sorted, cut into blocks of
``_BLOCK`` records, each block zlib-deflated (~40 bytes a plain record) behind its first record's
key in clear, so a run's head is compared without inflating anything. Runs are merged LSM-style
(the newest two while the older is no bigger), but no push spills or merges more than
``_MERGE_MAX`` records: a size-tiered merge through a deep host is O(host) in one push (3.3 s at
3 x 10^5 URLs in one host), and a push must not hold the reactor (``load`` writes a resumed
host's records once, as one run). So a deep host keeps about host / ``_MERGE_MAX`` runs (finding
the best run head is O(runs), paid by a host that is popped once per politeness delay), and a
record is rewritten a bounded number of times. A frontier built with ``deflate_from`` writes its
runs raw (blocks that are lists of records) while it holds fewer entries than that: deflating costs
CPU every time a run is written, and saves memory only a big frontier needs.

Invariant: the hot heap holds the host's best record (``queue[0]`` is no worse than any run's
head). When a pop breaks it, the best cold record moves to the hot heap: one record, from the
run's best block, which stays inflated (``_Run.front``) until it is used up. So everything that
looks at ``queue[0]`` (the ready heap, ``best_soon``, re-scoring at the top) sees the host's true
best, pops come in exact priority order, and a cold record is deflated again only by a merge.
``prune`` looks at every key (inflating the runs); its victims, the worst keys, are a suffix of
each run, so only the blocks that hold them are rewritten.

Re-scoring is lazy: every entry carries the scorer ``version`` it was scored under; when
``version`` moves on, stale entries are re-scored as they reach the top of their host queue
(cold ones once they are back in the hot heap) and in bounded background batches
(``rescore_stale``: whole hosts, hot and cold, skipping runs known to be fresh; a host deeper than
what is left of a batch a part at a time, best first, each part a lot apart from its spills'
runs), never by a full
scan on the hot path. The rescorer gets entries with their features and payload (packed ones a
bounded batch at a time, as the codec's ``preview`` shows them when it has one, else unpacked); a
re-scored record keeps its URL and blob, only its header is new, so nothing is packed again.

Checkpoints and pickles take the records as they are stored, since decoding 10^6 packed entries
(and packing them again) takes minutes: ``stored`` hands over each host's compact and packed
records (loose ones and deflated blocks, nothing inflated or unpacked), ``read_stored`` reads
their URLs and blobs, ``load`` puts them into a frontier under fresh seq numbers; a pickled
frontier keeps each host's heap, runs and rich entries as they are, seq numbers included, so it
pops in the same order after a round trip.
"""

from __future__ import annotations

import heapq
import struct
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import accumulate
from typing import Any, Protocol

# rescore(entries) -> new priorities, one per entry; it may also be a PackedRescorer
Rescorer = Callable[[list["Entry"]], list[float]]
# unpack(url, blob) -> (payload, features): a codec's ``unpack`` or ``preview``
Unpack = Callable[[str, bytes], tuple[Any, Any]]


class Codec(Protocol):
    """Turns what an entry carries (payload, features) into bytes and back, so that the frontier
    stores the entry as a packed record, which can go cold, rather than as live objects."""

    def pack(self, entry: Entry) -> bytes | None:
        """The entry's payload and features as bytes; None keeps the entry as an object."""

    def unpack(self, url: str, blob: bytes) -> tuple[Any, Any]:
        """(payload, features), new objects equal to those ``pack`` was given."""

    # Optional: ``preview(url, blob) -> (payload, features)``, what the rescorer needs of an
    # entry, cheaper than ``unpack`` (a re-scored record keeps its blob, so the payload given
    # to the rescorer is never stored).


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


_HEAD = struct.Struct(">QIi")  # order key, seq, version
_KEY = 12  # bytes of a record that order it (order key + seq)
_FLAG = 16
_HEADER = 17  # record bytes before the URL
# flag: the URL without the host's prefix or in full; a rich entry; a packed one (a bit: 4 or 5)
_PREFIXED, _FULL, _RICH, _PACKED = 0, 1, 2, 4
_VERSION = struct.Struct(">i")  # record[_KEY:_FLAG]
_SEQ_VERSION = struct.Struct(">Ii")  # record[_ORDER:_FLAG]
_ORDER = 8  # bytes of a record's order key
_FLAGS = [bytes((flag,)) for flag in range(_PACKED + _FULL + 1)]
_D = struct.Struct(">d")
_Q = struct.Struct(">Q")
_MAX = (1 << 64) - 1
_SIGN = 1 << 63

# Hot heap and cold runs (see the module docstring). Smaller hot heaps save memory and cost
# more spills; bigger blocks deflate better and cost more per inflated front.
_HOT_KEEP = 8  # compact records left in the hot heap by a spill
_HOT_MAX = 40  # compact records in the hot heap that make a push spill (at least)
_BLOCK = 16  # records per deflated block (at most 255: a one-byte count)
_ZLEVEL = 1  # level 6 saves ~2% of the bytes for ~20% more time
_ESC = b"\xfe"  # never in UTF-8 (nor in surrogatepass output): ends a packed record's URL
_LENGTHS = [struct.Struct(f">{n}I") for n in range(_BLOCK + 1)]  # lengths of a block's records past the header
_LOT_MAX = 4096  # records one merge of re-scored lots may write (see _Host.add_lot)
_MAX_LOTS = 64  # lots a host keeps; past it the two smallest stale ones are merged (within _MERGE_MAX)
_MERGE_MAX = 1 << 13  # records one spill or merge (of runs or of stale lots) writes at most (~65-100 ms packed)
_RESCORE_BATCH = 1024  # entries unpacked at a time by background re-scoring (bounds the memory)


def _header(priority: float, seq: int, version: int) -> bytes:
    """A record's first ``_FLAG`` bytes: order key, seq, version."""
    return _HEAD.pack(_order_key(priority), seq, version)


def _restamp(record: bytes, priority: float, seq: int, version: int) -> bytes:
    """``record`` under a new header: its URL (and blob) as they are, nothing decoded."""
    return _header(priority, seq, version) + record[_FLAG:]


def _renumber(record: bytes, seq: int, version: int) -> bytes:
    """``record`` with its priority (order key), URL and blob as they are, under a new seq and version."""
    return record[:_ORDER] + _SEQ_VERSION.pack(seq, version) + record[_FLAG:]


def _read(record: bytes, prefix: str | None) -> tuple[str, bytes | None]:
    """A compact or packed record's URL (``prefix``, its host's, restored when it was cut off) and
    its codec bytes (None for a compact record), nothing unpacked."""
    flag = record[_FLAG]
    packed = flag & _PACKED
    cut = record.index(_ESC, _HEADER) if packed else len(record)
    url = record[_HEADER:cut].decode("utf-8", "surrogatepass")
    if not flag & _FULL:
        url = prefix + url
    return url, record[cut + 1:] if packed else None


def _in_full(record: bytes, prefix: str) -> bytes:
    """``record`` with its URL in full, for a host whose prefix is not ``prefix``."""
    flag = record[_FLAG]
    if flag & _FULL:
        return record
    return record[:_FLAG] + _FLAGS[flag | _FULL] + prefix.encode("utf-8", "surrogatepass") + record[_HEADER:]


def record_priority(record: bytes) -> float:
    """The priority in a record's header."""
    return _priority(_Q.unpack_from(record)[0])


def read_stored(prefix: str, loose: list[bytes], blocks: list[bytes]) -> Iterator[tuple[bytes, str, bytes | None]]:
    """``(record, url, codec bytes)`` of each record a host stored (``Frontier.stored``): the
    blocks inflated, nothing unpacked."""
    for record in loose:
        yield record, *_read(record, prefix)
    for block in blocks:
        for record in _unpack(block):
            yield record, *_read(record, prefix)


def _merged(a: _Run, b: _Run, deflate: bool, lot: bool = False) -> _Run:
    """One run of the records of two."""
    return _Run(sorted(a.records() + b.records()), deflate, lot)


def _by_version(records: Iterable[bytes], version: bytes) -> tuple[list[bytes], list[bytes]]:
    """``(fresh, stale)``: the records scored under ``version``, and the others."""
    fresh: list[bytes] = []
    stale: list[bytes] = []
    for r in records:
        (fresh if r[_KEY:_FLAG] == version else stale).append(r)
    return fresh, stale


def _order_key(priority: float) -> int:
    """A uint64 that sorts ascending as ``priority`` sorts descending."""
    (u,) = _Q.unpack(_D.pack(priority))
    return (u ^ _MAX if u & _SIGN else u | _SIGN) ^ _MAX


def _priority(key: int) -> float:
    asc = key ^ _MAX
    (p,) = _D.unpack(_Q.pack(asc & ~_SIGN if asc & _SIGN else asc ^ _MAX))
    return p


def _pack(records: list[bytes]) -> bytes:
    """A block: the first record's key in clear, then the deflated records, column-wise (count,
    headers, the lengths of the rest, the rest: URLs and blobs) since like columns compress better
    together. Lengths, not separators: a blob may hold any byte, and is stored as it is."""
    tails = [r[_HEADER:] for r in records]
    raw = (bytes((len(records),)) + b"".join([r[:_HEADER] for r in records])
           + _LENGTHS[len(tails)].pack(*map(len, tails)) + b"".join(tails))
    return records[0][:_KEY] + zlib.compress(raw, _ZLEVEL, -15)


def _unpack(block: bytes) -> list[bytes]:
    raw = zlib.decompress(block[_KEY:], -15)
    n = raw[0]
    heads = 1 + _HEADER * n
    bounds = list(accumulate(_LENGTHS[n].unpack_from(raw, heads), initial=heads + 4 * n))
    return [raw[h:h + _HEADER] + raw[a:b] for h, a, b in zip(range(1, heads, _HEADER), bounds, bounds[1:])]


class _Run:
    """Sorted cold compact records of one host: deflated blocks (the best block last), the best
    of which is inflated (``front``, best record last) once a record is taken from it. With
    ``deflate`` false the blocks are the records' lists themselves (see ``Frontier.deflate_from``)."""

    __slots__ = ("blocks", "front", "size", "version", "deflated", "lot")

    def __init__(self, records: list[bytes], deflate: bool = True, lot: bool = False) -> None:
        self.size = len(records)
        self.deflated = deflate
        self.lot = lot  # records a background pass re-scored in part (``_Host.add_lot``)
        self.blocks = [self._close(records[i:i + _BLOCK]) for i in reversed(range(0, len(records), _BLOCK))]
        self.front: list[bytes] | None = None
        # the version every record shares, if they do: background re-scoring skips fresh runs
        version = records[0][_KEY:_FLAG]
        self.version = version if all(r[_KEY:_FLAG] == version for r in records) else None

    def _close(self, records: list[bytes]) -> bytes | list[bytes]:
        return _pack(records) if self.deflated else records

    def _open(self, block: bytes | list[bytes]) -> list[bytes]:
        return _unpack(block) if self.deflated else block

    def __getstate__(self):  # explicit: a class with slots pickles so with every protocol
        return self.blocks, self.front, self.size, self.version, self.deflated, self.lot

    def __setstate__(self, state):
        self.blocks, self.front, self.size, self.version, self.deflated, self.lot = state

    def head(self) -> bytes:
        if self.front:
            return self.front[-1][:_KEY]
        block = self.blocks[-1]
        return block[:_KEY] if self.deflated else block[0][:_KEY]

    def take(self) -> bytes:
        """Remove and return the best record."""
        front = self.front
        if front is None:
            front = self.front = self._open(self.blocks.pop())[::-1]
        record = front.pop()
        if not front:
            self.front = None
        self.size -= 1
        return record

    def take_best(self, n: int) -> list[bytes]:
        """Remove and return at least ``n`` of the best records (whole blocks, or all), best first."""
        out = self.front[::-1] if self.front else []
        self.front = None
        while len(out) < n and self.blocks:
            out += self._open(self.blocks.pop())
        self.size -= len(out)
        return out

    def records(self) -> list[bytes]:
        """The records, best first."""
        out = self.front[::-1] if self.front else []
        for block in reversed(self.blocks):
            out += self._open(block)
        return out

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key is in ``keys``, the worst keys of the frontier:
        a suffix of the run, so only the blocks that hold some are inflated (and one deflated)."""
        gone: list[bytes] = []
        blocks = self.blocks
        while blocks:
            records = self._open(blocks[0])
            keep = [r for r in records if r[:_KEY] not in keys]
            gone += records[len(keep):]
            if keep:
                if len(keep) < len(records):
                    blocks[0] = self._close(keep)
                break
            del blocks[0]
        else:
            if self.front:
                keep = [r for r in self.front if r[:_KEY] not in keys]
                gone += [r for r in self.front if r[:_KEY] in keys]
                self.front = keep or None
        self.size -= len(gone)
        return gone


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
    __slots__ = ("name", "owner", "queue", "rich", "prefix", "runs", "heads", "cold", "cold_head",
                 "ready_at", "busy", "in_ready", "rkey", "wkey", "lent")

    def __init__(self, name: str, owner: Frontier) -> None:
        self.name = name
        self.owner = owner  # the frontier: whether new runs are deflated depends on its size
        self.queue: list[bytes] = []  # the hot heap of records
        self.rich: dict[int, Entry] | None = None  # seq -> entry kept as an object
        self.prefix: str | None = None  # scheme://netloc of the first URL
        self.runs: list[_Run] | None = None  # cold runs, newest last
        self.heads: list[bytes] | None = None  # each run's head (runs[i]'s is heads[i]), None with no runs
        self.cold = 0  # records in the runs
        self.cold_head: bytes | None = None  # the best key in the runs
        self.ready_at = 0.0
        self.busy = False
        self.in_ready = False
        self.rkey: bytes | None = None  # key of the live item in the ready heap
        self.wkey: float | None = None  # ready_at of the live item in the waiting heap
        self.lent: tuple[Entry, bytes] | None = None  # a packed entry popped, and its record

    def size(self) -> int:
        return len(self.queue) + self.cold

    def best(self) -> float:
        return _priority(_Q.unpack_from(self.queue[0])[0])

    def top_version(self) -> int:
        return _HEAD.unpack_from(self.queue[0])[2]

    # --- storage: hot heap + cold runs ----------------------------------------------------------
    def _hot_max(self) -> int:
        """Records the hot heap may hold: every rich one, and ``_HOT_MAX`` compact ones or 1/32 of
        the cold ones if more. A deep host's best records stay hot (uninflated, and re-scored in
        place by background passes); a spill then writes only its worst ones (``_spill``)."""
        return max(_HOT_MAX, self.cold >> 5) + (len(self.rich) if self.rich else 0)

    def push(self, record: bytes) -> None:
        heapq.heappush(self.queue, record)
        if len(self.queue) > self._hot_max():
            self._spill()

    def pop(self) -> bytes:
        """Remove the best record; if the best left is cold, move it to the hot heap."""
        record = heapq.heappop(self.queue)
        if self.cold and (not self.queue or self.cold_head < self.queue[0]):
            self._refill()
        return record

    def records(self) -> Iterator[bytes]:
        """Every record, hot then cold (in no particular order)."""
        yield from self.queue
        for run in self.runs or ():
            yield from run.records()

    def has_stale(self, version: bytes) -> bool:
        return (any(r[_KEY:_FLAG] != version for r in self.queue)
                or any(run.version != version for run in self.runs or ()))

    def drop(self, keys: set[bytes]) -> list[bytes]:
        """Remove and return the records whose key is in ``keys``, the worst keys of the frontier
        (a prune). The hot best stays, unless every record of the host goes."""
        queue = self.queue
        gone = [r for r in queue if r[:_KEY] in keys]
        if gone:
            self.queue = [r for r in queue if r[:_KEY] not in keys]
            heapq.heapify(self.queue)
        if self.runs:
            for run in self.runs:
                gone += run.drop(keys)
            self.runs = [run for run in self.runs if run.size] or None
            self._recount()
        return gone

    def _recount(self) -> None:
        """``cold``, ``heads`` and ``cold_head`` from the runs (after any change to them but a refill's,
        which keeps them itself)."""
        runs = self.runs
        self.cold = sum(run.size for run in runs or ())
        self.heads = [run.head() for run in runs] if runs else None
        self.cold_head = min(self.heads) if runs else None

    def stored(self) -> tuple[list[bytes], list[bytes]]:
        """The compact and packed records as they are stored, for a checkpoint that must neither
        decode nor inflate them: the loose ones (hot, inflated fronts, raw runs), and the deflated
        blocks (read back by ``read_stored``). Rich records are left out."""
        loose = [r for r in self.queue if r[_FLAG] != _RICH]
        blocks: list[bytes] = []
        for run in self.runs or ():
            loose += run.front or ()
            if run.deflated:
                blocks += run.blocks
            else:
                for block in run.blocks:
                    loose += block
        return loose, blocks

    def restore(self, prefix: str | None, ready_at: float, queue: list[bytes], runs: list[_Run] | None,
                rich: dict[int, Entry] | None) -> None:
        """The storage a pickled host had, as it was (``Frontier.__setstate__``)."""
        self.prefix = None if prefix is None else sys.intern(prefix)
        self.ready_at, self.queue, self.runs, self.rich = ready_at, queue, runs, rich
        self._recount()

    def clear(self) -> None:
        """Drop every record (rich entries stay in ``rich`` until decoded)."""
        self.queue, self.runs, self.heads, self.cold, self.cold_head = [], None, None, 0, None

    def load(self, records: list[bytes]) -> None:
        """Store ``records`` in an empty host (takes the list)."""
        heapq.heapify(records)
        self.queue = records
        if len(records) > self._hot_max():
            self._spill(whole=True)

    def _spill(self, whole: bool = False) -> None:
        """Move the worst compact records of the hot heap to a new run: all but the best
        ``_HOT_KEEP`` (every rich one stays), at most half of ``_MERGE_MAX`` in a push (a deep
        host's hot heap holds thousands: its best stay hot), all of them when ``whole`` (a
        resumed host, written once). The hot best does not change, so the invariant holds."""
        records = sorted(self.queue)
        if self.rich:
            rich = [r for r in records if r[_FLAG] == _RICH]
            records = [r for r in records if r[_FLAG] != _RICH]
        keep = _HOT_KEEP if whole else max(_HOT_KEEP, len(records) - (_MERGE_MAX >> 1))
        hot = records[:keep]  # sorted: already a heap
        if self.rich:
            hot += rich
            heapq.heapify(hot)
        self.queue = hot
        self.add_run(records[keep:])
        self._recount()

    def add_run(self, records: list[bytes]) -> None:
        """A new run of ``records`` (sorted), merged LSM-style with the newest runs while the older
        of the last two is no bigger and the two hold at most ``_MERGE_MAX`` records (the caller then
        calls ``_recount``). Lots sit before these runs and are never merged with
        them (``add_lot``)."""
        runs = self.runs
        if runs is None:
            runs = self.runs = []
        deflate = self.owner.deflating()
        runs.append(_Run(records, deflate))
        while (len(runs) > 1 and not runs[-2].lot and runs[-2].size <= runs[-1].size
               and runs[-2].size + runs[-1].size <= _MERGE_MAX):
            runs.append(_merged(runs.pop(), runs.pop(), deflate))

    def add_lot(self, records: list[bytes], version: bytes) -> None:
        """A lot of records re-scored under ``version`` by a partial pass (sorted): a run of its own
        at the front, apart from the spills' runs. Among those, many small lots would make the next
        spill merge its way through the whole host; apart, lots merge only with each other, each
        merge bounded: a lot with the lot before it while both are of ``version`` and together at
        most ``_LOT_MAX`` records (mixed with stale records, fresh ones would be taken out and put
        back again and again), and past ``_MAX_LOTS`` lots the two smallest stale ones, while together
        they hold at most ``_MERGE_MAX`` records."""
        runs = self.runs
        if runs is None:
            runs = self.runs = []
        deflate = self.owner.deflating()
        runs.insert(0, _Run(records, deflate, lot=True))
        while (len(runs) > 1 and runs[1].lot and runs[1].version == version
               and runs[0].size + runs[1].size <= _LOT_MAX):
            runs.insert(0, _merged(runs.pop(0), runs.pop(0), deflate, lot=True))
        while sum(run.lot for run in runs) > _MAX_LOTS:
            stale = sorted((run for run in runs if run.lot and run.version != version), key=lambda run: run.size)[:2]
            if len(stale) < 2 or stale[0].size + stale[1].size > _MERGE_MAX:
                break  # a deep host's lots grow past the cap: it keeps more of them instead
            for run in stale:
                runs.remove(run)
            runs.insert(0, _merged(*stale, deflate, lot=True))

    def _refill(self) -> None:
        """Move the best cold record to the hot heap, which restores the invariant. One record, not
        a block: a block's worth would make the next push spill and deflate them all again."""
        runs, heads = self.runs, self.heads  # a deep host has host / _MERGE_MAX runs: heads are kept
        best = heads.index(self.cold_head)
        run = runs[best]
        heapq.heappush(self.queue, run.take())
        self.cold -= 1
        if run.size:
            heads[best] = run.head()
        else:
            del runs[best], heads[best]
        if runs:
            self.cold_head = min(heads)
        else:
            self.runs = self.heads = self.cold_head = None

    # --- records <-> entries --------------------------------------------------------------------
    def encode(self, entry: Entry, seq: int, codec: Codec | None) -> bytes:
        head = _header(entry.priority, seq, entry.version)
        packed = b""
        if entry.payload is not None or entry.features is not None:
            blob = codec.pack(entry) if codec is not None else None
            if blob is None:
                return self.keep(entry, seq, head)
            packed = _ESC + blob
        url = entry.url
        prefix = self.prefix
        if prefix is None:
            cut = url.find("/", url.find("://") + 3) if "://" in url else -1
            prefix = self.prefix = sys.intern(url[:cut] if cut > 0 else url)
        if url.startswith(prefix):
            flag, url = _PREFIXED, url[len(prefix):]
        else:
            flag = _FULL
        if packed:
            flag |= _PACKED
        return head + _FLAGS[flag] + url.encode("utf-8", "surrogatepass") + packed

    def keep(self, entry: Entry, seq: int, head: bytes) -> bytes:
        """Keep ``entry`` as an object: its record (``head`` and the rich flag) has no URL."""
        if self.rich is None:
            self.rich = {}
        self.rich[seq] = entry
        return head + _FLAGS[_RICH]

    def decode(self, record: bytes, unpack: Unpack | None, forget: bool = False) -> Entry:
        """The entry of a record; a packed one's payload and features by ``unpack`` (the codec's
        ``unpack``, or its ``preview`` for re-scoring)."""
        key, seq, version = _HEAD.unpack_from(record)
        flag = record[_FLAG]
        if flag == _RICH:
            return self.rich.pop(seq) if forget else self.rich[seq]
        url, blob = _read(record, self.prefix)
        if blob is None:
            return Entry(_priority(key), url, None, None, version)
        payload, features = unpack(url, blob)
        return Entry(_priority(key), url, payload, features, version)


class Frontier:
    def __init__(self, capacity: int = 1_000_000, prune_slack: float = 0.05, codec: Codec | None = None,
                 deflate_from: int = 0):
        if capacity < 1:
            raise ValueError("frontier capacity must be at least 1")
        self.capacity = capacity
        self.prune_slack = prune_slack
        self.codec = codec  # packs entries with a payload or features (None: they stay objects)
        # how packed records are decoded, resolved once: in full, and for re-scoring (the codec's
        # cheaper preview when it has one)
        self._unpack = codec.unpack if codec is not None else None
        self._preview = getattr(codec, "preview", self._unpack)
        # cold runs written while the frontier holds fewer entries stay raw (not deflated): see deflating()
        self.deflate_from = deflate_from
        self.version = 0
        self._hosts: dict[str, _Host] = {}
        self._waiting: list[tuple[float, str]] = []
        self._ready: list[tuple[bytes, str]] = []
        self._seq = 0
        self._size = 0
        self._rescore_cursor = 0
        self._kept: tuple[bytes, Entry] | None = None  # the packed entry last put back, and its record
        self.rescored = 0
        self.pruned = 0

    def deflating(self) -> bool:
        """Whether a new cold run is deflated. Deflating saves memory only a big frontier needs,
        and costs CPU every time a run is written (a spill, a merge, a background re-scoring of
        the host): below ``deflate_from`` entries runs stay raw. Raw runs are only written below
        it, so they hold fewer than ``deflate_from`` records in all, whatever the frontier grows to."""
        return self._size >= self.deflate_from

    def _next_seq(self) -> int:
        self._seq = seq = (self._seq + 1) & 0xFFFFFFFF
        return seq

    def _host(self, host: str) -> _Host:
        h = self._hosts.get(host)
        if h is None:
            host = sys.intern(host)
            h = self._hosts[host] = _Host(host, self)
        return h

    def _add(self, h: _Host, entry: Entry, record: bytes | None = None) -> bytes:
        if record is None:
            record = h.encode(entry, self._next_seq(), self.codec)
        h.push(record)
        self._size += 1
        return record

    # --- size ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    def host_size(self, host: str) -> int:
        h = self._hosts.get(host)
        return h.size() if h else 0

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
            record = h.pop()
            kept, self._kept = self._kept, None
            if kept is not None and kept[0] is record:  # put back and popped again: not unpacked again
                entry = kept[1]
            else:
                entry = h.decode(record, self._unpack, forget=True)
            h.lent = (entry, record) if record[_FLAG] & _PACKED else None
            self._size -= 1
            h.busy = True
            h.in_ready = False
            h.rkey = None
            return host, entry
        return None

    def _rescored(self, hosts: list[_Host], records: list[bytes], rescore: Rescorer) -> list[bytes]:
        """The records (taken out of their hosts, ``hosts`` alongside) re-scored under the current
        version, in one call of the rescorer: new headers, the same URLs and blobs (a rich entry is
        kept again, with its new priority and version)."""
        entries, priorities = self._priorities(hosts, records, rescore)
        version, out = self.version, []
        for h, record, entry, priority in zip(hosts, records, entries, priorities):
            seq = self._next_seq()
            if record[_FLAG] == _RICH:
                entry.priority, entry.version = priority, version
                out.append(h.keep(entry, seq, _header(priority, seq, version)))
            else:  # the entry (a preview) is dropped: only its record is kept
                out.append(_restamp(record, priority, seq, version))
        return out

    def _priorities(self, hosts: list[_Host], records: list[bytes], rescore: Rescorer) -> tuple[list, list[float]]:
        """The records' entries (None where none was built) and their new priorities: packed
        records straight from their bytes when the rescorer takes them so (``PackedRescorer``),
        the others decoded (packed ones by the codec's preview) and re-scored as entries."""
        packed = rescore.packed if isinstance(rescore, PackedRescorer) else None
        entries = [None if packed is not None and r[_FLAG] & _PACKED else h.decode(r, self._preview, forget=True)
                   for h, r in zip(hosts, records)]
        decoded = [e for e in entries if e is not None]
        if len(decoded) == len(entries):
            return entries, rescore(entries)
        urls, blobs = zip(*[_read(r, h.prefix) for h, r, e in zip(hosts, records, entries) if e is None])
        fast, slow = iter(packed(list(urls), list(blobs))), iter(rescore(decoded) if decoded else ())
        return entries, [next(fast) if e is None else next(slow) for e in entries]

    def _refresh_top(self, h: _Host, rescore: Rescorer, budget: int) -> None:
        """Re-score stale entries at the top of a host queue until the top is fresh."""
        version = self.version
        while budget > 0 and h.queue and h.top_version() != version:
            batch = []
            while h.queue and h.top_version() != version and len(batch) < min(budget, 32):
                batch.append(h.pop())
            for record in self._rescored([h] * len(batch), batch, rescore):
                h.push(record)
            budget -= len(batch)
            self.rescored += len(batch)

    def rescore_stale(self, rescore: Rescorer, limit: int = 1000) -> int:
        """Background re-scoring: bring up to ``limit`` stale entries up to date, host by host (a
        whole host at a time, its cold runs too: an entry whose value rose must surface). Small
        hosts are re-scored together, ``_RESCORE_BATCH`` entries a call: a call costs the learner
        more than a few entries do. A host bigger than what is left of ``limit`` gets its best
        stale entries re-scored (a block more at most) and the call ends there; the next call
        goes on with it. The next call starts after the last host this one finished (round robin):
        every host is refreshed in turn, the big ones as often as the small."""
        hosts = [name for name, h in self._hosts.items() if h.queue]
        if not hosts:
            return 0
        done = visited = 0
        version = _VERSION.pack(self.version)
        pending: list[tuple[_Host, list[bytes], list[bytes]]] = []  # (host, fresh, stale records)
        waiting = 0
        for step in range(len(hosts)):
            if done >= limit:
                break
            name = hosts[(self._rescore_cursor + step) % len(hosts)]
            h = self._hosts[name]
            if not h.has_stale(version):
                visited += 1
                continue
            if h.size() > max(limit - done, _RESCORE_BATCH):
                # too big for what is left of this call: its best stale records now, the rest in
                # the calls after (the cursor stays on it), never a whole deep host in one call
                self._rescore_hosts(pending, rescore)
                pending, waiting = [], 0
                done += self._rescore_part(h, limit - done, version, rescore)
                break
            visited += 1
            fresh, stale = _by_version(h.records(), version)
            pending.append((h, fresh, stale))
            done += len(stale)
            waiting += len(stale)
            if waiting >= _RESCORE_BATCH:
                self._rescore_hosts(pending, rescore)
                pending, waiting = [], 0
        self._rescore_hosts(pending, rescore)
        self._rescore_cursor = (self._rescore_cursor + visited) % len(hosts)
        self.rescored += done
        return done

    def _rescore_part(self, h: _Host, budget: int, version: bytes, rescore: Rescorer) -> int:
        """Re-score about ``budget`` of a host's stale records, the best first: stale hot records,
        then the best blocks of its stale cold runs, which become a lot (``_Host.add_lot``).
        What is left stays where it is, stale, for the next call. Returns the records re-scored."""
        hot = sorted(r for r in h.queue if r[_KEY:_FLAG] != version)[:budget]
        if hot:
            taken = set(hot)
            h.queue = [r for r in h.queue if r not in taken] + self._rescored_batches([h] * len(hot), hot, rescore)
            heapq.heapify(h.queue)
        done, lot = len(hot), []
        while done < budget:
            stale_runs = [run for run in h.runs or () if run.version != version]
            if not stale_runs:
                break
            run = min(stale_runs, key=_Run.head)
            taken = run.take_best(budget - done)
            if not run.size:
                h.runs.remove(run)
            fresh, stale = _by_version(taken, version)
            lot += fresh + self._rescored_batches([h] * len(stale), stale, rescore)
            done += len(stale)
        if lot:
            h.add_lot(sorted(lot), version)
        h._recount()
        if h.runs and (not h.queue or h.cold_head < h.queue[0]):
            h._refill()  # the best cold record, better than the hot best now: hot again
        if h.in_ready and not h.busy:
            self._schedule(h)
        return done

    def _rescored_batches(self, hosts: list[_Host], records: list[bytes], rescore: Rescorer) -> list[bytes]:
        """``_rescored``, ``_RESCORE_BATCH`` records at a time (bounds the memory)."""
        out: list[bytes] = []
        for i in range(0, len(records), _RESCORE_BATCH):
            out += self._rescored(hosts[i:i + _RESCORE_BATCH], records[i:i + _RESCORE_BATCH], rescore)
        return out

    def _rescore_hosts(self, pending: list[tuple[_Host, list[bytes], list[bytes]]], rescore: Rescorer) -> None:
        """Re-score the stale records of the hosts, ``_RESCORE_BATCH`` at a time (new sequence
        numbers in host order, as one host at a time would give them), and store each host anew."""
        hosts = [h for h, _, stale in pending for _ in stale]
        records = [r for _, _, stale in pending for r in stale]
        rescored = self._rescored_batches(hosts, records, rescore)
        start = 0
        for h, fresh, stale in pending:
            fresh += rescored[start:start + len(stale)]
            start += len(stale)
            h.clear()
            h.load(fresh)
            if h.in_ready and not h.busy:
                self._schedule(h)

    # --- host state ---------------------------------------------------------------------------
    def requeue(self, host: str, entry: Entry) -> None:
        """Put back an entry that was popped but not fetched (the host stays busy). The packed
        entry last popped from the host goes back as its record, not packed again: with its
        priority and version as they are now, its payload and features as they were popped. If
        that record is the next one popped (a request held back and tried again), the entry comes
        back as this same object, not unpacked again: put entries back unchanged."""
        h = self._host(host)
        lent, h.lent = h.lent, None
        if lent is not None and lent[0] is entry:
            record = _restamp(lent[1], entry.priority, self._next_seq(), entry.version)
            self._add(h, entry, record)
            self._kept = (record, entry)
        else:
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
        h.lent = None
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
        entries = [h.decode(r, self._unpack) for r in h.records()]
        h.clear()
        h.rich = None
        h.in_ready = False
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
        victims = heapq.nlargest(excess, ((r[:_KEY], h) for h in self._hosts.values() for r in h.records()),
                                 key=lambda row: row[0])
        removed: dict[str, set[bytes]] = {}
        for key, h in victims:
            removed.setdefault(h.name, set()).add(key)
        out = []
        for name, keys in removed.items():
            h = self._hosts[name]
            out += [h.decode(r, self._unpack, forget=True) for r in h.drop(keys)]
            if h.in_ready and not h.busy:
                self._schedule(h)
        self._size -= len(out)
        self.pruned += len(out)
        return out

    # --- checkpoint ---------------------------------------------------------------------------
    def entries(self) -> Iterable[tuple[str, Entry]]:
        for name, h in self._hosts.items():
            for record in h.records():
                yield name, h.decode(record, self._unpack)

    def rich_entries(self) -> Iterator[tuple[str, Entry]]:
        """The entries kept as objects (``stored`` leaves them out)."""
        for name, h in self._hosts.items():
            for entry in (h.rich or {}).values():
                yield name, entry

    def stored(self) -> list[tuple[str, str, list[bytes], list[bytes]]]:
        """``(host, prefix, loose records, deflated blocks)`` of each host with compact or packed
        records (see ``_Host.stored``): what a checkpoint writes of them, nothing decoded, unpacked
        or inflated; ``load`` puts them back, ``read_stored`` reads them."""
        out = []
        for name, h in self._hosts.items():
            loose, blocks = h.stored()
            if loose or blocks:
                out.append((name, h.prefix, loose, blocks))
        return out

    def load(self, host: str, prefix: str, records: list[bytes], version: int) -> list[Entry]:
        """Add records another frontier stored (``stored``, ``read_stored``) as they are, nothing
        unpacked or packed again: under fresh seq numbers in their order (equal priorities keep
        it) and ``version`` (-1: stale, re-scored as they surface). Returns the entries pruned to
        stay within capacity, as ``push``."""
        h = self._host(host)
        if h.prefix is None:
            h.prefix = sys.intern(prefix)
        elif h.prefix != prefix:
            records = [_in_full(r, prefix) for r in records]
        records = [_renumber(r, self._next_seq(), version) for r in sorted(records)]
        self._size += len(records)  # first: whether the host's runs are deflated depends on it
        if h.size():
            for record in records:
                h.push(record)
        else:
            h.load(records)
        self._schedule(h)
        if self._size > self.capacity * (1 + self.prune_slack):
            return self.prune()
        return []

    def __getstate__(self):
        # each host's storage as it is (records, cold runs, rich entries): nothing decoded, re-encoded
        # or inflated; the records keep their seq numbers, so the order is the same after a round trip
        hosts = {name: (h.prefix, h.ready_at, h.queue, h.runs, h.rich) for name, h in self._hosts.items()}
        return {"capacity": self.capacity, "prune_slack": self.prune_slack, "codec": self.codec,
                "deflate_from": self.deflate_from, "version": self.version, "seq": self._seq, "hosts": hosts,
                "pruned": self.pruned, "rescored": self.rescored}

    def __setstate__(self, state):
        self.__init__(state["capacity"], state["prune_slack"], state["codec"], state["deflate_from"])
        self.version, self._seq, self.pruned, self.rescored = (state["version"], state["seq"], state["pruned"],
                                                               state["rescored"])
        for name, stored in state["hosts"].items():
            h = self._host(name)
            h.restore(*stored)
            self._size += h.size()
            self._schedule(h)
