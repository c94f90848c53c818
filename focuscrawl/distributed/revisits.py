"""A continuous crawl's revisit plan (``FOCUS_RECRAWL``) shared by the workers of one crawl.

The plan (``freshness.RevisitPlan``: numpy columns, intervals allocated over every page at once)
is one object, not a set of per-key records: the optimal allocation needs all the pages' rates and
weights together, and splitting the plan by host would split the revisit budget it allocates. So
one worker at a time holds it, and the others tell it what they see:

- **the holder** takes a lease in Redis (``revisits:leader``: its worker id, a TTL of
  ``FOCUS_WORKER_TIMEOUT``, renewed every ``SYNC_SECONDS``), folds the events of every worker into
  its plan, and pushes due revisits into the shared frontier, where whichever worker holds the
  host's lease fetches them (politeness is the frontier's, unchanged). It hands revisits out only
  while its last renewal, counted from when it was sent, is younger than half the TTL: a holder
  stalled past that waits for its next renewal's answer, and steps down if the lease has gone to
  another worker meanwhile.
- **every worker** (the holder too) reports its events (``scheduling.plan_keepers``: a page
  visited with its status, text hash, weight and validators, a change hinted, a revisit gone out
  of the downloader or refused) to a Redis stream, ``revisits:events``, one entry of a JSON list
  each ``SYNC_SECONDS``; a revisit it released at once, so that the holder knows where each is. The
  holder reads the entries since its last reading as often. A revisit handed out is an event too,
  added to the stream before the revisit is pushed. A revisit released by a worker whose heartbeat
  stopped (``frontier.py``: a worker gone from ``workers``) is presumed lost: due again an
  interval later (a revisit is not a worker's *work*, which the frontier would queue again).
- **a snapshot**: every ``SNAPSHOT_SECONDS`` (less often for a plan whose pickling would take more
  than ``SNAPSHOT_SHARE`` of the holder's time) the holder writes its plan (pickled), the revisits
  it has queued and the id of the last entry folded into it (``revisits:snapshot``), and trims the
  stream before that id: a script that does so only while the lease is its own. A worker that
  takes the lease up (the holder stopped, or was killed) loads the snapshot and folds the entries
  since it, its own hand-outs included: a page handed out and not visited yet is not handed out
  again for the same due time, and nothing reported is lost.

Every command but a take-over's reads rides on the worker's other traffic (``batch.WriteBehind``):
the lease, the events, the reading and the snapshot are sent with the next command the worker
sends anyway (a pop), so the plan costs no round trip of its own. The pages in the crawl's plan
(``revisits:pages``, set by the holder with each renewal, read back by every worker) keep each
worker's crawl open while there are pages to keep fresh.

The snapshot is pickled, as a queued request that cannot be packed is: the crawl's Redis is
trusted as its JOBDIR is. Times in the events are the workers' wall clocks: the plan compares them
with each other and with Last-Modified dates, as a crawl of its own does (keep the workers' clocks
synchronised).
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import time
from collections.abc import Callable

from focuscrawl.distributed.batch import WriteBehind
from focuscrawl.distributed.connection import Keys
from focuscrawl.scheduling import plan_keepers as events
from focuscrawl.scheduling.revisits import Revisits

logger = logging.getLogger(__name__)

#: how often a worker reports its events, renews or tries the lease, and the holder reads the
#: events (seconds): what a visit waits, at most about, before the plan knows of it
SYNC_SECONDS = 1.0
#: how often the holder writes its snapshot (seconds): what a new holder replays at most
SNAPSHOT_SECONDS = 5.0
#: the share of the holder's time its snapshots may take, at most: a large plan is written less
#: often than SNAPSHOT_SECONDS (pickling 100,000 pages takes seconds on a loaded machine), and a
#: new holder replays more events instead
SNAPSHOT_SHARE = 0.05
#: entries read from the stream at once (the rest at the next sync, which comes at once)
READ_COUNT = 1_000
#: entries the stream keeps at most, about, when no holder trims it (none alive for long)
MAX_ENTRIES = 1_000_000
#: a revisit queued this long (seconds) and never released is presumed lost (its record pruned
#: from a full frontier, or its release never told: the worker died at once): due again
LOST_AFTER = 600.0

#: KEYS: leader, pages, workers; ARGV: WORKER, TTL_MS, PAGES ('' unless the caller holds the plan)
#: -> {2 taken now, 1 renewed, 0 another worker's; the pages in the crawl's plan; the live workers}
LEAD = """
local holder = redis.call('GET', KEYS[1])
local status = 0
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  status = 1
elseif not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  status = 2
end
if status == 1 and ARGV[3] ~= '' then redis.call('SET', KEYS[2], ARGV[3]) end
return {status, tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('ZRANGE', KEYS[3], 0, -1)}
"""

#: KEYS: leader, snapshot, pages, stream; ARGV: WORKER, SNAPSHOT, PAGES, STREAM_ID -> 1 written,
#: 0 when the lease is not WORKER's (a stale holder never overwrites its successor's snapshot)
SNAPSHOT = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SET', KEYS[3], ARGV[3])
redis.call('XTRIM', KEYS[4], 'MINID', ARGV[4])
return 1
"""

