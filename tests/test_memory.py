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


def test_a_big_page_is_followed_by_a_trim_of_its_own_once_it_is_through():
    from scrapy.http import HtmlResponse
    from twisted.internet.task import Clock

    from focuscrawl.memory import AFTER_BIG_PAGE, BIG_PAGE

    calls = []
    crawler = get_crawler(settings_dict={})
    clock = Clock()
    extension = MemoryTrim(crawler, 60.0, lambda pad: calls.append(pad) or 1, clock=clock)
    small = HtmlResponse("http://a.test/small", body=b"<p>x</p>")
    big = HtmlResponse("http://a.test/big", body=b"<p>" + b"x" * BIG_PAGE + b"</p>")
    extension.page_done(item={}, response=small)
    clock.advance(AFTER_BIG_PAGE * 2)
    assert calls == []  # a small page asks for nothing
    extension.page_done(item={}, response=big)
    extension.page_done(item={}, response=big)  # pages done together: one trim
    clock.advance(AFTER_BIG_PAGE / 2)
    assert calls == []  # not while the page may still be held
    clock.advance(AFTER_BIG_PAGE)
    assert calls == [0] and crawler.stats.get_value("focus/memory/trims_after_big_pages") == 1
    extension.page_done(item={}, response=big)
    extension.spider_closed()
    clock.advance(AFTER_BIG_PAGE * 2)
    assert calls == [0]  # a crawl that closed trims no more
