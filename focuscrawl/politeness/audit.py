"""Server-side politeness audit: did the crawler behave, judged from the servers' own logs.

The crawler's own stats can lie (a bug that sends too soon also records too soon); the servers'
logs cannot. Each record is one request as a server saw it (JSON lines, the format the hostile test
web and the replay proxy write):

    t_start   epoch seconds, request head received
    t_end     epoch seconds, response fully written (or the connection dropped)
    method, url, host (netloc, e.g. "127.0.0.1:8001"), path, status (0: no response), bytes, conn
    retry_after   optional: the Retry-After sent with this response (seconds or an HTTP date)

Every check returns a list of :class:`Violation`; :func:`audit_report` runs them all.
Pure: no Scrapy, no I/O besides :func:`load_log`.
"""

from __future__ import annotations

import email.utils
import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from typing import Callable, Iterable, Mapping
from urllib.parse import urlsplit

from protego import Protego

from focuscrawl import BOT_NAME

ROBOTS_PATH = "/robots.txt"


@dataclass(frozen=True)
class Violation:
    """One rule broken by one request: what kind, where, when, and by how much."""

    kind: str  # "gap", "concurrency", "disallowed", "robots_not_first", "retry_after", "excluded"
    host: str
    url: str
    t: float  # t_start of the offending request
    expected: float | None = None  # the limit (seconds, count), where one applies
    observed: float | None = None  # what the log shows
    detail: str = ""

    def __str__(self) -> str:
        return f"[{self.kind}] {self.host} {self.url}: {self.detail}"


# --- reading -----------------------------------------------------------------------------------

def load_log(path) -> list[dict]:
    """Records of a JSON-lines log, in file order; blank lines and a torn last line are skipped
    (a server killed mid-write must not make its whole log unreadable)."""
    records = []
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                continue
            raise
    return records


def _key_func(per: str | Callable[[dict], str]) -> Callable[[dict], str]:
    return per if callable(per) else (lambda r: r[per])


def _by_key(records: Iterable[dict], per="host") -> dict[str, list[dict]]:
    """Records grouped by ``per`` (a record key or a function), each group sorted by t_start."""
    key = _key_func(per)
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        groups[key(r)].append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: (r["t_start"], r["t_end"]))
    return dict(groups)


def _url(r: dict) -> str:
    return r.get("url") or f"http://{r['host']}{r.get('path', '/')}"


def _path(r: dict) -> str:
    if r.get("path"):
        return r["path"]
    parts = urlsplit(_url(r))
    return parts.path or "/"


# --- gaps and concurrency ------------------------------------------------------------------------

def _gaps(rs: list[dict]) -> list[tuple[dict, float, float]]:
    """(request, end-to-start gap, start-to-start gap) for each request after the first.

    The end-to-start gap is measured from the latest end among all earlier requests, so an
    overlapping request shows up as a negative gap rather than hiding behind a shorter one."""
    out = []
    latest_end = rs[0]["t_end"]
    prev_start = rs[0]["t_start"]
    for r in rs[1:]:
        out.append((r, r["t_start"] - latest_end, r["t_start"] - prev_start))
        latest_end = max(latest_end, r["t_end"])
        prev_start = r["t_start"]
    return out


def min_gaps(records: Iterable[dict], per="host", measure: str = "end") -> dict[str, float]:
    """Smallest gap between consecutive requests to each host (or ``per`` key).

    ``measure="end"``: from the END of a response to the START of the next request (the project's
    definition of DOWNLOAD_DELAY). ``measure="start"``: start to start. Hosts with one request have
    no gap and are absent."""
    if measure not in ("end", "start"):
        raise ValueError(f"measure must be 'end' or 'start', not {measure!r}")
    idx = 1 if measure == "end" else 2
    result = {}
    for host, rs in _by_key(records, per).items():
        gaps = _gaps(rs)
        if gaps:
            result[host] = min(g[idx] for g in gaps)
    return result


def min_start_gaps(records: Iterable[dict], per="host") -> dict[str, float]:
    """Smallest start-to-start gap per host (shorthand for ``min_gaps(..., measure="start")``)."""
    return min_gaps(records, per=per, measure="start")


def gap_violations(records: Iterable[dict], required: Mapping[str, float] | float,
                   tolerance: float = 0.05) -> list[Violation]:
    """Requests that started sooner than ``required`` seconds after the previous response to their
    host ended. ``required`` is one number for every host or {host: seconds}; hosts absent from
    the mapping are not checked. ``tolerance`` (seconds) absorbs clock and scheduling jitter."""
    out = []
    for host, rs in _by_key(records).items():
        need = required if isinstance(required, (int, float)) else required.get(host)
        if not need:
            continue
        for r, gap, _ in _gaps(rs):
            if gap < need - tolerance:
                out.append(Violation("gap", host, _url(r), r["t_start"], float(need), gap,
                                     f"started {gap:.3f}s after the previous response ended; "
                                     f"{need:g}s required"))
    return out


