"""One learner for all the workers of a shared crawl: each pushes what it learned and pulls what the
others learned, every few seconds, through a Redis stream.

Every worker keeps its own ``LinkRewardLearner`` and scores and trains on it alone, so the hot path
(scoring every link, training on every page) never waits for Redis nor for a lock. Every
``period`` seconds ``maybe_sync`` does one exchange:

- **push** what changed here since the last push (the learner's ``changes.take()``: see
  ``focuscrawl.learning.delta``), as one batch (``learner_batch``): the weights that moved (sparse
  indices and float64 deltas), AdaGrad's squared-gradient sums at the same indices, the yield
  counts per host, path prefix and parent page, the new-hosts prior, and the link word counts when
  the crawl learns its links' words. Everything is a sum of increments, so the merged learner is
  the sum of every worker's deltas whatever order they arrive in; a batch is as large as what
  changed, not as the model;
- **pull** every other worker's batches since the last one read, and add them (``changes.merge``):
  the stream is read from where this worker stopped, its own batches left out (Redis filters
  them, so they are not sent back), a batch sent twice (a retry after a lost reply) applied once.

Push and pull are one Lua script, one round trip (bench/learner_sync.py measures it). A worker
sees another's learning one to two periods late: bounded staleness, in exchange for no
coordination. The shared counts equal one learner's; the shared weights are the sum of every
worker's steps, each taken on a model at most that stale.

AdaGrad's squared-gradient sums are shared too (they grow only, so they merge by adding like the
rest, at 4 bytes more per moved weight): each feature's step size then shrinks with the evidence
the whole crawl has seen of it, as one learner's would. Kept per worker, a feature common to every
worker's links would be stepped on by N learning rates that each decay N times slower.

What is not shared, and why:

- ``nodes``, the pages of crawl paths that credit flows back along, stay with the worker that
  fetched them (sharing them would mean a Redis read per page fetched, on the hot path). Credit owed to a page another worker fetched travels in the batches instead
  (``credit_elsewhere``: page URL, change, hops left): every worker reads it, the one that holds
  the page applies it (``LinkRewardLearner.credit``) and pushes the training it caused with its
  next batch. A hub is credited for all its children, whoever fetched them, a period or two late.
- ``observations`` stays the worker's own count: the learner bumps ``version`` every
  ``version_every`` of them, the scheduler's cadence of re-scoring. Remote learning moves
  ``version`` once per sync that applied any (``maybe_sync`` returns True: call the rescorer's
  ``learner_updated``), so a worker re-scores its frontier lazily once per period for the others'
  pages, however many there were.
- ``new_hosts`` (the prior of a host never fetched) counts the first fetch of a host *this worker*
  had no counts for: two workers fetching one new host in the same period both count it.

A late joiner (or one whose place in the stream was trimmed away) starts from the **snapshot**:
the merged state as of a stream entry, written by one worker every ``SNAPSHOT_EVERY`` entries;
it takes that state over and applies the stream after it. Each snapshot trims the stream to the
previous one, so the stream holds one to two snapshot intervals and Redis one snapshot. The
scripts trim exactly (not ``XADD MAXLEN ~``) and keep the newest id they trimmed away (the
floor): a reader whose last id is older knows it missed entries. ``MAX_ENTRIES`` caps the stream
should snapshots stop being written. Needs Redis 6.2 (exclusive ranges, ``XTRIM MINID``).

A worker's learner keeps the arrays as of its last sync to find what moved: ~17 MB (2**20
weights and squared-gradient sums), ~26 MB when it learns words.

A failed sync (Redis down or slow) logs a warning and is retried a period later (later still
while it keeps failing) with what it had to send: the crawl goes on with its local learner
meanwhile. That is the one place where a Redis error is not raised: the learner orders the crawl,
its correctness does not depend on it.
"""

from __future__ import annotations

import logging
import os

from focuscrawl.distributed.connection import redis_module
from focuscrawl.distributed.learner_batch import decode, encode

redis = redis_module()

logger = logging.getLogger(__name__)

