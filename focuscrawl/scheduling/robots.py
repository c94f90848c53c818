"""robots.txt fetched through the frontier, so that its request obeys the host's gate like any
other, with RFC 9309's error semantics: 4xx allows all, 5xx and network errors disallow all for a
while (and twice in a row give the host up), a redirect is followed. The rules go to the host
gate; the sitemaps robots.txt lists go to the spider.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import IgnoreRequest

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.frontier import Frontier
from focuscrawl.politeness import RobotsRules
from focuscrawl.politeness.gate import HostGate
from focuscrawl.urls import robots_url

logger = logging.getLogger(__name__)

MAX_SITEMAPS_PER_HOST = 20


class RobotsFetcher:
    """``free(host, ready_at)`` frees a host that waited for its robots.txt."""

    def __init__(self, crawler, gate: HostGate, frontier: Frontier, free: Callable[[str, float], None], *,
                 over_cap: str = "cap", follow_sitemaps: bool = True):
        self.crawler = crawler
        self.stats = crawler.stats
        self.gate = gate
        self.frontier = frontier
        self.free = free
        self.over_cap = over_cap
        self.follow_sitemaps = follow_sitemaps
        self.spider = None

    def request(self, host: str, page_url: str) -> Request:
        return Request(
            robots_url(page_url), callback=self.fetched, errback=self.failed, dont_filter=True, priority=10_000,
            # 4xx and 5xx reach the callback (RFC 9309 gives them meanings); 3xx are followed
            meta={M.ROBOTS_FOR: host, "dont_retry": True, "handle_httpstatus_list": list(range(400, 600))},
        )

    def fetched(self, response):
        host = response.meta[M.ROBOTS_FOR]
        rules = self.gate.robots_response(host, response.status, response.body, time.monotonic())
        self._give_up_if_unreachable(host, rules)
        self.stats.inc_value(f"focus/robots/{rules.state.value}")
        self.apply(host, rules)
        self.crawler.signals.send_catch_log(focus_signals.robots_fetched, host=host, rules=rules, response=response)
        logger.debug("robots.txt of %s (status %s):\n%s", host, response.status, rules.text)
        self._settled(response.request)
        if not (self.follow_sitemaps and rules.sitemaps and hasattr(self.spider, "sitemap_request")):
            return None
        # robots.txt in the wild lists relative or odd sitemap URLs: resolve them, keep http(s)
        urls = [urljoin(response.url, u.strip()) for u in rules.sitemaps[:MAX_SITEMAPS_PER_HOST]]
        urls = [u for u in urls if u.startswith(("http://", "https://"))]
        self.stats.inc_value("focus/sitemaps/listed", len(urls))
        return [self.spider.sitemap_request(url) for url in urls]

    def failed(self, failure):
        request = failure.request
        host = request.meta[M.ROBOTS_FOR]
        now = time.monotonic()
        if failure.check(IgnoreRequest):  # e.g. too many redirects: RFC 9309 lets us treat it as unavailable
            rules = self.gate.robots_response(host, 404, b"", now)
        else:
            rules = self.gate.robots_unreachable(host, now)
            self._give_up_if_unreachable(host, rules)
        self.stats.inc_value(f"focus/robots/{rules.state.value}")
        logger.info("robots.txt of %s: %s (%s)", host, rules.state.value, failure.getErrorMessage())
        self._settled(request)
        return None

    def apply(self, host: str, rules: RobotsRules) -> None:
        """The host's Crawl-delay; a host asking for more than the cap is crawled at the cap, or
        skipped (FOCUS_CRAWL_DELAY_OVER_CAP)."""
        requested = self.gate.apply_crawl_delay(host, rules)
        if requested is None:
            return
        self.stats.inc_value("focus/robots/crawl_delay_over_cap")
        if self.over_cap == "skip":
            dropped = self.frontier.drop_host(host)
            self.stats.inc_value("focus/refused/crawl_delay_over_cap", len(dropped))
            logger.info("%s asks for Crawl-delay %.0fs (cap %.0fs): host skipped", host, requested,
                        self.gate.delays.max_crawl_delay)

    def _give_up_if_unreachable(self, host: str, rules: RobotsRules) -> None:
        """robots.txt failed (5xx or network) twice in a row: give the host up for this crawl."""
        if rules.failures >= 2:
            dropped = self.frontier.drop_host(host)
            self.stats.inc_value("focus/refused/robots_unreachable", len(dropped))

    def _settled(self, request) -> None:
        """robots.txt applied (or given up on): free the host it was fetched from."""
        host = request.meta.get(M.HOST)
        ready_at = self.gate.robots_settled(host)
        if ready_at is not None:
            self.free(host, ready_at)