def max_concurrency(records: Iterable[dict], per="host") -> dict[str, int]:
    """Most requests open at once per host: overlapping [t_start, t_end] intervals. A request that
    starts exactly when another ends does not overlap it."""
    result = {}
    for host, rs in _by_key(records, per).items():
        events = []
        for r in rs:
            events.append((r["t_start"], 1))
            events.append((r["t_end"], -1))
        events.sort(key=lambda e: (e[0], e[1]))  # ends (-1) before starts (+1) at equal times
        open_now = best = 0
        for _, delta in events:
            open_now += delta
            best = max(best, open_now)
        result[host] = best
    return result


def concurrency_violations(records: Iterable[dict], limit: int = 1) -> list[Violation]:
    """Requests that started while ``limit`` or more others to the same host were still open."""
    out = []
    for host, rs in _by_key(records).items():
        for i, r in enumerate(rs):
            open_before = sum(1 for o in rs[:i] if o["t_end"] > r["t_start"])
            if open_before >= limit:
                out.append(Violation("concurrency", host, _url(r), r["t_start"], float(limit),
                                     float(open_before + 1),
                                     f"{open_before + 1} requests open at once; limit {limit}"))
    return out


# --- robots.txt ----------------------------------------------------------------------------------

def parse_robots(text: str) -> Protego:
    """Protego parser for a robots.txt text; a leading BOM is dropped (RFC 9309 allows one)."""
    return Protego.parse(text.lstrip("\ufeff"))


def disallowed_hits(records: Iterable[dict], robots: Mapping[str, str],
                    user_agent: str = BOT_NAME) -> list[Violation]:
    """Requests for URLs the host's robots.txt disallows for ``user_agent``. Hosts absent from
    ``robots`` are not checked; the robots.txt requests themselves are never violations."""
    parsers = {host: parse_robots(text) for host, text in robots.items()}
    out = []
    for r in sorted(records, key=lambda r: r["t_start"]):
        rp = parsers.get(r["host"])
        if rp is None or _path(r) == ROBOTS_PATH:
            continue
        if not rp.can_fetch(_url(r), user_agent):
            out.append(Violation("disallowed", r["host"], _url(r), r["t_start"],
                                 detail=f"robots.txt disallows it for {user_agent}"))
    return out


def robots_not_first(records: Iterable[dict]) -> list[Violation]:
    """Requests to a host that started before that host's first robots.txt response had ended
    (an obeying crawler cannot know the rules before then)."""
    out = []
    for host, rs in _by_key(records).items():
        ends = [r["t_end"] for r in rs if _path(r) == ROBOTS_PATH]
        known_at = min(ends) if ends else math.inf
        for r in rs:
            if _path(r) != ROBOTS_PATH and r["t_start"] < known_at:
                why = ("before robots.txt was fetched" if ends else "robots.txt was never fetched")
                out.append(Violation("robots_not_first", host, _url(r), r["t_start"], detail=why))
    return out


def crawl_delays(robots: Mapping[str, str], user_agent: str = BOT_NAME) -> dict[str, float]:
    """{host: Crawl-delay seconds} for the hosts whose robots.txt sets one for ``user_agent``."""
    out = {}
    for host, text in robots.items():
        delay = parse_robots(text).crawl_delay(user_agent)
        if delay:
            out[host] = float(delay)
    return out


# --- Retry-After ---------------------------------------------------------------------------------

