"""The wire form of a shared learner's batch or snapshot (``learner_sync``): a learner's delta
(``focuscrawl.learning.delta.LearnerDelta``) as a JSON header (the counts' keys and changes, small
sums, the sender's origin and sequence number) and numpy arrays, bytes after bytes. A snapshot is
a batch to an empty learner, its header holding also the stream entry it is as of."""

from __future__ import annotations

import json
import struct

import numpy as np

from focuscrawl.learning.delta import TABLES, LearnerDelta

#: the batch format; a batch of another is skipped with a warning (a worker of another release)
FORMAT = 1

#: (name on the wire, the delta's field, dtype): the arrays after the header, in this order
ARRAYS = (("idx", "indices", np.uint32), ("w_delta", "weights", np.float64),
          ("g2_delta", "squared_gradients", np.float32), ("t_positive", "word_positive", np.float32),
          ("t_total", "word_total", np.float32), ("t_words", "words_marked", np.uint32))
_HEAD = struct.Struct("<I")


def encode(delta: LearnerDelta, **header) -> bytes:
    """The batch of ``delta``; ``header``: what else the reader needs (origin ``o``, sequence
    number ``s``; a snapshot's stream entry ``id``, ``n`` and ``seen``)."""
    if delta.observations:
        header["obs"] = delta.observations
    for name in TABLES:
        if name in delta.counts:
            header[name] = [list(part) for part in delta.counts[name]]
    if delta.credit:
        owed = delta.credit
        header["credit"] = [list(owed), [change for change, _ in owed.values()], [hops for _, hops in owed.values()]]
    if delta.new_hosts is not None:
        header["new"] = list(delta.new_hosts)
    if delta.links is not None:
        header["links"] = list(delta.links)
    parts, sizes = [], []
    for _, name, dtype in ARRAYS:
        array = np.ascontiguousarray(getattr(delta, name), dtype=dtype)
        parts.append(array.tobytes())
        sizes.append(len(array))
    head = json.dumps({**header, "v": FORMAT, "sizes": sizes}, separators=(",", ":")).encode()
    return _HEAD.pack(len(head)) + head + b"".join(parts)


def decode(blob: bytes) -> tuple[LearnerDelta, dict] | None:
    """The batch's delta and header; None for a batch of another format."""
    (size,) = _HEAD.unpack_from(blob)
    header = json.loads(blob[_HEAD.size:_HEAD.size + size])
    if header.get("v") != FORMAT:
        return None
    offset = _HEAD.size + size
    delta = LearnerDelta(observations=header.get("obs", 0))
    for (_, name, dtype), count in zip(ARRAYS, header["sizes"]):
        setattr(delta, name, np.frombuffer(blob, dtype=dtype, count=count, offset=offset))
        offset += count * np.dtype(dtype).itemsize
    for name in TABLES:
        if name in header:
            delta.counts[name] = tuple(header[name])
    if "credit" in header:
        delta.credit = {url: (change, hops) for url, change, hops in zip(*header["credit"])}
    delta.new_hosts = header.get("new")
    if "links" in header:
        delta.links = tuple(header["links"])
    return delta, header


__all__ = ["FORMAT", "decode", "encode"]
