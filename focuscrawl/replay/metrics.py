"""Harvest and recall of a crawl, from the replay server's log.

Definitions (the same for a real crawl's log and for a simulated baseline):

- **Counted requests**: the answered requests of the log in order of ``t_start``, except
  robots.txt fetches (path ``/robots.txt``), CONNECT, and requests the server could not parse
  (empty ``url``). Every other request counts one: 404s (links to unrecorded URLs), redirects,
  errors, repeated fetches of one URL.
- **Relevant page**: a *page* is a group of URLs that serve the same content (a redirect and its
  target, byte-identical copies, the rows of an aliases file). A page is relevant when any of
  its URLs carries a label in the positive set.
- **Found**: a relevant page is found by the first counted request that got a 2xx answer for one
  of its URLs. A 3xx answer does not find the page; the request to its target does.
  ``found(n)`` = distinct relevant pages found by the first n counted requests.
- **harvest@N** = found(N) / N.
- **recall@N** = found(N) / R, where R = relevant pages with a 2xx URL reachable from the seeds
  by following recorded links (and recorded redirects) in the link graph.
- **Relevant pages per minute** = found(n) / (the last of the n counted requests' ``t_end`` minus
  the first one's ``t_start``) x 60, over the crawl's n counted requests: how fast the crawl finds
  what the user wants, as the server's clock sees it (start-up and model loading left out).
  That span, in seconds, is the crawl's **seconds**.
- When a crawl stopped after n < N requests, found(N) = found(n): the unused requests found
  nothing. ``requests`` in a score says how many were made.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from focuscrawl.replay.linkgraph import LinkGraph, SamePage
from focuscrawl.tsv import read_pairs

#: The request counts the figures are reported at (those not above the budget).
REPORT_POINTS = (100, 200, 500, 1000, 2000)


def load_labels(path: str | Path) -> dict[str, str]:
    """{url: label} from a TSV with a header naming ``url`` and ``label`` columns (others
    ignored); without such a header, the first two columns."""
    try:
        return dict(read_pairs(path, "url", "label"))
    except FileNotFoundError:
        raise FileNotFoundError(f"labels file not found: {path}") from None


def read_log(path: str | Path) -> list[dict]:
    """The records of a JSON-lines server log; lines that are not JSON objects are skipped."""
    records = []
    with Path(path).open(encoding="utf-8") as fh:
        for line in fh:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                records.append(rec)
    return records


def _counted_rows(log: Iterable[Mapping]) -> list[tuple[float, int, float, str, int]]:
    """(t_start, position, t_end, url, status) of the counted requests, in t_start order."""
    rows = []
    for i, rec in enumerate(log):
        url = rec.get("url") or ""
        if not url or rec.get("method") == "CONNECT" or rec.get("path") == "/robots.txt":
            continue
        start = float(rec.get("t_start", 0.0))
        rows.append((start, i, float(rec.get("t_end", start)), url, int(rec.get("status", 0))))
    rows.sort()
    return rows


def counted_requests(log: Iterable[Mapping]) -> list[tuple[str, int]]:
    """(url, status) of the counted requests (see the module docstring), in t_start order."""
    return [(url, status) for *_, url, status in _counted_rows(log)]


def crawl_seconds(log: Iterable[Mapping], budget: int | None = None) -> float:
    """The time the first ``budget`` counted requests (all without a budget) span by the server's
    log: the first one's ``t_start`` to the last answer's ``t_end``; 0 without requests."""
    rows = _counted_rows(log)
    rows = rows[:budget] if budget is not None else rows
    return _span(rows)


def _span(rows) -> float:
    return max(end for _, _, end, _, _ in rows) - rows[0][0] if rows else 0.0


def relevant_per_minute(log: Iterable[Mapping], relevance: "Relevance", budget: int | None = None) -> float:
    """Relevant pages found per minute over the first ``budget`` counted requests (all without a
    budget), by the server's log times; 0 when they span no time."""
    rows = _counted_rows(log)
    rows = rows[:budget] if budget is not None else rows
    if not rows:
        return 0.0
    span = _span(rows)
    found = found_at(found_curve([(url, status) for *_, url, status in rows], relevance), len(rows))
    return 60.0 * found / span if span > 0 else 0.0


class Relevance:
    """Which URLs are relevant pages, and which page each URL is."""

    def __init__(self, labels: Mapping[str, str], positive: Iterable[str], same_page: SamePage | None = None):
        self.same_page = same_page or SamePage()
        self.positive = {p.strip() for p in positive if p.strip()}
        self._relevant_pages: set[str] = set()
        for url, label in labels.items():
            if label in self.positive:
                self._relevant_pages.add(self.same_page.canonical(url))

    def page(self, url: str) -> str:
        return self.same_page.canonical(url)

    def page_of_key(self, key: str) -> str:
        return self.same_page.canonical_key(key)

    def is_relevant(self, url: str) -> bool:
        return self.page(url) in self._relevant_pages

    def is_relevant_key(self, key: str) -> bool:
        return self.page_of_key(key) in self._relevant_pages


def found_curve(requests: Sequence[tuple[str, int]], relevance: Relevance) -> list[int]:
    """found(i) for i = 1..len(requests): distinct relevant pages found by the first i requests."""
    found: set[str] = set()
    curve = []
    for url, status in requests:
        if 200 <= status < 300:
            page = relevance.page(url)
            if page not in found and relevance.is_relevant(url):
                found.add(page)
        curve.append(len(found))
    return curve


def reachable_relevant(graph: LinkGraph, seeds: Iterable[str], relevance: Relevance) -> set[str]:
    """The relevant pages (page ids) with a 2xx URL reachable from the seeds: R's members."""
    return {relevance.page_of_key(k) for k in graph.reachable(seeds)
            if graph.is_page(k) and relevance.is_relevant_key(k)}


def found_at(curve: Sequence[float], n: int) -> float:
    """found(n); past the end of the curve the last value (the crawl stopped)."""
    if n <= 0 or not curve:
        return 0
    return curve[min(n, len(curve)) - 1]


def score_curve(curve: Sequence[float], reachable: int, points: Iterable[int]) -> dict:
    """harvest@N and recall@N at each point (keys are str(N) so the dict is JSON-ready)."""
    out = {"requests": len(curve), "found": found_at(curve, len(curve)), "reachable_relevant": reachable,
           "harvest": {}, "recall": {}, "found_at": {}}
    for n in points:
        f = found_at(curve, n)
        out["found_at"][str(n)] = f
        out["harvest"][str(n)] = f / n
        out["recall"][str(n)] = (f / reachable) if reachable else 0.0
    return out


def report_points(budget: int, points: Iterable[int] = REPORT_POINTS) -> list[int]:
    """The report points not above the budget, and the budget itself."""
    chosen = [n for n in points if n <= budget]
    if budget > 0 and budget not in chosen:
        chosen.append(budget)
    return chosen

