"""How fresh a crawler kept its copies of a changing web, read from the replay proxy's log.

The server log is the truth: a GET answered 200 hands the crawler the version it logs, a 304
(GET or HEAD) confirms that the crawler's copy is the version it logs; a HEAD answered 200
changes no copy. A page counts from its first 200 on.

Freshness and age follow Cho & Garcia-Molina ("Synchronizing a database to improve
freshness", 2000): at time t a copy is fresh (F = 1) when it is the page's current version,
and its age is 0 when fresh, else the time since the first change the copy missed. Between
two answers the copy is one version, so F is 1 up to that version's next change and 0 after,
and the age grows linearly from that change: both integrate exactly over each interval, with
no sampling. A copy takes effect when its answer was written (``t_end``; ``t_start`` when a
record has no end).

The averages are over page-time: ``freshness`` is the fresh page-seconds over the tracked
page-seconds, ``age`` the integral of age over the tracked page-seconds (seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from focuscrawl.replay.changing import ChangingWeb

COPY = "copy"  # a GET answered 200: the crawler has this version now
CONFIRM = "confirm"  # a 304: the crawler's copy is this version


@dataclass
class _Page:
    """One page's answers in the log and what they add up to."""

    answers: list[tuple[float, str, int]] = field(default_factory=list)  # (effect time, kind, version)
    requests: int = 0
    fetches: int = 0
    not_modified: int = 0
    tracked: float = 0.0
    fresh: float = 0.0
    age_integral: float = 0.0
    changes: int = 0


def _number(value) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _effect_time(record: Mapping) -> float | None:
    written = _number(record.get("t_end"))
    return written if written is not None else _number(record.get("t_start"))


def _answer_kind(record: Mapping) -> str | None:
    """What a logged answer did to the crawler's copy: COPY, CONFIRM or None (nothing)."""
    status, method = record.get("status"), str(record.get("method") or "GET").upper()
    if status == 304:
        return CONFIRM
    if status == 200 and method == "GET":
        return COPY
    return None


def _logged_version(record: Mapping, web: ChangingWeb, page: str) -> int | None:
    """The version an answer served: as logged, else what the web served when the request came."""
    version = record.get("version")
    if isinstance(version, int) and not isinstance(version, bool) and version >= 0:
        return version
    t_start = _number(record.get("t_start"))
    return web.version(page, t_start) if t_start is not None else None


def _collect(log: Iterable[Mapping], web: ChangingWeb, pages: dict[str, _Page], start: float, end: float) -> None:
    """Each tracked page's answers (any time: one before ``start`` sets the copy held then) and
    its requests counted within ``[start, end)``."""
    for record in log:
        if not isinstance(record, Mapping) or not isinstance(record.get("url"), str):
            continue
        page = web.page_url(record["url"])
        if page not in pages:
            continue
        when = _effect_time(record)
        if when is None:
            continue
        counts = pages[page]
        kind = _answer_kind(record)
        if start <= when < end:
            counts.requests += 1
            counts.fetches += kind == COPY
            counts.not_modified += kind == CONFIRM
        if kind is not None:
            version = _logged_version(record, web, page)
            if version is not None:
                counts.answers.append((when, kind, version))


def _held_copies(answers: list[tuple[float, str, int]]) -> list[tuple[float, int]]:
    """``(from, version)`` of the copies the crawler held, from its first 200 on (a 304 before
    it confirms nothing the crawler has)."""
    held: list[tuple[float, int]] = []
    for when, kind, version in sorted(answers):
        if kind == COPY or held:
            held.append((when, version))
    return held


def _integrate(web: ChangingWeb, page: str, counts: _Page, start: float, end: float) -> None:
    """Fresh seconds and the age integral over the page's tracked time within ``[start, end)``."""
    held = _held_copies(counts.answers)
    if not held or held[0][0] >= end:
        return
    first = max(start, held[0][0])
    counts.tracked = end - first
    counts.changes = web.version(page, end) - web.version(page, first)
    for i, (since, version) in enumerate(held):
        until = held[i + 1][0] if i + 1 < len(held) else end
        low, high = max(since, start), min(until, end)
        if high <= low:
            continue
        missed = web.change_time(page, version + 1)  # the first change this copy does not have
        stale_from = min(max(missed, low), high)
        counts.fresh += stale_from - low
        if stale_from < high:
            # the integral of (t - missed) from stale_from to high
            counts.age_integral += (high - stale_from) * ((high - missed) + (stale_from - missed)) / 2


def _per_page_figures(counts: _Page) -> dict:
    return {
        "tracked_seconds": counts.tracked,
        "freshness": counts.fresh / counts.tracked if counts.tracked else None,
        "age": counts.age_integral / counts.tracked if counts.tracked else None,
        "fetches": counts.fetches,
        "not_modified": counts.not_modified,
        "requests": counts.requests,
        "changes": counts.changes,
    }


def freshness_report(log: Iterable[Mapping], web: ChangingWeb, urls: Iterable[str], start: float, end: float,
                     per_page: bool = True) -> dict:
    """Freshness and age of the crawler's copies of ``urls`` over ``[start, end)``.

    Args:
        log: the replay proxy's records (``ReplayProxy.log`` or its JSON lines, parsed).
        web: the ``ChangingWeb`` the proxy served.
        urls: the pages to judge (e.g. the relevant ones); any spelling the web looks up; URLs
            that are not changing pages are left out.
        start, end: the window, epoch seconds.
        per_page: include ``per_page`` ({recorded URL: figures}, pages tracked only).

    Returns:
        ``pages`` (tracked: fetched with 200 before ``end``), ``pages_asked`` (changing pages
        among ``urls``), ``tracked_seconds``, ``freshness`` and ``age`` (None when nothing is
        tracked), ``changes`` (changes of the tracked pages while tracked), and counted within
        the window over the pages of ``urls``: ``requests``, ``fetches`` (GETs answered 200),
        ``not_modified`` (304s) and ``not_modified_share`` (of the requests).

    Raises:
        ValueError: ``end`` is not after ``start``.
    """
    if not end > start:
        raise ValueError("freshness_report: end must be after start")
    pages = {page: _Page() for page in map(web.page_url, urls) if page is not None}
    _collect(log, web, pages, start, end)
    for page, counts in pages.items():
        _integrate(web, page, counts, start, end)
    tracked = {page: counts for page, counts in pages.items() if counts.tracked > 0}
    seconds = sum(c.tracked for c in tracked.values())
    requests = sum(c.requests for c in pages.values())
    not_modified = sum(c.not_modified for c in pages.values())
    report = {
        "start": start, "end": end,
        "pages": len(tracked), "pages_asked": len(pages),
        "tracked_seconds": seconds,
        "freshness": sum(c.fresh for c in tracked.values()) / seconds if seconds else None,
        "age": sum(c.age_integral for c in tracked.values()) / seconds if seconds else None,
        "changes": sum(c.changes for c in tracked.values()),
        "requests": requests,
        "fetches": sum(c.fetches for c in pages.values()),
        "not_modified": not_modified,
        "not_modified_share": not_modified / requests if requests else 0.0,
    }
    if per_page:
        report["per_page"] = {page: _per_page_figures(counts) for page, counts in tracked.items()}
    return report
