"""RequestCodec: the scheduler's frontier entries (a Request and its feature vector) as bytes.

With it the frontier stores a queued URL as one packed record (a few hundred bytes, less once
deflated in a cold run) instead of a live Request, its meta dicts and two numpy arrays (~2.5 KB),
and hands back an equal Request and vector when the entry leaves (see ``focuscrawl.frontier``).

Blob = feature count (uint16, ``_NO_FEATURES`` for None) + int32 indices + float32 values + the
canonical parent URL (uint16 length, ``_NO_PARENT`` for a seed, UTF-8) + one pickled tuple for
the Request, in the spider-independent form of spills and checkpoints
(``Request.to_dict(spider=...)``): the fields a crawl's requests differ in, the other fields only
where they are not the default, no URL when it is the entry's (canonical) one, and the spider's
usual meta (its depth and LinkMeta, ``focuscrawl.meta.request_meta``) as values only (~90 bytes
less than a pickled dict).
Re-scoring reads only the features and the parent (``preview``): no Request is rebuilt for it.
A JOBDIR checkpoint keeps the frontier's packed records as they are; ``packed_rows`` reads them back
as the rows of the dict form its other entries have (``unpack_dict``: no spider needed).
"""

from __future__ import annotations

import pickle
import struct
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
from scrapy import Request

from focuscrawl.frontier import Entry, read_stored, record_priority
from focuscrawl.meta import DEPTH, LINK, LINK_FIELDS

_COUNT = struct.Struct("<H")
_NO_FEATURES = 0xFFFF
_NO_PARENT = 0xFFFF
_ROW = ("url", "callback", "errback", "meta", "priority", "dont_filter")  # in the pickled tuple, in this order
_DEFAULTS = {k: v for k, v in Request("http://localhost/").to_dict().items() if k not in _ROW}
_MISSING = object()
_LINK_SET = frozenset(LINK_FIELDS)  # a link meta with exactly these keys is packed as values, in LINK_FIELDS order


class RequestCodec:
    """``pack``/``unpack`` for the frontier. ``to_dict``/``from_dict`` are the scheduler's
    spider-aware conversions. An entry that cannot be packed (a robots.txt request, whose callbacks
    are the scheduler's, unpicklable meta, features that are not an int32/float32 vector) is left
    to the frontier as an object."""

    def __init__(self, to_dict: Callable[[Request], dict], from_dict: Callable[[dict], Request],
                 parent_of: Callable[[Request], str | None]):
        self.to_dict = to_dict
        self.from_dict = from_dict
        self.parent_of = parent_of  # the canonical URL of the page the request's link was on

    def pack(self, entry: Entry) -> bytes | None:
        vector = _pack_features(entry.features)
        if vector is None or not isinstance(entry.payload, Request):
            return None
        try:
            d = self.to_dict(entry.payload)
            extras = {k: v for k, v in d.items() if k not in _ROW and _DEFAULTS.get(k, _MISSING) != v}
            parent = self.parent_of(entry.payload)
            row = (None if d["url"] == entry.url else d["url"], d["callback"], d["errback"],
                   _pack_meta(d["meta"], parent), d["priority"], d["dont_filter"], extras or None)
            parent_bytes = b"" if parent is None else parent.encode("utf-8", "surrogatepass")
            if len(parent_bytes) >= _NO_PARENT:
                return None
            head = _COUNT.pack(_NO_PARENT if parent is None else len(parent_bytes)) + parent_bytes
            return vector + head + pickle.dumps(row, protocol=5)
        except Exception:  # noqa: BLE001 - whatever cannot be packed stays an object in the frontier
            return None

    def preview(self, url: str, blob: bytes) -> tuple[LinkPreview, Any]:
        """What re-scoring reads, without rebuilding the Request: ``(LinkPreview(parent), features)``
        (the features as read-only views of the blob: re-scoring reads them, keeps nothing)."""
        features, parent, _ = _unpack_link(blob, copy=False)
        return LinkPreview(parent), features

    @staticmethod
    def link_part(blob: bytes) -> bytes:
        """The first bytes of a blob, all that ``preview`` and ``links`` read (features and parent,
        not the Request): what a shared crawl's worker keeps of the records it may re-score."""
        (n,) = _COUNT.unpack_from(blob)
        start = _COUNT.size + (0 if n == _NO_FEATURES else 8 * n)
        return blob[:_read_parent(blob, start)[1]]

    @staticmethod
    def links(blobs: Iterable[bytes]) -> tuple[list[str | None], list[int | None], np.ndarray, np.ndarray]:
        """What re-scoring reads of many blobs, in columns: their parents, their feature counts
        (None: no features) and all their features' indices and values joined in blob order (two
        arrays for the lot: no Request, preview or small array per blob)."""
        parents, counts, idx, val = [], [], [], []
        for blob in blobs:
            (n,) = _COUNT.unpack_from(blob)
            start = _COUNT.size
            if n == _NO_FEATURES:
                counts.append(None)
            else:
                counts.append(n)
                idx.append(blob[start:start + 4 * n])
                val.append(blob[start + 4 * n:start + 8 * n])
                start += 8 * n
            parents.append(_read_parent(blob, start)[0])
        return parents, counts, np.frombuffer(b"".join(idx), np.int32), np.frombuffer(b"".join(val), np.float32)

    def unpack(self, url: str, blob: bytes) -> tuple[Request, Any]:
        d, features = unpack_dict(url, blob)
        return self.from_dict(d), features


