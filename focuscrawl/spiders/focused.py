"""``scrapy crawl focused -a seeds=SEEDS -a model=MODEL``: score every page, follow its links.

The spider is thin on purpose: parsing, scoring and learning live in the cores. For each
response it builds a PageItem (every fetched page, relevant or not, goes to the store), asks the
topic model for a score, tells the scheduler's learner (signal ``page_scored``), and hands every
link to the frontier with what the learner needs to value it (anchor, context, parent score,
hops since the last relevant page). The frontier decides what is fetched, when, and whether.
"""

from __future__ import annotations

import logging
import os
from datetime import datetime, timezone

import scrapy
from scrapy.exceptions import NotConfigured

from focuscrawl import signals as focus_signals
from focuscrawl.dedup import content_hash
from focuscrawl.items import PageItem
from focuscrawl.parsing import parse_html
from focuscrawl.relevance import ModelError, TopicModel
from focuscrawl.urls import url_tokens

logger = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")


class SeedsError(ValueError):
    """The seeds argument names no usable URL."""


def read_seeds(seeds: str) -> list[str]:
    """Seeds from a file (one URL a line, ``#`` comments) or a comma-separated list of URLs."""
    if not seeds or not seeds.strip():
        raise SeedsError("no seeds given: use -a seeds=FILE or -a seeds=URL[,URL]")
    if os.path.exists(seeds) or not seeds.startswith(("http://", "https://")):
        try:
            with open(seeds, encoding="utf-8") as handle:
                lines = [line.split("#", 1)[0].strip() for line in handle]
        except OSError as exc:
            raise SeedsError(f"cannot read seeds file {seeds!r}: {exc.strerror}") from None
        urls = [line for line in lines if line]
        where = f"seeds file {seeds!r}"
    else:
        urls = [u.strip() for u in seeds.split(",") if u.strip()]
        where = "seeds argument"
    bad = [u for u in urls if not u.startswith(("http://", "https://"))]
    if bad:
        raise SeedsError(f"{where}: not an http(s) URL: {bad[0]!r}")
    if not urls:
        raise SeedsError(f"{where} holds no URL")
    return urls


class FocusedSpider(scrapy.Spider):
    name = "focused"

    def __init__(self, seeds: str = "", model: str | None = None, threshold: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.seed_arg = seeds
        self.model_arg = model

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        settings = crawler.settings
        model_path = spider.model_arg or settings.get("FOCUS_MODEL")
        if not model_path:
            raise NotConfigured("no topic model: use -a model=models/NAME.joblib (see `scrapy train`)")
        spider.model = TopicModel.load(model_path)
        spider.seeds = read_seeds(spider.seed_arg)
        threshold = kwargs.get("threshold")
        spider.threshold = float(threshold) if threshold is not None else settings.getfloat(
            "FOCUS_RELEVANCE_THRESHOLD", 0.5)
        return spider

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse, errback=self.fetch_failed,
                                 meta={"depth": 0, "focus_link": {"anchor": "", "hops": 0}})

    # --- responses ----------------------------------------------------------------------------
    def parse(self, response):
        request = response.request
        page = self._page_for(response)
        links = []
        content_type = page.content_type.split(";")[0].strip().lower()
        if response.status == 200 and (content_type in HTML_TYPES or not content_type):
            declared = _declared_charset(page.content_type)
            parsed = parse_html(response.body, response.url, declared, page.content_type)
            page.title, page.text, page.encoding = parsed.title, parsed.text, parsed.encoding
            page.score = self.model.score(parsed.title, parsed.text)
            page.relevant = page.score >= self.threshold and not parsed.noindex
            page.content_hash = content_hash(parsed.text)
            if parsed.noindex:
                page.extra["noindex"] = True
            if not parsed.nofollow:
                links = [link for link in parsed.links if not link.nofollow]
            page.outlinks = len(links)
            self.crawler.stats.inc_value("focus/pages/scored")
            if page.relevant:
                self.crawler.stats.inc_value("focus/pages/relevant")
        else:
            self.crawler.stats.inc_value(f"focus/pages/unscored/{response.status}")
        self.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=response,
                                            page=page, links=links)
        yield page
        hops = 0 if page.relevant else request.meta.get("focus_link", {}).get("hops", 0) + 1
        depth = request.meta.get("depth", 0) + 1
        # The topic model reads each link's words too (anchor, context, URL): a link that talks
        # like the topic is a good bet before the learner knows anything.
        link_scores = self.model.score_many(
            [(link.anchor, f"{link.context} {' '.join(url_tokens(link.url))}") for link in links]) if links else []
        for link, link_score in zip(links, link_scores):
            yield scrapy.Request(
                link.url, callback=self.parse, errback=self.fetch_failed,
                meta={"depth": depth, "focus_link": {
                    "anchor": link.anchor, "context": link.context, "parent_url": response.url,
                    "parent_score": page.score, "hops": hops, "link_score": round(float(link_score), 4),
                }},
            )

    def fetch_failed(self, failure):
        """A request that produced no response (network error, refused by a middleware)."""
        request = failure.request
        if request.meta.get("focus_robots_for"):
            return None
        page = PageItem(url=_first_url(request), final_url=request.url, status=0,
                        fetched_at=_now(), depth=request.meta.get("depth", 0),
                        referrer=(request.meta.get("focus_link") or {}).get("parent_url"),
                        extra={"error": failure.getErrorMessage()[:300]})
        self.crawler.stats.inc_value("focus/pages/failed")
        self.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=None,
                                            page=page, links=[])
        return page

    def _page_for(self, response) -> PageItem:
        request = response.request
        return PageItem(
            url=_first_url(request), final_url=response.url, status=response.status,
            content_type=response.headers.get(b"Content-Type", b"").decode("latin-1"),
            fetched_at=_now(), depth=request.meta.get("depth", 0),
            referrer=(request.meta.get("focus_link") or {}).get("parent_url"),
            elapsed=round(float(request.meta.get("download_latency") or 0.0), 4),
            length=len(response.body),
        )


def _first_url(request) -> str:
    chain = request.meta.get("redirect_urls")
    return chain[0] if chain else request.url


def _declared_charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


__all__ = ["FocusedSpider", "ModelError", "SeedsError", "read_seeds"]
