"""Giving freed memory back to the operating system, so that a long crawl's resident memory is
what it holds, not the high-water mark of its worst page.

A crawl meets pages that take tens of megabytes while they are parsed and scored (a 9.5 MiB page:
its lxml tree, its text, its shingles) and then freed. glibc's allocator keeps what it freed for
later, in pieces the next allocations rarely fit, so each such page raised the crawl's resident
memory for good (about 15 MiB after one, bench/soak.py). ``malloc_trim(0)`` hands the free pages
of the heap back; calling it every ``FOCUS_MEMORY_TRIM_SECONDS`` costs a few milliseconds. A page
of at least BIG_PAGE bytes is followed by a trim of its own a moment after it has gone through
the pipelines (a periodic trim alone left its memory held for up to a period: 20-30 MiB for most
of a minute in the soak). Other allocators (musl, macOS) have no such call and return memory their
own way: the extension does nothing there.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl.config import ConfigError, FocusConfig

logger = logging.getLogger(__name__)

#: a response body this big is followed by a trim of its own (1 MiB: its parse tree, text and
#: shingles take several times that)
BIG_PAGE = 1 << 20
#: seconds after a big page's item that its trim runs: the response is released by then
AFTER_BIG_PAGE = 1.0


def glibc_malloc_trim():
    """glibc's ``malloc_trim`` (int -> int), or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def resident_bytes() -> int | None:
    """The process's resident memory (Linux), None elsewhere."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


try:
    _PAGE = os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):
    _PAGE = 4096


class MemoryTrim:
    """A Scrapy extension: ``malloc_trim(0)`` every ``FOCUS_MEMORY_TRIM_SECONDS`` (0: never), and
    AFTER_BIG_PAGE seconds after a page of BIG_PAGE bytes or more has been scraped or dropped.
    ``focus/memory/trimmed_mb`` counts what it handed back."""

    def __init__(self, crawler, seconds: float, trim, clock=None):
        self.crawler = crawler
        self.seconds = seconds
        self.trim = trim
        self._loop = None
        self._clock = clock  # the reactor (a test's task.Clock)
        self._after_big_page = None  # the trim a big page asked for, while it is pending

    @classmethod
    def from_crawler(cls, crawler):
        try:
            seconds = FocusConfig.from_settings(crawler.settings).memory_trim_seconds
        except ConfigError as exc:
            raise NotConfigured(str(exc)) from exc
        trim = glibc_malloc_trim()
        if not seconds or trim is None:
            raise NotConfigured  # turned off, or not glibc: nothing to say
        extension = cls(crawler, seconds, trim)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        for signal in (signals.item_scraped, signals.item_dropped, signals.item_error):
            crawler.signals.connect(extension.page_done, signal=signal)
        return extension

    def page_done(self, item=None, response=None, spider=None, **kwargs):
        """A page's item is through: trim soon if the page was big (once for pages done together)."""
        body = getattr(response, "body", None)
        if body is None or len(body) < BIG_PAGE or self._after_big_page is not None:
            return
        clock = self._clock
        if clock is None:
            from twisted.internet import reactor as clock
        self._after_big_page = clock.callLater(AFTER_BIG_PAGE, self._trim_after_big_page)

    def _trim_after_big_page(self) -> None:
        self._after_big_page = None
        self.crawler.stats.inc_value("focus/memory/trims_after_big_pages")
        self.run()

    def spider_opened(self, spider=None):
        from twisted.internet import task

        self._loop = task.LoopingCall(self.run)
        self._loop.start(self.seconds, now=False)

    def spider_closed(self, spider=None, reason=None):
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._after_big_page is not None and self._after_big_page.active():
            self._after_big_page.cancel()
        self._after_big_page = None

    def run(self) -> int:
        """One trim; returns the resident bytes it handed back (0 where unknown)."""
        before = resident_bytes()
        self.trim(0)
        after = resident_bytes()
        freed = max(0, before - after) if before is not None and after is not None else 0
        if freed:
            self.crawler.stats.inc_value("focus/memory/trimmed_mb", round(freed / 2**20, 1))
        return freed


__all__ = ["MemoryTrim", "glibc_malloc_trim", "resident_bytes"]
