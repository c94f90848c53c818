"""The crawl's state in this process: an in-memory frontier and seen set, the exclusion list's
file, and with JOBDIR a snapshot and write-ahead journal from which a killed crawl resumes
(``focuscrawl.scheduling.persistence``)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from scrapy import Request

from focuscrawl.config import FocusConfig
from focuscrawl.frontier import Entry, Frontier
from focuscrawl.frontier.sampling import queue_priority_sample
from focuscrawl.frontier.seen import SeenSet
from focuscrawl.meta import link_parent
from focuscrawl.politeness import ExclusionList
from focuscrawl.politeness.gate import HostGate
from focuscrawl.request_codec import RequestCodec
from focuscrawl.scheduling.load import runnable_time
from focuscrawl.scheduling.persistence import Persistence, Stateful
from focuscrawl.scheduling.plan_keepers import LocalKeeper
from focuscrawl.scheduling.requests import RequestSerializer
from focuscrawl.scheduling.revisits import Revisits
from focuscrawl.urls import canonicalize

logger = logging.getLogger(__name__)

#: Queued URLs from which the frontier deflates its cold runs: below it they stay raw (~650 B a
#: packed URL instead of ~220 B, 32 MB at most), which spares background re-scoring the inflating
#: and deflating of every run it rewrites (about a sixth of its cost on a WebKB crawl)
FRONTIER_DEFLATE_FROM = 50_000


class LocalBackend:
    shared: ClassVar[bool] = False

    def __init__(self, config: FocusConfig, serializer: RequestSerializer, stats=None):
        self.config = config
        self.serializer = serializer
        self.stats = stats
        # packed entries: a few hundred bytes a queued URL instead of a live Request and vector
        codec = packing_codec(serializer) if config.frontier_pack else None
        self.frontier = Frontier(capacity=config.frontier_capacity, codec=codec, deflate_from=FRONTIER_DEFLATE_FROM)
        self.seen = SeenSet()
        self.exclusion = (ExclusionList(config.exclude_file, config.exclude_check_seconds) if config.exclude_file
                          else None)
        self.released_here = 0
        self.persistence: Persistence | None = None  # JOBDIR's snapshot and journal, once bound
        self._admission = None

    @classmethod
    def from_crawler(cls, crawler, config: FocusConfig | None = None, serializer: RequestSerializer | None = None):
        return cls(config or FocusConfig.from_settings(crawler.settings), serializer or RequestSerializer(),
                   crawler.stats)

    # --- the settings it accepts, and the parts that live with it -----------------------------
    @classmethod
    def check(cls, config: FocusConfig) -> None:
        return None

    @classmethod
    def duplicate_indexes(cls, config: FocusConfig, **parameters) -> None:
        return None  # in the crawl store, beside its pages

    @classmethod
    def continues(cls, config: FocusConfig, stored_settings: Mapping[str, Any]) -> bool:
        return False  # a crawl of its own resumes by its JOBDIR, not by its settings

    def revisit_keeper(self, revisits: Revisits) -> LocalKeeper:
        """A continuous crawl's plan lives here, with the JOBDIR snapshot."""
        return LocalKeeper(revisits)

    # --- lifecycle ------------------------------------------------------------------------------
    def bind(self, gate: HostGate, admission, kept: Iterable[Stateful]) -> None:
        self._admission = admission
        if self.config.jobdir:
            self.persistence = Persistence(self.config.jobdir, self.serializer, self.frontier, admission, gate,
                                           self.stats, self.config.checkpoint_seconds, parts=kept)

    def open(self, *, learner, enqueue, apply_robots, use_learner, use_strategy) -> None:
        if self.persistence is None:
            return
        # the snapshot's learner is taken on before the journal's URLs are enqueued (and scored)
        _, self.released_here = self.persistence.restore(learner, self.released_here, enqueue, apply_robots,
                                                         use_learner, use_strategy)
        self.seen = self._admission.seen  # the snapshot's

    def tick(self, now: float, learner, strategy) -> bool:
        if self.persistence is not None and self.persistence.checkpoint_due(now):
            self.persistence.checkpoint(learner, self.released_here, strategy)
        return False

    def close(self, learner, strategy) -> None:
        if self.persistence is not None:
            self.persistence.close(learner, self.released_here, strategy)

    # --- events ---------------------------------------------------------------------------------
    def queued(self, request: Request, pruned: list[Entry]) -> None:
        if self.persistence is not None:
            self.persistence.enqueued(request)
            if pruned:
                self.persistence.spill(pruned)

    def released(self, host: str, url: str, resume_request: Request | None) -> None:
        self.released_here += 1
        if self.persistence is not None and resume_request is not None:
            self.persistence.released(url, resume_request)

    def forget(self, url: str) -> None:
        if self.persistence is not None:
            self.persistence.forget(url)

    def redirected(self, urls: Iterable[str]) -> None:
        return None  # done with the item of the page it led to (the journal keeps the target)

    def done(self, urls: Iterable[str]) -> None:
        if self.persistence is not None:
            self.persistence.done({canonicalize(url) for url in urls})

    # --- questions ------------------------------------------------------------------------------
    def crawl_released(self) -> int:
        return self.released_here

    def refill(self, learner) -> bool:
        if self.persistence is None or not self.persistence.has_spill():
            return False
        self.persistence.unspill(learner)
        return True

    def more_work(self) -> bool:
        return self.persistence is not None and self.persistence.has_spill()

    def work_time(self) -> float:
        return runnable_time()

    def priority_sample(self, k: int, rng) -> list[float]:
        return queue_priority_sample(self.frontier.queues(), k, rng)


def packing_codec(serializer: RequestSerializer) -> RequestCodec:
    """How a queued request is packed into bytes (and its link's parent read without unpacking)."""
    return RequestCodec(serializer.to_dict, serializer.from_dict, lambda request: link_parent(request.meta))


__all__ = ["FRONTIER_DEFLATE_FROM", "LocalBackend", "packing_codec"]
