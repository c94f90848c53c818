"""The shared seen set: has any worker of the crawl scheduled this canonical URL before?

The 64-bit fingerprints of ``url_fingerprint`` (never URLs) in Redis SETs of integers, which Redis
keeps as an *intset* (a sorted array of 8-byte integers) while a set holds at most
``set-max-intset-entries`` members (512 by default): 9.5 bytes a URL at 10^6 URLs, keys and all
(bench/redis_seen.py), where one SET of 8-byte strings takes 56 (a hash table entry and a string
a member) and HASHes of integer fields kept small enough to stay listpacks take 15.

A set that outgrows the limit becomes a hash table for good (a fixed 2^11 sets at 10^6 URLs: 14%
of them, 19 bytes a URL), so the number of sets grows with the crawl, by linear hashing: the sets
are buckets addressed by the top ``level`` bits of the fingerprint (``level + 1`` bits for the
first ``split`` of them); whenever the crawl holds more than ``load`` URLs a bucket on average,
bucket ``split`` is split in two by its next bit and ``split`` moves on; when every bucket of a
level is split, the level goes up. A bucket holds between about ``load`` and ``2 * load`` URLs
(default 200: at most ~400 plus a few standard deviations, under 512 on a default server), at any
crawl size up to about 10^12 URLs.

The bits a bucket's name implies are dropped from its members, so a member is the fingerprint
modulo 2^(64 - level): below 2^53 from level 11 on (where every crawl starts), which the scripts'
Lua numbers (doubles) hold exactly. The fingerprint is kept whole: the set answers exactly as
``focuscrawl.frontier.seen.SeenSet`` does, false positives only on a 64-bit collision.

Every add is one script (one round trip, atomic): find the bucket, SADD (whose reply says new or
not), count the URL, and split a bucket when the count says so. Splits are rare (one in ``load``
new URLs) and short (SMEMBERS of ~400 members). The script costs Redis ~17 us an add where a bare
SADD costs 2: one instance takes ~60,000 adds a second from all workers together. The scripts
build bucket names from the crawl's prefix rather than taking them in KEYS: every key carries the
crawl's hash tag, so on Redis Cluster they live on the node the script runs on.

On a server where ``CONFIG SET set-max-intset-entries 2048`` (or more) is allowed, a larger
``load`` cuts the number of keys (~100 bytes each): ~0.5 bytes a URL at the default, ~0.1 at
``load=1000``, for a longer memmove an insert; the intsets themselves stay 8 bytes a member.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from focuscrawl.distributed.connection import Keys, connect, redis_module
from focuscrawl.frontier.seen import url_fingerprint

redis = redis_module()
from redis.connection import SSLConnection, UnixDomainSocketConnection  # noqa: E402 (after redis_module's check)

#: URLs a bucket holds on average before the next split; buckets reach ~2x this just before their
#: split, which must stay under set-max-intset-entries (512 by default) with room for chance
DEFAULT_LOAD = 200
#: the level every crawl starts at (2048 buckets): from here on members are below 2^53, exact in Lua
MIN_LEVEL = 11
#: buckets whose MEMORY USAGE ``memory_bytes`` samples
MEMORY_SAMPLES = 32
#: fingerprints a worker remembers as in the crawl's set (``write_behind``), at most: ~70 MB;
#: forgetting them costs only accuracy of the crawl's duplicate counts, never a page twice
KNOWN_MAX = 1 << 20

# Shared by both scripts: the bucket of a fingerprint given as its top and bottom 32 bits (exact
# as Lua numbers), and the member it is stored as there.
_LOCATE = """
local function locate(base, level, split, hi, lo)
    local shift = 2 ^ (32 - level)
    local bucket = math.floor(hi / shift)
    if bucket < split then
        level = level + 1
        shift = shift / 2
        bucket = math.floor(hi / shift)
    end
    return base .. level .. ':' .. string.format('%.0f', bucket),
           string.format('%.0f', (hi % shift) * 4294967296 + lo)
end
local function state(key, min_level)
    local values = redis.call('HMGET', key, 'level', 'split')
    return tonumber(values[1]) or tonumber(min_level), tonumber(values[2]) or 0
end
"""

#: Lua: ``seen_add(state hash, bucket name prefix, MIN_LEVEL, load, hi, lo)`` -> 1 when the
#: fingerprint was new. Other scripts add URLs with it too (the shared frontier's PUSH: a link
#: queued only if new to the crawl, in the same step).
SEEN_ADD = _LOCATE + """
local function seen_add(key, base, min_level, load, hi, lo)
load = tonumber(load)
local level, split = state(key, min_level)
local bucket, member = locate(base, level, split, tonumber(hi), tonumber(lo))
if redis.call('SADD', bucket, member) == 0 then
    return 0
