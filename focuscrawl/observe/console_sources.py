"""What the web console shows, behind one small interface, so a live crawl and a finished one are
served by the same server and page.

A source answers five questions, as ``focuscrawl.observe.status.CrawlStatus`` does for a running
crawl (the live source is that object itself):

- ``snapshot()``: the crawl's figures now (a dict: elapsed, requests, pages, relevant, harvest, ...);
- ``curve()``: the harvest curve, points of ``{requests, seconds, relevant}``;
- ``hosts(limit)``: each host's state, fetched, relevant, yield, waste, delay, queued;
- ``top_urls(n)``: the frontier's best URLs, with why they rank there;
- ``latest_relevant(n)``: the relevant pages found last.

``StoreSource`` answers them for a crawl that is over, from its crawl store (and what its JOBDIR's
checkpoint says of the frontier it left, ``FrontierView``). ``LabelDesk`` is the labelling queue and
the labels, on a crawl store opened when first needed. Scrapy-free.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from focuscrawl.config import DEFAULTS
from focuscrawl.observe.plot import store_curve
from focuscrawl.urls import host_key

#: pages the offline snapshot's recent harvest is taken over: the live progress's window
RECENT_WINDOW = DEFAULTS.progress_window


@dataclass
class FrontierView:
    """What a JOBDIR checkpoint says of the frontier a crawl left: its best URLs with why they rank
    there (as ``scrapy explain`` says it), the URLs queued per host, how many are queued."""

    top: list[dict] = field(default_factory=list)
    queued: dict[str, int] = field(default_factory=dict)
    size: int = 0
    checkpointed_at: str | None = None


class StoreSource:
    """The console's figures of one crawl of a crawl store. The store is read incrementally (the
    pages stored since the last read, at most every ``recheck`` seconds), so a store another
    process is still writing stays current at the cost of its new pages only."""

    def __init__(self, store, crawl: int, frontier: FrontierView | None = None, *, recheck: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.crawl = crawl
        self.frontier = frontier
        self.recheck = recheck
        self.clock = clock
        self._checked: float | None = None
        self._last_id = 0
        self._pages: list[dict] = []  # per page, fetch order: the few fields the figures need
        self._hosts: dict[str, dict] = {}
        self._latest: deque[dict] = deque(maxlen=200)
        self._info: dict = {}

    def _refresh(self) -> None:
        now = self.clock()
        if self._checked is not None and now - self._checked < self.recheck:
            return
        self._checked = now
        self._info = self.store.crawl(self.crawl) or {}
        for row_id, page in self.store.pages_after(self._last_id, crawl=self.crawl):
            self._last_id = row_id
            self._add(page)

    def _add(self, page: dict) -> None:
        relevant = bool(page.get("relevant")) and not page.get("duplicate_of")
        wasted = bool(page.get("duplicate_of")) or page.get("score") is None  # as the live status counts waste
        self._pages.append({"relevant": relevant, "duplicate_of": page.get("duplicate_of"),
                            "fetched_at": page.get("fetched_at")})
        host = host_key(page.get("final_url") or page["url"]) or host_key(page["url"])
        stats = self._hosts.setdefault(host, {"fetched": 0, "relevant": 0, "wasted": 0})
        stats["fetched"] += 1
        stats["relevant"] += relevant
        stats["wasted"] += wasted
        if relevant:
            self._latest.append({"url": page.get("final_url") or page["url"], "title": page.get("title") or "",
                                 "score": page.get("score"), "fetched_at": page.get("fetched_at")})

    # --- the source interface ----------------------------------------------------------------------

    def curve(self) -> list[dict]:
        self._refresh()
        return store_curve(self._pages, self._info.get("started_at"))

    def snapshot(self) -> dict[str, Any]:
        curve = self.curve()
        pages = len(curve)
        relevant = curve[-1]["relevant"] if curve else 0
        elapsed = curve[-1]["seconds"] if curve else 0.0
        window = min(RECENT_WINDOW, pages)
        recent = relevant - (curve[-window - 1]["relevant"] if pages > window else 0)
        budget = (self._info.get("settings") or {}).get("FOCUS_BUDGET")
        queued = sum(1 for count in (self.frontier.queued.values() if self.frontier else ()) if count)
        return {
            "elapsed": elapsed, "requests": pages, "pages": pages, "relevant": relevant,
            "harvest": relevant / pages if pages else 0.0,
            "harvest_recent": recent / window if window else 0.0, "recent_window": window,
            "pages_per_second": pages / elapsed if elapsed > 0 else 0.0,
            "frontier": self.frontier.size if self.frontier else None,
            "hosts": {"queued": queued if self.frontier else None, "idle": len(set(self._hosts) - set(
                self.frontier.queued if self.frontier else ()))},
            "budget": int(budget) if str(budget or "").isdigit() and int(budget) else None,
            "eta_seconds": None, "finished": self._info.get("ended_at") is not None,
            # what only a stored crawl says
            "crawl": self.crawl, "started_at": self._info.get("started_at"),
            "ended_at": self._info.get("ended_at"), "end_reason": self._info.get("end_reason"),
        }

    def hosts(self, limit: int = 50) -> list[dict]:
        self._refresh()
        queued = self.frontier.queued if self.frontier else {}
        rows = []
        for host in set(self._hosts) | set(queued):
            stats = self._hosts.get(host, {"fetched": 0, "relevant": 0, "wasted": 0})
            fetched = stats["fetched"]
            rows.append({
                "host": host, "state": "queued" if queued.get(host) else "idle",
                "fetched": fetched, "relevant": stats["relevant"],
                "yield": round(stats["relevant"] / fetched, 4) if fetched else 0.0,
                "waste": stats["wasted"], "delay": None, "queued": queued.get(host, 0) if self.frontier else None,
            })
        rows.sort(key=lambda r: (-r["relevant"], -r["fetched"], r["host"]))
        return rows[:limit]

    def top_urls(self, n: int = 20) -> list[dict]:
        return list(self.frontier.top[:n]) if self.frontier else []

    def latest_relevant(self, n: int = 20) -> list[dict]:
        self._refresh()
        return list(reversed(self._latest))[:n]


class LabelDesk:
    """The labelling queue and the labels, for the console: a crawl store, a topic model and a
    crawl id, each got when first needed (a live crawl's console opens its own connection to the
    store the crawl writes only once somebody labels; SQLite's WAL lets both work at once)."""

    def __init__(self, store: Callable[[], Any], model: Callable[[], Any], crawl: Callable[[], int | None],
                 who: str = "console") -> None:
        self._open_store = store
        self._get_model = model
        self._get_crawl = crawl
        self.who = who
        self._store = None
        self._queue = None
        self._unavailable: str | None = None

    @property
    def store(self):
        if self._store is None:
            self._store = self._open_store()
        return self._store

    @property
    def crawl(self) -> int | None:
        return self._get_crawl()

    def _label_queue(self):
        """The queue, made once (it reads the store incrementally), or None with the reason kept."""
        if self._queue is None and self._unavailable is None:
            model = self._get_model()
            if model is None:
                self._unavailable = "no topic model to rank pages by (scrapy console --model M)"
                return None
            from focuscrawl.labelling.queue import LabelQueue

            self._queue = LabelQueue(self.store, model, crawl=self.crawl)
        return self._queue

    def queue(self, n: int = 10) -> dict[str, Any]:
        """``{"available": True, "candidates": [...]}``, or ``{"available": False, "reason": ...}``."""
        queue = self._label_queue()
        if queue is None:
            return {"available": False, "reason": self._unavailable, "candidates": []}
        return {"available": True, "candidates": [c.as_dict() for c in queue.next(n)]}

    def label(self, url: str, label: str, who: str | None = None) -> dict[str, Any]:
        """Record a label (``store.add_label``); a bad label or an unknown page is a LabelError."""
        return self.store.add_label(url, label, who=who or self.who, crawl=self.crawl)

    def labels(self, n: int = 50) -> list[dict]:
        """The latest ``n`` labels of the crawl, the newest first."""
        return list(reversed(self.store.labels(crawl=self.crawl)))[:n]

    def page(self, url: str) -> dict | None:
        """The stored page requested as ``url`` in the crawl."""
        return self.store.get_page(url, crawl=self.crawl)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
            self._queue = None


__all__ = ["RECENT_WINDOW", "FrontierView", "LabelDesk", "StoreSource"]