#: seconds between a worker's syncs: how stale its view of the others' learning may grow
SYNC_PERIOD = 2.0
#: stream entries between snapshots. The stream holds one to two of these intervals: at ~50 KiB a
#: batch (a worker's 100 pages a period) 12-25 MiB of Redis. A worker that falls further behind
#: (it did not sync for SNAPSHOT_EVERY / workers periods) starts again from the snapshot.
SNAPSHOT_EVERY = 256
#: the stream's length at most, should snapshots stop being written: a bound on Redis' memory
MAX_ENTRIES = 4 * SNAPSHOT_EVERY
#: stream entries read per round trip: a worker far behind catches up over a few calls
READ_CHUNK = 128
#: the longest wait between attempts while Redis keeps failing: each attempt may hold the reactor
#: for the client's timeouts and retries, so failures space the attempts out, doubling from a period
MAX_BACKOFF = 30.0
#: how long a worker may take to write a snapshot before another may try
SNAPSHOT_CLAIM_MS = 30_000

_LUA_IDS = """
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function newer(a, b)
  local am, as = parse(a)
  local bm, bs = parse(b)
  return am > bm or (am == bm and as > bs)
end
local function raise_floor(key, id)
  local floor = redis.call('GET', key)
  if not floor or newer(id, floor) then redis.call('SET', key, id) end
end
"""

# KEYS: stream, counter, snapshot meta, floor. ARGV: cap, last id read, entries to read, origin to
# leave out ('' for none), then (origin, seq, batch) per batch to add. Returns the floor (the
# newest id ever trimmed away: a reader behind it missed entries), the snapshot meta ("id n") and
# the entries after the last id: {id, n, origin, seq, batch}, or {id, n} for the origin left out.
_SYNC = _LUA_IDS + """
local cap = tonumber(ARGV[1])
for i = 5, #ARGV, 3 do
  local n = redis.call('INCR', KEYS[2])
  redis.call('XADD', KEYS[1], '*', 'o', ARGV[i], 's', ARGV[i + 1], 'n', n, 'b', ARGV[i + 2])
end
local length = redis.call('XLEN', KEYS[1])
if length > cap then
  local cut = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', length - cap)
  redis.call('XTRIM', KEYS[1], 'MAXLEN', cap)
  raise_floor(KEYS[4], cut[#cut][1])
end
local out = {}
for _, entry in ipairs(redis.call('XRANGE', KEYS[1], '(' .. ARGV[2], '+', 'COUNT', ARGV[3])) do
  local f = entry[2]  -- o, origin, s, seq, n, n, b, batch
  if f[2] == ARGV[4] then
    out[#out + 1] = {entry[1], f[6]}
  else
    out[#out + 1] = {entry[1], f[6], f[2], f[4], f[8]}
  end
end
return {redis.call('GET', KEYS[4]) or false, redis.call('GET', KEYS[3]) or false, out}
"""

# KEYS: snapshot meta, snapshot, stream, floor, claim. ARGV: id, n, snapshot, claimant.
# The first snapshot of a crawl (id 0-0) is written only where there is none; a later one only
# over an older one. Each trims the stream to the snapshot before it: a worker that has just
# taken the previous one over still finds its tail.
_WRITE_SNAPSHOT = _LUA_IDS + """
local current = redis.call('GET', KEYS[1])
if redis.call('GET', KEYS[5]) == ARGV[4] then redis.call('DEL', KEYS[5]) end
local id = ARGV[1]
local previous = current and string.match(current, '^(%S+)')
if current and (id == '0-0' or not newer(id, previous)) then return 0 end
redis.call('SET', KEYS[2], ARGV[3])
redis.call('SET', KEYS[1], id .. ' ' .. ARGV[2])
if previous and previous ~= '0-0' then
  local gone = redis.call('XREVRANGE', KEYS[3], '(' .. previous, '-', 'COUNT', 1)
  if gone[1] then
    redis.call('XTRIM', KEYS[3], 'MINID', previous)
    raise_floor(KEYS[4], gone[1][1])
  end
end
return 1
"""


def _id(value: bytes | str) -> tuple[int, int]:
    ms, _, seq = (value.decode() if isinstance(value, bytes) else value).partition("-")
    return int(ms), int(seq)