def unpack_dict(url: str, blob: bytes) -> tuple[dict, Any]:
    """A blob's Request in the spider-independent form ``to_dict`` gave ``pack``, and its features:
    what a checkpoint's reader needs, with no spider at hand."""
    features, parent, end = _unpack_link(blob)
    row_url, callback, errback, meta, priority, dont_filter, extras = pickle.loads(memoryview(blob)[end:])
    d = {"url": url if row_url is None else row_url, "callback": callback, "errback": errback,
         "meta": _unpack_meta(meta, parent), "priority": priority, "dont_filter": dont_filter, **(extras or {})}
    return d, features


def packed_row(host: str, record: bytes, url: str, blob: bytes) -> tuple[str, float, dict, Any]:
    """A packed frontier record as a checkpoint row of the dict form: (host, priority, request dict,
    features)."""
    return (host, record_priority(record), *unpack_dict(url, blob))


def packed_rows(stored: Iterable[tuple]) -> Iterator[tuple[str, float, dict, Any]]:
    """The packed records a checkpoint holds as they were stored (``Frontier.stored``), as rows of
    the dict form (``packed_row``), the way a checkpoint held every entry before them."""
    for host, prefix, loose, blocks in stored:
        for record, url, blob in read_stored(prefix, loose, blocks):
            yield packed_row(host, record, url, blob)


class LinkPreview(NamedTuple):
    """A packed entry as re-scoring sees it: the canonical URL of the page its link was on."""

    parent: str | None


def _pack_features(features) -> bytes | None:
    if features is None:
        return _COUNT.pack(_NO_FEATURES)
    if not (isinstance(features, tuple) and len(features) == 2):
        return None
    idx, val = features
    if not (isinstance(idx, np.ndarray) and isinstance(val, np.ndarray) and idx.dtype == np.int32
            and val.dtype == np.float32 and idx.ndim == val.ndim == 1 and len(idx) == len(val) < _NO_FEATURES):
        return None
    return _COUNT.pack(len(idx)) + idx.tobytes() + val.tobytes()


def _unpack_link(blob: bytes, copy: bool = True) -> tuple[Any, str | None, int]:
    """The features (new arrays that own their memory, or with ``copy=False`` read-only views of
    ``blob``), the canonical parent URL, and where the Request's bytes start (one call: re-scoring
    reads the first two of every queued URL)."""
    (n,) = _COUNT.unpack_from(blob)
    start = _COUNT.size
    if n == _NO_FEATURES:
        features = None
    else:
        idx = np.frombuffer(blob, np.int32, n, start)
        val = np.frombuffer(blob, np.float32, n, start + 4 * n)
        features = (idx.copy(), val.copy()) if copy else (idx, val)
        start += 8 * n
    return (features, *_read_parent(blob, start))


def _read_parent(blob: bytes, start: int) -> tuple[str | None, int]:
    """The canonical parent URL stored at ``start``, and where the Request's bytes start."""
    (n,) = _COUNT.unpack_from(blob, start)
    start += _COUNT.size
    if n == _NO_PARENT:
        return None, start
    return bytes(blob[start:start + n]).decode("utf-8", "surrogatepass"), start + n


_SAME_AS_PARENT = ...  # in a packed meta tuple: parent_url is the blob's (canonical) parent URL
_PARENT_AT = 1 + LINK_FIELDS.index("parent_url")


def _pack_meta(meta: dict, parent: str | None) -> tuple | dict:
    """The spider's link meta ``{DEPTH, LINK: {LINK_FIELDS}}`` as a tuple of values (its
    parent_url not repeated when it is already canonical: the blob holds that); other meta as it
    is (a dict, so the two never mix up)."""
    link = meta.get(LINK)
    if len(meta) == 2 and DEPTH in meta and type(link) is dict and link.keys() == _LINK_SET:
        values = [meta[DEPTH], *[link[k] for k in LINK_FIELDS]]
        if parent is not None and values[_PARENT_AT] == parent:
            values[_PARENT_AT] = _SAME_AS_PARENT
        return tuple(values)
    return meta


def _unpack_meta(meta: tuple | dict, parent: str | None) -> dict:
    if type(meta) is tuple:
        link = dict(zip(LINK_FIELDS, meta[1:]))
        if link["parent_url"] is _SAME_AS_PARENT:
            link["parent_url"] = parent
        return {DEPTH: meta[0], LINK: link}
    return meta

