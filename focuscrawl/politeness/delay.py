"""The per-host delay: how long to wait after a response before the host's next request.

delay = max(the configured minimum (DOWNLOAD_DELAY / DOWNLOAD_SLOTS), robots.txt Crawl-delay
(capped), factor x mean of the last 5 response times); and after a 429/503, Retry-After or an
exponential back-off. It is counted from the end of one response to the start of the next
request, so a slow server automatically gets more room.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime

from focuscrawl.config import DEFAULTS

SAFETY_MARGIN = 0.01  # seconds


@dataclass
class HostTiming:
    """What the delay policy remembers about one host."""

    latencies: deque = field(default_factory=lambda: deque(maxlen=5))
    backoff_until: float = 0.0
    consecutive_errors: int = 0
    crawl_delay: float = 0.0  # from robots.txt, already capped

    def adaptive_delay(self, factor: float) -> float:
        if not self.latencies:
            return 0.0
        return factor * sum(self.latencies) / len(self.latencies)


class DelayPolicy:
    def __init__(self, minimum: float = DEFAULTS.download_delay, adaptive_factor: float = DEFAULTS.adaptive_delay_factor,
                 backoff_base: float = DEFAULTS.backoff_base, backoff_max: float = DEFAULTS.backoff_max,
                 per_host_minimum: dict[str, float] | None = None, max_crawl_delay: float = DEFAULTS.max_crawl_delay):
        if minimum < 0 or adaptive_factor < 0 or backoff_base < 0 or backoff_max < 0:
            raise ValueError("delays must not be negative")
        self.minimum = minimum
        self.adaptive_factor = adaptive_factor
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.per_host_minimum = dict(per_host_minimum or {})
        self.max_crawl_delay = max_crawl_delay

    def set_crawl_delay(self, timing: HostTiming, requested: float) -> bool:
        """Apply a robots.txt Crawl-delay; returns False when it was over the cap (and capped)."""
        timing.crawl_delay = min(requested, self.max_crawl_delay)
        return requested <= self.max_crawl_delay

    def gap(self, host: str, timing: HostTiming) -> float:
        """Seconds to wait after the host's last response."""
        return max(self.per_host_minimum.get(host, self.minimum), timing.crawl_delay,
                   timing.adaptive_delay(self.adaptive_factor))

    def next_ready(self, host: str, timing: HostTiming, finished_at: float) -> float:
        # We see a response end a little before the server's log says it ended (buffers, timer
        # resolution): a small margin keeps the gap whole as the server measures it.
        return max(finished_at + self.gap(host, timing) + SAFETY_MARGIN, timing.backoff_until)

    def record_response(self, timing: HostTiming, latency: float | None, status: int | None,
                        retry_after: str | None, now: float) -> None:
        """Learn from one response (or a network error, status None)."""
        if latency is not None and latency >= 0:
            timing.latencies.append(latency)
        if status in (429, 503) or status is None:
            timing.consecutive_errors += 1
            wait = parse_retry_after(retry_after) if status in (429, 503) else None
            if wait is None:
                wait = self.backoff_base * 2 ** (timing.consecutive_errors - 1)
            timing.backoff_until = now + min(wait, self.backoff_max)
        else:
            timing.consecutive_errors = 0


def parse_retry_after(value: str | bytes | None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1", "replace")
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(0.0, when - time.time())