def retry_after_seconds(value, now: float | None = None) -> float | None:
    """Seconds a Retry-After value asks to wait: delay-seconds or an HTTP date (relative to
    ``now``, the response time). None when absent or unreadable."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)):
        return max(0.0, float(value))
    text = str(value).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when is None or now is None:
        return None
    return max(0.0, when.timestamp() - now)


def retry_after_violations(records: Iterable[dict], tolerance: float = 0.05,
                           statuses=(429, 503)) -> list[Violation]:
    """Requests to a host that started sooner after a 429/503 (with a ``retry_after`` value) from
    that host than the Retry-After asked. Requests already in flight when that response ended do
    not count: they could not have known."""
    out = []
    for host, rs in _by_key(records).items():
        for r in rs:
            if r.get("status") not in statuses:
                continue
            wait = retry_after_seconds(r.get("retry_after"), now=r["t_end"])
            if not wait:
                continue
            until = r["t_end"] + wait
            for o in rs:
                if r["t_end"] <= o["t_start"] < until - tolerance:
                    waited = o["t_start"] - r["t_end"]
                    out.append(Violation("retry_after", host, _url(o), o["t_start"], wait, waited,
                                         f"{waited:.3f}s after a {r['status']} from {_url(r)} "
                                         f"that asked for Retry-After {wait:g}s"))
    return out


# --- exclusion -----------------------------------------------------------------------------------

def _host_matches(netloc: str, entry: str) -> bool:
    """An entry with a port matches that netloc exactly; without one, the hostname on any port."""
    netloc, entry = netloc.lower(), entry.lower()
    if netloc == entry:
        return True
    if ":" in entry.rsplit("]", 1)[-1]:
        return False
    return (urlsplit(f"//{netloc}").hostname or "") == entry.strip("[]")


def excluded_hits(records: Iterable[dict], hosts: Iterable[str],
                  after: float | None = None) -> list[Violation]:
    """Requests to excluded hosts that started at or after ``after`` (None: any time)."""
    hosts = list(hosts)
    out = []
    for r in sorted(records, key=lambda r: r["t_start"]):
        if after is not None and r["t_start"] < after:
            continue
        if any(_host_matches(r["host"], h) for h in hosts):
            out.append(Violation("excluded", r["host"], _url(r), r["t_start"],
                                 detail="host is on the exclusion list"))
    return out


# --- everything at once --------------------------------------------------------------------------

def required_delays(hosts: Iterable[str], delays: Mapping[str, float] | float | None,
                    robots: Mapping[str, str] | None, user_agent: str = BOT_NAME,
                    max_crawl_delay: float | None = None) -> dict[str, float]:
    """Minimum gap owed to each host: the larger of the configured delay and the robots.txt
    Crawl-delay (capped at ``max_crawl_delay``, as FOCUS_MAX_CRAWL_DELAY caps it)."""
    from_robots = crawl_delays(robots or {}, user_agent)
    out = {}
    for host in hosts:
        base = delays if isinstance(delays, (int, float)) else (delays or {}).get(host, 0.0)
        cd = from_robots.get(host, 0.0)
        if max_crawl_delay is not None:
            cd = min(cd, max_crawl_delay)
        need = max(float(base or 0.0), cd)
        if need > 0:
            out[host] = need
    return out


def audit_report(records: Iterable[dict], robots: Mapping[str, str] | None = None,
                 delays: Mapping[str, float] | float | None = None,
                 excluded: Iterable[str] = (), excluded_after: float | None = None,
                 user_agent: str = BOT_NAME, tolerance: float = 0.05,
                 per_host_concurrency: int | None = 1,
                 max_crawl_delay: float | None = None) -> dict:
    """Every check at once, as a JSON-able dict.

    ``robots`` ({host: text}) turns on the robots checks (disallowed, robots_not_first) and adds
    Crawl-delay to the required gaps; ``delays`` is the configured DOWNLOAD_DELAY (one number or
    per host); ``excluded`` hosts must see no request from ``excluded_after`` on;
    ``per_host_concurrency`` None skips the concurrency check. ``ok`` is True when no check
    found a violation."""
    records = list(records)
    by_host = _by_key(records)
    statuses: dict[str, dict[str, int]] = {}
    for host, rs in by_host.items():
        counts: dict[str, int] = defaultdict(int)
        for r in rs:
            counts[str(r.get("status"))] += 1
        statuses[host] = dict(counts)
    required = required_delays(by_host, delays, robots, user_agent, max_crawl_delay)
    violations = {
        "gap": gap_violations(records, required, tolerance) if required else [],
        "concurrency": (concurrency_violations(records, per_host_concurrency)
                        if per_host_concurrency is not None else []),
        "disallowed": disallowed_hits(records, robots, user_agent) if robots else [],
        "robots_not_first": (robots_not_first([r for r in records if r["host"] in robots])
                             if robots else []),
        "retry_after": retry_after_violations(records, tolerance),
        "excluded": excluded_hits(records, excluded, excluded_after) if excluded else [],
    }
    return {
        "requests": len(records),
        "requests_per_host": {h: len(rs) for h, rs in by_host.items()},
        "statuses_per_host": statuses,
        "required_gap": required,
        "min_gap": min_gaps(records),
        "min_start_gap": min_start_gaps(records),
        "max_concurrency": max_concurrency(records),
        "violations": {k: [asdict(v) for v in vs] for k, vs in violations.items()},
        "violation_counts": {k: len(vs) for k, vs in violations.items()},
        "ok": not any(violations.values()),
    }


def format_report(report: dict, limit: int = 10) -> str:
    """A short human-readable summary of :func:`audit_report`, for assertion messages."""
    lines = [f"{report['requests']} requests over {len(report['requests_per_host'])} hosts; "
             f"{'OK' if report['ok'] else 'VIOLATIONS'}"]
    for kind, vs in report["violations"].items():
        if not vs:
            continue
        lines.append(f"  {kind}: {len(vs)}")
        for v in vs[:limit]:
            lines.append(f"    {v['host']} {v['url']}: {v['detail']}")
    return "\n".join(lines)
