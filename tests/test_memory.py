"""Freed memory handed back to the OS (focuscrawl/memory.py)."""

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler

from focuscrawl.memory import MemoryTrim, glibc_malloc_trim, resident_bytes


def test_a_trim_after_a_big_transient_allocation_hands_memory_back():
    trim = glibc_malloc_trim()
    if trim is None or resident_bytes() is None:
        pytest.skip("not glibc on Linux")
    crawler = get_crawler(settings_dict={})
    extension = MemoryTrim.from_crawler(crawler)
    # many mid-sized objects (below the mmap threshold: the heap keeps them once freed)
    held = [bytearray(64 * 1024) for _ in range(800)]
    del held[::2]
    held.clear()
    freed = extension.run()
    assert freed > 0
    assert crawler.stats.get_value("focus/memory/trimmed_mb") > 0


def test_it_is_off_at_zero_and_a_bad_value_is_refused():
    with pytest.raises(NotConfigured):
        MemoryTrim.from_crawler(get_crawler(settings_dict={"FOCUS_MEMORY_TRIM_SECONDS": 0}))
    with pytest.raises(NotConfigured, match="FOCUS_MEMORY_TRIM_SECONDS"):
        MemoryTrim.from_crawler(get_crawler(settings_dict={"FOCUS_MEMORY_TRIM_SECONDS": "often"}))
