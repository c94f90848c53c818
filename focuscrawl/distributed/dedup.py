"""The shared duplicate indexes: exact content hashes and MinHash LSH near-duplicates on Redis.

The same answers as ``focuscrawl.dedup.fingerprints``' in-process indexes, for all workers of a
crawl at once, so a page copied on two hosts is exported once whichever workers fetched them.

The exact index is one HASH (content hash -> the first key) and one script a page: atomic, of two
workers with the same content exactly one keeps its page.

The near index is datasketch's ``MinHashLSH`` with its Redis storage (the issue's choice: no second
LSH to maintain), with the crawl's key prefix as its basename and the bands of ``band_params``, so
it proposes the candidates ``BandIndex`` proposes. Around it, the index keeps what verification
needs, which datasketch does not store: each page's signature (``num_perm`` uint32 values; MinHash
values are below 2**32), for the in-process rule: a candidate is a duplicate when its estimated
Jaccard similarity is at least the threshold (a bucket hit alone is not enough); the most similar
wins, the earliest of equals.

A page is known to datasketch by a number (INCR'd when its key is first kept, by one script, so a
key has one number whichever workers ask), not by its URL: datasketch writes its key into a set
a band and into its key table, ~14 copies a page, and small integers are what Redis stores most
compactly (its sets of integers are intsets). The number is also the page's insertion order, for
"the earliest of equals"; a re-fetch with changed content keeps it and replaces the signature.

datasketch builds its own ``redis.Redis(**config['redis'])`` for each band table and its key
table: keyword arguments, no URL, so a URL's database number, password or TLS would have to be
translated. A ``connection_pool`` is a keyword argument too: the index hands it the crawl's
client's pool, so every table talks to the server and database of the crawl's URL, over shared
connections. Keys go to datasketch as bytes (``prepickle=False``): nothing read from Redis is
unpickled. Band values are hashed to 8 bytes (blake2b) before they name a bucket, not 8 bytes a
value: a collision only adds a candidate, which is verified anyway (~1.5 KB a page less).

Cost: datasketch sends a command a round trip: a page takes ``bands + 1`` round trips to check
(a query a band, then the candidates' signatures in one pipeline) and ``2 * bands + 4`` more when
it is kept (two a band to insert): 13 and 41 at the default threshold 0.9 (12 bands). A kept page
takes about 4.3 KB of Redis (``bench/redis_seen.py --near-pages``), most of it datasketch's: a set
and a table entry a band.

Races: the check and the insert are separate steps, so two workers fetching near copies at the
same moment may both find nothing and both keep theirs: one duplicate exported, never a page
lost. A page whose insert was cut short (a worker killed between the band tables and the
signature) leaves band entries without a signature; they are skipped as candidates.
"""

from __future__ import annotations

import hashlib

import numpy as np
from datasketch import MinHash, MinHashLSH

from focuscrawl.config import DEFAULTS
from focuscrawl.dedup.fingerprints import MinHashIndex, band_params
from focuscrawl.distributed.connection import Keys, connect, redis_module
from focuscrawl.distributed.seen import redis_errors

redis = redis_module()

# KEYS[1] the hash digest -> first key; ARGV: digest, key. The first key of the digest (maybe this one).
_FIND_OR_ADD = """
local first = redis.call('HGET', KEYS[1], ARGV[1])
if first then
    return first
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return ARGV[2]
"""

# KEYS: key -> number, number -> key, the counter; ARGV: key. The page's number: its own if it has
# one (and 1), else a new one (and 0). Atomic, so a key has one number whichever workers ask.
_NUMBER = """
local number = redis.call('HGET', KEYS[1], ARGV[1])
if number then
    return {number, 1}
end
number = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], number)
redis.call('HSET', KEYS[2], number, ARGV[1])
return {number, 0}
"""


