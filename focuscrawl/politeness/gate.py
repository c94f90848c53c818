"""The host gate: when a host may be contacted.

A host may be contacted when its robots.txt is known and allows the URL, nothing else is in flight
to it, and its delay has passed since its last response ended: the larger of the configured
minimum, its robots.txt Crawl-delay (capped) and the adaptive delay, or a Retry-After / back-off
after a 429, a 503 or a network error. With a ``PerIpLimit`` the same holds per IP address (host
names that share a server share its delay).

The frontier keeps the hosts' ready times; the gate says what they are. A robots.txt response
keeps its host busy until its rules are applied, so the first page request already obeys its
Crawl-delay. Pure: no Scrapy, the clock is passed in.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from focuscrawl.config import DEFAULTS
from focuscrawl.politeness.delay import DelayPolicy, HostTiming
from focuscrawl.politeness.robots import RobotsRules, RobotsState

#: how often a host whose robots.txt is in flight or failing is looked at again
ROBOTS_POLL_SECONDS = 0.25
#: a robots.txt response whose rules never arrive stops holding its host after this long
ROBOTS_SETTLE_TIMEOUT = 60.0
#: how soon a host held back only by its server's other host names is tried again
IP_POLL_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Verdict:
    """The gate's answer for a URL that left the frontier: ``go``, ``fetch_robots`` (fetch the
    host's robots.txt first, the URL goes back), ``wait`` (back to the frontier until ``until``)
    or ``refuse`` (``reason``)."""

    action: str
    until: float = 0.0
    reason: str = ""


GO = Verdict("go")
FETCH_ROBOTS = Verdict("fetch_robots")
REFUSE_ROBOTS = Verdict("refuse", reason="robots")


class PerIpLimit:
    """One connection per IP address, and the delay of the last host freed there."""

    def __init__(self, resolve: Callable[[str], str] | None = None):
        self.resolve = resolve or resolve_ip
        self._ips: dict[str, str] = {}
        self.busy: dict[str, str] = {}  # IP -> the host whose request is in flight there
        self.ready_at: dict[str, float] = {}

    def ip(self, host: str) -> str:
        ip = self._ips.get(host)
        if ip is None:
            ip = self._ips[host] = self.resolve(host)
        return ip

    def blocked_until(self, host: str, now: float) -> float | None:
        """When to look at the host again, or None when its server is free for it now."""
        ip = self.ip(host)
        holder = self.busy.get(ip)
        if (holder is not None and holder != host) or self.ready_at.get(ip, 0.0) > now:
            return max(now + IP_POLL_SECONDS, self.ready_at.get(ip, now))
        return None

    def start(self, host: str) -> None:
        self.busy[self.ip(host)] = host

    def free(self, host: str, ready_at: float) -> None:
        ip = self.ip(host)
        if self.busy.get(ip) == host:
            del self.busy[ip]
        self.ready_at[ip] = max(self.ready_at.get(ip, 0.0), ready_at)


def resolve_ip(host: str) -> str:
    """The host's IPv4 address, or the host name itself when it does not resolve here (e.g.
    behind a proxy that resolves it)."""
    try:
        return socket.gethostbyname(host.rsplit(":", 1)[0] if host.count(":") == 1 else host)
    except OSError:
        return host


class HostGate:
    """Robots.txt state, timing and requests in flight, per host."""

    def __init__(self, delays: DelayPolicy, *, agent: str, obey_robots: bool = True,
                 robots_cache: float = DEFAULTS.robots_cache_seconds,
                 robots_retry: float = DEFAULTS.robots_error_retry_seconds, per_ip: PerIpLimit | None = None):
        self.delays = delays
        self.agent = agent
        self.obey_robots = obey_robots
        self.robots_cache = robots_cache
        self.robots_retry = robots_retry
        self.per_ip = per_ip
        self.robots: dict[str, RobotsRules] = {}
        self.timing: dict[str, HostTiming] = {}
        self.inflight: dict[str, Any] = {}  # host -> the request in flight to it
        self.robots_pending: dict[str, float] = {}  # host -> when its robots.txt response ended

    def timing_of(self, host: str) -> HostTiming:
        """The host's response times and back-off (created on first use)."""
        timing = self.timing.get(host)
        if timing is None:
            timing = self.timing[host] = HostTiming()
        return timing

    def busy(self) -> bool:
        """A request is in flight, or a robots.txt response is still being applied."""
        return bool(self.inflight or self.robots_pending)

    # --- a URL leaves the frontier --------------------------------------------------------------
    def check(self, host: str, url: str, now: float, robots_request: bool = False) -> Verdict:
        if self.per_ip is not None:
            until = self.per_ip.blocked_until(host, now)
            if until is not None:
                return Verdict("wait", until, "ip")
        if robots_request or not self.obey_robots:
            return GO
        rules = self.robots.setdefault(host, RobotsRules())
        if rules.needs_fetch(now):
            rules.start_fetch()
            return FETCH_ROBOTS
        if rules.state is RobotsState.FETCHING or rules.state is RobotsState.UNREACHABLE:
            # robots.txt in flight (e.g. redirected to another host) or failing: look again later
            return Verdict("wait", max(now + ROBOTS_POLL_SECONDS, rules.expires_at), "robots_pending")
        if not rules.allows(url, self.agent):
            return REFUSE_ROBOTS
        return GO

    def start(self, host: str, request: Any) -> None:
        self.inflight[host] = request
        if self.per_ip is not None:
            self.per_ip.start(host)

    # --- what the downloader reports ---------------------------------------------------------
    def response(self, host: str, latency: float | None, status: int, retry_after: Any, now: float) -> None:
        self.delays.record_response(self.timing_of(host), latency, status, retry_after, now)

    def finished(self, host: str, request: Any, *, got_response: bool, robots_status: int | None,
                 now: float) -> float | None:
        """The request left the downloader: when its host may be contacted again, or None when it
        is not the host's request in flight or when the host stays busy until its robots.txt is
        applied (``robots_status``: the status of a robots.txt response; 0 for none)."""
        if self.inflight.get(host) is not request:
            return None
        del self.inflight[host]
        timing = self.timing_of(host)
        if not got_response:
            self.delays.record_response(timing, None, None, None, now)  # network error: back off
        if robots_status is not None and not 300 <= robots_status < 400:
            self.robots_pending[host] = now
            return None
        return self.delays.next_ready(host, timing, now)

    def free(self, host: str, ready_at: float) -> None:
        """The host is free from ``ready_at`` (the frontier is told by the caller)."""
        if self.per_ip is not None:
            self.per_ip.free(host, ready_at)

    def soon_free(self, now: float, horizon: float) -> list[str]:
        """Hosts with a request in flight that may be free within ``horizon`` seconds: at the
        earliest their delay after now (their response ends later)."""
        end = now + horizon
        return [host for host in self.inflight if self.delays.next_ready(host, self.timing_of(host), now) <= end]

    # --- robots.txt ------------------------------------------------------------------------------
    def robots_response(self, host: str, status: int, body: bytes, now: float) -> RobotsRules:
        rules = self.robots.setdefault(host, RobotsRules())
        rules.record_response(status, body, now, self.robots_cache, self.robots_retry)
        return rules

    def robots_unreachable(self, host: str, now: float) -> RobotsRules:
        rules = self.robots.setdefault(host, RobotsRules())
        rules.record_unreachable(now, self.robots_retry)
        return rules

    def apply_crawl_delay(self, host: str, rules: RobotsRules) -> float | None:
        """The host's Crawl-delay applied (capped); returns the delay asked for when it was over
        the cap, else None."""
        requested = rules.crawl_delay(self.agent)
        if requested and not self.delays.set_crawl_delay(self.timing_of(host), requested):
            return requested
        return None

    def robots_settled(self, host: str) -> float | None:
        """The host's robots.txt is applied (or given up on): when the host is free, if it was
        held for it."""
        finished = self.robots_pending.pop(host, None)
        if finished is None:
            return None
        return self.delays.next_ready(host, self.timing_of(host), finished)

    def overdue_robots(self, now: float) -> list[str]:
        """Hosts held for a robots.txt response whose rules never came: no longer held."""
        overdue = [host for host, finished in self.robots_pending.items() if now - finished > ROBOTS_SETTLE_TIMEOUT]
        for host in overdue:
            del self.robots_pending[host]
        return overdue

    # --- a host handed from one crawler process to another (a shared frontier) ------------------
    def host_state(self, host: str, now: float, wall: float) -> dict[str, Any]:
        """What another process needs to treat the host as this one would: its timing (back-off as
        time left) and its robots.txt as fetched (wall-clock time ``wall``, since monotonic clocks
        are not shared). JSON-able."""
        timing = self.timing_of(host)
        state: dict[str, Any] = {"latencies": list(timing.latencies), "errors": timing.consecutive_errors,
                                 "backoff": max(0.0, timing.backoff_until - now), "crawl_delay": timing.crawl_delay}
        rules = self.robots.get(host)
        if rules is not None and rules.state in (RobotsState.PARSED, RobotsState.ALLOW_ALL, RobotsState.UNREACHABLE):
            state["robots"] = {"status": rules.status, "text": rules.text, "failures": rules.failures,
                               "fetched": wall - (now - rules.fetched_at),
                               "expires": wall + (rules.expires_at - now)}
        return state

    def take_host_state(self, host: str, state: dict[str, Any], now: float, wall: float) -> bool:
        """``host_state`` of another process, taken over where it knows more than this one: its
        robots.txt when fetched later than ours, its timing always (it saw the host last). Returns
        whether robots.txt rules were taken (their Crawl-delay is then to be applied)."""
        timing = self.timing_of(host)
        timing.latencies.clear()
        timing.latencies.extend(float(x) for x in state.get("latencies", ()))
        timing.consecutive_errors = int(state.get("errors", 0))
        timing.backoff_until = now + float(state.get("backoff", 0.0))
        timing.crawl_delay = float(state.get("crawl_delay", 0.0))
        robots = state.get("robots")
        if not robots:
            return False
        mine = self.robots.get(host)
        fetched = now - max(0.0, wall - float(robots["fetched"]))
        if mine is not None and mine.state is not RobotsState.UNKNOWN and mine.fetched_at >= fetched:
            return False
        rules = RobotsRules()
        status = robots.get("status") or 0
        if status and status < 500:
            rules.record_response(int(status), str(robots.get("text", "")).encode("utf-8"), fetched,
                                  self.robots_cache, self.robots_retry)
        else:
            rules.record_unreachable(fetched, self.robots_retry, status or None)
        rules.failures = int(robots.get("failures", 0))
        rules.expires_at = now + (float(robots["expires"]) - wall)
        self.robots[host] = rules
        return True

    # --- checkpoints ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """What a resumed crawl keeps: timing, and robots.txt rules that were parsed."""
        return {"timing": self.timing,
                "robots": {h: (r.text, r.status) for h, r in self.robots.items() if r.state is RobotsState.PARSED}}

    def restore(self, timing: dict[str, HostTiming], robots: dict[str, tuple[str, int]], now: float) -> list[str]:
        """A checkpoint's state back; returns the hosts whose robots.txt was restored."""
        self.timing = timing
        for host_timing in self.timing.values():
            host_timing.backoff_until = 0.0  # monotonic clocks do not survive a restart
        for host, (text, _status) in robots.items():
            self.robots_response(host, 200, text.encode("utf-8"), now)
        return list(robots)
