"""``PageJudge``: how a fetched page is judged, the one place both the ``focused`` spider and the
add-on's ``FocusPages`` (a project's own spider) take it from.

A page is judged by its words (and its own links' words, when the model reads them: a model made
from words, ``query.LinkField``) and by the link that led to it (FOCUS_LINK_EVIDENCE): the item's
relevance (FOCUS_RELEVANCE_THRESHOLD), the learner's hit (FOCUS_REWARD_THRESHOLD; by default the
model's even-odds score) and the parent score of its links all follow from that one score. A page
marked ``noindex`` is neither relevant nor a hit.
"""

from __future__ import annotations

from collections.abc import Iterator

from focuscrawl.dedup import content_hash


def page_links(parsed) -> Iterator[tuple[str, str, str]]:
    """A parsed page's followable links as ``(anchor, context, url)``: what a model reading a page's
    own links (``TopicModel.link_field``) reads. Lazy: a model that does not read them (every model
    trained from pages) builds nothing for them on the crawl's path."""
    return ((link.anchor, link.context, link.url) for link in parsed.links if not link.nofollow)


class PageJudge:
    def __init__(self, model, threshold: float, reward_threshold: float | None, link_evidence: float) -> None:
        self.model = model
        self.threshold = threshold
        self.reward_threshold = model.even_odds_score if reward_threshold is None else reward_threshold
        self.link_evidence = link_evidence

    def use_model(self, model, reward_threshold: float) -> None:
        """Judge by ``model`` from now on (a model grown as the crawl goes), hits at ``reward_threshold``."""
        self.model = model
        self.reward_threshold = reward_threshold

    @classmethod
    def from_config(cls, model, config, threshold: float | None = None) -> PageJudge:
        return cls(model, config.relevance_threshold if threshold is None else threshold,
                   config.reward_threshold, config.link_evidence)

    def judge(self, page, title: str, text: str, link_score: float | None, noindex: bool,
              links=()) -> tuple[bool, float]:
        """Sets the page's scores, relevance and content hash; returns (hit, the probability that it is
        on topic: the parent score of its links). ``links``: the page's own ``(anchor, context, url)``."""
        page.page_score = self.model.score_page(title, text, links)
        page.link_score = link_score
        page.score = self.model.with_link_evidence(page.page_score, page.link_score, self.link_evidence)
        page.relevant = page.score >= self.threshold and not noindex
        hit = page.score >= self.reward_threshold and not noindex
        page.content_hash = content_hash(text)
        return hit, round(self.model.probability(page.score), 4)
