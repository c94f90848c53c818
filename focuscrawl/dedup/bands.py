"""A compact in-memory LSH index of MinHash signatures: which stored pages share a band with a page.

datasketch's ``MinHashLSH`` with its in-memory storage keeps, for every page, a bytes key and a
Python ``set`` in each band's table, and the page's ``MinHash`` object besides: about 5 KB a page
(tracemalloc on the soak web's texts), the largest state a long crawl grows. Here a page is a row
number: its signature is one row of ``uint32`` blocks (MinHash values are below 2**32). Each band's
table is two sorted arrays, the hashes of the band's values (int64) and their rows (uint32), found
by binary search: 12 bytes a page a band. Pages added since the arrays were last built wait in a
small dict per band (a Python dict entry costs ~80 bytes), merged into the arrays once they are an
eighth of them, so a page costs about 0.7 KB at 128 permutations instead of 1.4 KB. An entry a
replaced signature leaves in the arrays is checked against the row's signature and passed over; a
hash collision between two different bands only adds a candidate, which the caller verifies on
the signatures anyway.
"""

from __future__ import annotations

import numpy as np

#: Signatures a block of the signature store holds: the store grows a block at a time (64 KiB at
#: 128 permutations), never by copying what it holds.
BLOCK_ROWS = 128
#: Band entries that wait in the dicts before the sorted arrays are rebuilt, at least; beyond, an
#: eighth of the entries in the arrays (rebuilding costs a sort: amortised, a few per page)
MERGE_AT_LEAST = 4096


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
        # every band's entries in one table, a band's hash mixed with its number: the recent
        # entries (hash -> row, or a list of rows), then the sorted ones
        self._recent: dict[int, int | list[int]] = {}
        self._recent_entries = 0
        self._replaced: set[int] = set()  # rows whose signature changed since the arrays were built
        self._keys = np.empty(0, dtype=np.int64)
        self._rows = np.empty(0, dtype=np.uint32)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def _band_keys(self, signature: np.ndarray) -> list[int]:
        r = self.rows
        return [hash((b, signature[b * r:(b + 1) * r].tobytes())) for b in range(self.bands)]

    def _band_key(self, row: int, band: int) -> int:
        r = self.rows
        return hash((band, self._signature(row)[band * r:(band + 1) * r].tobytes()))

    @staticmethod
    def _as_row(hashvalues) -> np.ndarray:
        values = np.asarray(hashvalues)
        if values.size and int(values.max()) >= 1 << 32:
            raise ValueError("MinHash values must be below 2**32 to be stored as uint32")
        return values.astype(np.uint32)

    def candidates(self, hashvalues) -> set[int]:
        """Rows sharing at least one band with this signature."""
        found: set[int] = set()
        keys = self._band_keys(self._as_row(hashvalues))
        for key in keys:
            bucket = self._recent.get(key)
            if isinstance(bucket, int):
                found.add(bucket)
            elif bucket is not None:
                found.update(bucket)
        if len(self._keys):
            query = np.array(keys, dtype=np.int64)
            starts = np.searchsorted(self._keys, query, side="left")
            ends = np.searchsorted(self._keys, query, side="right")
            # an entry left by a replaced signature is not the row's band any more (only a row
            # replaced since the arrays were built can have one)
            replaced = self._replaced
            for band in np.flatnonzero(ends > starts):
                rows = map(int, self._rows[starts[band]:ends[band]])
                found.update(row for row in rows
                             if row not in replaced or self._band_key(row, int(band)) == keys[band])
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
        self._replaced.add(row)
        self._signature(row)[:] = self._as_row(hashvalues)
        self._file(row)

    def _file(self, row: int) -> None:
        for key in self._band_keys(self._signature(row)):
            bucket = self._recent.get(key)
            if bucket is None:
                self._recent[key] = row
            elif isinstance(bucket, int):
                self._recent[key] = [bucket, row]
            else:
                bucket.append(row)
        self._recent_entries += self.bands
        if self._recent_entries >= max(MERGE_AT_LEAST, len(self._keys) // 8):
            self._merge()

    def _unfile(self, row: int) -> None:
        """Take the row out of the recent entries; its entries in the sorted arrays stay until
        they are passed over (``candidates``) and dropped (``_merge``: ``replace`` files every
        band of the new signature among the recent entries)."""
        for key in self._band_keys(self._signature(row)):
            bucket = self._recent.get(key)
            if bucket == row:
                del self._recent[key]
                self._recent_entries -= 1
            elif isinstance(bucket, list) and row in bucket:
                bucket.remove(row)
                self._recent_entries -= 1
                if len(bucket) == 1:
                    self._recent[key] = bucket[0]

    def _merge(self) -> None:
        """Move the recent entries into the sorted arrays."""
        keys, rows = self._keys, self._rows
        if self._replaced:  # a replaced row's current entries are all among the recent ones
            kept = ~np.isin(rows, np.fromiter(self._replaced, np.uint32, len(self._replaced)))
            keys, rows = keys[kept], rows[kept]
        pairs = [(key, row) for key, bucket in self._recent.items()
                 for row in ((bucket,) if isinstance(bucket, int) else bucket)]
        keys = np.concatenate([keys, np.fromiter((k for k, _ in pairs), np.int64, len(pairs))])
        rows = np.concatenate([rows, np.fromiter((r for _, r in pairs), np.uint32, len(pairs))])
        order = np.argsort(keys, kind="stable")
        self._keys, self._rows = keys[order], rows[order]
        self._recent.clear()
        self._recent_entries = 0
        self._replaced.clear()


__all__ = ["BandIndex"]
