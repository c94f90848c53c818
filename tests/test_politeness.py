"""Politeness policy cores: robots.txt states (RFC 9309), delays, exclusion list, trap rules."""

import os
import time

import pytest

from focuscrawl.politeness import DelayPolicy, ExclusionList, HostTiming, RobotsRules, RobotsState, TrapRules
from focuscrawl.politeness.delay import parse_retry_after

ODD_ROBOTS = (
    "\ufeffUSER-AGENT: FocusCrawl\n"
    "disallow: /private   # no\n"
    "\n"
    "Crawl-Delay: 2\n"
    "Frobnicate: yes\n"
    "User-agent: *\n"
    "Disallow: /\n"
    "Sitemap: http://a.test/sitemap.xml\n"
).encode("utf-8")


def test_parsed_rules_with_odd_syntax():
    rules = RobotsRules()
    assert rules.needs_fetch(0.0)
    rules.record_response(200, ODD_ROBOTS, now=0.0, cache_seconds=100, error_retry_seconds=10)
    assert rules.state is RobotsState.PARSED
    assert not rules.allows("http://a.test/private/x", "focuscrawl")
    assert rules.allows("http://a.test/public", "focuscrawl")
    assert not rules.allows("http://a.test/public", "otherbot")
    assert rules.crawl_delay("focuscrawl") == 2.0
    assert rules.sitemaps == ["http://a.test/sitemap.xml"]
    assert not rules.needs_fetch(99.0) and rules.needs_fetch(100.0)


def test_rfc9309_error_semantics():
    missing = RobotsRules()
    missing.record_response(404, b"", 0.0, 100, 10)
    assert missing.allows("http://a.test/anything", "focuscrawl")
    broken = RobotsRules()
    broken.record_response(503, b"", 0.0, 100, 10)
    assert broken.state is RobotsState.UNREACHABLE
    assert not broken.allows("http://a.test/anything", "focuscrawl")
    assert broken.needs_fetch(10.0) and not broken.needs_fetch(9.0)


def test_request_rate_becomes_a_delay():
    rules = RobotsRules()
    rules.record_response(200, b"User-agent: *\nRequest-rate: 1/8\n", 0.0, 100, 10)
    assert rules.crawl_delay("focuscrawl") == 8.0


def test_delay_is_the_largest_of_minimum_crawl_delay_and_adaptive():
    policy = DelayPolicy(minimum=1.0, adaptive_factor=2.0, max_crawl_delay=30, per_host_minimum={"slow.test": 3.0})
    timing = HostTiming()
    assert policy.gap("a.test", timing) == 1.0
    assert policy.gap("slow.test", timing) == 3.0
    for latency in (1.0, 1.0, 1.0):
        policy.record_response(timing, latency, 200, None, now=0.0)
    assert policy.gap("a.test", timing) == 2.0
    assert policy.set_crawl_delay(timing, 5.0)
    assert policy.gap("a.test", timing) == 5.0
    assert not policy.set_crawl_delay(timing, 500.0)
    assert timing.crawl_delay == 30
    assert policy.next_ready("a.test", timing, finished_at=100.0) == pytest.approx(130.0, abs=0.02)


def test_only_the_last_five_latencies_count():
    policy = DelayPolicy(minimum=0.0, adaptive_factor=1.0)
    timing = HostTiming()
    for latency in (100, 100, 1, 1, 1, 1, 1):
        policy.record_response(timing, latency, 200, None, 0.0)
    assert policy.gap("a", timing) == 1.0


def test_retry_after_and_exponential_backoff():
    policy = DelayPolicy(minimum=0.0, backoff_base=5.0, backoff_max=60.0)
    timing = HostTiming()
    policy.record_response(timing, 0.1, 429, b"7", now=100.0)
    assert timing.backoff_until == 107.0
    policy.record_response(timing, 0.1, 503, None, now=200.0)
    assert timing.backoff_until == 210.0  # second error in a row: 5 * 2
    policy.record_response(timing, 0.1, 200, None, now=300.0)
    assert timing.consecutive_errors == 0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None


def test_exclusion_list_reloads_when_the_file_changes(tmp_path):
    path = tmp_path / "exclude.txt"
    path.write_text("# asked us to stop\nquiet.test\n.farm.test\nre:/cgi-bin/\n")
    clock = [0.0]
    rules = ExclusionList(str(path), check_seconds=5, clock=lambda: clock[0])
    assert rules.excludes("http://quiet.test/a") == "host quiet.test"
    assert rules.excludes("http://x.farm.test/") == "domain farm.test"
    assert rules.excludes("http://ok.test/cgi-bin/q") == "pattern /cgi-bin/"
    assert rules.excludes("http://ok.test/") is None
    path.write_text("ok.test\n")
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))
    assert rules.excludes("http://ok.test/") is None  # not re-checked yet
    clock[0] = 6.0
    assert rules.excludes("http://ok.test/") == "host ok.test"
    assert rules.excludes("http://quiet.test/a") is None
    assert rules.reloads == 2


def test_unreadable_exclusion_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot be read"):
        ExclusionList(str(tmp_path / "missing.txt"))


def test_trap_rules():
    traps = TrapRules(max_depth=5, max_url_length=80, max_repeated_segments=2, deny_extensions={"pdf", "zip"})
    assert traps.check("http://a.test/a/a/a/x") == "repeated_segments"
    assert traps.check("http://a.test/" + "x" * 100) == "url_too_long"
    assert traps.check("http://a.test/ok", depth=6) == "too_deep"
    assert traps.check("http://a.test/f.zip") == "denied_extension"
    assert traps.check("ftp://a.test/") == "scheme"
    assert traps.check("http://a.test/cal/2026/11") is None


def test_failures_in_a_row_are_counted_and_a_success_resets_them():
    rules = RobotsRules()
    rules.record_response(503, b"", 0.0, 100, 10)
    rules.record_unreachable(20.0, 10)  # then a network error: two failures in a row
    assert rules.failures == 2
    rules.record_response(200, b"User-agent: *\nAllow: /\n", 40.0, 100, 10)
    assert rules.failures == 0 and rules.state is RobotsState.PARSED
