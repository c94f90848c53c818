"""``FocusPages``: a project's own spider, crawled in focused order (enabled by ``focuscrawl.Addon``).

focuscrawl's ``focused`` spider scores its pages and writes each link's words into its requests
itself. A project's spider knows nothing of that: for each response it gets, this middleware

- before the callback: scores the page with the topic model (``FOCUS_MODEL``), the evidence of the
  link that led there included, as the focused spider does; tells the learner (signal
  ``page_scored``) and marks the response: ``response.meta["focus_score"]`` and
  ``["focus_relevant"]``, for a callback that wants them;
- on the callback's output: gives each request that has no link record yet the words of its link
  in that response (anchor, context, the page's score, hops since a relevant page, the link
  model's score of its words: ``meta["focus_link"]``), so the frontier values it as the focused
  spider's own links; the callback's items pass untouched;
- after the output: the page's record (a PageItem marked ``record_only``) goes to focuscrawl's
  pipelines, which judge it for duplicates and store it (``scrapy export``, ``scrapy train``) and
  then drop it, before the project's own pipelines and feeds, which see only the spider's items.

Off (silently) for a spider that scores its pages itself (``scores_pages = True``, as focuscrawl's
``focused`` spider); without ``FOCUS_MODEL`` the crawl goes on unscored, with one warning.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from scrapy import Request, signals
from scrapy.exceptions import NotConfigured

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.config import FocusConfig
from focuscrawl.items import PageItem
from focuscrawl.meta import LinkMeta
from focuscrawl.parsing import parse_html
from focuscrawl.relevance import TopicModel
from focuscrawl.relevance.judge import PageJudge, page_links
from focuscrawl.spiders.focused import x_robots_tag
from focuscrawl.urls import canonicalize

logger = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
#: the middleware's own record of a response on its way through the callback
_PAGE = "_focus_page"


class FocusPages:
    def __init__(self, crawler, model: TopicModel, config: FocusConfig) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.model = model
        self.judge = PageJudge.from_config(model, config)
        self._priority_noted = False

    @classmethod
    def from_crawler(cls, crawler):
        if getattr(crawler.spidercls, "scores_pages", False):
            raise NotConfigured  # the spider scores its pages itself
        config = FocusConfig.from_settings(crawler.settings)
        if not config.model:
            logger.warning("no topic model (FOCUS_MODEL): pages are not scored and the frontier learns nothing; "
                           "train one with `focuscrawl train`")
            raise NotConfigured
        middleware = cls(crawler, TopicModel.load(config.model), config)
        middleware.model_path = config.model
        crawler.signals.connect(middleware._opened, signal=signals.spider_opened)
        return middleware

    def _opened(self, spider=None) -> None:
        self.crawler.signals.send_catch_log(focus_signals.topic_model, model=self.model)
        logger.info("%s's pages are scored with %s: %.2f or more is relevant", getattr(spider, "name", "the spider"),
                    self.model_path, self.judge.threshold)

    # --- before the callback: the page scored and marked ------------------------------------------
    def process_spider_input(self, response, spider=None) -> None:
        request = response.request
        if request is None or _focuscrawl_own(request):
            return
        came_by = LinkMeta.from_meta(request.meta)
        page = PageItem(url=_first_url(request), final_url=response.url, status=response.status,
                        content_type=response.headers.get(b"Content-Type", b"").decode("latin-1"),
                        fetched_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                        depth=request.meta.get(M.DEPTH, 0), referrer=came_by.parent_url,
                        elapsed=round(float(request.meta.get("download_latency") or 0.0), 4),
                        length=len(response.body), record_only=True)
        content_type = page.content_type.split(";")[0].strip().lower()
        parsed = None
        if response.status == 200 and (content_type in HTML_TYPES or not content_type):
            parsed = parse_html(response.body, response.url, content_type=page.content_type)
        hit, probability, links = False, None, {}
        if parsed is not None:
            page.title, page.text, page.encoding = parsed.title, parsed.text, parsed.encoding
            header_noindex, header_nofollow = x_robots_tag(response, self.crawler.settings.get("ROBOTSTXT_USER_AGENT"))
            noindex = parsed.noindex or header_noindex
            hit, probability = self.judge.judge(page, parsed.title, parsed.text, came_by.link_score, noindex,
                                                page_links(parsed))
            if noindex:
                page.extra["noindex"] = True
            # a nofollow page's links are not the crawl's evidence (the spider still follows what it yields)
            nofollow = parsed.nofollow or header_nofollow
            page.links = [] if nofollow else [link for link in parsed.links if not link.nofollow]
            page.outlinks = len(page.links)
            links = {canonicalize(link.url): link for link in page.links}
            self.stats.inc_value("focus/pages/scored")
            if page.relevant:
                self.stats.inc_value("focus/pages/relevant")
            if hit:
                self.stats.inc_value("focus/pages/hits")
        else:
            self.stats.inc_value(f"focus/pages/unscored/{response.status}")
        request.meta[M.SCORE], request.meta[M.RELEVANT] = page.score, page.relevant
        request.meta[_PAGE] = _Page(page, links, probability, 0 if hit else came_by.hops + 1)
        self.crawler.signals.send_catch_log(focus_signals.page_scored, request=request, response=response,
                                            page=page, links=page.links, hit=hit)

    # --- the callback's output: requests given their links' words, items untouched -----------------
    def process_spider_output(self, response, result, spider=None):
        state = self._state(response)
        for output in result:
            yield self._with_link(output, response, state)
        if state is not None:
            yield state.page

    async def process_spider_output_async(self, response, result, spider=None):
        state = self._state(response)
        async for output in result:
            yield self._with_link(output, response, state)
        if state is not None:
            yield state.page

    def _state(self, response):
        request = response.request
        return request.meta.pop(_PAGE, None) if request is not None else None

    def _with_link(self, output, response, state):
        if not isinstance(output, Request) or state is None:
            return output
        if output.priority and not self._priority_noted:
            self._priority_noted = True
            logger.warning("Request.priority is ignored: the focused scheduler orders requests by expected reward "
                           "(first seen on %s)", output.url)
        if output.meta.get(M.LINK) is not None:
            return output  # the spider wrote its own link record
        link = state.links.get(canonicalize(output.url))
        anchor, context = (link.anchor, link.context) if link is not None else ("", "")
        link_score = round(float(self.model.score_links([(anchor, context, output.url)])[0]), 4)
        output.meta[M.LINK] = LinkMeta(anchor=anchor, context=context, parent_url=response.url,
                                       parent_score=state.probability, hops=state.hops,
                                       link_score=link_score).to_meta()
        if link is None:
            self.stats.inc_value("focus/links/not_on_page")
        return output


class _Page:
    __slots__ = ("page", "links", "probability", "hops")

    def __init__(self, page: PageItem, links: dict, probability: float | None, hops: int) -> None:
        self.page, self.links, self.probability, self.hops = page, links, probability, hops


def _focuscrawl_own(request) -> bool:
    """A request the scheduler made for itself (robots.txt, a HEAD check): no page of the spider."""
    meta = request.meta
    return bool(meta.get(M.ROBOTS_FOR) or meta.get(M.HEAD_FOR))


def _first_url(request) -> str:
    chain = request.meta.get("redirect_urls")
    return chain[0] if chain else request.url
