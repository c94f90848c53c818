"""Spider-trap rules checked before a URL enters the frontier.

Infinite calendars, ever-deeper paths and session ids make unbounded URL spaces; each rule
cuts one family off. Per-host budgets are the last line: no host gets more than its share.
"""

from __future__ import annotations

from collections import Counter

from focuscrawl.config import DEFAULTS
from focuscrawl.urls import extension, path_segments


class TrapRules:
    def __init__(self, max_depth: int = DEFAULTS.max_depth, max_url_length: int = DEFAULTS.max_url_length,
                 max_repeated_segments: int = DEFAULTS.max_repeated_segments,
                 deny_extensions: set[str] | frozenset[str] = frozenset(), max_query_params: int = 12):
        self.max_depth = max_depth
        self.max_url_length = max_url_length
        self.max_repeated_segments = max_repeated_segments
        self.deny_extensions = {e.lower().lstrip(".") for e in deny_extensions}
        self.max_query_params = max_query_params

    def check(self, url: str, depth: int = 0) -> str | None:
        """Why ``url`` must not be fetched (a short reason used in stats), or None."""
        if not url.startswith(("http://", "https://")):
            return "scheme"
        if self.max_url_length and len(url) > self.max_url_length:
            return "url_too_long"
        if self.max_depth and depth > self.max_depth:
            return "too_deep"
        if self.deny_extensions and extension(url) in self.deny_extensions:
            return "denied_extension"
        segments = path_segments(url)
        if self.max_repeated_segments and segments:
            most = Counter(segments).most_common(1)[0][1]
            if most > self.max_repeated_segments:
                return "repeated_segments"
        if self.max_query_params and url.count("&") + 1 > self.max_query_params and "?" in url:
            return "too_many_params"
        return None
