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

Tables (created when first used; a store without them reads as before):
- ``dedup_exact``: (crawl, name, content hash) -> the first URL; ``name`` tells the exact index
  from the near index's fall-back for texts shorter than a shingle (as the Redis indexes do).
- ``dedup_near``: a kept page's signature (``num_perm`` little-endian uint32); its id orders the
  pages, for "the earliest of equals".
- ``dedup_bands``: (crawl, band key, page id), one row a band, the band key a deterministic 64-bit
  hash of the band's number and values (Python's ``hash`` of bytes differs between processes).
- ``dedup_parameters``: the threshold, permutations and shingle size a crawl's signatures were made with.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sqlite3

import numpy as np
from datasketch import MinHash

from focuscrawl.config import DEFAULTS
from focuscrawl.dedup.fingerprints import MinHashIndex, band_params
from focuscrawl.store.sqlite import StoreError

logger = logging.getLogger(__name__)

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


class StoreNearIndex(MinHashIndex):
    """``NearDuplicateIndex`` in one crawl of the store: candidates from the band table, verified
    on the stored signatures (the most similar at least ``threshold``, the earliest of equals)."""

    def __init__(self, conn: sqlite3.Connection, crawl: int, threshold: float = DEFAULTS.near_dup_threshold,
                 num_perm: int = DEFAULTS.minhash_permutations, shingle_size: int = DEFAULTS.shingle_size) -> None:
        super().__init__(threshold, num_perm, shingle_size)
        create_tables(conn)
        self.conn, self.crawl = conn, int(crawl)
        self.bands, self.rows = band_params(threshold, num_perm)
        self._short = StoreExactIndex(conn, crawl, name="near:short")
        self.kept = self._check_parameters()

    @_store_errors
    def _check_parameters(self) -> bool:
        """Whether the crawl's entries were made with these parameters. Entries made with others
        cannot be compared with this index's signatures: they are dropped (the caller rebuilds)."""
        mine = f"threshold={self.threshold} num_perm={self.num_perm} shingle_size={self.shingle_size}"
        row = self.conn.execute("SELECT parameters FROM dedup_parameters WHERE crawl = ?", (self.crawl,)).fetchone()
        if row is not None and row[0] == mine:
            return True
        if row is not None:
            logger.warning("crawl %d's near-duplicate index was made with %s, this crawl runs with %s: it is "
                           "made again", self.crawl, row[0], mine)
            self.clear()
        self.conn.execute("INSERT OR REPLACE INTO dedup_parameters (crawl, parameters) VALUES (?, ?)",
                          (self.crawl, mine))
        return False

    @_store_errors
    def clear(self) -> None:
        """Forget this crawl's signatures and bands."""
        self.conn.execute("DELETE FROM dedup_bands WHERE crawl = ?", (self.crawl,))
        self.conn.execute("DELETE FROM dedup_near WHERE crawl = ?", (self.crawl,))
        self._short.clear()

    @_store_errors
    def __len__(self) -> int:
        near = self.conn.execute("SELECT COUNT(*) FROM dedup_near WHERE crawl = ?", (self.crawl,)).fetchone()[0]
        return near + len(self._short)

    def _band_keys(self, signature: np.ndarray) -> list[int]:
        r = self.rows
        return [int.from_bytes(hashlib.blake2b(b.to_bytes(2, "little") + signature[b * r:(b + 1) * r].tobytes(),
                                               digest_size=8).digest(), "little", signed=True)
                for b in range(self.bands)]

    def _candidates(self, keys: list[int]) -> list[tuple[int, str, bytes]]:
        """(id, url, signature) of the crawl's pages sharing a band key with ``keys``."""
        marks = ", ".join("?" * len(keys))
        return self.conn.execute(
            f"SELECT n.id, n.url, n.signature FROM dedup_near n WHERE n.id IN "
            f"(SELECT page FROM dedup_bands WHERE crawl = ? AND band IN ({marks}))", (self.crawl, *keys)).fetchall()

    @_store_errors
    def candidates(self, m: MinHash) -> set[str]:
        """Keys of the stored pages sharing an LSH band with this signature (not yet verified)."""
        return {url for _, url, _ in self._candidates(self._band_keys(self._as_signature(m.hashvalues)))}

    @_store_errors
    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        signature = self._as_signature(m.hashvalues)
        keys = self._band_keys(signature)
        found = self._most_similar_of(key, signature, self._candidates(keys))
        if found is not None:
            return found
        own = self.conn.execute("SELECT id, signature FROM dedup_near WHERE crawl = ? AND url = ?",
                                (self.crawl, key)).fetchone()
        if own is not None:  # a re-fetch with changed content replaces the old signature
            page = own[0]
            old = np.frombuffer(own[1], dtype="<u4")
            if len(old) == self.num_perm:
                self.conn.executemany("DELETE FROM dedup_bands WHERE crawl = ? AND band = ? AND page = ?",
                                      [(self.crawl, band, page) for band in self._band_keys(old)])
            self.conn.execute("UPDATE dedup_near SET signature = ? WHERE id = ?", (signature.tobytes(), page))
        else:
            page = self.conn.execute("INSERT INTO dedup_near (crawl, url, signature) VALUES (?, ?, ?)",
                                     (self.crawl, key, signature.tobytes())).lastrowid
        self.conn.executemany("INSERT OR IGNORE INTO dedup_bands (crawl, band, page) VALUES (?, ?, ?)",
                              [(self.crawl, band, page) for band in keys])
        return None


__all__ = ["StoreExactIndex", "StoreNearIndex", "create_tables"]
