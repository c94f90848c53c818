"""The scheduler's read-only face, for those who watch a crawl (the live status, the console).

The scheduler announces a ``CrawlView`` of itself with the signal ``focuscrawl.signals.crawl_view``
when it opens: an observer connected before the crawl starts (in its ``from_crawler``) gets it, and
reads the frontier and the politeness gate through it, never their attributes. Every method reads,
none changes the crawl; all run on the reactor's thread, as the scheduler does.
"""

from __future__ import annotations

from typing import Any


class CrawlView:
    """What a crawl's scheduler shows of itself: the frontier's size and hosts, each host's
    politeness state, the shared crawl's requests, and why a waiting URL waits where it does."""

    def __init__(self, scheduler) -> None:
        # the scheduler itself, not its parts: a checkpoint's learner or strategy replaces the
        # crawl's after the view was announced
        self._scheduler = scheduler

    # --- the frontier -------------------------------------------------------------------------
    @property
    def shared(self) -> bool:
        """True when the crawl's frontier is shared on Redis with other workers."""
        return bool(self._scheduler.backend.shared)

    def frontier_size(self) -> int | None:
        """URLs waiting in the frontier (None when it cannot say)."""
        try:
            return len(self._scheduler.frontier)
        except TypeError:
            return None

    def host_queues(self) -> dict[str, tuple[float, Any]] | None:
        """host -> (the time it may next be contacted, its queue: ``size()``, ``top``) of the
        in-process frontier; None for a shared one, whose queues are in Redis."""
        views = getattr(self._scheduler.frontier, "host_views", None)
        return views() if callable(views) else None

    def queued(self, host: str) -> int | None:
        """URLs of ``host`` waiting (None when the frontier cannot say)."""
        size = getattr(self._scheduler.frontier, "host_size", None)
        return size(host) if callable(size) else None

    def waiting(self, queue) -> dict | None:
        """The best URL of a host's queue (one of ``host_queues``): url, priority (as queued), why
        (the features behind it, as ``scrapy explain`` gives them for a waiting URL); None when the
        queue is empty or its best is a robots.txt."""
        from focuscrawl.frontier.entries import decode
        from focuscrawl.frontier.records import record_priority
        from focuscrawl.meta import ROBOTS_FOR
        from focuscrawl.observe.explanation import waiting_explanation

        record = queue.top
        if record is None:
            return None
        scheduler = self._scheduler
        codec = getattr(scheduler.frontier, "codec", None)
        entry = decode(record, queue, codec.unpack if codec is not None else None)
        meta = getattr(entry.payload, "meta", None) or {}
        if meta.get(ROBOTS_FOR):
            return None
        why = waiting_explanation(entry.url, meta, scheduler.learner, scheduler.strategy,
                                  has_features=entry.features is not None)
        return {"url": entry.url, "priority": record_priority(record), "why": why.why}

    def crawl_requests(self) -> int | None:
        """Requests every worker of a shared crawl made (which its budget counts), as last read
        from Redis; None for a crawl of one process."""
        backend = self._scheduler.backend
        return backend.crawl_released() if backend.shared else None

    # --- the hosts' politeness ----------------------------------------------------------------
    def busy(self) -> set[str]:
        """Hosts with a request in flight or their robots.txt being fetched."""
        gate = self._scheduler.gate
        return set(gate.inflight) | set(gate.robots_pending)

    def known_hosts(self) -> set[str]:
        """Hosts the politeness gate has a record of (timing or robots.txt)."""
        gate = self._scheduler.gate
        return set(gate.timing) | set(gate.robots)

    def delay(self, host: str) -> float | None:
        """The gate's gap (s) between two requests to ``host``; None for a host not contacted yet."""
        gate = self._scheduler.gate
        timing = gate.timing.get(host)
        return gate.delays.gap(host, timing) if timing is not None else None

    def blocked(self, host: str, now: float) -> bool:
        """Whether ``host`` cannot be contacted for more than its delay: backing off after errors,
        its robots.txt unreachable, or excluded."""
        from focuscrawl.politeness.robots import RobotsState

        scheduler = self._scheduler
        timing = scheduler.gate.timing.get(host)
        if timing is not None and timing.backoff_until > now:
            return True
        rules = scheduler.gate.robots.get(host)
        if rules is not None and rules.state is RobotsState.UNREACHABLE and rules.expires_at > now:
            return True
        exclusion = getattr(scheduler.admission, "exclusion", None)
        return exclusion is not None and exclusion.excludes(f"http://{host}/") is not None

    def retry_in(self, host: str, now: float) -> float | None:
        """Seconds until a blocked host may be tried again, as far as the gate knows."""
        gate = self._scheduler.gate
        timing = gate.timing.get(host)
        rules = gate.robots.get(host)
        times = [t for t in (timing.backoff_until if timing else 0.0, getattr(rules, "expires_at", 0.0)) if t > now]
        return max(times) - now if times else None


__all__ = ["CrawlView"]
