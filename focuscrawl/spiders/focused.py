"""``scrapy crawl focused -a seeds=SEEDS -a model=MODEL``: score every page, follow its links.

The spider is thin on purpose: parsing, scoring and learning live in the cores. For each
response it builds a PageItem (every fetched page, relevant or not, goes to the store), asks the
topic model for a score, tells the scheduler's learner (signal ``page_scored``), and hands every
link to the frontier with what the learner needs to value it (anchor, context, parent score,
hops since the last relevant page). The frontier decides what is fetched, when, and whether.
"""

from __future__ import annotations

import hashlib
import logging
import os
from datetime import datetime, timezone

import scrapy
from scrapy.exceptions import NotConfigured
from scrapy.spidermiddlewares.httperror import HttpError

from focuscrawl import signals as focus_signals
from focuscrawl.config import DOCUMENT_EXTENSIONS, FocusConfig
from focuscrawl.items import PageItem
from focuscrawl.meta import (
    DEPTH,
    EXPLAIN,
    FEED,
    LINK,
    PRIORITY,
    RENDER,
    RENDER_PLAIN,
    REVISIT,
    REVISIT_HASH,
    REVISIT_HEADERS,
    ROBOTS_FOR,
    SITEMAP,
    LinkMeta,
    request_meta,
)
from focuscrawl.network_guard import NetworkRefused
from focuscrawl.parsing import DocumentError, Link, ParsedPage, document_kind, parse_html, read_document
from focuscrawl.parsing.feeds import FeedError, read_feed
from focuscrawl.parsing.sitemap import SitemapError, read_sitemap
from focuscrawl.rendering.availability import RenderingError, effective_mode
from focuscrawl.rendering.decide import shell_reason
from focuscrawl.rendering.health import RenderHealth
from focuscrawl.rendering.requests import is_render, page_url
from focuscrawl.urls import canonicalize, extension, host_key
from focuscrawl.relevance import ModelError, TopicModel
from focuscrawl.relevance.judge import PageJudge, page_links

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


#: The spider's arguments, as ``scrapy crawl -h`` shows them.
ARGUMENTS = (
    ("seeds=FILE|URL[,URL...]", "where the crawl starts: a file of URLs (one a line, '#' comments) or "
                                "URLs separated by commas (required)"),
    ("model=PATH", "the topic model (joblib) made by `scrapy train`; default: the FOCUS_MODEL setting"),
    ("threshold=S", "pages scoring at least S are relevant items; default: FOCUS_RELEVANCE_THRESHOLD (0.5)"),
)
SETTINGS_HELP = ("Settings (-s NAME=VALUE): FOCUS_BUDGET (requests; 0: no limit), FOCUS_STORE, FOCUS_CRAWL_LOG, "
                 "FOCUS_STRATEGY, ...; `scrapy settings --get NAME` prints one's value, README.md lists "
                 "them all; Scrapy's DOWNLOAD_DELAY, ROBOTSTXT_OBEY, USER_AGENT, JOBDIR apply too.")


def arguments_help() -> str:
    """The spider's arguments and where its settings are, for ``scrapy crawl -h``."""
    import textwrap

    lines = ["The focused spider (scrapy crawl focused -a NAME=VALUE ...):"]
    for name, text in ARGUMENTS:
        lines += [f"  {name}", *textwrap.wrap(text, 76, initial_indent=" " * 6, subsequent_indent=" " * 6)]
    return "\n".join([*lines, "", *textwrap.wrap(SETTINGS_HELP, 80)])


