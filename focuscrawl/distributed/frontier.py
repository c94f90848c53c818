"""The frontier shared by every worker of a crawl, on Redis: the in-process ``Frontier``'s interface.

Each host's queue is a Redis sorted set of the frontier's own records (``frontier/records.py``,
ordered as bytes; a packed one's codec bytes kept beside them: ``shared_records.py``), and which
host goes next is decided in Redis too (``scripts.py``): a host is handed to one worker at a time
(a *lease*) and filed again only when that worker releases it,
``delay`` seconds after its response ended on the server's clock, or when its lease is reaped
(the worker died, or stopped renewing it). So priority is global across hosts and workers, and a
host's delay, Crawl-delay and Retry-After hold across workers: the scheduler asks this frontier
for its next entry exactly as it asks the in-process one.

What the worker keeps in the process: the tokens of the hosts it holds (and renews with its
heartbeat), the seq numbers it stamps records with (taken from Redis a block at a time, so that
records are unique across workers), and nothing else: any worker can stop and another take over.

Re-scoring stays lazy and bounded: an entry is re-scored when it reaches the top of a host its
worker holds (under the worker's learner version), and a background pass re-scores the stale
records among each host's best ``RESCORE_DEPTH``, host after host, a host with more of them than
the pass has room for its longest-stale part a turn. A page released for fetching becomes the worker's *work*
until its item is through the pipelines (``done``): if the worker dies first, the page is queued
again, so no page's links are lost; a page fetched twice that way is counted (``stats``).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from focuscrawl.config import DEFAULTS
from focuscrawl.distributed import scripts
from focuscrawl.distributed.batch import Scripts, WriteBehind
from focuscrawl.distributed.connection import Keys, redis_module
from focuscrawl.distributed.next_ready import NextReady
from focuscrawl.distributed.shared_records import ScoringVersion, SharedRecords
from focuscrawl.frontier.entries import Codec, Entry
from focuscrawl.frontier.records import FLAG, KEY, ORDER, priority_of
from focuscrawl.frontier.rescoring import Rescorer, Restamper

redis = redis_module()

logger = logging.getLogger(__name__)

#: heartbeats a worker sends within its timeout (FOCUS_WORKER_TIMEOUT): one lost or late
#: heartbeat never makes a live worker look dead
HEARTBEATS_PER_TIMEOUT = 6
#: hosts a background re-scoring call looks at, at most, and how deep into each host's queue: as
#: the in-process pass takes whole hosts, so that a record whose value rose since it was queued
#: surfaces from anywhere in its host, not only from the few a pop re-scores (RESCORE_TOP).
#: RESCORE_DEPTH is what one call reads of a host inside Redis (a script holds the server while it
#: runs; a sorted set is read in its order, best first, and nothing finds a deep host's stale
#: records below its top without reading them): a host's window is its best RESCORE_DEPTH records,
#: and every stale record in it is reached within a bounded number of turns, the longest stale
#: first. A record below the window is re-scored only once it rises into it: as the records above
#: it are fetched, or re-scored below it. The in-process frontier reaches every record of a host.
RESCORE_HOSTS = 64
RESCORE_DEPTH = 4096
#: records at the top of a popped host re-scored with it
RESCORE_TOP = 32
#: waiting hosts promoted to ready per pop, at most (the rest on the next pops)
PROMOTE_LIMIT = 256
#: how long a worker trusts its reading of the frontier's size and next ready time
SIZE_CACHE_SECONDS = 0.2
#: the frontier's Lua scripts (``scripts.py``)
SCRIPTS = ("PUSH", "POP", "PEEK", "SWAP", "REQUEUE", "RELEASE", "DONE", "HEARTBEAT", "REAP", "DROP_HOST", "DROP",
           "BEST_SOON", "REFRESH", "STALE_TOPS", "SWAP_MANY")
#: how soon a worker with nothing ready looks again: other workers queue URLs and free hosts
#: at any moment, and nothing tells this process
POLL_SECONDS = 0.25


def worker_id() -> str:
    """This process's name among the crawl's workers: readable, and unique across machines."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _lease_kept(host: str, ok) -> None:
    """Redis's answer to a host's release: whether this worker still held its lease."""
    if ok != 1:
        logger.warning("the lease on %s ran out before its request finished: another worker may have "
                       "fetched from it meanwhile", host)


