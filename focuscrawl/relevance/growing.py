"""A topic model that grows from the crawl's own pages: self-training from a prior.

A model made from words (``relevance.query``) or from a few on-topic pages against the
background corpus knows little of the web it is pointed at: not the words its on-topic pages
share beyond the few the user gave ("CS 302", "Fall 1996", "office hours"), nor what its
off-topic pages look like. The crawl fetches both. ``ModelGrower`` keeps the pages the crawl
fetched (bounded: ``max_pages`` of at most ``max_chars`` characters each, the oldest dropped
first) and, as their number doubles, trains a model from them:

- on topic: the pages the current model counts as found (its probability at least
  ``CONFIDENT``) and the user's own on-topic examples (``positives``, when she gave pages);
- off topic: every other page the crawl fetched. They are unlabelled, not judged: a few of them
  are on topic (positive-unlabelled learning), which the class-balanced classifier absorbs as
  noise (Elkan and Noto 2008: a classifier of labelled against unlabelled ranks as one of
  positive against negative would).

Each round re-scores the kept pages with the newest model, so what counts as found can grow
beyond the prior's words, and shrink where the prior was fooled. A round is skipped (and the
model kept) while the pages give fewer than ``MIN_CLASS`` of either side. Training is pure:
``training_set`` snapshots (cheap, in the crawl's thread) and ``grow`` fits (seconds, in a worker
thread; see ``relevance.growing_ext``).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from focuscrawl.relevance.model import TopicModel, _logit, _sigmoid, build_pipeline, model_document

#: probability (at the model's own base rate) from which a fetched page counts as on topic
CONFIDENT = 0.5
#: a page scored within this of the confident score is one the round was unsure of (in its report;
#: the labelling queue ranks them for a person)
UNSURE_BAND = 0.1
#: at least this many pages on each side, or the round is skipped
MIN_CLASS = 5


class RoundTimeout(Exception):
    """A round of training ran past its time limit (``ModelGrower.max_seconds``)."""


def grown_path(model_path) -> Path:
    """Where a crawl keeps the model it grew from ``model_path``: beside it, ``NAME.grown.joblib``
    (``scrapy label`` and ``scrapy console`` judge by it, ``scrapy train CRAWL.db`` records it)."""
    path = Path(model_path)
    return path.with_name(f"{path.stem}.grown{path.suffix or '.joblib'}")


@dataclass
class TrainingSet:
    docs: list[tuple[str, str]]  # (title, text)
    positives: int  # the first ``positives`` docs are the user's own on-topic examples
    round: int


@dataclass
class ModelGrower:
    """The crawl's fetched pages, bounded, and the rounds of training from them."""

    prior: TopicModel
    positives: list[tuple[str, str]] = field(default_factory=list)  # (title, text) of the user's on-topic pages
    first: int = 100  # the first round after this many pages
    max_pages: int = 4000
    max_chars: int = 5000  # the start of a page says what it is about (and keeps memory bounded)
    combine: bool = False  # a page's score adds the prior's evidence to the grown model's (GrownModel)
    max_seconds: float | None = None  # a round that takes longer is given up (RoundTimeout)

    def __post_init__(self):
        self.pages: deque[tuple[str, str]] = deque(maxlen=self.max_pages)
        self.seen = 0  # pages added, ever
        self.next_round = self.first
        self.rounds = 0
        self.model = self.prior
        self.history: list[dict] = []

    def add(self, title: str, text: str) -> None:
        title = (title or "")[:300]
        self.pages.append((title, (text or "")[: self.max_chars]))
        self.seen += 1

    def due(self) -> bool:
        return self.seen >= self.next_round

    def training_set(self) -> TrainingSet:
        """A snapshot of the pages for a round, and the next round set at twice as many pages."""
        self.next_round = 2 * self.seen
        self.rounds += 1
        return TrainingSet(list(self.positives) + list(self.pages), len(self.positives), self.rounds)

    def grow(self, snapshot: TrainingSet, model: TopicModel | None = None) -> tuple[TopicModel | None, dict]:
        """Train a model from a snapshot, the current ``model`` (default: the grower's) judging
        which fetched pages are on topic. Returns ``(model or None when skipped, report)``; pure
        apart from reading the models, so it may run in another thread. Past ``max_seconds`` after
        it started (checked between its steps: scoring, fitting) it raises RoundTimeout."""
        started = time.monotonic()
        model = model or self.model
        crawl_docs = snapshot.docs[snapshot.positives:]
        scores = np.asarray(model.score_many(crawl_docs))
        self._in_time(started, "scoring the pages")
        # the score at which a page is even odds, as ``TopicModel.probability`` maps it
        found = scores >= _score_at(model, CONFIDENT)
        y = np.concatenate([np.ones(snapshot.positives, dtype=int), found.astype(int)])
        n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
        report = {"round": snapshot.round, "pages": len(crawl_docs), "found": int(found.sum()),
                  "examples": snapshot.positives, "n_positive": n_pos, "n_negative": n_neg}
        if n_pos < MIN_CLASS or n_neg < MIN_CLASS:
            report["skipped"] = f"fewer than {MIN_CLASS} pages on one side"
            return None, report
        pipeline = build_pipeline(len(y)).fit([model_document(t, x) for t, x in snapshot.docs], y)
        self._in_time(started, "fitting")
        report["unsure"] = int(np.sum(np.abs(scores - _score_at(model, CONFIDENT)) < UNSURE_BAND))
        # combined, both parts are on the balanced scale: even odds at 0.5, as the prior's; alone,
        # the grown classifier's even odds is the crawl's own share of pages not found
        metadata = {**self.prior.metadata, "n_positive": n_pos, "n_negative": n_neg,
                    "even_odds": 0.5 if self.combine else None, "grown": [*self.history, report]}
        return GrownModel(pipeline, metadata, self.prior.link_pipeline, links_by=self.prior,
                          combine=self.combine), report

    def _in_time(self, started: float, step: str) -> None:
        if self.max_seconds is not None and time.monotonic() - started > self.max_seconds:
            raise RoundTimeout(f"{step} took past the round's limit of {self.max_seconds:g} s")

    def adopt(self, model: TopicModel, report: dict) -> None:
        """The crawl now scores with ``model`` (a round's result)."""
        self.model = model
        self.history.append(report)


