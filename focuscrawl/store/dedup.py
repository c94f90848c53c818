"""A crawl's duplicate indexes kept in its crawl store, beside its pages.

The same answers as the in-process indexes of ``focuscrawl.dedup.fingerprints`` (the tests hold
them to it), with nothing a page in memory: a long crawl's largest state was its indexes (a
signature of ``num_perm`` 32-bit values, its LSH band entries, its URL and content hash: about
1.2 KB a page at 128 permutations, 1.2 GB for a million pages), which grew the crawler's memory
by a tenth in twenty minutes (``bench/soak.py``). On disk they cost ~0.7 KB a page, SQLite's page
cache (bounded) and ~0.17 ms a page more than in memory (``bench/dedup.py``).

They are written through the store's connection, so what they learn from a page is committed
with the page (``CrawlStore.add_page`` commits both): a crawl killed at any moment and resumed
finds its indexes as its stored pages left them, without reading those pages again. Each
crawl's entries are its own (a new crawl into the store starts with empty indexes). A crawl
whose pages were stored without their indexes (by an older focuscrawl), or with other
near-duplicate parameters, is told so (``kept`` False) and is rebuilt from its pages by the caller.

The near index is the one algorithm of ``fingerprints.MinHashIndex`` over ``SqliteBandStore``,
the ``lsh.BandStore`` of one crawl of the store.

Tables (created when first used; a store without them reads as before):
- ``dedup_exact``: (crawl, name, content hash) -> the first URL; ``name`` tells the exact index
  from the near index's fall-back for texts shorter than a shingle (as the Redis indexes do).
- ``dedup_near``: a kept page's signature (``num_perm`` little-endian uint32); its id orders the
  pages, for "the earliest of equals".
- ``dedup_bands``: (crawl, band key, page id), one row a band, the band key ``lsh.band_key`` (a
  deterministic 64-bit hash of the band's number and values).
- ``dedup_parameters``: the threshold, permutations, shingle size and MinHash scheme a crawl's
  signatures were made with.
"""

from __future__ import annotations

import functools
import sqlite3

import numpy as np
from datasketch import MinHash

from focuscrawl.config import DEFAULTS
from focuscrawl.dedup.fingerprints import MinHashIndex
from focuscrawl.dedup.lsh import Candidate, NearParameters
from focuscrawl.store.sqlite import StoreError

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS dedup_exact (crawl INTEGER NOT NULL, name TEXT NOT NULL, digest TEXT NOT NULL, "
    "url TEXT NOT NULL, PRIMARY KEY (crawl, name, digest)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS dedup_near (id INTEGER PRIMARY KEY AUTOINCREMENT, crawl INTEGER NOT NULL, "
    "url TEXT NOT NULL, signature BLOB NOT NULL)",
    "CREATE UNIQUE INDEX IF NOT EXISTS dedup_near_url ON dedup_near (crawl, url)",
    "CREATE TABLE IF NOT EXISTS dedup_bands (crawl INTEGER NOT NULL, band INTEGER NOT NULL, page INTEGER NOT NULL, "
    "PRIMARY KEY (crawl, band, page)) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS dedup_parameters (crawl INTEGER PRIMARY KEY, parameters TEXT NOT NULL)",
)


