"""The shared duplicate indexes: exact content hashes and MinHash LSH near-duplicates on Redis.

The same answers as ``focuscrawl.dedup.fingerprints``' in-process indexes, for all workers of a
crawl at once, so a page copied on two hosts is exported once whichever workers fetched them.

The exact index is one HASH (content hash -> the first key) and one script a page: atomic, of two
workers with the same content exactly one keeps its page.

The near index is the one algorithm of ``fingerprints.MinHashIndex`` over ``RedisBandStore``, the
``lsh.BandStore`` on Redis: each kept page's number (its order, INCR'd when its key is first kept,
so a key has one number whichever workers ask; a re-fetch with changed content keeps it and
replaces the signature), its key, its signature (``num_perm`` little-endian uint32) and its band
keys (8 bytes each), in four hashes; and a SET of page numbers a band key (small integers: Redis
keeps them as intsets). The candidates of a page and, when there are none, the keeping of the
page are one Lua script: one round trip a new page or a duplicate, and no race between workers
keeping near copies that share no band with anything kept before. A page with candidates of
which none is similar enough (rare: the bands are chosen for few false candidates) takes a
second script to be kept; two workers keeping near copies at that moment may both keep theirs:
one duplicate exported, never a page lost.

Cost (``bench/dedup.py``): about 1.1 round trips a page, against 13 to check and 41 to keep a page
with datasketch's ``MinHashLSH`` on Redis before.
"""

from __future__ import annotations

import re

import numpy as np

from focuscrawl.config import DEFAULTS
from focuscrawl.dedup.fingerprints import MinHashIndex
from focuscrawl.dedup.lsh import Candidate, NearParameters
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

# KEYS: key -> number, number -> key, the counter, number -> signature, number -> band keys, then
# the SET of each of the page's bands. ARGV: the key, its signature, its band keys (8 bytes each),
# the prefix of a band's SET, and what to do: "find" (the candidates other than the key's own page;
# when there are none, keep the page), "keep" (keep it) or "read" (every candidate, nothing kept).
# Candidates come back flat: number, key, signature, number, key, signature... The SETs of a
# replaced signature's old bands are named from the prefix (under the crawl's hash tag, like
# every key of the crawl, so in the same slot of a cluster).
_BANDS = """
local own = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[5] ~= 'keep' then
    local out, seen = {}, {}
    if ARGV[5] == 'find' and own then
        seen[own] = true
    end
    for i = 6, #KEYS do
        for _, number in ipairs(redis.call('SMEMBERS', KEYS[i])) do
            if not seen[number] then
                seen[number] = true
                local signature = redis.call('HGET', KEYS[4], number)
                local key = redis.call('HGET', KEYS[2], number)
                if signature and key then
                    out[#out + 1] = number
                    out[#out + 1] = key
                    out[#out + 1] = signature
                end
            end
        end
    end
    if #out > 0 or ARGV[5] == 'read' then
        return out
    end
end
if own then
    local old = redis.call('HGET', KEYS[5], own)
    if old then
        for i = 1, #old, 8 do
            redis.call('SREM', ARGV[4] .. string.sub(old, i, i + 7), own)
        end
    end
else
    own = tostring(redis.call('INCR', KEYS[3]))
    redis.call('HSET', KEYS[1], ARGV[1], own)
    redis.call('HSET', KEYS[2], own, ARGV[1])
end
for i = 6, #KEYS do
    redis.call('SADD', KEYS[i], own)
end
redis.call('HSET', KEYS[4], own, ARGV[2])
redis.call('HSET', KEYS[5], own, ARGV[3])
return {}
"""


def _encode(key: str) -> bytes:
    return key.encode("utf-8", "surrogatepass")


def _decode(key: bytes | str) -> str:
    return key if isinstance(key, str) else key.decode("utf-8", "surrogatepass")


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

    def clear(self) -> None:
        with redis_errors(self.client, "the shared exact-duplicate index"):
            self.client.delete(self._hash)

    def __contains__(self, digest: str) -> bool:
        with redis_errors(self.client, "the shared exact-duplicate index"):
            return bool(self.client.hexists(self._hash, digest))


