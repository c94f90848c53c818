"""Admission: whether a URL may enter the frontier, and if not, why.

A URL is refused when it was seen before (in its canonical form), followed too many redirects,
looks like a trap (depth, length, repeated segments, a denied extension), has a host that is
an address in a network the crawl must not reach (loopback, private, link-local...: see
``focuscrawl.safety``; a name is judged once resolved, in the downloader), is excluded by the
user's list, is outside the crawl's scope, would take its host past the host budget, or is
disallowed by robots.txt rules already known. Robots rules not yet fetched are checked again when
the URL leaves the frontier (the host gate's job), as is the exclusion list, which may change
while the URL waits.

Pure: no Scrapy; the refusal is a reason string the scheduler counts and reports.
"""

from __future__ import annotations

from collections.abc import Mapping

from focuscrawl.config import DEFAULTS, FocusConfig
from focuscrawl.frontier.seen import SeenSet
from focuscrawl.politeness import ExclusionList, RobotsRules, RobotsState, TrapRules
from focuscrawl.safety import NetworkPolicy
from focuscrawl.urls import host_key

#: the URL was seen before, as it is: a silent refusal (a crawl meets most URLs many times)
SEEN = "seen"
#: refusals that are duplicates of a URL seen before, in another spelling or by a redirect
DUPLICATES = frozenset({SEEN, "redirect_target_seen", "canonical_duplicate"})


class Admission:
    """The admission rules and the state they keep: the seen set and URLs admitted per host."""

    def __init__(self, config: FocusConfig = DEFAULTS, robots: Mapping[str, RobotsRules] | None = None,
                 exclusion: ExclusionList | None = None, traps: TrapRules | None = None):
        self.seen = SeenSet()
        self.host_admitted: dict[str, int] = {}
        self.robots = robots if robots is not None else {}  # the host gate's rules, shared
        self.exclusion = exclusion
        self.traps = traps or TrapRules(
            max_depth=config.max_depth, max_url_length=config.max_url_length,
            max_repeated_segments=config.max_repeated_segments, deny_extensions=set(config.deny_extensions))
        self.max_redirects = config.max_redirects
        self.network = NetworkPolicy.from_config(config)
        self.allowed_domains = [d.lower().lstrip(".") for d in config.allowed_domains]
        self.host_budget = config.host_budget
        self.obey_robots = config.obey_robots
        self.agent = config.robots_agent

    def admit(self, url: str, canonical: str, *, dont_filter: bool = False, redirect_times: int = 0,
              sitemap: bool = False, depth: int = 0) -> str | None:
        """None when the URL is admitted (it is then seen, and counts against its host's budget);
        else why not."""
        if not dont_filter and not self.seen.add(canonical):
            if redirect_times:
                return "redirect_target_seen"
            if canonical != url:
                # a session id, tracking parameter or parameter order made this URL look new
                return "canonical_duplicate"
            return SEEN
        reason = None
        if redirect_times > self.max_redirects:
            reason = "too_many_redirects"
        if not reason and not sitemap:  # a sitemap (or feed) may well be .xml.gz (or .rss)
            reason = self.traps.check(canonical, depth)
        reason = reason or self.network.url_refusal(url) or self.excluded(url) or self.out_of_scope(canonical)
        host = host_key(canonical)
        if not reason and self.host_budget and self.host_admitted.get(host, 0) >= self.host_budget:
            reason = "host_budget"
        if not reason and self.obey_robots:
            rules = self.robots.get(host)
            if rules is not None and rules.state is RobotsState.PARSED and not rules.allows(url, self.agent):
                reason = "robots"
        if reason:
            return reason
        self.host_admitted[host] = self.host_admitted.get(host, 0) + 1
        return None

    def out_of_scope(self, canonical: str) -> str | None:
        if not self.allowed_domains:
            return None
        host = host_key(canonical).split(":")[0]
        if any(host == d or host.endswith("." + d) for d in self.allowed_domains):
            return None
        return "out_of_scope"

    def excluded(self, url: str) -> str | None:
        if self.exclusion is None:
            return None
        return "excluded" if self.exclusion.excludes(url) else None