class FocusedSpider(scrapy.Spider):
    name = "focused"
    #: scores its pages and writes its links' records itself (the add-on's FocusPages stays off)
    scores_pages = True

    def __init__(self, seeds: str = "", model: str | None = None, threshold: str | None = None, **kwargs):
        super().__init__(**kwargs)
        self.seed_arg = seeds
        self.model_arg = model

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        config = FocusConfig.from_settings(crawler.settings)
        model_path = spider.model_arg or config.model
        if not model_path:
            raise NotConfigured("no topic model: use -a model=models/NAME.joblib (see `scrapy train`)")
        model = TopicModel.load(model_path)
        spider.seeds = read_seeds(spider.seed_arg)
        threshold = kwargs.get("threshold")
        spider.threshold = float(threshold) if threshold is not None else config.relevance_threshold
        spider.configured_reward_threshold = config.reward_threshold
        spider.configured_document_link_score = config.document_link_score
        spider.use_model(model)
        spider.link_evidence = config.link_evidence
        spider.judge = PageJudge(spider.model, spider.threshold, spider.reward_threshold, spider.link_evidence)
        spider.sitemap_max_urls = config.sitemap_max_urls
        spider.follow_feeds = config.follow_feeds
        spider.feed_max_entries = config.feed_max_entries
        spider.recrawl = config.recrawl
        spider.documents = config.documents
        try:
            spider.render_mode = effective_mode(config, crawler.settings, warn=True)
        except RenderingError as exc:
            raise NotConfigured(str(exc)) from None
        spider.to_export = ()
        crawler.signals.connect(spider._on_crawl_opened, signal=focus_signals.crawl_opened)
        logger.info("pages scoring %.2f or more are relevant items; the link learner counts %.2f or more "
                    "as found", spider.threshold, spider.reward_threshold)
        return spider

    def use_model(self, model: TopicModel) -> None:
        """Score pages and links with ``model`` from now on (at start, and when a part grows the
        model as the crawl goes: ``relevance.growing_ext``); thresholds not set in the settings
        follow the model's even odds."""
        self.model = model
        reward, document = self.configured_reward_threshold, self.configured_document_link_score
        self.reward_threshold = model.even_odds_score if reward is None else reward
        self.document_link_score = model.even_odds_score if document is None else document
        if getattr(self, "judge", None) is not None:  # pages are judged by it too, not only links
            self.judge.use_model(model, self.reward_threshold)

    def _on_crawl_opened(self, to_export=(), **kwargs):
        self.to_export = to_export

    async def start(self):
        # a resumed crawl's relevant pages that its killed run stored but no feed has yet
        pending, self.to_export = self.to_export, ()
        for item in pending:
            yield item
        for url in self.seeds:
            yield scrapy.Request(url, callback=self.parse, errback=self.fetch_failed, meta=request_meta(LinkMeta(), 0))

    # --- sitemaps (listed in robots.txt; the scheduler asks for them) -------------------------
    def sitemap_request(self, url: str) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse_sitemap, errback=self.fetch_failed,
                              meta={SITEMAP: True, LINK: LinkMeta(context="sitemap").to_meta()})

    def parse_sitemap(self, response):
        """URLs of a sitemap (or the sitemaps of a sitemap index) go to the frontier, valued by
        what their words say until the learner knows better; their lastmod and changefreq tell
        the revisit plan of the pages it keeps fresh (FOCUS_RECRAWL)."""
        yield from self._sitemap_requests(response)
        self._listing_read(response)

    def _sitemap_requests(self, response):
        sitemap = self._read_listing(response, "sitemap", read_sitemap, SitemapError, self.sitemap_max_urls)
        if sitemap is None:
            return
        locations = sitemap.urls
        self.crawler.stats.inc_value("focus/sitemaps/urls", len(locations))
        if sitemap.kind == "sitemapindex":
            for loc in locations:
                yield self.sitemap_request(loc)
            return
        if self.recrawl:
            for entry in sitemap.entries:
                if entry.lastmod is not None or entry.changefreq:
                    self._hint(entry.url, entry.lastmod, entry.changefreq)
        scores = self.model.score_links([("", "", loc) for loc in locations])
        for loc, link_score in zip(locations, scores):
            link = LinkMeta(parent_url=response.url, hops=1, link_score=round(float(link_score), 4))
            yield scrapy.Request(loc, callback=self.parse, errback=self.fetch_failed, meta=request_meta(link, 1))

    # --- feeds (announced in pages' heads) ----------------------------------------------------
    def feed_request(self, url: str, parent_url: str) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse_feed, errback=self.fetch_failed,
                              meta={FEED: True, LINK: LinkMeta(context="feed", parent_url=parent_url).to_meta()})

    def parse_feed(self, response):
        """A feed's entries: URLs never seen go to the frontier, valued by their title and summary;
        an entry updated since its page's last visit makes that page due (FOCUS_RECRAWL)."""
        yield from self._feed_requests(response)
        self._listing_read(response)

    def _feed_requests(self, response):
        feed = self._read_listing(response, "feed", read_feed, FeedError, self.feed_max_entries)
        if feed is None:
            return
        self.crawler.stats.inc_value("focus/feeds/read")
        self.crawler.stats.inc_value("focus/feeds/entries", len(feed.entries))
        if self.recrawl:
            for entry in feed.entries:
                if entry.updated is not None:
                    self._hint(entry.url, entry.updated, None)
        scores = self.model.score_links([(entry.title, entry.summary, entry.url) for entry in feed.entries])
        depth = response.meta.get(DEPTH, 0) + 1
        for entry, link_score in zip(feed.entries, scores):
            link = LinkMeta(anchor=entry.title, context=entry.summary, parent_url=response.url, hops=1,
                            link_score=round(float(link_score), 4))
            yield scrapy.Request(entry.url, callback=self.parse, errback=self.fetch_failed,
                                 meta=request_meta(link, depth))

    def _listing_read(self, response) -> None:
        """Every request of the listing has gone to the scheduler (the generator ran to its end):
        the listing yields no item, so this is when it is done for a resume or a shared crawl."""
        self.crawler.signals.send_catch_log(focus_signals.listing_read, request=response.request,
                                            response=response)

    def _read_listing(self, response, kind: str, read, error: type[Exception], max_urls: int):
        """A sitemap's or feed's body read by ``read`` (``read_sitemap``, ``read_feed``); None when
        a revisit found the bytes it had, or the body is none (``error``: logged, skipped)."""
        body_hash = _body_hash(response)
        if self._unchanged_revisit(response, kind, body_hash):
            return None
        try:
            listing = read(response.body, response.url, max_urls, max_bytes=self.settings.getint("DOWNLOAD_MAXSIZE"))
        except error as exc:
            logger.info("%s %s skipped: %s", kind, response.url, exc)
            return None
        self._visited(response, kind, body_hash)
        return listing

    # --- revisits (FOCUS_RECRAWL: the scheduler's revisit plan asks for them) ---------------------
    def revisit_request(self, url: str, kept, meta: dict) -> scrapy.Request:
        """A page, feed or sitemap fetched again, with the validators of the version the crawl has."""
        callback = {"feed": self.parse_feed, "sitemap": self.parse_sitemap}.get(kept.kind, self.parse)
        return scrapy.Request(url, headers=meta.get(REVISIT_HEADERS) or None, callback=callback,
                              errback=self.fetch_failed, meta=meta, dont_filter=True)

    def _unchanged_revisit(self, response, kind: str, text_hash: str | None = None) -> bool:
        """A revisit answered 304, or with the text the crawl has (``text_hash``): recorded as no
        change, and nothing more is done with it. Any other response is handled as a fetch."""
        meta = response.request.meta
        if meta.get(REVISIT) is None:
            return False
        if response.status == 304:
            self._visited(response, kind, "")
            return True
        if text_hash is not None and text_hash == meta.get(REVISIT_HASH):
            self._visited(response, kind, text_hash)
            return True
        return False

    def _visited(self, response, kind: str, text_hash: str, weight: float | None = None) -> None:
        if self.recrawl:
            self.crawler.signals.send_catch_log(
                focus_signals.page_visited, request=response.request, response=response,
                url=canonicalize(response.url), kind=kind, text_hash=text_hash, weight=weight,
                etag=_header(response, b"ETag"), last_modified=_header(response, b"Last-Modified", 64))

    def _hint(self, url: str, changed_at: float | None, changefreq: str | None) -> None:
        self.crawler.signals.send_catch_log(focus_signals.change_hinted, url=canonicalize(url),
                                            changed_at=changed_at, changefreq=changefreq)

    # --- responses ----------------------------------------------------------------------------
    def parse(self, response):
        request = response.request
        revisit = request.meta.get(REVISIT)
        if revisit is not None and self._unchanged_revisit(response, "page"):
            return
        came_by = LinkMeta.from_meta(request.meta)
        page = self._page_for(response, came_by)
        links, hit = [], False  # hit: the page counts as found for the learner (FOCUS_REWARD_THRESHOLD)
        found_probability = None
        parsed = self._read_body(response, page) if response.status == 200 else None
        if parsed is not None:
            page.title, page.text, page.encoding = parsed.title, parsed.text, parsed.encoding
            if self.render_mode != "never" and "document" not in page.extra:
                render = self._judge_rendering(request, parsed)
                if render is not None:
                    yield render
                    return
            header_noindex, header_nofollow = x_robots_tag(response, self.settings.get("ROBOTSTXT_USER_AGENT"))
            noindex, nofollow = parsed.noindex or header_noindex, parsed.nofollow or header_nofollow
            # a page is judged by its words and by the link that led to it (FOCUS_LINK_EVIDENCE): the
            # item's relevance, the learner's hit and the parent score of its links all follow
            hit, found_probability = self.judge.judge(page, parsed.title, parsed.text, came_by.link_score, noindex,
                                                      page_links(parsed))
            if revisit is not None and self._unchanged_revisit(response, "page", page.content_hash):
                return
            if noindex:
                page.extra["noindex"] = True
                self.crawler.stats.inc_value("focus/pages/noindex")
            if nofollow:
                self.crawler.stats.inc_value("focus/pages/nofollow")
            else:
                links = [link for link in parsed.links if not link.nofollow]
            page.outlinks = len(links)
            page.links = links  # for the store's link table (retraining); never exported
            if self.follow_feeds and not nofollow:
                for feed_url in parsed.feeds:
                    yield self.feed_request(feed_url, response.url)
            self.crawler.stats.inc_value("focus/pages/scored")
            if page.relevant:
                self.crawler.stats.inc_value("focus/pages/relevant")
            if hit:
                self.crawler.stats.inc_value("focus/pages/hits")
        else:
            self.crawler.stats.inc_value(f"focus/pages/unscored/{response.status}")
        if revisit is not None:
            page.extra["revisit"] = revisit
            self.crawler.stats.inc_value("focus/revisits/items")
        if request.meta.get(RENDER):
            page.extra["render"] = request.meta[RENDER]
        self.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=response,
                                            page=page, links=links, hit=hit)
        if response.status == 200 and page.content_hash:
            self._visited(response, "page", page.content_hash, found_probability)
        hops = 0 if hit else came_by.hops + 1
        depth = request.meta.get(DEPTH, 0) + 1
        # The link model (or the topic model) reads each link's words (anchor, context, URL): a
        # good bet before the learner knows anything about the link's host and path.
        link_scores = self.model.score_links([(link.anchor, link.context, link.url) for link in links])
        for link, link_score in zip(links, link_scores):
            if extension(link.url) in DOCUMENT_EXTENSIONS and not self._document_promising(link_score,
                                                                                             found_probability):
                continue  # a document, and nothing says it is worth its request
            outgoing = LinkMeta(anchor=link.anchor, context=link.context, parent_url=response.url,
                                parent_score=found_probability, hops=hops, link_score=round(float(link_score), 4))
            yield scrapy.Request(link.url, callback=self.parse, errback=self.fetch_failed,
                                 meta=request_meta(outgoing, depth))
        # The page after its links: once its item is through the pipelines the page is done for a
        # resumed crawl (JOBDIR), and by then the journal holds every link it led to.
        yield page

    # --- bodies: HTML, and the documents read as pages ---------------------------------------------
    def _read_body(self, response, page: PageItem) -> ParsedPage | None:
        """The page's title, text and links, or None when its body is none that focuscrawl reads
        (or a document that cannot be read: a logged skip, the page stored as unscored)."""
        content_type = page.content_type.split(";")[0].strip().lower()
        if content_type in HTML_TYPES or (not content_type and not self._document_url(response.url)):
            # parse_html reads the header's charset from content_type (and distrusts it when it lies)
            return parse_html(response.body, response.url, content_type=page.content_type)
        if not self.documents or document_kind(content_type, response.url, response.body[:4096]) is None:
            return None
        try:
            document = read_document(response.body, response.url, content_type,
                                     max_bytes=self.settings.getint("DOWNLOAD_MAXSIZE") or len(response.body))
        except DocumentError as exc:
            logger.info("document %s skipped: %s", response.url, exc)
            self.crawler.stats.inc_value(f"focus/documents/unreadable/{str(exc).split(':')[0].split()[0]}")
            return None
        self.crawler.stats.inc_value(f"focus/documents/{document.kind}")
        pages = f", {document.pages} page{'s' if document.pages != 1 else ''}" if document.pages else ""
        page.extra["document"] = f"{document.kind}{pages}{', cut short' if document.truncated else ''}"
        return ParsedPage(title=document.title, text=" ".join(document.text.split()),
                          links=[Link(url=url) for url in document.links], encoding="")

    def _document_url(self, url: str) -> bool:
        return self.documents and extension(url) in DOCUMENT_EXTENSIONS

    def _document_promising(self, link_score: float, parent_probability: float | None) -> bool:
        """A link to a document is worth its request (documents are big, and many are off topic)
        when its own words say so, or it was found on a page that counts as found."""
        if not self.documents:
            return False
        if link_score >= self.document_link_score or (parent_probability or 0.0) >= 0.5:
            return True
        self.crawler.stats.inc_value("focus/documents/links_skipped")
        return False

    # --- rendering (FOCUS_RENDER) -------------------------------------------------------------
    def _judge_rendering(self, request, parsed) -> scrapy.Request | None:
        """The render to ask for when a plain page's HTML is an application shell (auto mode),
        else None; what the page showed goes to its host's record either way."""
        words, links = _word_count(parsed.text), len(parsed.links)
        host = host_key(page_url(request))
        if is_render(request.meta):
            plain = request.meta.get(RENDER_PLAIN)
            if plain:
                self.crawler.signals.send_catch_log(focus_signals.render_judged, request=request, host=host,
                                                    shell=None, plain=tuple(plain), rendered=(words, links))
            return None
        if request.meta.get(RENDER):
            return None  # routed to the browser, read plainly instead (its host's renders failed: rendering.health)
        reason = shell_reason(words, links, parsed.app) if self.render_mode == "auto" else None
        self.crawler.signals.send_catch_log(focus_signals.render_judged, request=request, host=host,
                                            shell=reason is not None)
        if reason is None:
            return None
        self.crawler.stats.inc_value("focus/render/shells")
        if not RenderHealth.of(self.crawler).renders(host):
            self.crawler.stats.inc_value("focus/render/read_plainly")
            return None  # the host's renders kept failing: its plain page is all there is
        keep = {key: request.meta[key] for key in (DEPTH, LINK, REVISIT, REVISIT_HASH) if key in request.meta}
        return scrapy.Request(_first_url(request), callback=self.parse, errback=self.fetch_failed, dont_filter=True,
                              meta={**keep, RENDER: reason, RENDER_PLAIN: [words, links]})

    def fetch_failed(self, failure):
        """A request that produced no response (network error, refused by a middleware)."""
        request = failure.request
        if request.meta.get(ROBOTS_FOR) or failure.check(NetworkRefused):
            return None  # a refused address is no page: the request log and stats say why
        if request.meta.get(REVISIT) is not None:
            # a revisit answered 4xx/5xx (only a 304 reaches the callback besides 2xx): the plan
            # forgets a page gone; any other failure leaves the page and its stored version as they are
            if failure.check(HttpError):
                response = failure.value.response
                self._visited(response, _kind(request), "")
            self.crawler.stats.inc_value("focus/revisits/failed")
            return None
        page = PageItem(url=_first_url(request), final_url=page_url(request), status=0,
                        fetched_at=_now(), depth=request.meta.get(DEPTH, 0),
                        referrer=LinkMeta.from_meta(request.meta).parent_url,
                        extra={"error": failure.getErrorMessage()[:300], **_explanation(request)})
        if request.meta.get(RENDER):
            page.extra["render"] = request.meta[RENDER]  # a render that failed: the page's failure, not the crawl's
            self.crawler.stats.inc_value("focus/render/pages_failed")
        self.crawler.stats.inc_value("focus/pages/failed")
        self.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=None,
                                            page=page, links=[], hit=False)
        return page

    @staticmethod
    def _page_for(response, came_by: LinkMeta) -> PageItem:
        request = response.request
        return PageItem(
            url=_first_url(request), final_url=response.url, status=response.status,
            content_type=response.headers.get(b"Content-Type", b"").decode("latin-1"),
            fetched_at=_now(), depth=request.meta.get(DEPTH, 0),
            referrer=came_by.parent_url,
            elapsed=round(float(request.meta.get("download_latency") or 0.0), 4),
            length=len(response.body),
            etag=_header(response, b"ETag"),
            last_modified=_header(response, b"Last-Modified"),
            extra=_explanation(request),
        )