#: KEYS: leader; ARGV: WORKER -> 1 when the lease was WORKER's and is given up
RESIGN = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""


class SharedPlanKeeper:
    """The plan of a shared crawl (see the module docstring); ``scheduling.plan_keepers.PlanKeeper``.

    ``writes``: the worker's write-behind queue (and its scripts); ``lease_seconds``: how long the
    holder's lease lasts unrenewed; ``crawl_released()``: the crawl's requests so far (the request
    rate the revisit rate is a share of)."""

    keeps_state = False

    def __init__(self, writes: WriteBehind, keys: Keys, worker: str, revisits: Revisits, *, lease_seconds: float,
                 crawl_released: Callable[[], int], stats=None, clock: Callable[[], float] = time.monotonic,
                 sync_every: float = SYNC_SECONDS, snapshot_every: float = SNAPSHOT_SECONDS):
        self.writes = writes
        self.worker = worker
        self.revisits = revisits
        self.lease_ms = max(1, int(lease_seconds * 1000))
        self.trust = lease_seconds / 2  # the holder acts on a renewal this long after it was sent
        self.crawl_released = crawl_released
        self.stats = stats
        self.clock = clock
        self.sync_every = sync_every
        self.snapshot_every = snapshot_every
        self.leader_key = keys("revisits", "leader")
        self.pages_key = keys("revisits", "pages")
        self.snapshot_key = keys("revisits", "snapshot")
        self.stream = keys("revisits", "events")
        self.workers_key = keys("workers")  # the live workers (``frontier.py``: their heartbeats)
        scripts = writes.scripts
        for name, source in (("REVISITS_LEAD", LEAD), ("REVISITS_SNAPSHOT", SNAPSHOT), ("REVISITS_RESIGN", RESIGN)):
            if name not in scripts.shas:
                scripts.add(name, source)
        self.leader = False
        self.takeovers = 0
        self.folded = 0  # events folded into the plan while held
        self._events: list[tuple] = []  # this worker's, not sent yet
        self._trusted_until = -math.inf  # the holder hands revisits out until then
        self._taken: float | None = None  # when the lease taken up was asked for (a take-over to do)
        self._pages = 0  # the pages in the crawl's plan, as last read
        self._read: list = []  # stream entries read, not folded yet
        self._reading = False
        self._last_id = b"0-0"  # the last entry folded into the plan
        # the holder's view of its revisits queued: released, by which worker (until they leave its
        # downloader), and handed out, when (until released)
        self._in_flight: dict[str, str] = {}
        self._handed: dict[str, float] = {}
        self._live: set[str] | None = None  # the crawl's live workers, as last read
        self.lost = 0  # revisits presumed lost (their worker died), due again
        self._next_sync = -math.inf
        self._next_snapshot = -math.inf

    # --- what this worker saw ------------------------------------------------------------------
    def report(self, event: tuple) -> None:
        self._events.append(event)

    def released(self, now: float, revisit: str | None) -> None:
        if revisit is not None:
            # at once (with the worker's next command): the holder must know where the revisit is
            # should this worker die with it
            self._add([events.released(revisit, self.worker)])

    def handed_out(self, urls: list[str], at: float) -> None:
        # in the stream before the pushes that follow it (writes are sent in order)
        self._add([events.handed(url, at) for url in urls])

    # --- the plan -------------------------------------------------------------------------------
    def hold(self, now: float) -> bool:
        if now >= self._next_sync:
            self._sync(now)
        if self._taken is not None:
            self._take_over(self._taken)
        if not self.leader or now >= self._trusted_until:
            return False  # not the holder, or its renewal not answered yet: another may hold it soon
        self._fold()
        self.revisits.crawl_released(now, self.crawl_released())
        if now >= self._next_snapshot:
            self._snapshot(now)
        return True

    def pages(self) -> int:
        if self.leader:
            return len(self.revisits)
        # events not sent yet may be the first pages of the plan
        return self._pages or len(self._events)

    def next_due(self, now: float) -> float | None:
        """The next sync (a worker that does not hold the plan may take it up then); the holder's
        next revisit due, if sooner."""
        at = max(self._next_sync, now)
        due = self.revisits.next_due(now) if self.leader else None
        return at if due is None else min(at, due)

    def close(self) -> None:
        """The crawl ends here: the events go out, and a holder writes its snapshot and gives the
        lease up (another worker takes the plan up at its next sync rather than at the lease's end)."""
        if self._events:
            self._add(self._events)
            self._events = []
        if self.leader:
            self._fold()
            self._snapshot(self.clock())
            self.writes.defer(("EVALSHA", self.writes.scripts.shas["REVISITS_RESIGN"], 1, self.leader_key,
                               self.worker))
            self.leader = False
            if self.stats is not None:
                self.stats.set_value("focus/revisits/shared/held", 0)
            logger.info("shared crawl: the revisit plan given up (%d pages, %d events folded while held)",
                        len(self.revisits), self.folded)
        self.writes.flush()

    # --- Redis ----------------------------------------------------------------------------------
    def _add(self, batch: list[tuple]) -> None:
        if batch:
            self.writes.defer(("XADD", self.stream, "MAXLEN", "~", MAX_ENTRIES, "*", "w", self.worker,
                               "e", json.dumps(batch, separators=(",", ":"))))

    def _sync(self, now: float) -> None:
        """The events out; the lease renewed or tried; the holder's reading of the stream. All
        deferred: they go with the worker's next command."""
        self._next_sync = now + self.sync_every
        if self._events:
            self._add(self._events)
            self._events = []
        if self.leader and not self._reading:
            # before the lease's script, which reads the live workers: a worker whose events are
            # read was alive and registered when they were sent
            self._reading = True
            self.writes.defer(("XRANGE", self.stream, b"(" + self._last_id, "+", "COUNT", READ_COUNT), self._got)
        pages = str(len(self.revisits)) if self.leader else ""
        self.writes.defer(("EVALSHA", self.writes.scripts.shas["REVISITS_LEAD"], 3, self.leader_key, self.pages_key,
                           self.workers_key, self.worker, self.lease_ms, pages),
                          lambda reply, sent=now: self._leased(reply, sent))

    def _leased(self, reply, sent: float) -> None:
        status, pages, live = int(reply[0]), int(reply[1]), reply[2]
        self._pages = pages
        self._live = {w.decode() if isinstance(w, bytes) else str(w) for w in live or ()}
        if status == 0:
            if self.leader:
                self._step_down("another worker holds its lease")
        elif status == 2 or not self.leader:
            self._taken = sent  # taken up at the next ``hold``, which reads the snapshot
        else:
            self._trusted_until = sent + self.trust

    def _got(self, entries) -> None:
        self._reading = False
        self._read.extend(entries or ())
        if len(entries or ()) >= READ_COUNT:
            self._next_sync = -math.inf  # more to read: at once

    def _fold(self) -> None:
        read, self._read = self._read, []
        for entry_id, fields in read:
            self._last_id = entry_id if isinstance(entry_id, bytes) else str(entry_id).encode()
            try:
                batch = json.loads(fields[b"e"])
            except (KeyError, TypeError, ValueError) as exc:
                logger.warning("shared crawl: revisit events %s unreadable (%s), skipped", self._last_id, exc)
                continue
            for event in batch:
                self._track(event)
                events.apply(self.revisits, event)
            self.folded += len(batch)
            self._count("events", len(batch))
        self._presume_lost()

    def _track(self, event) -> None:
        """Where each revisit queued is: handed out (in the frontier), released (at a worker)."""
        kind = event[0]
        if kind == events.HANDED:
            self._handed[event[1]] = event[2]
        elif kind == events.RELEASED and len(event) > 2 and event[1]:
            self._handed.pop(event[1], None)
            self._in_flight[event[1]] = event[2]
        elif kind in (events.VISIT, events.LEFT, events.DROPPED):
            self._handed.pop(event[1], None)
            self._in_flight.pop(event[1], None)

    def _presume_lost(self) -> None:
        """Revisits no worker will tell of again leave the queued ones (``Revisits.left``): due
        again at their next interval. Those in flight at a worker gone (killed: its heartbeat
        stopped), and those handed out ``LOST_AFTER`` ago and never released."""
        queued = self.revisits.queued
        lost = []
        if self._live is not None:
            lost += [url for url, worker in self._in_flight.items() if worker not in self._live]
        oldest = self.revisits.clock() - LOST_AFTER
        lost += [url for url, at in self._handed.items() if at < oldest]
        for url in lost:
            self._in_flight.pop(url, None)
            self._handed.pop(url, None)
            if url in queued:
                self.revisits.left(url)
                self.lost += 1
                self._count("lost")
        # what the plan no longer queues (forgotten, visited while this view missed it) is let go
        for held in (self._in_flight, self._handed):
            for url in [url for url in held if url not in queued]:
                del held[url]

    def _take_over(self, sent: float) -> None:
        """This worker holds the plan now: the last snapshot, and every entry since it."""
        self._taken = None
        blob = self.writes.call("GET", self.snapshot_key)
        snapshot = None
        if blob:
            try:
                snapshot = pickle.loads(blob)
            except Exception as exc:  # noqa: BLE001 - an unreadable snapshot: replay the whole stream
                logger.error("shared crawl: the revisit plan's snapshot cannot be read (%s); rebuilt from the "
                             "events kept", exc)
        self.revisits.take_up(snapshot["revisits"] if snapshot else None)
        self._last_id = snapshot["stream_id"] if snapshot else b"0-0"
        self._in_flight = dict(snapshot.get("in_flight", {})) if snapshot else {}
        self._handed = dict(snapshot.get("handed", {})) if snapshot else {}
        self._read, self._reading = [], False
        replayed = 0
        while True:
            entries = self.writes.call("XRANGE", self.stream, b"(" + self._last_id, "+", "COUNT", READ_COUNT) or []
            self._read.extend(entries)
            before = self.folded
            self._fold()
            replayed += self.folded - before
            if len(entries) < READ_COUNT:
                break
        self.leader = True
        self.takeovers += 1
        self._trusted_until = sent + self.trust
        self._next_snapshot = -math.inf  # the plan as taken up, at once
        self._count("takeovers")
        if self.stats is not None:
            self.stats.set_value("focus/revisits/shared/held", 1)
        logger.info("shared crawl: this worker holds the revisit plan now: %d pages (%s), %d events replayed",
                    len(self.revisits), "from its snapshot" if snapshot else "no snapshot yet", replayed)

    def _step_down(self, why: str) -> None:
        self.leader = False
        self._read, self._reading = [], False
        if self.stats is not None:
            self.stats.set_value("focus/revisits/shared/held", 0)
        logger.warning("shared crawl: this worker no longer holds the revisit plan (%s)", why)

    def _snapshot(self, now: float) -> None:
        started = time.perf_counter()
        blob = pickle.dumps({"revisits": self.revisits.snapshot(), "stream_id": self._last_id,
                             "in_flight": self._in_flight, "handed": self._handed}, protocol=pickle.HIGHEST_PROTOCOL)
        self._next_snapshot = now + max(self.snapshot_every, (time.perf_counter() - started) / SNAPSHOT_SHARE)
        self.writes.defer(("EVALSHA", self.writes.scripts.shas["REVISITS_SNAPSHOT"], 4, self.leader_key,
                           self.snapshot_key, self.pages_key, self.stream, self.worker, blob, len(self.revisits),
                           self._last_id), self._snapshot_written)

    def _snapshot_written(self, ok) -> None:
        if int(ok) == 1:
            self._count("snapshots")
        elif self.leader:
            self._step_down("another worker holds its lease")

    def _count(self, name: str, n: int = 1) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"focus/revisits/shared/{name}", n)


def read_shared_plan(client, keys: Keys) -> Revisits | None:
    """The crawl's plan as its last snapshot has it (``scrapy explain``), without the events since;
    None when there is none."""
    blob = client.get(keys("revisits", "snapshot"))
    if not blob:
        return None
    from focuscrawl.freshness import RevisitPlan

    revisits = Revisits(RevisitPlan(), 1.0)
    revisits.take_up(pickle.loads(blob)["revisits"])
    return revisits


__all__ = ["SNAPSHOT_SECONDS", "SYNC_SECONDS", "SharedPlanKeeper", "read_shared_plan"]
