"""Content fingerprints: an exact hash of the main text and MinHash LSH for near-duplicates.

Pages that differ only in a date line, a counter or a boilerplate edit are the same content to a
reader, so they should not be exported twice. The exact hash catches byte-for-byte copies (after
case and whitespace normalisation) cheaply; MinHash over word shingles catches the rest.

Near-duplicates are found by one algorithm (``MinHashIndex``) over a ``lsh.BandStore``: in memory
here (``NearDuplicateIndex``: a signature of ``num_perm`` 32-bit values and its LSH band keys in a
``bands.BandIndex``, ~0.7 KB a page at 128 permutations: 0.7 GB for a million unique pages), in
the crawl store (``focuscrawl.store.dedup``), in Redis when shared
(``focuscrawl.distributed.dedup``). The exact index here keeps a content hash a page in memory.
A page's text is shingled and hashed a piece at a time, so a big page costs a few megabytes while
it is signed, not its size in small objects.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable, Iterator
from itertools import islice

import numpy as np
from datasketch import MinHash

from focuscrawl.config import DEFAULTS
from focuscrawl.dedup.bands import MemoryBandStore
# CANDIDATE_RECALL and band_params are importable from here as they were before lsh.py held them
from focuscrawl.dedup.lsh import CANDIDATE_RECALL, BandStore, Candidate, NearParameters, band_params

logger = logging.getLogger(__name__)

#: Shingles hashed into a MinHash at a time. datasketch's update_batch holds shingles x num_perm
#: 64-bit integers at once: a page of 2 MB of varied words (290,000 shingles) took 326 MiB for
#: one signature (bench/soak.py); in chunks the signature is the same (a minimum is a minimum)
#: and the peak ~8 MiB.
MINHASH_CHUNK = 8192

#: characters of a page's text split into words at a time when it is shingled
TEXT_PIECE = 65536

_WHITESPACE = re.compile(r"\s+")
#: what ``str.strip()`` strips; the pattern's runs are already one space, so one space
_SPACE = " "


def normalise_text(text: str) -> str:
    """Case-folded text with every run of whitespace collapsed to one space (the same as
    ``" ".join(text.casefold().split())``: ``\\s`` and ``str.split`` share one definition of
    whitespace, but the pattern makes no object a word)."""
    return _WHITESPACE.sub(" ", text.casefold()).strip(_SPACE)


def _word_pieces(text: str, piece: int) -> Iterator[list[str]]:
    """The words of the normalised text, about ``piece`` characters of it at a time (cut at
    whitespace, so no word is split)."""
    text = text.casefold()
    start = 0
    while start < len(text):
        cut = _WHITESPACE.search(text, min(start + piece, len(text)))
        end = cut.start() if cut else len(text)
        yield text[start:end].split()
        start = end + (1 if cut else 0)


def content_hash(text: str) -> str:
    """The exact-duplicate key of a page: sha1 hex of its normalised main text."""
    return hashlib.sha1(normalise_text(text).encode("utf-8")).hexdigest()


def word_shingles(text: str, size: int) -> set[str]:
    """The set of ``size``-word windows of the normalised text (empty when it is shorter)."""
    return {shingle for chunk in shingle_chunks(text, size) for shingle in chunk}


def shingle_chunks(text: str, size: int, chunk: int = MINHASH_CHUNK, piece: int = TEXT_PIECE) -> Iterator[list[str]]:
    """The ``size``-word windows of the normalised text, ``chunk`` at a time (a window may come
    twice: a MinHash does not care). A page of 2 MB of words is 290,000 windows: held at once,
    with its words, as a set and encoded, they were ~900,000 small objects whose memory stayed
    scattered after the page (bench/soak.py); a chunk at a time it is a few thousand."""
    carry: list[str] = []  # the last size - 1 words: the windows that span two pieces start there
    out: list[str] = []
    for words in _word_pieces(text, piece):
        words = carry + words
        out.extend(" ".join(words[i : i + size]) for i in range(len(words) - size + 1))
        carry = words[max(0, len(words) - size + 1) :] if size > 1 else []
        if len(out) >= chunk:
            yield out
            out = []
    if out:
        yield out


def _batches(items: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class ExactDuplicateIndex:
    """content hash -> the key (URL) that first had it."""

    def __init__(self) -> None:
        self._first: dict[str, str] = {}

    def clear(self) -> None:
        self._first.clear()

    def find_or_add(self, key: str, digest: str) -> str | None:
        """The key of an earlier page with this hash, or None after remembering this one.

        A key is never a duplicate of itself, so re-fetching a page is not a duplicate."""
        first = self._first.setdefault(digest, key)
        return None if first == key else first

    def __len__(self) -> int:
        return len(self._first)

    def __contains__(self, digest: str) -> bool:
        return digest in self._first


class MinHashIndex:
    """The near-duplicate algorithm, over a ``lsh.BandStore`` (``store``) that keeps the pages:
    its parameters (checked once, ``lsh.NearParameters``), the MinHash of a page's shingles under
    one set of permutations and one pinned scheme, the candidates the store's bands give,
    their verification, the replacement of a re-fetched page's signature, and the fall-back to
    exact matching for texts shorter than a shingle (``_short``, an exact index).

    ``find_or_add(key, text)`` returns the key of an earlier page whose estimated Jaccard
    similarity is at least ``threshold`` (the LSH bucket hit alone is not enough): of those, the
    most similar, then the earliest kept; never the page itself. Otherwise it keeps the text
    (a key kept before has its signature replaced) and returns None. Duplicates are not kept, so
    every match points at an original page. A subclass gives the store and the exact index.
    """

    store: BandStore
    _short: object  # an exact index: ``find_or_add(key, digest)``, ``clear()``, ``len()``

    def __init__(self, threshold: float = DEFAULTS.near_dup_threshold, num_perm: int = DEFAULTS.minhash_permutations,
                 shingle_size: int = DEFAULTS.shingle_size) -> None:
        self.parameters = NearParameters(threshold, num_perm, shingle_size)
        self.threshold = threshold
        self.num_perm = num_perm
        self.shingle_size = shingle_size
        self.bands, self.rows = self.parameters.bands, self.parameters.rows
        # MinHash() draws its permutations from a seeded generator every time (as long as hashing a
        # page's shingles): every signature takes the same ones from here instead (the same in every
        # process, so the signatures of a shared crawl's workers compare)
        self._template = MinHash(num_perm=num_perm, scheme=self.parameters.scheme)

    def _adopt_parameters(self, strict: bool, whose: str) -> bool:
        """Whether the store's pages were made with this index's parameters (a store with none yet
        takes them). Pages made with others cannot be compared with this index's signatures:
        ``strict``, that is a ValueError (workers of one shared crawl must agree); otherwise they
        are dropped, said in a warning, and the caller rebuilds. ``whose`` names the pages."""
        mine = self.parameters.text
        theirs = self.store.claim_parameters(mine)
        if theirs is None:
            return False
        if theirs == mine:
            return True
        if strict:
            raise ValueError(f"{whose} indexes near-duplicates with {theirs}; this worker was started with {mine}")
        logger.warning("%s near-duplicate index was made with %s, this crawl runs with %s: it is made again",
                       whose, theirs, mine)
        self.clear()
        self.store.record_parameters(mine)
        return False

    def clear(self) -> None:
        """Forget every page."""
        self.store.clear()
        self._short.clear()

    def __len__(self) -> int:
        return len(self.store) + len(self._short)

    def _as_signature(self, hashvalues) -> np.ndarray:
        """A signature's values as little-endian uint32, what every store keeps (MinHash values of
        the pinned scheme are below 2**32); one of another size is refused."""
        values = np.asarray(hashvalues)
        if len(values) != self.num_perm:
            raise ValueError(f"expected a MinHash of {self.num_perm} permutations, got {len(values)}")
        if values.size and int(values.max()) >= 1 << 32:
            raise ValueError("MinHash values must be below 2**32 to be stored as uint32")
        return values.astype("<u4")

    def _most_similar_of(self, key: str, signature: np.ndarray, stored: Iterable[Candidate]) -> str | None:
        """The verification: of the ``stored`` candidates (order, key, signature as ``<u4``
        bytes), the key of the one at least ``threshold`` similar to ``signature``, the most
        similar then the earliest (lowest order); None when there is none. A key is never its own
        duplicate; a signature of another size is passed over."""
        best = None
        for order, other_key, raw in stored:
            other = np.frombuffer(raw, dtype="<u4")
            if other_key == key or len(other) != len(signature):
                continue
            rank = (float((other == signature).mean()), -order)
            if best is None or rank > best[0]:
                best = (rank, other_key)
        return best[1] if best is not None and best[0][0] >= self.threshold else None

    def minhash(self, shingles: Iterable[str]) -> MinHash:
        """The signature of a set of shingles (of none: datasketch's empty signature)."""
        return self._signature(_batches(shingles, MINHASH_CHUNK))[0]

    def _signature(self, chunks: Iterable[list[str]]) -> tuple[MinHash, int]:
        """The signature of the shingles in ``chunks`` and how many were hashed, a chunk at a time
        (datasketch's update_batch holds shingles x num_perm 64-bit integers at once)."""
        m = MinHash(num_perm=self.num_perm, permutations=self._template.permutations, scheme=self._template.scheme)
        hashed = 0
        for chunk in chunks:
            if chunk:
                m.update_batch([s.encode("utf-8") for s in chunk])
                hashed += len(chunk)
        return m, hashed

    def find_or_add(self, key: str, text: str) -> str | None:
        m, hashed = self._signature(shingle_chunks(text, self.shingle_size))
        if not hashed:
            return self._short.find_or_add(key, content_hash(text))
        return self.find_or_add_minhash(key, m)

    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        """``find_or_add`` for a page whose signature is already made. A page no stored page shares
        a band with is kept in the store's one step (``find_or_keep``); one with candidates of
        which none is similar enough is kept after (a re-fetch replaces its old signature)."""
        signature = self._as_signature(m.hashvalues)
        candidates = self.store.find_or_keep(key, signature)
        if not candidates:
            return None
        found = self._most_similar_of(key, signature, candidates)
        if found is None:
            self.store.keep(key, signature)
        return found

    def candidates(self, m: MinHash) -> set[str]:
        """Keys of the stored pages sharing an LSH band with this signature (not yet verified)."""
        return {key for _, key, _ in self.store.candidates(self._as_signature(m.hashvalues))}


class NearDuplicateIndex(MinHashIndex):
    """Near-duplicates in this process: signatures and LSH bands in a ``bands.MemoryBandStore``."""

    def __init__(self, threshold: float = DEFAULTS.near_dup_threshold, num_perm: int = DEFAULTS.minhash_permutations,
                 shingle_size: int = DEFAULTS.shingle_size) -> None:
        super().__init__(threshold, num_perm, shingle_size)
        self.store = MemoryBandStore(self.parameters)
        self._short = ExactDuplicateIndex()
        self._adopt_parameters(strict=True, whose="this process")


def jaccard(a: set[str], b: set[str]) -> float:
    """Exact Jaccard similarity of two sets (1.0 for two empty sets); for tests and tuning."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


__all__ = [
    "CANDIDATE_RECALL",
    "ExactDuplicateIndex",
    "MinHashIndex",
    "NearDuplicateIndex",
    "band_params",
    "content_hash",
    "jaccard",
    "normalise_text",
    "word_shingles",
]