class SharedFrontier:
    """``Frontier``'s interface over a crawl's Redis keys (``keys``). ``codec`` packs entries (a
    record must hold its request: nothing can stay an object in another process); entries it
    declines (robots.txt requests, with no features) are kept as request dicts in Redis, beside
    their record. ``serializer``: request <-> dict for those. ``link_cache``: link parts kept.

    ``write_behind``: None sends every write at once; a number of seconds lets writes whose reply
    nothing waits for (links pushed, a host released, pages done, ...) wait that long at most for
    the next command that must be answered, and go with it in one round trip (``batch.py``): what
    a crawl's worker uses. Other workers see them that much later; ``flush`` sends them now."""

    def __init__(self, client: redis.Redis, keys: Keys, codec: Codec, serializer, *, capacity: int = 1_000_000,
                 prune_slack: float = 0.05, worker: str | None = None,
                 worker_timeout: float = DEFAULTS.worker_timeout,
                 clock: Callable[[], float] = time.monotonic, write_behind: float | None = None,
                 link_cache: int = DEFAULTS.shared_link_cache):
        self.client = client
        self.keys = keys
        self.prefix = keys.prefix
        self.codec = codec
        self.serializer = serializer
        self.capacity = capacity
        self.prune_slack = prune_slack
        self.worker = worker or worker_id()
        # a worker silent this long is dead: its leases (renewed by its heartbeats) run out and its
        # pages not done are queued again
        self.worker_timeout = worker_timeout
        self.heartbeat_seconds = worker_timeout / HEARTBEATS_PER_TIMEOUT
        self.clock = clock
        self._preview = getattr(codec, "preview", codec.unpack)
        self._rescore_cursor = self._rescore_skip = 0  # where the background pass goes on (HSCAN of the hosts)
        self.rescored = 0
        self.pruned = 0
        self._tokens: dict[str, str] = {}  # host held -> its lease token
        self._clock_offset = 0.0  # Redis's clock minus this process's monotonic one (at the last heartbeat)
        self._fetching: dict[str, str] = {}  # host held -> the page being fetched from it
        self._work: set[str] = set()  # pages fetched under a lease and not yet done (in Redis: P work)
        # what the worker knows of a host, handed over with it: on_lease(host, timing, robots) takes
        # its holders' (JSON bytes or None); host_state(host) -> (timing, robots) gives this
        # worker's at release (JSON strings, '' to leave them as they are)
        self.on_lease: Callable[[str, bytes | None, bytes | None], None] | None = None
        self.host_state: Callable[[str], tuple[str, str]] | None = None
        # the seen set's add of a link, taken back to be done by the link's push (RedisSeenSet.claim)
        self.seen_claim: Callable[[str], Any] | None = None
        self._size_at = -1.0
        self._size = 0
        self.scripts = Scripts(client, {name: getattr(scripts, name) for name in SCRIPTS})
        self.writes = WriteBehind(client, self.scripts, max_age=write_behind, clock=clock)
        # entries packed into records stamped with the crawl's seq numbers, and back
        self.records = SharedRecords(self.writes, keys, codec, serializer, link_cache)
        self.scoring = ScoringVersion(self.writes, keys)
        self.ready = NextReady(self.writes, keys, clock, SIZE_CACHE_SECONDS)
        self._push_head = self.scripts.command("PUSH", self.prefix)
        self._pushing = 0  # records in PUSH commands not answered yet

    # --- versions -------------------------------------------------------------------------------
    @property
    def version(self) -> int:
        """The crawl's scoring version (``ScoringVersion``): a record scored under an older one is stale."""
        return self.scoring.current

    @version.setter
    def version(self, _value: int) -> None:
        self.scoring.move()

    def _run(self, name: str, *args: Any):
        """Script ``name`` run now (after the writes pending); its reply."""
        return self.writes.call(*self.scripts.command(name, self.prefix, *args))

    def _defer(self, name: str, *args: Any, on_reply: Callable[[Any], None] | None = None) -> None:
        """Script ``name`` run with the next command answered (or at once without write-behind)."""
        self.writes.defer(self.scripts.command(name, self.prefix, *args), on_reply)

    def flush(self) -> None:
        """The writes pending sent now (links pushed, hosts released, pages done, ...)."""
        self.writes.flush()

    def flush_if_due(self) -> None:
        """The writes pending sent ahead (``batch.py``) once the oldest has waited its time."""
        self.writes.flush_if_due()

    # --- size ---------------------------------------------------------------------------------
    def __len__(self) -> int:
        """Records queued in the crawl, as read at most ``SIZE_CACHE_SECONDS`` ago (this worker's
        links not sent yet included)."""
        if self.clock() - self._size_at > SIZE_CACHE_SECONDS:
            return self.size()
        self.flush_if_due()
        return self._size + self._pushing

    def size(self) -> int:
        """Records queued in the crawl, now."""
        self._size = max(0, int(self.writes.call("GET", self.keys("size")) or 0))
        self._size_at = self.clock()
        return self._size

    def in_flight(self) -> int:
        """Hosts held and pages not done, across the crawl's workers: while any remains, a worker
        whose frontier is empty must wait for the links they may still bring."""
        return sum(self.writes.call_many([("HLEN", self.keys("lease")), ("HLEN", self.keys("work"))]))

    def host_size(self, host: str) -> int:
        return int(self.writes.call("ZCARD", self.keys("q", host)))

    def queued(self, host: str) -> list[Entry]:
        """The entries queued at ``host``, best first, as they are now (nothing taken out)."""
        return self.records.read(self.writes.call("ZRANGE", self.keys("q", host), 0, -1))

    # --- push ---------------------------------------------------------------------------------
    def push(self, host: str, entry: Entry) -> list[Entry]:
        """Queue an entry (a record already queued is not queued twice); returns the entries
        pruned to stay within capacity (usually none). With write-behind, the links of a page
        join one PUSH, sent with the next command answered."""
        claim = self.seen_claim(entry.url) if self.seen_claim is not None else None
        if claim is False:  # its add went on its own meanwhile: another worker had queued it
            return []
        record, blob = self.records.record(entry)
        self._pushing += 1
        group = (host, 0, *claim, record, blob) if isinstance(claim, tuple) else (host, 1, record, blob)
        self.writes.defer_joined(self._push_head, group, self._pushed)
        if self._size + self._pushing > self.capacity * (1 + self.prune_slack):
            self.flush()
            if self._size > self.capacity * (1 + self.prune_slack):
                return self.prune()
        return []

    def _pushed(self, size, records: int) -> None:
        self._pushing -= records
        self._size = int(size)
        self._size_at = self.clock()

    # --- pop ----------------------------------------------------------------------------------
    def pop(self, now: float, rescore: Rescorer | None = None, max_rescore: int = 256) -> tuple[str, Entry] | None:
        """The best entry of the hosts ready now across the crawl; its host is leased to this
        worker until ``release``. None when no host is ready."""
        peek = min(max_rescore, RESCORE_TOP) if rescore is not None else 0
        host, record, token, wait, *state = self._run("POP", self.worker, self.worker_timeout, PROMOTE_LIMIT,
                                                      self.scoring.current, peek)
        if host is None:
            self.ready.heard(float(wait))
            return None
        host, (timing, robots, top, blob) = host.decode("utf-8", "surrogatepass"), state
        self._tokens[host] = token.decode()
        if self.on_lease is not None:
            self.on_lease(host, timing or None, robots or None)
        if rescore is not None and self.scoring.stale(record):
            record, blob = self._refresh(host, record, blob, rescore, max_rescore, top or None)
        self._size -= 1
        return host, self.records.taken(record, blob)

    def _refresh(self, host: str, record: bytes, blob: bytes | None, rescore: Rescorer, budget: int,
                 top: list[bytes] | None = None) -> tuple[bytes, bytes | None]:
        """The popped record (``blob``: its codec bytes) re-scored, with the stale records at the
        top of its (held) host's queue (``top``: as POP read them, else read here): the best of
        them is the one fetched (with its codec bytes), the others stay queued, re-scored."""
        token = self._tokens[host]
        if top is None:
            top = self._run("PEEK", host, token, min(budget, RESCORE_TOP)) or []
        stale = [r for r in top if self.scoring.stale(r)]
        self.records.keep_link(record, blob)  # what re-scoring reads of it: Redis sent it whole
        fresh = self.records.rescored(self._restamper(rescore), [record, *stale])  # None: pruned meanwhile
        kept = [(old, new) for old, new in zip(stale, fresh[1:], strict=True) if new is not None]
        self.rescored += 1 + len(kept)
        pairs = [x for pair in kept for x in pair]
        queued_best = min([*(new for _, new in kept), *(r for r in top if r not in stale)], default=None)
        if queued_best is not None and queued_best[:KEY] < fresh[0][:KEY]:
            # another record of the host is now better: it is fetched, the popped one goes back
            # (unless another worker re-scored that record meanwhile: then the popped one is fetched)
            reply = self._run("REFRESH", host, token, fresh[0], queued_best, *pairs)
            if isinstance(reply, list):  # taken: fetched with its codec bytes
                return queued_best, reply[1]
            return fresh[0], blob
        # the popped record stays the one fetched whatever the reply: nothing waits for it
        self._defer("REFRESH", host, token, "", fresh[0], *pairs)
        return fresh[0], blob

    def _restamper(self, rescore: Rescorer) -> Restamper:
        return Restamper(rescore, self.version, self.records.next_seq, self._preview)

    def rescore_stale(self, rescore: Rescorer, limit: int = 1000) -> int:
        """Background re-scoring, bounded: the stale records among the best ``RESCORE_DEPTH`` of
        each host, host after host (round robin, whichever worker holds them), up to ``limit`` a
        call; a host with more gives its longest-stale ones and has had its turn
        (``scripts.STALE_TOPS``), as in the in-process frontier. Records another worker changed
        meanwhile are left as they are. One round trip reads the stale records (only those);
        their new headers go ahead of the next command answered."""
        cursor, skip, scanned, newest, *found = self._run("STALE_TOPS", self._rescore_cursor, self._rescore_skip,
                                                          RESCORE_HOSTS, RESCORE_DEPTH, self.scoring.current,
                                                          max(1, limit))
        self._rescore_cursor, self._rescore_skip = int(cursor), int(skip)
        self.scoring.heard(newest)  # another worker's learner may have moved on since this one looked
        hosts, records = [], []
        for host, top in zip(found[::2], found[1::2], strict=True):
            stale = [r for r in top if self.scoring.stale(r)]
            if not stale:
                continue
            hosts.append((host, len(stale)))
            records += stale
            if len(records) >= limit:
                break
        if records:
            fresh = self.records.rescored(self._restamper(rescore), records)  # None: popped meanwhile
            args, at = [], 0
            for host, n in hosts:
                # the key names the record in Redis, which puts the new header on it
                pairs = [x for old, new in zip(records[at:at + n], fresh[at:at + n], strict=True)
                         if new is not None for x in (old[:KEY], new[:FLAG])]
                at += n
                if pairs:
                    args += [host, len(pairs) // 2, *pairs]
            if args:
                self._defer("SWAP_MANY", *args)
                # the biggest write of a worker: Redis replaces the records while this process goes on
                self.writes.send_ahead()
            self.rescored += len(fresh) - fresh.count(None)
        # a pass that found nothing stale in these hosts goes on with the next ones
        return len(records) or (int(scanned) if self._rescore_cursor or self._rescore_skip else 0)

    # --- a held host --------------------------------------------------------------------------
    def requeue(self, host: str, entry: Entry) -> None:
        """Put back an entry popped but not fetched; the host stays held."""
        token = self._tokens.get(host)
        if token is None:
            self.push(host, entry)
            return
        self._defer("REQUEUE", host, token, self.worker, *self.records.record(entry), on_reply=self._requeued)

    def _requeued(self, added) -> None:
        if added == 1:
            self._size += 1

    def expect_free(self, host: str, seconds: float) -> None:
        """This worker expects the host it holds free in ``seconds`` (its response, then its
        delay): other workers' patience may wait for it."""
        if host in self._tokens:
            self.writes.defer(("ZADD", self.keys("soon"), f"{self._server_now() + seconds:.6f}", host))

    def _server_now(self) -> float:
        """Redis's clock, as this process's monotonic clock and the offset read at the heartbeat."""
        return self.clock() + self._clock_offset

    def fetching(self, host: str, url: str) -> None:
        """The request released for ``host`` is the page ``url`` (not a robots.txt): once its
        response is in, the page is this worker's work until ``done``."""
        self._fetching[host] = url

    def release(self, host: str, ready_at: float) -> None:
        """The host's request finished: it may be contacted again from ``ready_at`` (this
        process's monotonic clock; sent as a delay, measured on the server's)."""
        token = self._tokens.pop(host, None)
        if token is None:
            return
        now = self.clock()
        delay = max(0.0, ready_at - now)
        timing, robots = self.host_state(host) if self.host_state is not None else ("", "")
        url = self._fetching.pop(host, "")
        if url:
            self._work.add(url)
        # sent with the next command answered: the host's delay runs from then on Redis's clock,
        # so a host released late is only contacted later, never sooner
        self._defer("RELEASE", host, token, self.worker, f"{delay:.6f}", url, timing, robots,
                    on_reply=lambda ok, host=host: _lease_kept(host, ok))
        self.ready.released(now + delay)

    def holds(self, host: str) -> bool:
        return host in self._tokens

    def done(self, urls: Iterable[str]) -> None:
        """Pages whose items went through the pipelines (their links are queued): no longer work."""
        # a page is reported done twice (stored, then through the pipelines): one script a page
        urls = [url for url in urls if url in self._work]
        self._work.difference_update(urls)
        if urls:  # after the pushes of the page's links: writes are sent in order
            self._defer("DONE", self.worker, self.worker_timeout, *urls)

    def heartbeat(self) -> tuple[int, int, int]:
        """Renew this worker's heartbeat and the leases of the hosts it holds, and reap what
        workers that stopped left: (leases reaped, pages queued again, workers gone)."""
        _, (seconds, micros), version, reaped = self.writes.call_many([
            self.scripts.command("HEARTBEAT", self.prefix, self.worker, self.worker_timeout, *self._tokens),
            ("TIME",), ("GET", self.keys("version")), self.scripts.command("REAP", self.prefix, 1000)])
        self._clock_offset = seconds + micros / 1e6 - self.clock()
        self.scoring.heard(version)
        return tuple(int(n) for n in reaped)

    def leave(self) -> None:
        """A clean stop: this worker's hosts are released and its work forgotten (the pages it
        fetched were processed before the close)."""
        for host in list(self._tokens):
            self.release(host, self.clock())
        commands = []
        if self._work:  # forgotten as done pages are, their records' codec bytes with them
            commands.append(self.scripts.command("DONE", self.prefix, self.worker, self.worker_timeout, *self._work))
            self._work.clear()
        commands.append(("ZREM", self.keys("workers"), self.worker))
        self.writes.call_many(commands)

    # --- when -----------------------------------------------------------------------------------
    def next_ready_time(self) -> float:
        """When to look for a ready host again (this process's monotonic clock): when the
        earliest host nobody holds may be contacted, or in ``POLL_SECONDS`` at the latest."""
        now = self.clock()
        wait = self.ready.next_wait(now)
        return now + POLL_SECONDS if wait is None else min(wait, now + POLL_SECONDS)

    def best_soon(self, now: float, horizon: float, busy_hosts=(), limit: int = 64) -> float:
        """The best priority queued at this worker's hosts in flight (``busy_hosts``) and at the
        ``limit`` hosts nobody holds that are soonest free within ``horizon`` seconds, and at the
        hosts other workers hold that they expect free within it (``expect_free``): what waiting a
        little could buy (-inf when there is none)."""
        key = self._run("BEST_SOON", f"{horizon:.6f}", limit, *busy_hosts)
        if not key:
            return float("-inf")
        return priority_of(int.from_bytes(key[:ORDER], "big"))

    # --- capacity -------------------------------------------------------------------------------
    def prune(self) -> list[Entry]:
        """Drop the lowest-priority records so that ``capacity`` remain: each host's worst are
        read, the crawl's worst of them dropped (what others queue meanwhile is left for the
        next prune)."""
        excess = self.size() - self.capacity
        if excess <= 0:
            return []
        self.flush()
        hosts = [h.decode("utf-8", "surrogatepass") for h in self.client.hkeys(self.keys("state"))]
        pipe = self.client.pipeline(transaction=False)
        for host in hosts:
            pipe.zrange(self.keys("q", host), -excess, -1)
        worst = sorted(((r, host) for host, tails in zip(hosts, pipe.execute(), strict=True) for r in tails),
                       key=lambda pair: pair[0][:KEY], reverse=True)[:excess]
        by_host: dict[str, list[bytes]] = {}
        for record, host in worst:
            by_host.setdefault(host, []).append(record)
        out = []
        for host, records in by_host.items():
            out += self.records.entries(self._run("DROP", host, *records))
        self.pruned += len(out)
        self.client.hincrby(self.keys("stats"), "pruned", len(out))
        self._size_at = -1.0
        return out

    def drop_host(self, host: str) -> list[Entry]:
        """Every entry of a host (its robots.txt forbids them all), removed."""
        pairs = self._run("DROP_HOST", host)
        self._size_at = -1.0
        return self.records.entries(pairs)

    def stats(self) -> dict[str, int]:
        self.flush()
        return {k.decode(): int(v) for k, v in self.client.hgetall(self.keys("stats")).items()}


__all__ = ["SharedFrontier", "worker_id"]
