"""Politeness policy, free of Scrapy: robots.txt state per host (RFC 9309 via Protego), the
per-host delay, the exclusion list and the trap rules. The scheduler asks; these answer."""

from focuscrawl.politeness.delay import DelayPolicy, HostTiming
from focuscrawl.politeness.exclusion import ExclusionList
from focuscrawl.politeness.robots import RobotsRules, RobotsState
from focuscrawl.politeness.traps import TrapRules

__all__ = ["DelayPolicy", "ExclusionList", "HostTiming", "RobotsRules", "RobotsState", "TrapRules"]
