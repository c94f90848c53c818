"""The seen set: has this canonical URL been scheduled before?

64-bit fingerprints in a log-structured set: a small Python set absorbs inserts and is merged,
when it grows past a fraction of the whole, into one sorted numpy array that lookups binary
search. Memory is about 8 bytes per URL plus the buffer (about 80 MB at 10^7 URLs), where a
Python set of strings would need over a gigabyte. False positives need a 64-bit collision
(n^2 / 2^65: about 3 in a million at 10^7 URLs).
"""

from __future__ import annotations

import hashlib

import numpy as np


def url_fingerprint(canonical_url: str) -> int:
    return int.from_bytes(hashlib.blake2b(canonical_url.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                          "little")


class SeenSet:
    def __init__(self, min_buffer: int = 65536, buffer_fraction: float = 0.125):
        self._sorted = np.empty(0, dtype=np.uint64)
        self._buffer: set[int] = set()
        self.min_buffer = min_buffer
        self.buffer_fraction = buffer_fraction

    def __len__(self) -> int:
        return len(self._sorted) + len(self._buffer)

    def _in_sorted(self, fp: int) -> bool:
        arr = self._sorted
        if not len(arr):
            return False
        i = int(np.searchsorted(arr, np.uint64(fp)))
        return i < len(arr) and int(arr[i]) == fp

    def contains_fingerprint(self, fp: int) -> bool:
        return fp in self._buffer or self._in_sorted(fp)

    def __contains__(self, canonical_url: str) -> bool:
        return self.contains_fingerprint(url_fingerprint(canonical_url))

    def add(self, canonical_url: str) -> bool:
        """Add a URL; True if it was new."""
        return self.add_fingerprint(url_fingerprint(canonical_url))

    def add_fingerprint(self, fp: int) -> bool:
        if self.contains_fingerprint(fp):
            return False
        self._buffer.add(fp)
        if len(self._buffer) >= max(self.min_buffer, int(len(self._sorted) * self.buffer_fraction)):
            self._merge()
        return True

    def _merge(self) -> None:
        if self._buffer:
            fresh = np.fromiter(self._buffer, dtype=np.uint64, count=len(self._buffer))
            self._sorted = np.union1d(self._sorted, fresh)
            self._buffer = set()

    def memory_bytes(self) -> int:
        return int(self._sorted.nbytes) + len(self._buffer) * 60

    def __getstate__(self):
        self._merge()
        return {"sorted": self._sorted, "min_buffer": self.min_buffer, "fraction": self.buffer_fraction}

    def __setstate__(self, state):
        self._sorted = state["sorted"]
        self._buffer = set()
        self.min_buffer, self.buffer_fraction = state["min_buffer"], state["fraction"]
