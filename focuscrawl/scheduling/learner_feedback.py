"""What the crawl's pages teach the scheduler's link learner: each scored page's reward (a hit
when it counts as found, else its rank among the crawl's pages: ``LinkRewardLearner.page_reward``),
a duplicate page as waste (traps and mirrors show up as duplicates), and whether the topic model
brings a link model of its own. The learner is read from the scheduler at each signal: a
checkpoint's may have replaced the one the crawl started with."""

from __future__ import annotations

from scrapy import signals

from focuscrawl import meta as M
from focuscrawl import signals as focus_signals
from focuscrawl.meta import link_parent
from focuscrawl.urls import canonicalize


class LearnerFeedback:
    def __init__(self, scheduler):
        self.scheduler = scheduler

    def open(self, spider) -> None:
        """Listen to the crawl; the topic model that scores the links' words is the focused
        spider's, a project's own spider's comes with the signal topic_model (the add-on's FocusPages)."""
        sig = self.scheduler.crawler.signals
        sig.connect(self.page_scored, signal=focus_signals.page_scored)
        sig.connect(self.item_done, signal=signals.item_scraped)
        sig.connect(self.item_done, signal=signals.item_dropped)
        self.use_topic_model(getattr(spider, "model", None))
        sig.connect(self.use_topic_model, signal=focus_signals.topic_model)

    def use_topic_model(self, model, **kwargs) -> None:
        if model is not None:
            # a link model learned from a training web's links takes the links' scores over; a words
            # model's reading of links leaves the crawl learning its links' words (``learned_links``)
            learned = getattr(model, "learned_links", getattr(model, "link_pipeline", None) is not None)
            self.scheduler.learner.use_link_model(bool(learned), getattr(model, "learner_priors", None))

    def page_scored(self, request, response, page, links=None, hit=None, spider=None):
        """``hit``: the page counts as found for the learner (FOCUS_REWARD_THRESHOLD); without it,
        the item's relevance. A revisit teaches the learner nothing about the link that led there."""
        if request.meta.get(M.REVISIT) is not None:
            return
        learner = self.scheduler.learner
        wasted = page.score is None
        relevant = not wasted and bool(page.relevant if hit is None else hit)
        learner.observe(canonicalize(page.final_url or request.url), link_parent(request.meta),
                        request.meta.get(M.FEATURES), learner.page_reward(page.score, relevant), relevant, wasted)
        self.scheduler.rescorer.learner_updated()

    def item_done(self, item, response=None, spider=None, exception=None):
        if getattr(item, "duplicate_of", None):
            self.scheduler.learner.mark_wasted(canonicalize(item.final_url or item.url))
            self.scheduler.stats.inc_value("focus/learner/duplicates_punished")


__all__ = ["LearnerFeedback"]