def _encode(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _decode(key: bytes | str) -> str:
    return key if isinstance(key, str) else key.decode("utf-8", "surrogatepass")


def _band_key(band: bytes) -> bytes:
    """A band's values (8 bytes each) as a bucket name of 8 bytes; deterministic in every process."""
    return hashlib.blake2b(band, digest_size=8).digest()


class RedisExactIndex:
    """content hash -> the key (URL) that first had it, shared by the crawl's workers: the interface
    of ``ExactDuplicateIndex``."""

    def __init__(self, client: redis.Redis, keys: Keys, name: str = "exact") -> None:
        self.client = client
        self.keys = keys
        self._hash = keys("dedup", name)
        self._find_or_add = client.register_script(_FIND_OR_ADD)

    @classmethod
    def from_url(cls, url: str, crawl_id: str, **kwargs) -> RedisExactIndex:
        return cls(connect(url), Keys(crawl_id), **kwargs)

    def find_or_add(self, key: str, digest: str) -> str | None:
        """The key of an earlier page with this hash, or None after remembering this one.

        A key is never a duplicate of itself, so re-fetching a page is not a duplicate."""
        with redis_errors(self.client, "the shared exact-duplicate index"):
            first = _decode(self._find_or_add(keys=[self._hash], args=[digest, _encode(key)]))
        return None if first == key else first

    def __len__(self) -> int:
        with redis_errors(self.client, "the shared exact-duplicate index"):
            return int(self.client.hlen(self._hash))

    def __contains__(self, digest: str) -> bool:
        with redis_errors(self.client, "the shared exact-duplicate index"):
            return bool(self.client.hexists(self._hash, digest))


class RedisNearIndex(MinHashIndex):
    """``NearDuplicateIndex`` shared by the crawl's workers: MinHash over word shingles, datasketch's
    LSH on Redis for candidates, verified on the signatures kept beside it."""

    def __init__(self, client: redis.Redis, keys: Keys, threshold: float = DEFAULTS.near_dup_threshold,
                 num_perm: int = DEFAULTS.minhash_permutations, shingle_size: int = DEFAULTS.shingle_size) -> None:
        super().__init__(threshold, num_perm, shingle_size)
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ValueError("the near-duplicate index reads signatures as bytes: give it a client made with "
                             "decode_responses=False")
        self.client = client
        self.keys = keys
        bands, rows = band_params(threshold, num_perm)
        if bands < 2:
            # datasketch wants two bands at least; two of half the rows find a superset (verified)
            bands, rows = 2, num_perm // 2
        self.bands, self.rows = bands, rows
        self._numbers = keys("dedup", "near", "number")  # key -> number
        self._keys = keys("dedup", "near", "key")  # number -> key
        self._counter = keys("dedup", "near", "count")
        self._signatures = keys("dedup", "near", "signature")  # number -> uint32 values
        self._number = client.register_script(_NUMBER)
        self._short = RedisExactIndex(client, keys, name="near:short")
        self._check_parameters(keys("dedup", "near", "parameters"))
        self.lsh = MinHashLSH(
            num_perm=num_perm, params=(bands, rows), prepickle=False, hashfunc=_band_key,
            storage_config={"type": "redis", "basename": _encode(keys("dedup", "near", "lsh")),
                            "redis": {"connection_pool": client.connection_pool}})

    @classmethod
    def from_url(cls, url: str, crawl_id: str, **kwargs) -> RedisNearIndex:
        """The index of crawl ``crawl_id`` in the Redis at ``url`` (``redis://HOST:PORT/DB``)."""
        return cls(connect(url), Keys(crawl_id), **kwargs)

    def _check_parameters(self, key: str) -> None:
        """Workers of one crawl must share their parameters: other bands would find nothing in the
        tables, another ``num_perm`` could not be compared. The first worker writes them."""
        mine = f"threshold={self.threshold} num_perm={self.num_perm} shingle_size={self.shingle_size}"
        with redis_errors(self.client, "the shared near-duplicate index"):
            self.client.set(key, mine, nx=True)
            theirs = _decode(self.client.get(key))
        if theirs != mine:
            raise ValueError(f"crawl {self.keys.crawl_id!r} indexes near-duplicates with {theirs}; "
                             f"this worker was started with {mine}")

    def __len__(self) -> int:
        with redis_errors(self.client, "the shared near-duplicate index"):
            return int(self.client.hlen(self._signatures)) + len(self._short)

    def candidates(self, m: MinHash) -> set[str]:
        """Keys of the stored pages sharing an LSH band with this signature (not yet verified)."""
        with redis_errors(self.client, "the shared near-duplicate index"):
            numbers = self.lsh.query(m)
            owners = self.client.hmget(self._keys, numbers) if numbers else []
        return {_decode(owner) for owner in owners if owner is not None}

    def find_or_add_minhash(self, key: str, m: MinHash) -> str | None:
        signature = self._as_signature(m.hashvalues)
        with redis_errors(self.client, "the shared near-duplicate index"):
            found = self._most_similar(key, signature, self.lsh.query(m))
            if found is not None:
                return found
            number, known = self._number(keys=[self._numbers, self._keys, self._counter], args=[_encode(key)])
            number = b"%d" % int(number)
            if known and number in self.lsh:  # a re-fetch with changed content replaces the old signature
                try:
                    self.lsh.remove(number)
                except ValueError:  # another worker replaced it a moment ago: nothing left to remove
                    pass
            # band tables first: a worker dying in between leaves entries without a signature,
            # which are skipped, rather than a signature no query finds
            self.lsh.insert(number, m, check_duplication=False)
            self.client.hset(self._signatures, number, signature.tobytes())
        return None

    def _most_similar(self, key: str, signature: np.ndarray, numbers: list[bytes]) -> str | None:
        """The key of the candidate at least ``threshold`` similar, the most similar then the
        earliest (lowest number); None when there is none. A key is never its own duplicate."""
        if not numbers:
            return None
        pipe = self.client.pipeline(transaction=False)
        pipe.hmget(self._signatures, numbers)
        pipe.hmget(self._keys, numbers)
        stored, owners = pipe.execute()
        return self._most_similar_of(key, signature, (
            (int(number), _decode(owner), raw) for number, raw, owner in zip(numbers, stored, owners, strict=True)
            if raw is not None and owner is not None))  # else an insert cut short


__all__ = ["RedisExactIndex", "RedisNearIndex"]
