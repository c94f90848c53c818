"""Downloader middlewares.

CrawlLogMiddleware writes the request log (``FOCUS_CRAWL_LOG``): one JSON line for every request
that reached the network and for every request a rule refused, so that a webmaster's question
("what did your crawler do on my site, and why?") always has an answer, and so that unproductive
paths, traps and useless types can be found afterwards. It sits next to the downloader (only the
network guard is nearer), so it sees raw responses (redirects before they are followed).
"""

from __future__ import annotations

import json
import logging
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured

from focuscrawl import signals as focus_signals
from focuscrawl.config import FocusConfig
from focuscrawl.meta import DEPTH, EXPLAIN, PRIORITY, RENDER, REVISIT, ROBOTS_FOR
from focuscrawl.rendering.health import RENDER_SECONDS
from focuscrawl.rendering.requests import page_url

logger = logging.getLogger(__name__)


class CrawlLogMiddleware:
    def __init__(self, path: str, stats):
        self.path = path
        self.stats = stats
        # line-buffered: each record is in the operating system once written, so a killed crawl's
        # log ends at its last whole record
        self._handle = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115 - closed on spider_closed
        self._waiting_for_score: dict[int, dict] = {}

    @classmethod
    def from_crawler(cls, crawler):
        path = FocusConfig.from_settings(crawler.settings).crawl_log
        if not path:
            raise NotConfigured  # off by default: nothing to say
        try:
            mw = cls(path, crawler.stats)
        except OSError as exc:
            raise NotConfigured(f"cannot open the request log {path!r}: {exc.strerror}") from exc
        crawler.signals.connect(mw._on_page_scored, signal=focus_signals.page_scored)
        crawler.signals.connect(mw._on_page_visited, signal=focus_signals.page_visited)
        crawler.signals.connect(mw._on_refused, signal=focus_signals.request_refused)
        crawler.signals.connect(mw._on_robots, signal=focus_signals.robots_fetched)
        crawler.signals.connect(mw._on_render_loaded, signal=focus_signals.render_loaded)
        crawler.signals.connect(mw._on_render_judged, signal=focus_signals.render_judged)
        crawler.signals.connect(mw._on_closed, signal=signals.spider_closed)
        return mw

    def _write(self, record: dict) -> None:
        self._handle.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")

    @staticmethod
    def _base(request) -> dict:
        meta = request.meta
        url = page_url(request)  # a render through Splash went to SPLASH_URL for this page
        return {
            "time": round(time.time(), 3),
            "url": url,
            "method": "GET" if url != request.url else request.method,
            "priority": meta.get(PRIORITY),
            "why": meta.get(EXPLAIN),
            "depth": meta.get(DEPTH),
            "robots_for": meta.get(ROBOTS_FOR),
            # a revisit (FOCUS_RECRAWL): why the revisit plan chose it; its status says whether it changed (304)
            "revisit": meta.get(REVISIT),
            # a render (FOCUS_RENDER): why the page went to the browser
            "render": meta.get(RENDER),
        }

    def process_response(self, request, response, spider=None):
        record = self._base(request)
        location = response.headers.get(b"Location")
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        record.update(
            status=response.status,
            content_type=content_type,
            length=len(response.body),
            # a render's whole time (its download_latency is its page's own: rendering.health)
            elapsed=round(float(request.meta.get(RENDER_SECONDS) or request.meta.get("download_latency") or 0.0), 4),
            redirect=location.decode("latin-1") if location else None,
            score=None,
        )
        if response.status == 200 and "html" in content_type.lower() and not record["robots_for"]:
            self._waiting_for_score[id(request)] = record  # written once the spider has scored it
        else:
            self._write(record)
        return response

    def process_exception(self, request, exception, spider=None):
        record = self._base(request)
        record.update(status=None, error=f"{type(exception).__name__}: {exception}"[:300])
        self._write(record)

    def _on_page_scored(self, request, response, page, links=None, spider=None):
        record = self._waiting_for_score.pop(id(request), None)
        if record is not None:
            record["score"] = None if page.score is None else round(page.score, 4)
            if page.page_score is not None and page.page_score != page.score:
                record["page_score"] = round(page.page_score, 4)  # the page's words alone
            record["outlinks"] = page.outlinks
            if record.get("revisit"):
                record["changed"] = True
            self._write(record)

    def _on_page_visited(self, request, response, url, kind, text_hash, weight=None, etag=None, last_modified=None,
                         spider=None):
        """A revisit that found the text it had: nothing was scored, the record is written as it is."""
        record = self._waiting_for_score.pop(id(request), None)
        if record is not None:
            record["changed"] = False
            self._write(record)

    def _on_refused(self, request, reason, spider=None):
        record = self._base(request)
        record.update(status=None, dropped=reason)
        self._write(record)

    def _on_render_judged(self, request, host, shell=None, plain=None, rendered=None, spider=None):
        """A plain page that was an application shell: scored as rendered, by the render that follows."""
        if shell:
            record = self._waiting_for_score.pop(id(request), None)
            if record is not None:
                record["shell"] = True
                self._write(record)

    def _on_render_loaded(self, page, url, method, status, resource, blocked=None, spider=None):
        """What a rendered page's browser asked for itself: every request the web sees is in the log."""
        record = {"time": round(time.time(), 3), "url": url, "method": method, "render_of": page,
                  "resource": resource, "status": status}
        if blocked:
            record["dropped"] = f"render_{blocked}"
        self._write(record)

    def _on_robots(self, host, rules, response, spider=None):
        self._write({"time": round(time.time(), 3), "event": "robots", "host": host, "status": rules.status,
                     "state": rules.state.value, "robots_txt": rules.text[:65536]})

    def _on_closed(self, spider, reason=None):
        for record in self._waiting_for_score.values():
            self._write(record)
        self._waiting_for_score.clear()
        self._handle.close()
