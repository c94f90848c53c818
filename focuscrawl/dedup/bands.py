"""A compact in-memory LSH index of MinHash signatures: which stored pages share a band with a page.

datasketch's ``MinHashLSH`` with its in-memory storage keeps, for every page, a bytes key and a
Python ``set`` in each band's table, and the page's ``MinHash`` object besides: about 5 KB a page
(tracemalloc on the soak web's texts), the largest state a long crawl grows. Here a page is a row
number: its signature is one row of ``uint32`` blocks (MinHash values are below 2**32). Each band's
table is two sorted arrays, the hashes of the band's values (int64) and their rows (uint32), found
by binary search: 12 bytes a page a band (a band's key is ``lsh.band_key``, the one every store
uses). Pages added since the arrays were last built wait in a
small dict per band (a Python dict entry costs ~80 bytes), merged into the arrays once they are an
eighth of them, so a page costs about 0.7 KB at 128 permutations instead of 1.4 KB. An entry a
replaced signature leaves in the arrays is checked against the row's signature and passed over; a
hash collision between two different bands only adds a candidate, which the caller verifies on
the signatures anyway.

``MemoryBandStore`` is the ``lsh.BandStore`` of a process without a crawl store: a ``BandIndex``
and its pages' keys.
"""

from __future__ import annotations

import numpy as np

from focuscrawl.dedup.lsh import Candidate, NearParameters, band_key, band_keys

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
        return band_keys(signature, self.bands, self.rows)

    def _band_key(self, row: int, band: int) -> int:
        return band_key(self._signature(row), band, self.rows)

    def keys_of(self, hashvalues) -> list[int]:
        """The band keys of a signature, for ``candidates``, ``add`` and ``replace`` to share."""
        return self._band_keys(self._as_row(hashvalues))

    @staticmethod
    def _as_row(hashvalues) -> np.ndarray:
        values = np.asarray(hashvalues)
        if values.size and int(values.max()) >= 1 << 32:
            raise ValueError("MinHash values must be below 2**32 to be stored as uint32")
        return values.astype("<u4")

    def candidates(self, hashvalues, keys: list[int] | None = None) -> set[int]:
        """Rows sharing at least one band with this signature (whose band ``keys`` may be given)."""
        found: set[int] = set()
        if keys is None:
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

    def signature(self, row: int) -> np.ndarray:
        """The signature of row ``row`` (a view: copy it to keep it)."""
        return self._signature(row)

    def add(self, hashvalues, keys: list[int] | None = None) -> int:
        """Store a signature (whose band ``keys`` may be given); returns its row number."""
        row = self._count
        if row == len(self._blocks) * BLOCK_ROWS:
            self._blocks.append(np.zeros((BLOCK_ROWS, self.num_perm), dtype="<u4"))
        self._signature(row)[:] = self._as_row(hashvalues)
        self._file(row, keys)
        self._count += 1
        return row

    def replace(self, row: int, hashvalues, keys: list[int] | None = None) -> None:
        """Give row ``row`` a new signature (a page fetched again with changed content)."""
        self._unfile(row)
        self._replaced.add(row)
        self._signature(row)[:] = self._as_row(hashvalues)
        self._file(row, keys)

    def _file(self, row: int, keys: list[int] | None = None) -> None:
        for key in keys if keys is not None else self._band_keys(self._signature(row)):
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


class MemoryBandStore:
    """``lsh.BandStore`` in this process: a ``BandIndex`` (a page's order is its row) and the
    pages' keys."""

    def __init__(self, parameters: NearParameters) -> None:
        self.parameters = parameters
        self._recorded: str | None = None
        self.clear()

    def clear(self) -> None:
        self._index = BandIndex(self.parameters.num_perm, self.parameters.bands, self.parameters.rows)
        self._rows: dict[str, int] = {}  # key -> its signature's row
        self._keys: list[str] = []  # row -> key

    def __len__(self) -> int:
        return len(self._index)

    def _candidates(self, rows) -> list[Candidate]:
        return [(row, self._keys[row], self._index.signature(row).tobytes()) for row in sorted(rows)]

    def candidates(self, signature: np.ndarray) -> list[Candidate]:
        return self._candidates(self._index.candidates(signature))

    def find_or_keep(self, key: str, signature: np.ndarray) -> list[Candidate]:
        keys = self._index.keys_of(signature)
        rows = self._index.candidates(signature, keys)
        rows.discard(self._rows.get(key))
        if rows:
            return self._candidates(rows)
        self._keep(key, signature, keys)
        return []

    def keep(self, key: str, signature: np.ndarray) -> None:
        self._keep(key, signature, self._index.keys_of(signature))

    def _keep(self, key: str, signature: np.ndarray, keys: list[int]) -> None:
        own = self._rows.get(key)
        if own is not None:
            self._index.replace(own, signature, keys)
        else:
            self._rows[key] = self._index.add(signature, keys)
            self._keys.append(key)

    def claim_parameters(self, text: str) -> str | None:
        theirs = self._recorded
        if theirs is None:
            self._recorded = text
        return theirs

    def record_parameters(self, text: str) -> None:
        self._recorded = text


__all__ = ["BandIndex", "MemoryBandStore"]
