"""The crawl's state in Redis, shared by every process started with the same ``FOCUS_FRONTIER_URL``
and ``FOCUS_CRAWL_ID`` (``focuscrawl.distributed``): the frontier and its host leases, the seen set,
the exclusion list, the crawl's request count, the pages in work (queued again when their worker
dies) and the learner, synced.

A worker keeps nothing of the crawl's state locally: started again, it takes its part up from
Redis. With JOBDIR it keeps there what is its own (``worker_state``: the URL aliases it learned,
the hosts it renders), besides the spider's state and its store; what those parts concluded (a
host's URL alias rules, its need of a browser) it gives to the other workers and takes up theirs
(``distributed.conclusions``). A continuous crawl's revisit plan is the crawl's too: one worker at a
time holds it, the others' events reach it (``revisit_keeper``, ``distributed.revisits``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy import Request

from focuscrawl.backends.base import BackendUnavailable
from focuscrawl.backends.local import packing_codec
from focuscrawl.backends.worker_state import WorkerState
from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.distributed.conclusions import SharedConclusions
from focuscrawl.distributed.connection import Keys, RedisUnavailable, connect, reactor_wait
from focuscrawl.distributed.crawl import SharedCrawl
from focuscrawl.distributed.exclusion import SharedExclusionList
from focuscrawl.distributed.revisits import SharedPlanKeeper
from focuscrawl.distributed.sampling import shared_priority_sample
from focuscrawl.distributed.shared_records import CrawlOfAnotherLayout
from focuscrawl.extras import MissingExtra
from focuscrawl.frontier import Entry
from focuscrawl.politeness.gate import HostGate
from focuscrawl.scheduling.load import runnable_time
from focuscrawl.scheduling.requests import RequestSerializer
from focuscrawl.scheduling.revisits import Revisits
from focuscrawl.urls import canonicalize

if TYPE_CHECKING:
    from focuscrawl.scheduling.persistence import Stateful

logger = logging.getLogger(__name__)


class SharedBackend:
    shared: ClassVar[bool] = True

    def __init__(self, config: FocusConfig, crawl: SharedCrawl, stats=None):
        self.config = config
        self.crawl = crawl
        self.stats = stats
        self.frontier = crawl.frontier
        self.seen = crawl.seen
        # always the crawl's list: a worker without a file takes up the one another worker's file gave
        self.exclusion = SharedExclusionList(crawl.client, crawl.keys, config.exclude_file,
                                             config.exclude_check_seconds)
        self.released_here = 0
        self.worker_state: WorkerState | None = None  # with JOBDIR, once bound
        self.conclusions: SharedConclusions | None = None  # once bound
        self._gate: HostGate | None = None
        self._revisits: SharedPlanKeeper | None = None  # a continuous crawl's, once asked for

    @classmethod
    def from_crawler(cls, crawler, config: FocusConfig | None = None, serializer: RequestSerializer | None = None):
        config = config or FocusConfig.from_settings(crawler.settings)
        try:
            cls.check(config)
        except ConfigError as exc:
            raise BackendUnavailable(str(exc)) from None
        serializer = serializer or RequestSerializer()
        try:
            # a record in Redis must hold its request: entries are always packed
            crawl = SharedCrawl.from_config(config, codec=packing_codec(serializer), serializer=serializer)
        except (RedisUnavailable, MissingExtra, CrawlOfAnotherLayout) as exc:
            raise BackendUnavailable(str(exc)) from exc
        if config.jobdir:
            logger.info("JOBDIR %s keeps this worker's own state (spider, store, learned URL aliases, hosts "
                        "rendered); the crawl's frontier, seen set, budget and learner live in Redis (%s)",
                        config.jobdir, config.frontier_url)
        return cls(config, crawl, crawler.stats)

    # --- the settings it accepts, and the parts that live with it -----------------------------
    @classmethod
    def check(cls, config: FocusConfig) -> None:
        if not config.frontier_url:
            raise ConfigError(f"FOCUS_BACKEND={config.backend_path} needs FOCUS_FRONTIER_URL=redis://HOST:PORT/DB")

    @classmethod
    def duplicate_indexes(cls, config: FocusConfig, **parameters) -> tuple[Any, Any]:
        # one crawl over several workers: a page is a duplicate of what any of them kept
        from focuscrawl.distributed.dedup import RedisExactIndex, RedisNearIndex

        client, keys = connect(config.frontier_url), Keys(config.crawl_id)
        return RedisExactIndex(client, keys), RedisNearIndex(client, keys, **parameters)

    @classmethod
    def continues(cls, config: FocusConfig, stored_settings: Mapping[str, Any]) -> bool:
        """Same Redis, same FOCUS_CRAWL_ID: a worker killed and started again takes its part up."""
        return (stored_settings.get("FOCUS_FRONTIER_URL") == config.frontier_url
                and stored_settings.get("FOCUS_CRAWL_ID", DEFAULTS.crawl_id) == config.crawl_id)

    def revisit_keeper(self, revisits: Revisits) -> SharedPlanKeeper:
        """A continuous crawl's plan, the crawl's: held by one worker at a time, which every
        worker's events reach (``distributed.revisits``)."""
        self._revisits = SharedPlanKeeper(self.crawl.frontier.writes, self.crawl.keys, self.crawl.worker, revisits,
                                          lease_seconds=self.config.worker_timeout,
                                          crawl_released=self.crawl_released, stats=self.stats)
        return self._revisits

    # --- lifecycle ------------------------------------------------------------------------------
    def bind(self, gate: HostGate, admission, kept: Iterable[Stateful]) -> None:
        from focuscrawl.scheduling.persistence import Shareable

        self._gate = gate
        kept = list(kept)
        self.conclusions = SharedConclusions(self.crawl.frontier.writes, self.crawl.keys, self.crawl.worker,
                                             [part for part in kept if isinstance(part, Shareable)])
        if self.config.jobdir:
            self.worker_state = WorkerState(self.config.jobdir, kept, self.config.checkpoint_seconds)

    def open(self, *, learner, enqueue, apply_robots, use_learner, use_strategy) -> None:
        # hosts' timing and robots.txt go with their leases; rules another worker fetched are applied here
        self.crawl.attach(self._gate, lambda host, rules: apply_robots(host))
        if self.worker_state is not None:
            self.worker_state.restore()

    def tick(self, now: float, learner, strategy) -> bool:
        if self.worker_state is not None:
            self.worker_state.save_if_due(now)
        if self.conclusions is not None:
            self.conclusions.maybe_share(now)
        return self.crawl.tick(now, learner)

    def close(self, learner, strategy) -> None:
        if self.worker_state is not None:
            self.worker_state.save()
        if self.conclusions is not None:
            self.conclusions.close()
        if self._revisits is not None:
            self._revisits.close()
        self.crawl.close(learner)

    # --- events ---------------------------------------------------------------------------------
    def queued(self, request: Request, pruned: list[Entry]) -> None:
        return None  # in Redis as it is pushed

    def released(self, host: str, url: str, resume_request: Request | None) -> None:
        self.released_here += 1
        self.crawl.count_release()
        if resume_request is not None:  # a revisit is not work: the revisit plan's holder plans it again
            self.frontier.fetching(host, url)
        self.crawl.expect_free(host)

    def forget(self, url: str) -> None:
        return None  # done when its item is, as any page (a HEAD check's refusal included)

    def redirected(self, urls: Iterable[str]) -> None:
        # the page redirected is done: its target is queued now, whichever worker fetches it
        self.crawl.done({canonicalize(url) for url in urls})

    def done(self, urls: Iterable[str]) -> None:
        self.crawl.done({canonicalize(url) for url in urls})

    # --- questions ------------------------------------------------------------------------------
    def crawl_released(self) -> int:
        return self.crawl.released()  # cached a moment: no Redis call each time

    def refill(self, learner) -> bool:
        return False  # nothing is kept aside: the frontier is the crawl's

    def more_work(self) -> bool:
        # other workers' pages (and this one's in flight) may still bring links
        return self._gate.busy() or self.crawl.pending()

    def work_time(self) -> float:
        # a worker also works while it waits for Redis (its reactor does nothing else meanwhile)
        return runnable_time() + reactor_wait()

    def priority_sample(self, k: int, rng) -> list[float]:
        return shared_priority_sample(self.frontier.client, self.frontier.keys, k, rng)


__all__ = ["SharedBackend"]