def x_robots_tag(response, agent: str | None) -> tuple[bool, bool]:
    """(noindex, nofollow) from X-Robots-Tag headers: ``noindex``, ``nofollow``, ``none``, either
    for every crawler or prefixed with a user-agent token (``focuscrawl: noindex``)."""
    noindex = nofollow = False
    agent = (agent or "").lower()
    for raw in response.headers.getlist(b"X-Robots-Tag"):
        value = raw.decode("latin-1").lower()
        head, sep, rest = value.partition(":")
        if sep and "," not in head and head.strip() not in ("noindex", "nofollow", "none", "all"):
            if head.strip() != agent:
                continue  # a rule for another crawler
            value = rest
        words = {w.strip() for w in value.split(",")}
        noindex |= bool(words & {"noindex", "none"})
        nofollow |= bool(words & {"nofollow", "none"})
    return noindex, nofollow


def _explanation(request) -> dict:
    """Why the frontier chose this request: its priority at dequeue and the top features."""
    meta = request.meta
    if meta.get(PRIORITY) is None:
        return {}
    return {"priority": meta[PRIORITY], "why": meta.get(EXPLAIN) or []}


def _kind(request) -> str:
    """What a request's answer is parsed as: "feed", "sitemap" or "page"."""
    meta = request.meta
    return "feed" if meta.get(FEED) else "sitemap" if meta.get(SITEMAP) else "page"


def _body_hash(response) -> str:
    """The hash of a feed's or sitemap's bytes: the same bytes again are no change."""
    return hashlib.sha1(response.body).hexdigest()


def _header(response, name: bytes, limit: int = 256) -> str | None:
    """A response header as text, None when absent; capped at ``limit`` characters, as it goes back
    in a revisit's headers."""
    value = response.headers.get(name)
    return value.decode("latin-1")[:limit] if value else None


def _word_count(text: str) -> int:
    return text.count(" ") + 1 if text else 0


def _first_url(request) -> str:
    chain = request.meta.get("redirect_urls")
    return chain[0] if chain else page_url(request)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


__all__ = ["FocusedSpider", "ModelError", "SeedsError", "read_seeds", "x_robots_tag"]