class LearnerSync:
    """This worker's side of the shared learner. ``client``: a redis-py client that returns bytes
    (``connection.connect``'s); ``keys``: the crawl's ``Keys``; ``worker_id``: a name for logs
    (each process adds a random token to it, so a restarted worker is a new origin).

    A sync runs on the caller's thread (the reactor's): the client's socket timeout and retries
    bound how long it may hold it when Redis is slow or gone, so give it short ones; the next
    period is the retry. Call ``maybe_sync`` once the learner has its starting weights
    (``use_link_model``): the first call joins the crawl's learner."""

    def __init__(self, client: redis.Redis, keys, worker_id: str, period: float = SYNC_PERIOD):
        self.client = client
        self.period = period
        self.origin = f"{worker_id}/{os.urandom(4).hex()}"
        self.stream = keys("learner", "stream")
        self.counter = keys("learner", "added")
        self.meta_key = keys("learner", "snapshot", "meta")
        self.snapshot_key = keys("learner", "snapshot")
        self.floor_key = keys("learner", "floor")
        self.claim_key = keys("learner", "snapshot", "claim")
        self._sync_script = client.register_script(_SYNC)
        self._snapshot_script = client.register_script(_WRITE_SNAPSHOT)
        self._due = float("-inf")
        self.learner = None
        self.joined = False
        self.last_id = "0-0"  # the stream entry read last
        self.last_n = 0  # its number (entries ever added)
        self.seen: dict[str, int] = {}  # origin -> the last of its batches applied here
        self.seq = 0  # this worker's batches pushed
        self.unsent: tuple[int, bytes] | None = None  # a batch whose push has not been acknowledged
        self.failures = 0  # syncs failed in a row
        self.stats = {"syncs": 0, "failed": 0, "pushed_bytes": 0, "batches_applied": 0, "observations_applied": 0,
                      "snapshots_written": 0, "joins": 0, "credit_applied": 0}

    # --- the scheduler's side ----------------------------------------------------------------------
    def maybe_sync(self, learner, now: float) -> bool:
        """Sync when a period has passed since the last one (else a float comparison, nothing
        more). True when the learner took up other workers' learning: its ``version`` moved, so
        the frontier's entries are stale (the rescorer's ``learner_updated``)."""
        if now < self._due:
            return False
        self._due = now + self.period
        version = learner.version
        try:
            self.sync(learner)
            self.failures = 0
        except redis.RedisError as exc:
            # the crawl goes on with its local learner; a later sync sends what this one could not
            self.failures += 1
            self.stats["failed"] += 1
            wait = min(self.period * 2 ** (self.failures - 1), max(self.period, MAX_BACKOFF))
            self._due = now + wait
            logger.warning("learner sync with Redis failed (retried in %.1f s): %s", wait, exc)
        return learner.version != version

    def close(self, learner) -> None:
        """A worker stopping pushes what it learned since its last sync (a failure is logged)."""
        if learner is self.learner and self.joined:
            try:
                self.sync(learner)
            except redis.RedisError as exc:
                logger.warning("the learner's last sync with Redis failed: %s", exc)

    def sync(self, learner) -> None:
        """One exchange now (``maybe_sync`` paces them). Raises Redis' errors."""
        if learner is not self.learner:  # the first sync, or a learner restored from a checkpoint
            self.learner = learner
            learner.track_changes()
            self.joined = False
        if not self.joined:
            self._join()
        if self.unsent is None:
            self.unsent = self._take_batch()
        batches = [] if self.unsent is None else [self.origin, str(self.unsent[0]), self.unsent[1]]
        floor, meta, entries = self._sync_script(
            keys=[self.stream, self.counter, self.meta_key, self.floor_key],
            args=[MAX_ENTRIES, self.last_id, READ_CHUNK, self.origin, *batches])
        if self.unsent is not None:
            self.stats["pushed_bytes"] += len(self.unsent[1])
            self.unsent = None
        self.stats["syncs"] += 1
        if meta is None:  # the shared state is gone (Redis flushed): this learner starts it again
            self.joined = False
            self._join()
        elif floor is not None and _id(floor) > _id(self.last_id):  # entries not read yet were trimmed
            logger.warning("the learner sync fell behind the shared stream; starting again from its snapshot")
            self.joined = False
            self._join()
        else:
            self._apply_entries(entries, own=False)
            if len(entries) >= READ_CHUNK:
                self._due = float("-inf")  # more to read: at the next call, not a period later
            elif self.last_n - int(meta.split()[1]) >= SNAPSHOT_EVERY:
                self._write_snapshot()

    # --- joining ----------------------------------------------------------------------------------
    def _join(self) -> None:
        """Take the crawl's shared learner over (the snapshot, then the stream after it), or, where
        there is none yet, make this one the crawl's."""
        self.stats["joins"] += 1
        for _attempt in range(3):
            snapshot = self.client.get(self.snapshot_key)
            if snapshot is None:
                self.seen = {self.origin: self.seq}
                if self._put_snapshot("0-0", 0):
                    self.last_id, self.last_n = "0-0", 0
                    self.learner.changes.mark()
                    self.joined = True
                    return
                continue  # another worker's came first
            taken = decode(snapshot)
            if taken is None:  # written by another release: this worker keeps its learner to itself
                raise redis.RedisError("the crawl's learner snapshot in Redis is of another format")
            state, header = taken
            self.learner.changes.replace(state)
            self.last_id, self.last_n = header["id"], header["n"]
            self.seen = dict(header["seen"])
            if self._drain():
                self.joined = True
                return
        raise redis.RedisError("the learner's shared stream was trimmed faster than it could be read")

    def _drain(self) -> bool:
        """Read the stream after the snapshot taken over, this worker's own batches too (those it
        pushed before are not in the snapshot). False when it was trimmed meanwhile."""
        while True:
            floor, _meta, entries = self._sync_script(
                keys=[self.stream, self.counter, self.meta_key, self.floor_key],
                args=[MAX_ENTRIES, self.last_id, READ_CHUNK, ""])
            if floor is not None and _id(floor) > _id(self.last_id):
                return False
            self._apply_entries(entries, own=True)
            if len(entries) < READ_CHUNK:
                break
        if self.unsent is not None:
            if self.unsent[0] <= self.seen.get(self.origin, 0):
                self.unsent = None  # it did reach the stream
            else:
                # it never reached the stream: the snapshot replaced the learning it carried, so
                # it is applied here again, and sent at the next sync
                self._merge(decode(self.unsent[1])[0])
        self.seen[self.origin] = self.seq
        return True

    # --- pushing and pulling ----------------------------------------------------------------------
    def _take_batch(self) -> tuple[int, bytes] | None:
        """This worker's changes since the last push, as a batch; None when nothing changed. What it
        holds counts as pushed from now on (``unsent`` keeps it until Redis took it)."""
        delta = self.learner.changes.take()
        if delta is None:
            return None
        self.seq += 1
        self.seen[self.origin] = self.seq
        return self.seq, encode(delta, o=self.origin, s=self.seq)

    def _apply_entries(self, entries: list, own: bool) -> None:
        """Apply the entries read, each batch once, and move the learner's version when any was.
        ``own``: this worker's batches are in them (after a snapshot was taken over), to be applied
        like the others' when newer than it."""
        moved = False
        for entry in entries:
            self.last_id, self.last_n = entry[0].decode(), int(entry[1])
            if len(entry) < 5:
                continue  # this worker's own, left out by Redis
            origin, seq = entry[2].decode(), int(entry[3])
            if seq <= self.seen.get(origin, 0) or (origin == self.origin and not own):
                continue
            self.seen[origin] = seq
            batch = decode(entry[4])
            if batch is None:
                logger.warning("skipped a learner batch of another format from %s", origin)
                continue
            delta = batch[0]
            self._merge(delta)
            self.stats["batches_applied"] += 1
            self.stats["observations_applied"] += delta.observations
            moved = True
        if moved:
            self.learner.version += 1  # the frontier's scores are stale: the rescorer's cue

    def _merge(self, delta) -> None:
        self.stats["credit_applied"] += self.learner.changes.merge(delta)

    # --- snapshots --------------------------------------------------------------------------------
    def _snapshot(self, stream_id: str, n: int) -> bytes:
        """The learner's shared state as a batch to an empty learner, as of stream entry
        ``stream_id`` (every batch up to it is in it, none after)."""
        return encode(self.learner.changes.state(), id=stream_id, n=n, seen=self.seen, o=self.origin, s=self.seq)

    def _put_snapshot(self, stream_id: str, n: int) -> bool:
        blob = self._snapshot(stream_id, n)
        written = self._snapshot_script(
            keys=[self.meta_key, self.snapshot_key, self.stream, self.floor_key, self.claim_key],
            args=[stream_id, n, blob, self.origin])
        return bool(written)

    def _write_snapshot(self) -> None:
        """Write the merged state as the crawl's snapshot, unless another worker is at it."""
        if not self.client.set(self.claim_key, self.origin, nx=True, px=SNAPSHOT_CLAIM_MS):
            return
        if self._put_snapshot(self.last_id, self.last_n):
            self.stats["snapshots_written"] += 1


__all__ = ["LearnerSync", "SYNC_PERIOD", "SNAPSHOT_EVERY", "MAX_ENTRIES"]