class GrownModel(TopicModel):
    """A model grown from the crawl's pages that values links as its prior does. The grown
    classifier reads whole pages: trained on thousands of words a page, it has little to say
    about a link's five (its scores of links crowd around its intercept), where the prior, made
    for the user's words, reads a link's anchor and URL as well as a page.

    With ``combine``, a page's score adds the prior's log-odds to the grown classifier's (both
    are evidence on the balanced scale: the naive-Bayes sum ``with_link_evidence`` makes too), so
    what the crawl taught cannot drown what the user asked for."""

    def __init__(self, pipeline, metadata=None, link_pipeline=None, links_by: TopicModel | None = None,
                 combine: bool = False):
        super().__init__(pipeline, metadata, link_pipeline)
        self.links_by = links_by
        self.combine = combine and links_by is not None

    def score_many(self, docs):
        grown = super().score_many(docs)
        if not self.combine or not grown:
            return grown
        prior = self.links_by.score_many(docs)
        return [_sigmoid(_logit(g) + _logit(p)) for g, p in zip(grown, prior)]

    def score_links(self, links):
        if self.link_pipeline is None and self.links_by is not None:
            return self.links_by.score_links(links)
        return super().score_links(links)


def _score_at(model: TopicModel, probability: float) -> float:
    """The score whose ``model.probability`` is ``probability``."""
    even = min(max(model.even_odds_score, 1e-6), 1 - 1e-6)
    logit = np.log(probability / (1 - probability)) + np.log(even / (1 - even))
    return float(1.0 / (1.0 + np.exp(-logit)))
