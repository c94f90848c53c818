"""robots.txt for one host, with RFC 9309 semantics for the cases a parser cannot see.

- 2xx: the rules as parsed by Protego (which tolerates odd syntax: BOMs, case, comments), from
  the file's first 500 KiB (``MAX_ROBOTS_BYTES``).
- 4xx: "unavailable": everything is allowed.
- 5xx or unreachable: "unreachable": everything is disallowed until a retry time; then fetch again.
- Rules are cached for ``cache_seconds`` and then fetched again.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from protego import Protego

#: What is read of a robots.txt: RFC 9309 asks crawlers to parse at least 500 KiB, and Google
#: reads no more. Protego's time is linear in the rules, for the parse and for every URL asked
#: about: a 10 MB file (DOWNLOAD_MAXSIZE) took 10 s to parse and 0.2 s per URL.
MAX_ROBOTS_BYTES = 500 * 1024


class RobotsState(enum.Enum):
    UNKNOWN = "unknown"  # never fetched: fetch before any page of the host
    FETCHING = "fetching"
    PARSED = "parsed"  # 2xx: obey the rules
    ALLOW_ALL = "allow_all"  # 4xx
    UNREACHABLE = "unreachable"  # 5xx / network error: disallow all until retry_at


@dataclass
class RobotsRules:
    """What one host's robots.txt says, and until when we believe it."""

    state: RobotsState = RobotsState.UNKNOWN
    parser: Protego | None = None
    fetched_at: float = 0.0
    expires_at: float = 0.0
    text: str = ""
    status: int | None = None
    sitemaps: list[str] = field(default_factory=list)
    failures: int = 0  # 5xx or network errors in a row; a success resets it

    def needs_fetch(self, now: float) -> bool:
        if self.state is RobotsState.FETCHING:
            return False
        return self.state is RobotsState.UNKNOWN or now >= self.expires_at

    def start_fetch(self) -> None:
        self.state = RobotsState.FETCHING

    def record_response(self, status: int, body: bytes, now: float, cache_seconds: float,
                        error_retry_seconds: float) -> None:
        """Apply a fetched robots.txt (after redirects) as RFC 9309 says."""
        self.status = status
        self.fetched_at = now
        if status < 500:
            self.failures = 0
        if 200 <= status < 300:
            self.text = _decode(_first_lines(body, MAX_ROBOTS_BYTES))
            try:
                self.parser = Protego.parse(self.text)
                self.state = RobotsState.PARSED
                self.sitemaps = list(self.parser.sitemaps)
            except Exception:  # an unparseable file is treated as no file: allow all
                self.parser, self.state = None, RobotsState.ALLOW_ALL
            self.expires_at = now + cache_seconds
        elif 300 <= status < 500:  # 4xx, or a redirect not followed to its end: "unavailable"
            self.parser, self.text, self.state = None, "", RobotsState.ALLOW_ALL
            self.expires_at = now + cache_seconds
        else:
            self.record_unreachable(now, error_retry_seconds, status)

    def record_unreachable(self, now: float, retry_seconds: float, status: int | None = None) -> None:
        self.status = status
        self.failures += 1
        self.parser, self.state = None, RobotsState.UNREACHABLE
        self.fetched_at = now
        self.expires_at = now + retry_seconds

    def allows(self, url: str, user_agent: str) -> bool:
        if url.endswith("/robots.txt"):
            return True
        if self.state is RobotsState.PARSED and self.parser is not None:
            try:
                return self.parser.can_fetch(url, user_agent)
            except (ValueError, UnicodeError):  # a URL no request can be made of (``http://[::1``)
                return False
        return self.state is RobotsState.ALLOW_ALL

    def crawl_delay(self, user_agent: str) -> float:
        """Seconds between requests the host asks for: Crawl-delay, or Request-rate's period."""
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(user_agent) or 0.0
        rate = self.parser.request_rate(user_agent)
        if rate is not None and rate.requests:
            delay = max(delay, rate.seconds / rate.requests)
        return float(delay)


def _first_lines(body: bytes, limit: int) -> bytes:
    """The whole lines within the first ``limit`` bytes: a rule cut in half (``Disallow: /private``
    read as ``Disallow: /``) would say something the file does not."""
    if len(body) <= limit:
        return body
    end = max(body.rfind(b"\n", 0, limit), body.rfind(b"\r", 0, limit))
    return body[:end + 1]


def _decode(body: bytes) -> str:
    if body.startswith(b"\xef\xbb\xbf"):
        body = body[3:]
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("latin-1")
