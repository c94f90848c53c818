"""A compact in-memory LSH index of MinHash signatures: which stored pages share a band with a page.

datasketch's ``MinHashLSH`` with its in-memory storage keeps, for every page, a bytes key and a
Python ``set`` in each band's table, and the page's ``MinHash`` object besides: about 5 KB a page
(tracemalloc on the soak web's texts), the largest state a long crawl grows. Here a page is a row
number: its signature is one row of ``uint32`` blocks (MinHash values are below 2**32),
and each band's table maps the hash of the band's values to a row number, or to a list of them for
the rare bucket that holds several (~1.4 KB a page). A hash collision between two different bands
only adds a candidate, which the caller verifies on the signatures anyway.
"""

from __future__ import annotations

import numpy as np

#: Signatures a block of the signature store holds: the store grows a block at a time (64 KiB at
#: 128 permutations), never by copying what it holds.
BLOCK_ROWS = 128


class BandIndex:
    """Signatures of ``num_perm`` values in ``bands`` bands of ``rows`` values, addressed by row
    number (0, 1, ... in the order they were added)."""

    def __init__(self, num_perm: int, bands: int, rows: int) -> None:
        if bands * rows > num_perm:
            raise ValueError(f"{bands} bands of {rows} rows need at least {bands * rows} permutations, got {num_perm}")
        self.num_perm = num_perm
        self.bands = bands
        self.rows = rows
        self._blocks: list[np.ndarray] = []
        self._tables: list[dict[int, int | list[int]]] = [{} for _ in range(bands)]
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def _band_keys(self, signature: np.ndarray) -> list[int]:
        r = self.rows
        return [hash(signature[b * r:(b + 1) * r].tobytes()) for b in range(self.bands)]

    @staticmethod
    def _as_row(hashvalues) -> np.ndarray:
        values = np.asarray(hashvalues)
        if values.size and int(values.max()) >= 1 << 32:
            raise ValueError("MinHash values must be below 2**32 to be stored as uint32")
        return values.astype(np.uint32)

    def candidates(self, hashvalues) -> set[int]:
        """Rows sharing at least one band with this signature."""
        found: set[int] = set()
        for table, key in zip(self._tables, self._band_keys(self._as_row(hashvalues)), strict=True):
            bucket = table.get(key)
            if bucket is None:
                continue
            if isinstance(bucket, int):
                found.add(bucket)
            else:
                found.update(bucket)
        return found

    def similarities(self, hashvalues, rows) -> np.ndarray:
        """Estimated Jaccard similarity of this signature with each of ``rows`` (datasketch's
        estimate: the share of equal values)."""
        signature = self._as_row(hashvalues)
        stored = np.stack([self._signature(row) for row in rows]) if rows else np.empty((0, self.num_perm), np.uint32)
        return (stored == signature).mean(axis=1)

    def _signature(self, row: int) -> np.ndarray:
        return self._blocks[row // BLOCK_ROWS][row % BLOCK_ROWS]

    def add(self, hashvalues) -> int:
        """Store a signature; returns its row number."""
        row = self._count
        if row == len(self._blocks) * BLOCK_ROWS:
            self._blocks.append(np.zeros((BLOCK_ROWS, self.num_perm), dtype=np.uint32))
        self._signature(row)[:] = self._as_row(hashvalues)
        self._file(row)
        self._count += 1
        return row

    def replace(self, row: int, hashvalues) -> None:
        """Give row ``row`` a new signature (a page fetched again with changed content)."""
        self._unfile(row)
        self._signature(row)[:] = self._as_row(hashvalues)
        self._file(row)

    def _file(self, row: int) -> None:
        for table, key in zip(self._tables, self._band_keys(self._signature(row)), strict=True):
            bucket = table.get(key)
            if bucket is None:
                table[key] = row
            elif isinstance(bucket, int):
                table[key] = [bucket, row]
            else:
                bucket.append(row)

    def _unfile(self, row: int) -> None:
        for table, key in zip(self._tables, self._band_keys(self._signature(row)), strict=True):
            bucket = table.get(key)
            if bucket == row:
                del table[key]
            elif isinstance(bucket, list) and row in bucket:
                bucket.remove(row)
                if len(bucket) == 1:
                    table[key] = bucket[0]


__all__ = ["BandIndex"]
