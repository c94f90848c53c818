"""The focused spider's part in learning: which fetched pages the link learner counts as found."""

import inspect

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.misc import is_generator_with_return_value
from scrapy.utils.test import get_crawler

from focuscrawl import signals as focus_signals
from focuscrawl.meta import LINK
from focuscrawl.relevance import TopicModel
from focuscrawl.scheduler import FocusScheduler
from focuscrawl.scheduling.policies import HeadCheck
from focuscrawl.scheduling.robots import RobotsFetcher
from focuscrawl.spiders.focused import FocusedSpider

PAGE = b"""<html><head><title>Astronomy lecture notes</title></head><body>
<p>Telescopes, comets and the orbits of planets: this week's lecture notes.</p>
<a href="/next.html">next lecture</a> <a href="/other.html">other</a></body></html>"""


_NO_LINK = object()


def parse(model_path, link_score=None, link=_NO_LINK, **settings):
    """Parse one page (reached by a link the link model scored ``link_score``, or with ``link`` as
    its link meta, ``meta[LINK]``); returns (the spider, the page_scored signal's arguments, the
    page, the link requests)."""
    crawler = get_crawler(FocusedSpider, {"FOCUS_MODEL": str(model_path), **settings})
    crawler._apply_settings()
    spider = FocusedSpider.from_crawler(crawler, seeds="http://a.test/")
    sent = []
    crawler.signals.connect(lambda **kwargs: sent.append(kwargs), signal=focus_signals.page_scored, weak=False)
    if link is _NO_LINK:
        link = {"anchor": "notes", "hops": 2}
        if link_score is not None:
            link["link_score"] = link_score
    request = Request("http://a.test/notes.html", meta={"depth": 1, LINK: link})
    response = HtmlResponse(request.url, body=PAGE, headers={"Content-Type": "text/html"}, request=request)
    *links, page = list(spider.parse(response))  # the page comes after its links
    return spider, sent[0], page, links


def test_the_learner_counts_a_page_as_found_from_the_reward_threshold(demo_model):
    spider, signal, page, links = parse(demo_model, FOCUS_REWARD_THRESHOLD=0.0, FOCUS_RELEVANCE_THRESHOLD=1.0)
    assert signal["hit"] is True and not page.relevant  # the two thresholds are independent
    assert spider.crawler.stats.get_value("focus/pages/hits") == 1
    assert not spider.crawler.stats.get_value("focus/pages/relevant")
    assert links and all(r.meta[LINK]["hops"] == 0 for r in links)

    spider, signal, page, links = parse(demo_model, FOCUS_REWARD_THRESHOLD=1.0, FOCUS_RELEVANCE_THRESHOLD=0.0)
    assert signal["hit"] is False and page.relevant
    assert all(r.meta[LINK]["hops"] == 3 for r in links)  # hops count from the last hit


def test_a_request_not_made_from_a_link_is_parsed_like_a_seed(demo_model):
    """A request another component made (its link meta missing or None) has no link to judge the
    page by: the page is scored alone and its links count hops from it."""
    for link in (None, {}):
        _, signal, page, links = parse(demo_model, link=link, FOCUS_REWARD_THRESHOLD=1.0)
        assert page.link_score is None and page.referrer is None and page.score == page.page_score
        assert signal["hit"] is False and links and all(r.meta[LINK]["hops"] == 1 for r in links)


def test_by_default_the_reward_threshold_is_the_models_even_odds_score(demo_model):
    spider, signal, page, _ = parse(demo_model)
    model = TopicModel.load(demo_model)
    assert spider.reward_threshold == pytest.approx(model.even_odds_score)
    assert spider.reward_threshold == pytest.approx(model.metadata["n_negative"]
                                                    / (model.metadata["n_positive"] + model.metadata["n_negative"]))
    assert signal["hit"] == (page.score >= spider.reward_threshold)


