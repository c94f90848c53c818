"""Where a continuous crawl's revisit plan lives, and the events that change it.

``Recrawl`` (``scheduling/recrawl.py``) turns what the crawl sees into events: a page visited,
a change hinted by a feed or a sitemap, a revisit released, gone out of the downloader, refused,
handed out. A *keeper* takes them to the plan (``Revisits``) and says whether this process holds
the plan, that is whether it may hand revisits out:

- ``LocalKeeper``: a crawl of its own. The plan is in this process, each event applied as it
  comes; a JOBDIR snapshot keeps it.
- a shared crawl's backend offers its own keeper (``revisit_keeper``, see
  ``focuscrawl.distributed.revisits``): the plan is the crawl's, held by one worker at a time,
  which every worker's events reach.

Events are plain tuples (JSON-able, so they travel between processes), applied by ``apply``; each
carries the wall-clock time it happened at where the plan reads one, so an event applied late (by
another process, or replayed) changes the plan as it would have then.
"""

from __future__ import annotations

import logging
from typing import Protocol

from focuscrawl.scheduling.revisits import Revisits

logger = logging.getLogger(__name__)

VISIT, HINT, LEFT, DROPPED, RELEASED, HANDED = "v", "h", "l", "d", "r", "q"


def _text(value) -> str | None:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def visit(url: str, status: int, *, revisit: bool, text_hash: str = "", weight: float | None = None,
          etag=None, last_modified=None, released: int = 0, depth: int = 0, kind: str = "page",
          at: float | None = None) -> tuple:
    """A page fetched (``Revisits.record``'s arguments), at ``at`` (the plan's clock; None: when
    applied)."""
    return (VISIT, url, int(status), bool(revisit), text_hash or "", None if weight is None else float(weight),
            _text(etag), _text(last_modified), int(released), int(depth), kind, at)


def hint(url: str, changed_at: float | None = None, changefreq: str | None = None, at: float | None = None) -> tuple:
    """A feed or a sitemap speaks of a page (``Revisits.hint``)."""
    return (HINT, url, changed_at, changefreq, at)


def left(url: str, at: float | None = None) -> tuple:
    """A revisit left the downloader, fetched or failed, at ``at`` (``Revisits.left``)."""
    return (LEFT, url, at)


def dropped(url: str) -> tuple:
    """A queued revisit refused: the page leaves the plan (``Revisits.dropped``)."""
    return (DROPPED, url)


def released(url: str = "", worker: str = "") -> tuple:
    """A revisit of ``url`` released by a scheduler (``Revisits.revisit_released``), of ``worker``
    when several share the crawl (in flight there until it leaves the downloader)."""
    return (RELEASED, url, worker)


def handed(url: str, at: float) -> tuple:
    """A revisit queued by the plan's holder at ``at`` (``Revisits.handed_out``)."""
    return (HANDED, url, at)


def apply(revisits: Revisits, event) -> None:
    """``event`` applied to ``revisits``; one it does not know (a newer version's) is skipped."""
    kind = event[0]
    if kind == VISIT:
        _, url, status, revisit, text_hash, weight, etag, last_modified, count, depth, page_kind, at = event
        revisits.record(url, status, revisit=revisit, text_hash=text_hash, weight=weight, etag=etag,
                        last_modified=last_modified, released=count, depth=depth, kind=page_kind, at=at)
    elif kind == HINT:
        _, url, changed_at, changefreq, at = event
        revisits.hint(url, changed_at, changefreq, at=at)
    elif kind == LEFT:
        revisits.left(event[1], event[2] if len(event) > 2 else None)
    elif kind == DROPPED:
        revisits.dropped(event[1])
    elif kind == RELEASED:
        revisits.revisit_released()
    elif kind == HANDED:
        revisits.handed_out(event[1], event[2])
    else:
        logger.debug("revisit event of an unknown kind skipped: %r", kind)


class PlanKeeper(Protocol):
    """Where the plan lives.

    - ``report(event)``: an event for the plan;
    - ``released(now, revisit)``: this process released a request (``revisit``: the page's URL
      when it is a revisit, else None);
    - ``hold(now)``: whether this process holds the plan now (the plan is then up to date, and due
      revisits are this process's to hand out);
    - ``handed_out(urls, at)``: the holder queued revisits of ``urls`` (told before they are queued);
    - ``pages()``: the pages in the crawl's plan, as known here;
    - ``next_due(now)``: when ``hold`` should be asked again (the monotonic clock; None: nothing
      planned);
    - ``keeps_state``: the plan is this process's, which its JOBDIR keeps;
    - ``close()``: the crawl ends."""

    keeps_state: bool

    def report(self, event: tuple) -> None: ...
    def released(self, now: float, revisit: str | None) -> None: ...
    def hold(self, now: float) -> bool: ...
    def handed_out(self, urls: list[str], at: float) -> None: ...
    def pages(self) -> int: ...
    def next_due(self, now: float) -> float | None: ...
    def close(self) -> None: ...


class LocalKeeper:
    """A crawl of its own: the plan is in this process, and always held."""

    keeps_state = True

    def __init__(self, revisits: Revisits):
        self.revisits = revisits

    def report(self, event: tuple) -> None:
        apply(self.revisits, event)

    def released(self, now: float, revisit: str | None) -> None:
        self.revisits.released_one(now, revisit is not None)

    def hold(self, now: float) -> bool:
        return True

    def handed_out(self, urls: list[str], at: float) -> None:
        return None  # ``due_requests`` marked them in this very plan

    def pages(self) -> int:
        return len(self.revisits)

    def next_due(self, now: float) -> float | None:
        return self.revisits.next_due(now)

    def close(self) -> None:
        return None


__all__ = ["LocalKeeper", "PlanKeeper", "apply", "dropped", "handed", "hint", "left", "released", "visit"]
