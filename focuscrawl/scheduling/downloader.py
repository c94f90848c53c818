"""The one place that touches Scrapy's internals, as Scrapy's own ``DownloaderInterface``
(``scrapy/pqueues.py``) does for its priority queues.

The frontier enforces every delay itself: a delay in a download slot would only hold requests in
a queue where their priority is lost, so the downloader's delays are set to zero. And when the
frontier has nothing ready, the engine is woken when the earliest waiting host becomes ready
(Scrapy would otherwise look again only at its next heartbeat, up to 5 s later).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class DownloaderAdapter:
    def __init__(self, crawler):
        self.crawler = crawler
        self._wakeup = None

    def take_over_delays(self) -> None:
        downloader = self.crawler.engine.downloader
        downloader._delay = 0.0
        downloader._jitter = 0.0
        for slot_settings in downloader.per_slot_settings.values():
            slot_settings["delay"] = 0.0

    def wake_at(self, monotonic_at: float | None, now: float, soon: bool = False) -> None:
        """Ask the engine for the next request at ``monotonic_at`` (or shortly, when holding back
        for a better URL); an earlier wake-up already set stays."""
        from twisted.internet import reactor  # here, not at import: Scrapy installs the reactor first

        if monotonic_at is None:
            return
        delay = max(0.0, monotonic_at - now) + 0.001
        if soon:
            delay = max(delay, 0.01)
        if self._wakeup is not None and self._wakeup.active():
            if self._wakeup.getTime() <= reactor.seconds() + delay:
                return
            self._wakeup.cancel()
        self._wakeup = reactor.callLater(delay, self._wake)

    def _wake(self) -> None:
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is not None:
            slot.nextcall.schedule()

    def unseen(self) -> int:
        """Requests released whose responses the spider has not finished with (in the downloader,
        or queued for or in a callback): what a decision made now does not know yet."""
        try:
            engine = self.crawler.engine
        except RuntimeError:  # Scrapy 2.19: no engine before the crawl starts
            engine = None
        if engine is None:  # not crawling (a scheduler driven by hand)
            return 0
        count = len(getattr(engine.downloader, "active", ()))
        slot = getattr(getattr(engine, "scraper", None), "slot", None)
        if slot is not None:
            count += len(slot.queue) + len(slot.active)
        return count

    @staticmethod
    def call_soon(func: Callable[[], Any]):
        """``func`` in a later reactor turn (a cancellable call)."""
        from twisted.internet import reactor

        return reactor.callLater(0, func)

    def close(self) -> None:
        if self._wakeup is not None and self._wakeup.active():
            self._wakeup.cancel()
