"""The frontier's record format: one queued entry as one ``bytes`` object, ordered by ``memcmp``.

``record = order_key(priority) [8] + seq [4] + version [4] + flag [1] + url [+ ESC + blob]``

The order key sorts the best priority first and seq keeps FIFO order among equal priorities, so
the first ``KEY`` (12) bytes, the record's *key*, are unique and order records: a host queue is a
heap or a sorted run of plain ``bytes``, compared in C, with no tuple or object per entry. The
flag says how the rest reads:

- *compact* (``PREFIXED`` or ``FULL``): the URL as UTF-8, without its host's ``scheme://netloc``
  prefix when it has it (the host queue keeps the prefix once);
- *packed* (``| PACKED``): a compact record followed by ``ESC`` and the codec's bytes for the
  entry's payload and features, as they are (``ESC`` never occurs in UTF-8 or surrogatepass
  output, so it ends the URL whatever the blob holds);
- *rich* (``RICH``): no URL; the entry is kept as an object by its host queue, under its seq.

A *block* is up to ``BLOCK`` sorted records deflated together behind the first one's key in
clear, so that a cold run's head is compared without inflating anything.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from itertools import accumulate

HEAD = struct.Struct(">QIi")  # order key, seq, version
head_of = HEAD.unpack_from  # record -> (order key, seq, version); bound once: other modules import it
ORDER = 8  # bytes of a record's order key
KEY = 12  # bytes of a record that order it (order key + seq)
FLAG = 16  # offset of the flag byte; record[KEY:FLAG] is the version
HEADER = 17  # record bytes before the URL
# flag: the URL without the host's prefix or in full; a rich entry; a packed one (a bit: 4 or 5)
PREFIXED, FULL, RICH, PACKED = 0, 1, 2, 4
FLAGS = [bytes((flag,)) for flag in range(PACKED + FULL + 1)]
ESC = b"\xfe"  # never in UTF-8 (nor in surrogatepass output): ends a packed record's URL
VERSION = struct.Struct(">i")  # record[KEY:FLAG]
_SEQ_VERSION = struct.Struct(">Ii")  # record[ORDER:FLAG]
_D = struct.Struct(">d")
_Q = struct.Struct(">Q")
_MAX = (1 << 64) - 1
_SIGN = 1 << 63

BLOCK = 16  # records per deflated block (at most 255: a one-byte count); bigger deflate better, cost more per read
_ZLEVEL = 1  # level 6 saves ~2% of the bytes for ~20% more time
_LENGTHS = [struct.Struct(f">{n}I") for n in range(BLOCK + 1)]  # lengths of a block's records past the header


def order_key(priority: float) -> int:
    """A uint64 that sorts ascending as ``priority`` sorts descending."""
    (u,) = _Q.unpack(_D.pack(priority))
    return (u ^ _MAX if u & _SIGN else u | _SIGN) ^ _MAX


def priority_of(key: int) -> float:
    """The priority ``order_key`` was given."""
    asc = key ^ _MAX
    (p,) = _D.unpack(_Q.pack(asc & ~_SIGN if asc & _SIGN else asc ^ _MAX))
    return p


def header(priority: float, seq: int, version: int) -> bytes:
    """A record's first ``FLAG`` bytes: order key, seq, version."""
    return HEAD.pack(order_key(priority), seq, version)


def record_priority(record: bytes) -> float:
    """The priority in a record's header."""
    return priority_of(_Q.unpack_from(record)[0])


def record_version(record: bytes) -> int:
    """The scorer version in a record's header."""
    return HEAD.unpack_from(record)[2]


def restamp(record: bytes, priority: float, seq: int, version: int) -> bytes:
    """``record`` under a new header: its URL (and blob) as they are, nothing decoded."""
    return header(priority, seq, version) + record[FLAG:]


def renumber(record: bytes, seq: int, version: int) -> bytes:
    """``record`` with its priority (order key), URL and blob as they are, under a new seq and version."""
    return record[:ORDER] + _SEQ_VERSION.pack(seq, version) + record[FLAG:]


def url_prefix(url: str) -> str:
    """A URL's ``scheme://netloc`` (the whole string when it has no path or is no URL)."""
    cut = url.find("/", url.find("://") + 3) if "://" in url else -1
    return url[:cut] if cut > 0 else url


def compact(priority: float, seq: int, version: int, url: str, prefix: str, blob: bytes | None) -> bytes:
    """A compact record (``blob`` None) or a packed one, for a host whose URLs start with ``prefix``."""
    head = HEAD.pack(order_key(priority), seq, version)
    if url.startswith(prefix):
        flag, url = PREFIXED, url[len(prefix):]
    else:
        flag = FULL
    if blob is None:
        return head + FLAGS[flag] + url.encode("utf-8", "surrogatepass")
    return head + FLAGS[flag | PACKED] + url.encode("utf-8", "surrogatepass") + ESC + blob


def read(record: bytes, prefix: str | None) -> tuple[str, bytes | None]:
    """A compact or packed record's URL (``prefix``, its host's, restored when it was cut off) and
    its codec bytes (None for a compact record), nothing unpacked."""
    flag = record[FLAG]
    packed = flag & PACKED
    cut = record.index(ESC, HEADER) if packed else len(record)
    url = record[HEADER:cut].decode("utf-8", "surrogatepass")
    if not flag & FULL:
        url = prefix + url
    return url, record[cut + 1:] if packed else None


def in_full(record: bytes, prefix: str) -> bytes:
    """``record`` with its URL in full, for a host whose prefix is not ``prefix``."""
    flag = record[FLAG]
    if flag & FULL:
        return record
    return record[:FLAG] + FLAGS[flag | FULL] + prefix.encode("utf-8", "surrogatepass") + record[HEADER:]


def by_version(records: Iterable[bytes], version: bytes) -> tuple[list[bytes], list[bytes]]:
    """``(fresh, stale)``: the records scored under ``version`` (as packed by ``VERSION``), and the others."""
    fresh: list[bytes] = []
    stale: list[bytes] = []
    for r in records:
        (fresh if r[KEY:FLAG] == version else stale).append(r)
    return fresh, stale


def pack_block(records: list[bytes]) -> bytes:
    """A block: the first record's key in clear, then the deflated records, column-wise (count,
    headers, the lengths of the rest, the rest: URLs and blobs) since like columns compress better
    together. Lengths, not separators: a blob may hold any byte, and is stored as it is."""
    tails = [r[HEADER:] for r in records]
    raw = (bytes((len(records),)) + b"".join([r[:HEADER] for r in records])
           + _LENGTHS[len(tails)].pack(*map(len, tails)) + b"".join(tails))
    return records[0][:KEY] + zlib.compress(raw, _ZLEVEL, -15)


def unpack_block(block: bytes) -> list[bytes]:
    """The records of a block, in their order."""
    raw = zlib.decompress(block[KEY:], -15)
    n = raw[0]
    heads = 1 + HEADER * n
    bounds = list(accumulate(_LENGTHS[n].unpack_from(raw, heads), initial=heads + 4 * n))
    return [raw[h:h + HEADER] + raw[a:b] for h, a, b in zip(range(1, heads, HEADER), bounds, bounds[1:])]


def read_stored(prefix: str, loose: list[bytes], blocks: list[bytes]) -> Iterator[tuple[bytes, str, bytes | None]]:
    """``(record, url, codec bytes)`` of each record a host stored (``Frontier.stored``): the
    blocks inflated, nothing unpacked."""
    for record in loose:
        yield record, *read(record, prefix)
    for block in blocks:
        for record in unpack_block(block):
            yield record, *read(record, prefix)
