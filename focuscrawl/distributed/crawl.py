"""One worker's part in a shared crawl: the shared frontier, seen set and learner wired to the
scheduler's gate and learner.

The scheduler stays the one scheduler (``FocusScheduler``); with ``FOCUS_FRONTIER_URL`` it is built
with the parts here and tells this object what only a shared crawl needs to know: a host leased
or released (its timing and robots.txt go with it), a page released (the crawl's request budget
is shared), a page done (no longer work a dead worker would leave undone), and the passing of
time (heartbeat, leases of dead workers reaped, the learner synced).
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from focuscrawl.config import FocusConfig
from focuscrawl.distributed.batch import MAX_AGE
from focuscrawl.distributed.connection import Keys, connect, round_trips, sent_ahead
from focuscrawl.distributed.frontier import SharedFrontier
from focuscrawl.distributed.shared_records import check_layout
from focuscrawl.politeness.gate import HostGate

logger = logging.getLogger(__name__)

#: how long a worker trusts its reading of the crawl's request count (its own releases update it)
BUDGET_CACHE_SECONDS = 0.5
#: how long a learner sync may wait for Redis (a snapshot write takes ~0.1 s; a failed sync is retried)
LEARNER_SYNC_TIMEOUT = 2.0


class SharedCrawl:
    def __init__(self, client, keys: Keys, frontier: SharedFrontier, seen, learner_sync=None):
        self.client = client
        self.keys = keys
        self.frontier = frontier
        self.seen = seen
        self.learner_sync = learner_sync
        self.gate: HostGate | None = None
        self._robots_apply = None
        self._robots_at: dict[str, float] = {}  # host held -> fetched_at of its robots.txt rules when leased
        self._next_beat = 0.0
        self._released = 0
        self._released_at = -1.0
        self._counted = 0  # page requests this worker released
        self.reaped = [0, 0, 0]

    @classmethod
    def from_config(cls, config: FocusConfig, *, codec, serializer) -> SharedCrawl:
        from focuscrawl.distributed.learner_sync import LearnerSync
        from focuscrawl.distributed.seen import RedisSeenSet

        client = connect(config.frontier_url)
        keys = Keys(config.crawl_id)
        check_layout(client, keys)
        # writes nothing waits for ride with the next command answered: a page's links, its host
        # released, the page done and counted cost one round trip together, not one each
        frontier = SharedFrontier(client, keys, codec, serializer, capacity=config.frontier_capacity,
                                  worker_timeout=config.worker_timeout, write_behind=MAX_AGE,
                                  link_cache=config.shared_link_cache)
        # the learner syncs on the reactor thread, and a failed sync is simply retried next period:
        # its client gives up at once rather than retrying (which would hold every download)
        sync_client = connect(config.frontier_url, socket_timeout=LEARNER_SYNC_TIMEOUT, retries=0)
        seen = RedisSeenSet(client, keys)
        # a link's seen-set add goes with its push, in one script: no round trip a link
        seen.write_behind(frontier.writes)
        frontier.seen_claim = seen.claim
        crawl = cls(client, keys, frontier, seen, LearnerSync(sync_client, keys, frontier.worker))
        logger.info("worker %s of the shared crawl %r at %s", frontier.worker, config.crawl_id,
                    config.frontier_url)
        return crawl

    @property
    def worker(self) -> str:
        return self.frontier.worker

    # --- the scheduler's gate and learner ------------------------------------------------------
    def attach(self, gate: HostGate, robots_apply) -> None:
        """Hand hosts' timing and robots.txt over with their leases; ``robots_apply(host, rules)``
        applies rules taken from another worker (their Crawl-delay) as if fetched here."""
        self.gate = gate
        self._robots_apply = robots_apply
        self.frontier.on_lease = self._leased
        self.frontier.host_state = self._host_state

    def _leased(self, host: str, timing: bytes | None, robots: bytes | None) -> None:
        gate = self.gate
        state: dict[str, Any] = json.loads(timing) if timing else {}
        if robots:
            state["robots"] = json.loads(robots)
        if state:
            now, wall = time.monotonic(), time.time()
            if gate.take_host_state(host, state, now, wall):
                self._robots_apply(host, gate.robots[host])
        rules = gate.robots.get(host)
        self._robots_at[host] = rules.fetched_at if rules is not None else -1.0

    def _host_state(self, host: str) -> tuple[str, str]:
        state = self.gate.host_state(host, time.monotonic(), time.time())
        robots = state.pop("robots", None)
        rules = self.gate.robots.get(host)
        fetched_here = rules is not None and rules.fetched_at != self._robots_at.pop(host, -1.0)
        return json.dumps(state), (json.dumps(robots) if robots is not None and fetched_here else "")

    # --- budget, work, time --------------------------------------------------------------------
    def expect_free(self, host: str) -> None:
        """The host just released for a page is expected free after its response and delay (as
        the gate judges its own hosts in flight): other workers' patience may wait for it."""
        timing = self.gate.timing_of(host)
        now = time.monotonic()
        latency = sum(timing.latencies) / len(timing.latencies) if timing.latencies else 0.0
        self.frontier.expect_free(host, latency + self.gate.delays.next_ready(host, timing, now) - now)

    def count_release(self) -> int:
        """A page request released: the crawl's requests so far (all workers), as this worker
        knows them (the crawl's counter answers with the next command sent)."""
        self._released += 1
        self._counted += 1
        self.frontier.writes.defer(("INCR", self.keys("released")), self._count_read)
        return self._released

    def _count_read(self, count) -> None:
        self._released = max(self._released, int(count))
        self._released_at = time.monotonic()

    def released(self) -> int:
        now = time.monotonic()
        if now - self._released_at > BUDGET_CACHE_SECONDS:
            self._released = max(self._released, int(self.frontier.writes.call("GET", self.keys("released")) or 0))
            self._released_at = now
        return self._released

    def pending(self) -> bool:
        """Whether the crawl may still bring URLs: some queued, some host held or page in work
        at any worker."""
        return len(self.frontier) > 0 or self.frontier.in_flight() > 0

    def done(self, urls) -> None:
        self.frontier.done(urls)

    def tick(self, now: float, learner) -> bool:
        """Heartbeat, reaping and learner sync, each at its own pace (cheap when not due). True
        when the learner took up other workers' learning (the frontier's entries are then stale)."""
        self.frontier.flush_if_due()
        if now >= self._next_beat:
            self._next_beat = now + self.frontier.heartbeat_seconds
            reaped = self.frontier.heartbeat()
            if any(reaped):
                logger.warning("shared crawl: %d leases reaped, %d pages queued again, %d workers gone",
                               *reaped)
                self.reaped = [a + b for a, b in zip(self.reaped, reaped, strict=True)]
        if self.learner_sync is not None and learner is not None:
            return self.learner_sync.maybe_sync(learner, now)
        return False

    def close(self, learner=None) -> None:
        if self.learner_sync is not None and learner is not None:
            self.learner_sync.close(learner)  # (a failure is logged: the crawl is over either way)
        self.frontier.leave()
        links = self.frontier.records.links
        logger.info("shared crawl: %d round trips to Redis, %d page requests counted by this worker, %d writes sent "
                    "ahead, %d records re-scored (link features of %d read from Redis, %d kept here)", round_trips(),
                    self._counted, sent_ahead(), self.frontier.rescored, links.misses, links.hits)


__all__ = ["SharedCrawl"]
