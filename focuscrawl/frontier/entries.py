"""How what the frontier holds (``entry.Entry``) becomes a record of a host's queue and back.

An entry with no payload and no features (*compact*) is stored only as its record and comes back
from the frontier as an equal ``Entry`` (same priority, url, version), not the same object. An
entry with a payload or features is *packed* when the frontier has a ``Codec`` that packs it: its
codec bytes ride behind its URL in the record, which goes cold like any compact record, and it
comes back as an equal ``Entry`` whose payload and features the codec unpacked (new objects).
Otherwise (no codec, or the codec declines it) the entry is *rich*: its host queue keeps the
object itself (under the record's seq) behind a record with no URL, and hands back that object.
A crawler's entry costs ~2.5 KB as objects (a request, its meta, a feature vector), a few hundred
bytes packed (less once deflated in a cold run).
"""

from __future__ import annotations

import sys

from focuscrawl.frontier.entry import Codec, Entry, Unpack
from focuscrawl.frontier.records import FLAG, FLAGS, RICH, compact, head_of, header, priority_of, read, url_prefix
from focuscrawl.frontier.storage import HostQueue


def rich_record(queue: HostQueue, entry: Entry, seq: int, head: bytes) -> bytes:
    """Have ``queue`` keep ``entry`` as an object: its record (``head`` and the rich flag) has no URL."""
    queue.keep(seq, entry)
    return head + FLAGS[RICH]


def encode(entry: Entry, seq: int, codec: Codec | None, queue: HostQueue) -> bytes:
    """The record of ``entry`` under ``seq`` in ``queue`` (whose URL prefix the first compact
    entry sets): compact, packed by ``codec``, or rich (the queue keeps the object)."""
    blob = None
    if entry.payload is not None or entry.features is not None:
        blob = codec.pack(entry) if codec is not None else None
        if blob is None:
            return rich_record(queue, entry, seq, header(entry.priority, seq, entry.version))
    prefix = queue.prefix
    if prefix is None:
        prefix = queue.prefix = sys.intern(url_prefix(entry.url))
    return compact(entry.priority, seq, entry.version, entry.url, prefix, blob)


def decode(record: bytes, queue: HostQueue, unpack: Unpack | None, forget: bool = False) -> Entry:
    """The entry of a record of ``queue``; a packed one's payload and features by ``unpack`` (the
    codec's ``unpack``, or its ``preview`` for re-scoring); a rich one as the object the queue
    keeps (and then no longer keeps, when ``forget``)."""
    key, seq, version = head_of(record)
    if record[FLAG] == RICH:
        return queue.kept(seq, forget)
    url, blob = read(record, queue.prefix)
    if blob is None:
        return Entry(priority_of(key), url, None, None, version)
    payload, features = unpack(url, blob)
    return Entry(priority_of(key), url, payload, features, version)


__all__ = ["decode", "encode", "rich_record"]