def test_the_link_that_led_to_a_page_is_evidence_for_the_item_and_the_learner(demo_model):
    """A page's words and the link model's reading of the link that led there are combined (their
    log-odds added): the item's score and relevance, the learner's hit, and the parent score its
    links carry all move with the link; the page's own score is kept beside it."""
    model = TopicModel.load(demo_model)
    assert model.link_pipeline is not None
    _, plain, page, _ = parse(demo_model)
    assert page.link_score is None and page.score == page.page_score  # a seed: the page alone
    # thresholds just above the page's own score: only a link that vouches for it lifts it over
    threshold = min(0.999, page.page_score + (1 - page.page_score) / 2)
    strict = {"FOCUS_REWARD_THRESHOLD": threshold, "FOCUS_RELEVANCE_THRESHOLD": threshold}
    _, good, good_page, good_links = parse(demo_model, link_score=0.99, **strict)
    _, bad, bad_page, bad_links = parse(demo_model, link_score=0.01, **strict)
    assert good["hit"] is True and bad["hit"] is False
    assert good_page.relevant and not bad_page.relevant
    assert good_page.page_score == bad_page.page_score == page.page_score
    assert (good_page.link_score, bad_page.link_score) == (0.99, 0.01)
    evidence = model.with_link_evidence(page.page_score, 0.99)
    assert good_page.score == pytest.approx(evidence) and bad_page.score < page.page_score < good_page.score
    assert good_links[0].meta[LINK]["parent_score"] == pytest.approx(model.probability(evidence), abs=1e-4)
    assert bad_links[0].meta[LINK]["parent_score"] < good_links[0].meta[LINK]["parent_score"]
    # a seed (no link) and FOCUS_LINK_EVIDENCE=0 go by the page alone
    assert plain["hit"] == (page.page_score >= model.even_odds_score)
    _, off, off_page, off_links = parse(demo_model, link_score=0.99, FOCUS_LINK_EVIDENCE=0, **strict)
    assert off["hit"] is False and not off_page.relevant and off_page.score == off_page.page_score
    assert off_page.link_score == 0.99  # still recorded
    assert off_links[0].meta[LINK]["parent_score"] == pytest.approx(model.probability(page.page_score), abs=1e-4)


@pytest.mark.parametrize("owner", [FocusedSpider, FocusScheduler, RobotsFetcher, HeadCheck])
def test_no_callback_is_a_generator_that_returns_a_value(owner):
    """Scrapy would drop such a value silently. Its own per-response check is off
    (WARN_ON_GENERATOR_RETURN_VALUE, for speed), so the check is made here, once, on every method
    of the classes whose methods are requests' callbacks and errbacks (the spider's; the
    scheduler's parts': robots.txt fetches and HEAD checks), static ones included."""
    methods = [f for f in (getattr(owner, name) for name in vars(owner)) if inspect.isfunction(f)]
    assert methods and not [f.__name__ for f in methods if is_generator_with_return_value(f)]


# --- documents and application shells --------------------------------------------------------------

def spider_for(model_path, **settings):
    crawler = get_crawler(FocusedSpider, {"FOCUS_MODEL": str(model_path), **settings})
    crawler._apply_settings()
    return FocusedSpider.from_crawler(crawler, seeds="http://a.test/")


def test_a_pdf_is_read_scored_and_followed_like_a_page(demo_model):
    from scrapy.http import Response

    from focuscrawl.demo.documents import pdf_document

    spider = spider_for(demo_model)
    body = pdf_document("Comets and their orbits", ["Telescopes follow the comet's orbit past the planets."],
                        [("next lecture", "http://a.test/next.html")])
    request = Request("http://a.test/comets.pdf", meta={"depth": 1})
    response = Response(request.url, body=body, headers={"Content-Type": "application/pdf"}, request=request)
    *links, page = list(spider.parse(response))
    assert page.title == "Comets and their orbits" and "comet" in page.text and page.score is not None
    assert page.extra["document"].startswith("pdf, 1 page") and page.content_type == "application/pdf"
    assert [link.url for link in links] == ["http://a.test/next.html"]
    broken = Response("http://a.test/b.pdf", body=b"%PDF-1.4 broken", headers={"Content-Type": "application/pdf"},
                      request=Request("http://a.test/b.pdf"))
    (unread,) = list(spider.parse(broken))
    assert unread.score is None and spider.crawler.stats.get_value("focus/documents/unreadable/broken") == 1