def _store_errors(method):
    """A SQLite error inside becomes a StoreError (a full disk, a damaged file): one kind of error
    for whatever the crawl store cannot do."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"the crawl store's duplicate index failed ({exc})") from exc
    return wrapper


@_store_errors
def create_tables(conn: sqlite3.Connection) -> None:
    """The duplicate tables, where the store has none yet."""
    for statement in _SCHEMA:
        conn.execute(statement)


class StoreExactIndex:
    """content hash -> the URL that first had it, in one crawl of the store: the interface of
    ``ExactDuplicateIndex``."""

    def __init__(self, conn: sqlite3.Connection, crawl: int, name: str = "exact") -> None:
        create_tables(conn)
        self.conn, self.crawl, self.name = conn, int(crawl), name

    @_store_errors
    def find_or_add(self, key: str, digest: str) -> str | None:
        """The key of an earlier page with this hash, or None after remembering this one.

        A key is never a duplicate of itself, so re-fetching a page is not a duplicate."""
        row = self.conn.execute("SELECT url FROM dedup_exact WHERE crawl = ? AND name = ? AND digest = ?",
                                (self.crawl, self.name, digest)).fetchone()
        if row is None:
            self.conn.execute("INSERT INTO dedup_exact (crawl, name, digest, url) VALUES (?, ?, ?, ?)",
                              (self.crawl, self.name, digest, key))
            return None
        return None if row[0] == key else row[0]

    @_store_errors
    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM dedup_exact WHERE crawl = ? AND name = ?",
                                 (self.crawl, self.name)).fetchone()[0]

    @_store_errors
    def __contains__(self, digest: str) -> bool:
        return self.conn.execute("SELECT 1 FROM dedup_exact WHERE crawl = ? AND name = ? AND digest = ?",
                                 (self.crawl, self.name, digest)).fetchone() is not None

    @_store_errors
    def clear(self) -> None:
        self.conn.execute("DELETE FROM dedup_exact WHERE crawl = ? AND name = ?", (self.crawl, self.name))


class SqliteBandStore:
    """``lsh.BandStore`` in one crawl of the crawl store: a page's order is its ``dedup_near`` id."""

    def __init__(self, conn: sqlite3.Connection, crawl: int, parameters: NearParameters) -> None:
        create_tables(conn)
        self.conn, self.crawl, self.parameters = conn, int(crawl), parameters

    @_store_errors
    def claim_parameters(self, text: str) -> str | None:
        row = self.conn.execute("SELECT parameters FROM dedup_parameters WHERE crawl = ?", (self.crawl,)).fetchone()
        if row is None:
            self.record_parameters(text)
            return None
        return row[0]

    @_store_errors
    def record_parameters(self, text: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO dedup_parameters (crawl, parameters) VALUES (?, ?)",
                          (self.crawl, text))

    @_store_errors
    def clear(self) -> None:
        self.conn.execute("DELETE FROM dedup_bands WHERE crawl = ?", (self.crawl,))
        self.conn.execute("DELETE FROM dedup_near WHERE crawl = ?", (self.crawl,))

    @_store_errors
    def __len__(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM dedup_near WHERE crawl = ?", (self.crawl,)).fetchone()[0]

    def _candidates(self, keys: list[int]) -> list[Candidate]:
        marks = ", ".join("?" * len(keys))
        return self.conn.execute(
            f"SELECT n.id, n.url, n.signature FROM dedup_near n WHERE n.id IN "
            f"(SELECT page FROM dedup_bands WHERE crawl = ? AND band IN ({marks})) ORDER BY n.id",
            (self.crawl, *keys)).fetchall()

    @_store_errors
    def candidates(self, signature: np.ndarray) -> list[Candidate]:
        return self._candidates(self.parameters.band_keys(signature))

    @_store_errors
    def find_or_keep(self, key: str, signature: np.ndarray) -> list[Candidate]:
        keys = self.parameters.band_keys(signature)
        found = [candidate for candidate in self._candidates(keys) if candidate[1] != key]
        if not found:
            self._keep(key, signature, keys)
        return found

    @_store_errors
    def keep(self, key: str, signature: np.ndarray) -> None:
        self._keep(key, signature, self.parameters.band_keys(signature))

    def _keep(self, key: str, signature: np.ndarray, keys: list[int]) -> None:
        own = self.conn.execute("SELECT id, signature FROM dedup_near WHERE crawl = ? AND url = ?",
                                (self.crawl, key)).fetchone()
        if own is not None:  # a re-fetch with changed content replaces the old signature
            page = own[0]
            old = np.frombuffer(own[1], dtype="<u4")
            if len(old) == self.parameters.num_perm:
                self.conn.executemany("DELETE FROM dedup_bands WHERE crawl = ? AND band = ? AND page = ?",
                                      [(self.crawl, band, page) for band in self.parameters.band_keys(old)])
            self.conn.execute("UPDATE dedup_near SET signature = ? WHERE id = ?", (signature.tobytes(), page))
        else:
            page = self.conn.execute("INSERT INTO dedup_near (crawl, url, signature) VALUES (?, ?, ?)",
                                     (self.crawl, key, signature.tobytes())).lastrowid
        self.conn.executemany("INSERT OR IGNORE INTO dedup_bands (crawl, band, page) VALUES (?, ?, ?)",
                              [(self.crawl, band, page) for band in keys])


class StoreNearIndex(MinHashIndex):
    """``NearDuplicateIndex`` in one crawl of the store: ``MinHashIndex`` over a ``SqliteBandStore``.
    ``kept``: whether the crawl's entries were made with these parameters; entries made with
    others are dropped (said in a warning), and the caller rebuilds them from the crawl's pages."""

    def __init__(self, conn: sqlite3.Connection, crawl: int, threshold: float = DEFAULTS.near_dup_threshold,
                 num_perm: int = DEFAULTS.minhash_permutations, shingle_size: int = DEFAULTS.shingle_size) -> None:
        super().__init__(threshold, num_perm, shingle_size)
        self.conn, self.crawl = conn, int(crawl)
        self.store = SqliteBandStore(conn, crawl, self.parameters)
        self._short = StoreExactIndex(conn, crawl, name="near:short")
        self.kept = self._adopt_parameters(strict=False, whose=f"crawl {self.crawl}'s")

    def _band_keys(self, signature: np.ndarray) -> list[int]:
        return self.parameters.band_keys(signature)

    @_store_errors
    def __len__(self) -> int:
        return super().__len__()

    @_store_errors
    def clear(self) -> None:
        """Forget this crawl's signatures and bands."""
        super().clear()

    @_store_errors
    def candidates(self, m: MinHash) -> set[str]:
        return super().candidates(m)

    @_store_errors
    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        return super().find_or_add_minhash(key, m)


__all__ = ["SqliteBandStore", "StoreExactIndex", "StoreNearIndex", "create_tables"]
