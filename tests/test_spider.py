"""The focused spider's part in learning: which fetched pages the link learner counts as found."""

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from focuscrawl import signals as focus_signals
from focuscrawl.relevance import TopicModel
from focuscrawl.spiders.focused import FocusedSpider

PAGE = b"""<html><head><title>Astronomy lecture notes</title></head><body>
<p>Telescopes, comets and the orbits of planets: this week's lecture notes.</p>
<a href="/next.html">next lecture</a> <a href="/other.html">other</a></body></html>"""


def parse(model_path, link_score=None, **settings):
    """Parse one page (reached by a link the link model scored ``link_score``); returns (the spider,
    the page_scored signal's arguments, the page, the link requests)."""
    crawler = get_crawler(FocusedSpider, {"FOCUS_MODEL": str(model_path), **settings})
    crawler._apply_settings()
    spider = FocusedSpider.from_crawler(crawler, seeds="http://a.test/")
    sent = []
    crawler.signals.connect(lambda **kwargs: sent.append(kwargs), signal=focus_signals.page_scored, weak=False)
    link = {"anchor": "notes", "hops": 2}
    if link_score is not None:
        link["link_score"] = link_score
    request = Request("http://a.test/notes.html", meta={"depth": 1, "focus_link": link})
    response = HtmlResponse(request.url, body=PAGE, headers={"Content-Type": "text/html"}, request=request)
    page, *links = list(spider.parse(response))
    return spider, sent[0], page, links


def test_the_learner_counts_a_page_as_found_from_the_reward_threshold(demo_model):
    spider, signal, page, links = parse(demo_model, FOCUS_REWARD_THRESHOLD=0.0, FOCUS_RELEVANCE_THRESHOLD=1.0)
    assert signal["hit"] is True and not page.relevant  # the two thresholds are independent
    assert spider.crawler.stats.get_value("focus/pages/hits") == 1
    assert not spider.crawler.stats.get_value("focus/pages/relevant")
    assert links and all(r.meta["focus_link"]["hops"] == 0 for r in links)

    spider, signal, page, links = parse(demo_model, FOCUS_REWARD_THRESHOLD=1.0, FOCUS_RELEVANCE_THRESHOLD=0.0)
    assert signal["hit"] is False and page.relevant
    assert all(r.meta["focus_link"]["hops"] == 3 for r in links)  # hops count from the last hit


def test_by_default_the_reward_threshold_is_the_models_even_odds_score(demo_model):
    spider, signal, page, _ = parse(demo_model)
    model = TopicModel.load(demo_model)
    assert spider.reward_threshold == pytest.approx(model.even_odds_score)
    assert spider.reward_threshold == pytest.approx(model.metadata["n_negative"]
                                                    / (model.metadata["n_positive"] + model.metadata["n_negative"]))
    assert signal["hit"] == (page.score >= spider.reward_threshold)


def test_the_link_that_led_to_a_page_is_evidence_for_the_learner(demo_model):
    """A page's words and the link model's reading of the link that led there are combined (their
    log-odds added): the learner's hit, and the parent score its links carry, move with the link;
    the item's own score and relevance do not."""
    model = TopicModel.load(demo_model)
    assert model.link_pipeline is not None
    _, plain, page, _ = parse(demo_model)
    # a threshold just above the page's own score: only a link that vouches for it makes a hit
    threshold = min(0.999, page.score + (1 - page.score) / 2)
    _, good, good_page, good_links = parse(demo_model, link_score=0.99, FOCUS_REWARD_THRESHOLD=threshold)
    _, bad, bad_page, bad_links = parse(demo_model, link_score=0.01, FOCUS_REWARD_THRESHOLD=threshold)
    assert good["hit"] is True and bad["hit"] is False
    assert good_page.score == bad_page.score == page.score and good_page.relevant == bad_page.relevant
    evidence = model.with_link_evidence(page.score, 0.99)
    assert good_links[0].meta["focus_link"]["parent_score"] == pytest.approx(model.probability(evidence), abs=1e-4)
    assert bad_links[0].meta["focus_link"]["parent_score"] < good_links[0].meta["focus_link"]["parent_score"]
    # a seed (no link) and FOCUS_LINK_EVIDENCE=0 go by the page alone
    assert plain["hit"] == (page.score >= model.even_odds_score)
    _, off, _, off_links = parse(demo_model, link_score=0.99, FOCUS_REWARD_THRESHOLD=threshold, FOCUS_LINK_EVIDENCE=0)
    assert off["hit"] is False
    assert off_links[0].meta["focus_link"]["parent_score"] == pytest.approx(model.probability(page.score), abs=1e-4)