def test_a_link_to_a_document_is_followed_only_when_promising(demo_model):
    spider = spider_for(demo_model, FOCUS_RENDER="never")
    page = (b"<html><body><p>Shopping, football and recipes for a weekend.</p>"
            b'<a href="/x.pdf">brochure</a> <a href="/astronomy-lecture-notes.pdf">astronomy lecture notes telescopes '
            b"comets planets</a></body></html>")
    request = Request("http://a.test/p.html", meta={"depth": 1})
    response = HtmlResponse(request.url, body=page, headers={"Content-Type": "text/html"}, request=request)
    *links, item = list(spider.parse(response))
    assert item.score < 0.5  # the page is off topic: only its links' words can make a document worth it
    followed = [link.url for link in links]
    assert "http://a.test/x.pdf" not in followed
    assert spider.crawler.stats.get_value("focus/documents/links_skipped") >= 1
    assert not spider_for(demo_model, FOCUS_DOCUMENTS=False)._document_promising(1.0, 1.0)


def test_an_application_shell_is_rendered_instead_of_stored_empty(demo_model):
    spider = spider_for(demo_model, FOCUS_RENDER="auto")
    spider.render_mode = "auto"  # as if a browser were there (the machine's Chromium is not asked here)
    shell = (b'<html><head><title>App</title><script src="/main.js"></script></head><body><div id="root"></div>'
             b"<noscript>You need to enable JavaScript to run this app.</noscript></body></html>")
    request = Request("http://a.test/app", meta={"depth": 1})
    response = HtmlResponse(request.url, body=shell, headers={"Content-Type": "text/html"}, request=request)
    (render,) = list(spider.parse(response))
    assert isinstance(render, Request) and render.url == "http://a.test/app" and render.dont_filter
    assert render.meta["focus_render"].startswith("app shell: empty #root") and render.meta["focus_render_plain"] == [0, 0]


SITEMAP = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>http://a.test/one.html</loc></url><url><loc>http://a.test/two.html</loc></url>
</urlset>"""

FEED = b"""<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>
<item><title>Comets</title><link>http://a.test/comets.html</link></item></channel></rss>"""


@pytest.mark.parametrize("kind, body, wanted", [
    ("sitemap", SITEMAP, 2), ("feed", FEED, 1), ("sitemap", b"not a sitemap at all", 0)])
def test_a_listing_is_read_once_its_every_request_is_out(demo_model, kind, body, wanted):
    """A sitemap or feed makes no item: the spider says it was read (``listing_read``, what makes
    it done for a resume or a shared crawl's worker) after its last request went out, and for one
    it could not read too (nothing of it is left to do)."""
    crawler = get_crawler(FocusedSpider, {"FOCUS_MODEL": str(demo_model)})
    crawler._apply_settings()
    spider = FocusedSpider.from_crawler(crawler, seeds="http://a.test/")
    events = []
    crawler.signals.connect(lambda request, response, **kw: events.append(("read", response.url)),
                            signal=focus_signals.listing_read, weak=False)
    make = spider.sitemap_request if kind == "sitemap" else lambda url: spider.feed_request(url, "http://a.test/")
    request = make(f"http://a.test/{kind}.xml")
    response = HtmlResponse(request.url, body=body, headers={"Content-Type": "application/xml"}, request=request)
    for out in request.callback(response):
        events.append(("request", out.url))
    assert len([e for e in events if e[0] == "request"]) == wanted
    assert events[-1] == ("read", request.url) and events.count(("read", request.url)) == 1