end
local count = redis.call('HINCRBY', key, 'count', 1)
if level < 32 and count > load * (2 ^ level + split) then
    -- split bucket `split` of this level by the top bit of its members
    local old = base .. level .. ':' .. string.format('%.0f', split)
    local half = 2 ^ (63 - level)
    local low, high = {}, {}
    for _, m in ipairs(redis.call('SMEMBERS', old)) do
        local value = tonumber(m)
        if value >= half then
            high[#high + 1] = string.format('%.0f', value - half)
        else
            low[#low + 1] = m
        end
    end
    local child = base .. (level + 1) .. ':'
    for i, members in ipairs({low, high}) do
        -- unpack() has a stack limit: add in slices
        for first = 1, #members, 1000 do
            redis.call('SADD', child .. string.format('%.0f', 2 * split + i - 1),
                       unpack(members, first, math.min(first + 999, #members)))
        end
    end
    redis.call('DEL', old)
    split = split + 1
    if split == 2 ^ level then
        level, split = level + 1, 0
    end
    redis.call('HSET', key, 'level', level, 'split', split)
end
return 1
end
"""

# KEYS[1] the state hash; ARGV: hi, lo, bucket name prefix, MIN_LEVEL, load.
# Returns 1 when the fingerprint was new.
_ADD = SEEN_ADD + """
return seen_add(KEYS[1], ARGV[3], ARGV[4], ARGV[5], ARGV[1], ARGV[2])
"""

# KEYS[1] the state hash; ARGV: hi, lo, bucket name prefix, MIN_LEVEL.
_CONTAINS = _LOCATE + """
local level, split = state(KEYS[1], ARGV[4])
local bucket, member = locate(ARGV[3], level, split, tonumber(ARGV[1]), tonumber(ARGV[2]))
return redis.call('SISMEMBER', bucket, member)
"""


def server_url(client: redis.Redis) -> str:
    """The client's server as a URL (without its password), for error messages."""
    kwargs = client.connection_pool.connection_kwargs
    cls = client.connection_pool.connection_class
    if issubclass(cls, UnixDomainSocketConnection):
        return f"unix://{kwargs.get('path')}?db={kwargs.get('db', 0)}"
    scheme = "rediss" if issubclass(cls, SSLConnection) else "redis"
    return f"{scheme}://{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


@contextmanager
def redis_errors(client: redis.Redis, what: str) -> Iterator[None]:
    """Re-raise a Redis error as the same class with a message saying what failed and where: the
    crawl stops with a clear cause; the class still tells a lost server from a refused command."""
    try:
        yield
    except redis.exceptions.RedisError as exc:
        message = f"{what} at {server_url(client)}: {exc}"
        try:
            wrapped = type(exc)(message)
        except Exception:  # an error class whose constructor wants more than a message
            wrapped = redis.exceptions.RedisError(message)
        raise wrapped from exc


def _halves(fp: int) -> tuple[int, int]:
    return fp >> 32, fp & 0xFFFFFFFF


class RedisSeenSet:
    """The seen set of one shared crawl (``keys``), in the Redis of ``client``: the interface of
    ``focuscrawl.frontier.seen.SeenSet``, atomic across workers (of two adding one URL at once,
    exactly one is told it is new)."""

    def __init__(self, client: redis.Redis, keys: Keys, load: int = DEFAULT_LOAD) -> None:
        if load < 1:
            raise ValueError(f"the seen set's bucket load must be at least 1 URL, got {load!r}")
        self.client = client
        self.keys = keys
        self.load = load
        self._state = keys("seen")
        self._base = keys("seen", "")  # a bucket is this, its level, ':' and its number
        self._add = client.register_script(_ADD)
        self._contains = client.register_script(_CONTAINS)
        self._random = random.Random()
        self.writes = None  # see write_behind
        self._known: set[int] = set()
        self._claim: list | None = None  # [URL, handle of its add deferred, fingerprint, reply]

    def write_behind(self, writes) -> None:
        """Answer ``add`` without a round trip (a worker of a shared crawl): a URL this worker
        knows to be in the crawl's set (it added or met it) is not new; any other is taken as new
        and its add sent with the writes of ``writes`` (``batch.WriteBehind``). The link the
        crawl then queues takes that add back (``claim``) and is queued by one script only if it
        is new to the crawl (the frontier's PUSH), so two workers finding one URL at once never
        both queue it: the second one's link is dropped in Redis (counted: ``late_duplicates``)."""
        self.writes = writes
        writes.scripts.add("SEEN_ADD", _ADD)

    def _remember(self, fp: int) -> None:
        if len(self._known) >= KNOWN_MAX:
            self._known.clear()
        self._known.add(fp)

    def claim(self, canonical_url: str):
        """The add of ``canonical_url`` just deferred by ``add``, taken back by the link's push:
        its arguments for the PUSH script (state key, bucket prefix, MIN_LEVEL, load, hi, lo)
        while it is still pending; else whether it was new (it was sent on its own meanwhile),
        or None when the last add was another URL's (or answered at once)."""
        claim, self._claim = self._claim, None
        if claim is None or claim[0] != canonical_url:
            return None
        url, handle, fp, reply = claim
        if self.writes.withdraw(handle):
            hi, lo = _halves(fp)
            return (self._state, self._base, MIN_LEVEL, self.load, hi, lo)
        if not reply:  # sent ahead, not answered yet: whether it was new decides the push
            self.writes.flush()
        return bool(reply[0]) if reply else None

    @classmethod
    def from_url(cls, url: str, crawl_id: str, **kwargs) -> RedisSeenSet:
        return cls(connect(url), Keys(crawl_id), **kwargs)

    def _add_args(self, fp: int) -> list:
        return [*_halves(fp), self._base, MIN_LEVEL, self.load]

    def add(self, canonical_url: str) -> bool:
        """Add a URL; True if it was new to the crawl (with ``write_behind``: new as far as this
        worker knows)."""
        fp = url_fingerprint(canonical_url)
        if self.writes is None:
            return self.add_fingerprint(fp)
        if fp in self._known:
            return False
        self._remember(fp)
        reply: list = []
        handle = self.writes.defer(("EVALSHA", self.writes.scripts.shas["SEEN_ADD"], 1, self._state,
                                    *self._add_args(fp)), reply.append)
        self._claim = [canonical_url, handle, fp, reply]
        return True

    def add_fingerprint(self, fp: int) -> bool:
        with redis_errors(self.client, "adding to the shared seen set"):
            if self.writes is not None:
                self._remember(fp)
                return bool(self.writes.call("EVALSHA", self.writes.scripts.shas["SEEN_ADD"], 1, self._state,
                                             *self._add_args(fp)))
            return bool(self._add(keys=[self._state], args=self._add_args(fp)))

    def add_many(self, canonical_urls: Iterable[str], batch: int = 1000) -> list[bool]:
        """``add`` of each URL, pipelined ``batch`` at a time: one round trip a batch. Each add is
        still atomic on its own (a batch is not a transaction)."""
        fps = [url_fingerprint(url) for url in canonical_urls]
        added: list[bool] = []
        with redis_errors(self.client, "adding to the shared seen set"):
            for start in range(0, len(fps), batch):
                pipe = self.client.pipeline(transaction=False)
                for fp in fps[start : start + batch]:
                    self._add(keys=[self._state], args=self._add_args(fp), client=pipe)
                added.extend(bool(new) for new in pipe.execute())
        return added

    def contains_fingerprint(self, fp: int) -> bool:
        if fp in self._known:
            return True
        with redis_errors(self.client, "reading the shared seen set"):
            if self.writes is not None:
                self.writes.flush()  # this worker's adds not sent yet count
            found = bool(self._contains(keys=[self._state], args=[*_halves(fp), self._base, MIN_LEVEL]))
        if found and self.writes is not None:
            self._remember(fp)
        return found

    def __contains__(self, canonical_url: str) -> bool:
        return self.contains_fingerprint(url_fingerprint(canonical_url))

    def __len__(self) -> int:
        with redis_errors(self.client, "reading the shared seen set"):
            if self.writes is not None:
                self.writes.flush()
            return int(self.client.hget(self._state, "count") or 0)

    def _buckets(self) -> tuple[int, int]:
        level, split = self.client.hmget(self._state, "level", "split")
        return int(level or MIN_LEVEL), int(split or 0)

    def memory_bytes(self) -> int:
        """What Redis holds for the set, approximately: MEMORY USAGE of a random sample of
        ``MEMORY_SAMPLES`` buckets, scaled to all of them, plus the state hash. MEMORY USAGE counts
        a key's name, object and value, not its entry in the keyspace's own hash table: within a
        few percent of used_memory's growth from 10^5 URLs on, under it for small sets."""
        with redis_errors(self.client, "measuring the shared seen set"):
            level, split = self._buckets()
            # the live buckets: the 2 * split children of the split ones, then the rest of the level
            total = 2**level + split
            sample = [self._random.randrange(total) for _ in range(min(MEMORY_SAMPLES, total))]
            pipe = self.client.pipeline(transaction=False)
            pipe.memory_usage(self._state)
            for i in sample:
                name = f"{self._base}{level + 1}:{i}" if i < 2 * split else f"{self._base}{level}:{i - split}"
                pipe.memory_usage(name, samples=0)
            state, *usages = pipe.execute()
        return int((state or 0) + sum(u or 0 for u in usages) * total / max(len(sample), 1))

    def __getstate__(self):
        # a checkpoint of the embedded crawl pickles its SeenSet; this one is already in Redis
        raise TypeError(f"the shared seen set of crawl {self.keys.crawl_id!r} lives in Redis at "
                        f"{server_url(self.client)}: persist Redis, not the object")


__all__ = ["DEFAULT_LOAD", "RedisSeenSet", "redis_errors", "server_url"]
