"""Giving freed memory back to the operating system, so that a long crawl's resident memory is
what it holds, not the high-water mark of its worst page.

A crawl meets pages that take tens of megabytes while they are parsed and scored (a 9.5 MiB page:
its lxml tree, its text, its shingles) and then freed. glibc's allocator keeps what it freed for
later, in pieces the next allocations rarely fit, so each such page raised the crawl's resident
memory for good (about 15 MiB after one, bench/soak.py). ``malloc_trim(0)`` hands the free pages
of the heap back; calling it every ``FOCUS_MEMORY_TRIM_SECONDS`` costs a few milliseconds. Other
allocators (musl, macOS) have no such call and return memory their own way: the extension does
nothing there.
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
    """A Scrapy extension: ``malloc_trim(0)`` every ``FOCUS_MEMORY_TRIM_SECONDS`` (0: never).
    ``focus/memory/trimmed_mb`` counts what it handed back."""

    def __init__(self, crawler, seconds: float, trim):
        self.crawler = crawler
        self.seconds = seconds
        self.trim = trim
        self._loop = None

    @classmethod
    def from_crawler(cls, crawler):
        try:
            seconds = FocusConfig.from_settings(crawler.settings).memory_trim_seconds
        except ConfigError as exc:
            raise NotConfigured(str(exc)) from exc
        trim = glibc_malloc_trim()
        if not seconds or trim is None:
            raise NotConfigured("no periodic malloc_trim (FOCUS_MEMORY_TRIM_SECONDS=0, or not glibc)")
        extension = cls(crawler, seconds, trim)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider=None):
        from twisted.internet import task

        self._loop = task.LoopingCall(self.run)
        self._loop.start(self.seconds, now=False)

    def spider_closed(self, spider=None, reason=None):
        if self._loop is not None and self._loop.running:
            self._loop.stop()

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