class RedisBandStore:
    """``lsh.BandStore`` on Redis, shared by a crawl's workers (see the module's docstring)."""

    def __init__(self, client: redis.Redis, keys: Keys, parameters: NearParameters) -> None:
        self.client, self.keys, self.parameters = client, keys, parameters
        self._hashes = [keys("dedup", "near", "number"),  # key -> number
                        keys("dedup", "near", "key"),  # number -> key
                        keys("dedup", "near", "count"),
                        keys("dedup", "near", "signature"),  # number -> signature
                        keys("dedup", "near", "bands")]  # number -> band keys
        self._band_prefix = _encode(keys("dedup", "near", "band", ""))
        self._parameters = keys("dedup", "near", "parameters")
        self._script = client.register_script(_BANDS)

    def _run(self, mode: str, key: str, signature: np.ndarray) -> list[Candidate]:
        bands = b"".join(band.to_bytes(8, "little", signed=True) for band in self.parameters.band_keys(signature))
        sets = [self._band_prefix + bands[i:i + 8] for i in range(0, len(bands), 8)]
        with redis_errors(self.client, "the shared near-duplicate index"):
            flat = self._script(keys=[*self._hashes, *sets],
                                args=[_encode(key), signature.tobytes(), bands, self._band_prefix, mode])
        return sorted((int(flat[i]), _decode(flat[i + 1]), flat[i + 2]) for i in range(0, len(flat), 3))

    def candidates(self, signature: np.ndarray) -> list[Candidate]:
        return self._run("read", "", signature)

    def find_or_keep(self, key: str, signature: np.ndarray) -> list[Candidate]:
        return self._run("find", key, signature)

    def keep(self, key: str, signature: np.ndarray) -> None:
        self._run("keep", key, signature)

    def claim_parameters(self, text: str) -> str | None:
        with redis_errors(self.client, "the shared near-duplicate index"):
            if self.client.set(self._parameters, text, nx=True):
                return None
            return _decode(self.client.get(self._parameters))

    def record_parameters(self, text: str) -> None:
        with redis_errors(self.client, "the shared near-duplicate index"):
            self.client.set(self._parameters, text)

    def clear(self) -> None:
        with redis_errors(self.client, "the shared near-duplicate index"):
            pattern = re.sub(rb"([*?\[\]\\])", rb"\\\1", self._band_prefix) + b"*"
            bands = list(self.client.scan_iter(match=pattern, count=1000))
            for start in range(0, len(bands), 1000):
                self.client.delete(*bands[start:start + 1000])
            self.client.delete(*self._hashes)

    def __len__(self) -> int:
        with redis_errors(self.client, "the shared near-duplicate index"):
            return int(self.client.hlen(self._hashes[3]))


class RedisNearIndex(MinHashIndex):
    """``NearDuplicateIndex`` shared by the crawl's workers: ``MinHashIndex`` over a
    ``RedisBandStore``. Workers of one crawl must share their parameters (other bands would find
    nothing, another ``num_perm`` could not be compared): the first worker records them, a
    worker started with others is refused (ValueError)."""

    def __init__(self, client: redis.Redis, keys: Keys, threshold: float = DEFAULTS.near_dup_threshold,
                 num_perm: int = DEFAULTS.minhash_permutations, shingle_size: int = DEFAULTS.shingle_size) -> None:
        super().__init__(threshold, num_perm, shingle_size)
        if client.connection_pool.connection_kwargs.get("decode_responses"):
            raise ValueError("the near-duplicate index reads signatures as bytes: give it a client made with "
                             "decode_responses=False")
        self.client = client
        self.keys = keys
        self.store = RedisBandStore(client, keys, self.parameters)
        self._short = RedisExactIndex(client, keys, name="near:short")
        self._adopt_parameters(strict=True, whose=f"crawl {keys.crawl_id!r}")

    @classmethod
    def from_url(cls, url: str, crawl_id: str, **kwargs) -> RedisNearIndex:
        """The index of crawl ``crawl_id`` in the Redis at ``url`` (``redis://HOST:PORT/DB``)."""
        return cls(connect(url), Keys(crawl_id), **kwargs)


__all__ = ["RedisBandStore", "RedisExactIndex", "RedisNearIndex"]
