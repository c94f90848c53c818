"""MinHash LSH apart from where it is kept: the parameters, the bands and their keys, and the
``BandStore`` interface a storage implements (datasketch's own shape: ``MinHashLSH`` over a
storage). The algorithm over a store is ``fingerprints.MinHashIndex``; the stores are in process
(``bands.MemoryBandStore``), in the crawl store (``focuscrawl.store.dedup.SqliteBandStore``) and on
Redis (``focuscrawl.distributed.dedup.RedisBandStore``), held to one contract by one test suite
(tests/test_band_stores.py).

A signature is ``num_perm`` little-endian uint32 values (MinHash values of the ``SCHEME`` below
are under 2**32). It is cut into ``bands`` bands of ``rows`` values (``band_params``); a band's
key is a deterministic 64-bit hash of its number and values (blake2b: Python's ``hash`` of bytes
differs between processes, and the keys are stored and shared), a signed int64 so that numpy and
SQLite hold it as it is. Two pages are candidates when they share a key; a collision of two keys
only adds a candidate, which is verified on the signatures anyway.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

import numpy as np

#: datasketch's permutation scheme every signature is made with (datasketch 2.0 made "affine32"
#: its default; the values of "legacy", the only scheme before, are not comparable with them,
#: and "affine64"'s do not fit in uint32). Pinned here and recorded with a store's parameters, so
#: that a store's signatures are never compared with signatures of another scheme.
SCHEME = "affine32"

#: How likely a pair exactly at the threshold must be to share an LSH bucket. Candidates are
#: verified against the threshold afterwards, so extra candidates cost little and missed ones
#: cost a duplicate: the bands favour recall.
CANDIDATE_RECALL = 0.99

#: A stored page a store hands back: (its order: lower was kept earlier, its key, its signature
#: as little-endian uint32 bytes)
Candidate = tuple[int, str, bytes]


def band_params(threshold: float, num_perm: int, recall: float = CANDIDATE_RECALL) -> tuple[int, int]:
    """LSH (bands, rows) with the most rows per band that still make a pair at ``threshold``
    a candidate with probability >= ``recall``: few false candidates, almost no missed ones."""
    for rows in range(num_perm, 0, -1):
        bands = num_perm // rows
        if 1 - (1 - threshold**rows) ** bands >= recall:
            return bands, rows
    return num_perm, 1


def band_key(signature: np.ndarray, band: int, rows: int) -> int:
    """The key of band ``band`` (of ``rows`` values) of a ``<u4`` signature: a signed 64-bit hash
    of the band's number and values, the same in every process."""
    digest = hashlib.blake2b(band.to_bytes(2, "little") + signature[band * rows:(band + 1) * rows].tobytes(),
                             digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def band_keys(signature: np.ndarray, bands: int, rows: int) -> list[int]:
    """The keys of a ``<u4`` signature's bands, in band order."""
    return [band_key(signature, band, rows) for band in range(bands)]


class NearParameters:
    """What a near-duplicate index's signatures and bands are made with, checked once, and the
    text a store records them as: signatures made with other parameters cannot be compared."""

    def __init__(self, threshold: float, num_perm: int, shingle_size: int) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold!r}")
        if num_perm < 16:
            raise ValueError(f"MinHash permutations must be at least 16, got {num_perm!r}")
        if shingle_size < 1:
            raise ValueError(f"shingle size must be at least 1 word, got {shingle_size!r}")
        self.threshold = threshold
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.scheme = SCHEME
        self.bands, self.rows = band_params(threshold, num_perm)

    @property
    def text(self) -> str:
        return (f"threshold={self.threshold} num_perm={self.num_perm} shingle_size={self.shingle_size} "
                f"scheme={self.scheme}")

    def band_keys(self, signature: np.ndarray) -> list[int]:
        return band_keys(signature, self.bands, self.rows)


class BandStore(Protocol):
    """Where a near-duplicate index keeps its pages: each page's key, order and signature, and
    its band keys (from ``NearParameters.band_keys``, the store's ``parameters``). The store
    decides nothing: which candidate is a duplicate, and whether a page is kept, is the index's
    (``fingerprints.MinHashIndex``). A page's order is given when it is first kept and stays with
    its key when its signature is replaced."""

    parameters: NearParameters

    def candidates(self, signature: np.ndarray) -> list[Candidate]:
        """The stored pages sharing a band with ``signature`` (a key's own page included)."""

    def find_or_keep(self, key: str, signature: np.ndarray) -> list[Candidate]:
        """The stored pages other than ``key``'s sharing a band with ``signature``; when there are
        none, ``key`` is kept with ``signature`` in the same step (as ``keep``), atomically where
        the store is shared. One step a new page, the common case: one round trip on Redis."""

    def keep(self, key: str, signature: np.ndarray) -> None:
        """Keep ``key`` with ``signature``: a new page, or a new signature for a key kept before
        (its old bands are dropped, its order stays)."""

    def claim_parameters(self, text: str) -> str | None:
        """The parameters the store's pages were made with; None when it had none, and ``text``
        is recorded as theirs now."""

    def record_parameters(self, text: str) -> None:
        """Record ``text`` as the parameters of the store's pages (after ``clear``)."""

    def clear(self) -> None:
        """Forget every page and band."""

    def __len__(self) -> int:
        """The pages kept."""


__all__ = ["CANDIDATE_RECALL", "SCHEME", "BandStore", "Candidate", "NearParameters", "band_key", "band_keys",
           "band_params"]
