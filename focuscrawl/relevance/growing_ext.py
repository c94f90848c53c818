"""The Scrapy part that grows the topic model as the crawl goes (``relevance.growing``).

On by ``FOCUS_GROW_MODEL``, or, when that is unset, by the model's own metadata: ``scrapy train
--grow`` writes ``"grow": true`` into a model made from words or from on-topic pages alone. Off
otherwise: on WebKB a grown model has not yet beaten the one it started from (docs/research.md).
It keeps the pages
the spider scores (``page_scored``), and when their number reaches ``FOCUS_GROW_FIRST``, then
twice as many, and so on, trains a model from them in a worker thread (the reactor's thread
pool: the crawl's downloads and callbacks go on meanwhile), then hands it to the spider
(``FocusedSpider.use_model``): pages are judged by it from then on (links stay read as the prior
reads them: ``GrownModel``), and the learner counts a page as found at the new model's even odds;
its rewards move, and the learner's new versions re-score the frontier.

A round has a time limit (``FOCUS_GROW_ROUND_SECONDS``): one that runs past it is given up, the
model kept, and the model grows no more. Each grown model is written beside the crawl's
(``NAME.grown.joblib``, ``FOCUS_GROW_SAVE``), its metadata saying what it grew from and each
round's counts: ``scrapy label`` and ``scrapy console`` rank the pages it is unsure of for a
person's judgement, and ``scrapy train CRAWL.db`` records it when it retrains.

What it did is in the stats (``focus/grow/...``) and the log, one line a round.
"""

from __future__ import annotations

import logging
import time

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import threads

from focuscrawl import signals as focus_signals
from focuscrawl.config import FocusConfig
from focuscrawl.relevance.growing import ModelGrower, RoundTimeout, grown_path

logger = logging.getLogger(__name__)

def grows_by_default(model) -> bool:
    """A model asks to grow in its metadata (``scrapy train --grow``)."""
    return model.metadata.get("grow") is True


class GrowModel:
    def __init__(self, crawler, spider, grower: ModelGrower, model_path=None):
        self.crawler = crawler
        self.spider = spider
        self.grower = grower
        self.model_path = model_path  # the model it grows from, and beside it each grown model (None: not written)
        self.save_to = grown_path(model_path) if model_path else None
        self.stopped = False  # a round ran past its time limit: no more rounds
        self.running = None  # the Deferred of the round in the worker thread
        self.closed = False
        crawler.signals.connect(self.page_scored, signal=focus_signals.page_scored)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler):
        # off unless asked for, and then silent: Scrapy names a component disabled with a reason
        config = FocusConfig.from_settings(crawler.settings)
        spider = getattr(crawler, "spider", None)
        model = getattr(spider, "model", None)
        if model is None or not hasattr(spider, "use_model"):
            if config.grow_model:
                raise NotConfigured("FOCUS_GROW_MODEL: no focused spider with a topic model to grow")
            raise NotConfigured
        enabled = config.grow_model if config.grow_model is not None else grows_by_default(model)
        if not enabled:
            raise NotConfigured
        grower = ModelGrower(model, positives=_own_positives(model), first=config.grow_first,
                             max_pages=config.grow_max_pages, max_seconds=config.grow_round_seconds)
        model_path = (getattr(spider, "model_arg", None) or config.model) if config.grow_save else None
        logger.info("the topic model grows from the crawl's pages (first round after %d pages, then as they "
                    "double; %d on-topic example(s) of the user's kept in)", grower.first, len(grower.positives))
        return cls(crawler, spider, grower, model_path)

    def page_scored(self, request=None, response=None, page=None, links=None, hit=False, **kwargs):
        if page is None or getattr(page, "page_score", None) is None or self.closed:
            return
        self.grower.add(page.title or "", page.text or "")
        if self.running is None and not self.stopped and self.grower.due():
            self._start_round()

    def _start_round(self) -> None:
        snapshot = self.grower.training_set()
        model = self.grower.model
        started = time.monotonic()
        self.running = threads.deferToThread(self._round, snapshot, model)
        self.running.addCallbacks(lambda result: self._round_done(result, started),
                                  lambda failure: self._round_failed(failure, snapshot.round))

    def _round(self, snapshot, model):
        """In the worker thread: train, and write the model where ``scrapy label`` finds it."""
        grown, report = self.grower.grow(snapshot, model)
        if grown is not None and self.save_to is not None:
            grown.metadata["grown_from"] = str(self.model_path)
            try:
                grown.save(self.save_to)
                report["saved"] = str(self.save_to)
            except OSError as exc:
                report["not_saved"] = exc.strerror or str(exc)
        return grown, report

    def _round_done(self, result, started: float) -> None:
        self.running = None
        model, report = result
        report["seconds"] = round(time.monotonic() - started, 2)
        stats = self.crawler.stats
        if self.closed:
            return
        if model is None:
            stats.inc_value("focus/grow/skipped")
            logger.info("topic model round %d skipped: %s (%d pages, %d found)", report["round"],
                        report["skipped"], report["pages"], report["found"])
            return
        self.grower.adopt(model, report)
        self.spider.use_model(model)
        stats.inc_value("focus/grow/rounds")
        stats.set_value("focus/grow/pages", report["pages"])
        stats.set_value("focus/grow/found", report["found"])
        stats.set_value("focus/grow/unsure", report.get("unsure", 0))
        logger.info("topic model round %d: trained on %d fetched pages (%d counted as on topic, %d unsure) and %d "
                    "example(s) in %.1f s; it now judges the pages%s", report["round"], report["pages"],
                    report["found"], report.get("unsure", 0), report["examples"], report["seconds"],
                    f" (written to {report['saved']}: scrapy label ranks its unsure pages)" if "saved" in report else "")
        if "not_saved" in report:
            logger.warning("the grown topic model could not be written to %s: %s", self.save_to, report["not_saved"])

    def _round_failed(self, failure, round_: int) -> None:
        self.running = None
        if failure.check(RoundTimeout):
            self.stopped = True
            self.crawler.stats.inc_value("focus/grow/timeout")
            logger.warning("topic model round %d given up, the model is kept and grows no more: %s", round_,
                           failure.getErrorMessage())
            return
        self.crawler.stats.inc_value("focus/grow/failed")
        logger.error("topic model round %d failed, the model is kept: %s", round_, failure.getErrorMessage())

    def spider_closed(self, spider=None, reason=None):
        self.closed = True


def _own_positives(model) -> list[tuple[str, str]]:
    """The user's on-topic pages the model was trained on, read again from where it recorded them
    (none for a model made from words, or when they are gone: the crawl's pages still teach it)."""
    if not model.metadata.get("sources"):
        return []
    from focuscrawl.relevance.examples import ExamplesError, examples_from_sources

    try:
        examples = examples_from_sources(model.metadata["sources"], links=False)
    except ExamplesError as exc:
        logger.warning("growing the topic model without the user's examples: %s", exc)
        return []
    positive = set(model.positive_labels)
    return [(e.title, e.text) for e in examples if e.label in positive]
