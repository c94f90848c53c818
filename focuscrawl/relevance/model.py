"""The topic model ("nugget function"): title and main text -> probability of being on topic.

A scikit-learn Pipeline: TF-IDF over word 1-2 grams of "title title text" (the title counts
twice: it is the page's own summary) and a class-balanced logistic regression. On WebKB's
"misc" universities, 5-fold cross-validation gives F1 about 0.89 for ``course`` and for
``student``; SGD with log loss scored the same within noise, so the deterministic solver won.

Saved with joblib as a dict with a format tag, a version and metadata (examples per class,
library versions, cross-validated precision/recall/F1). Loading unpickles: load only models
you trust, as with any joblib/pickle file.
"""

from __future__ import annotations

import logging
import math
import os
import tempfile
import warnings
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import joblib
import numpy as np
import sklearn
from scipy.special import expit
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import precision_recall_fscore_support
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline

import focuscrawl
from focuscrawl.labelling.labels import ON_TOPIC
from focuscrawl.learning.features import PART_OF_HIT
from focuscrawl.relevance.compounds import CompoundReader
from focuscrawl.relevance.linear import LinearScorer
from focuscrawl.relevance.links import train_link_model
from focuscrawl.urls import url_tokens

logger = logging.getLogger(__name__)

MODEL_FORMAT = "focuscrawl-topic-model"
MODEL_VERSION = 1
#: Characters of main text the model reads: the start of a page says what it is about.
MAX_TEXT_CHARS = 100_000
#: Probability at and above which cross-validation counts a page as predicted on topic.
CV_THRESHOLD = 0.5


class ModelError(Exception):
    """A model file cannot be used: missing, corrupt, not a topic model, wrong version."""


class TrainingError(Exception):
    """The examples cannot train a model (no positives, no negatives, unknown label)."""


def model_document(title: str, text: str) -> str:
    """The one string the pipeline reads for a page."""
    title = title or ""
    return f"{title} {title} {(text or '')[:MAX_TEXT_CHARS]}"


def build_pipeline(n_documents: int) -> Pipeline:
    """A fresh, unfitted pipeline; tiny training sets keep words seen only once."""
    return Pipeline([
        ("tfidf", TfidfVectorizer(
            sublinear_tf=True,
            ngram_range=(1, 2),
            min_df=2 if n_documents >= 50 else 1,
            max_df=0.95 if n_documents >= 50 else 1.0,
            max_features=100_000,
            strip_accents="unicode",
            dtype=np.float32,
        )),
        ("classifier", LogisticRegression(class_weight="balanced", C=10.0, max_iter=1000)),
    ])


_LOADED: dict[tuple, "TopicModel"] = {}
_EPS = 1e-6  # probabilities are clipped this far from 0 and 1 before taking log-odds


def _logit(p: float) -> float:
    p = min(max(float(p), _EPS), 1.0 - _EPS)
    return math.log(p / (1.0 - p))


def _sigmoid(z: float) -> float:
    # scipy's expit, as the fast scorer uses: 1 / (1 + exp(-z)) overflows past z = -709, which a
    # large FOCUS_LINK_EVIDENCE times a poor link's log-odds reaches
    return float(expit(z))


#: How a model reads a page's words (``TopicModel.page_reading``).
PAGE_READINGS = ("compounds", "written")


class TopicModel:
    """A fitted pipeline plus what it was trained on; ``score`` is P(on topic). It may carry a
    link model (``focuscrawl.relevance.links``) that ``score_links`` uses to value links."""

    def __init__(self, pipeline: Pipeline, metadata: dict | None = None, link_pipeline: Pipeline | None = None,
                 link_field=None):
        self.pipeline = pipeline
        self.metadata = dict(metadata or {})
        self.link_pipeline = link_pipeline
        #: the page's own links read as a field of the page (``query.LinkField``: ``evidence(links)``
        #: is the log-odds they add), or None: the page is judged by its title and text alone
        self.link_field = link_field
        self._scorers: dict[int, tuple[Pipeline, LinearScorer | None]] = {}
        self._compounds: tuple[Pipeline, CompoundReader | None] | None = None

    @property
    def positive_labels(self) -> list[str]:
        return list(self.metadata.get("positive_labels", []))

    @property
    def learner_priors(self) -> dict[str, float]:
        """Starting weights for the link learner that training measured on the training web (see
        ``links.part_prior``); empty for a model trained without links or before they existed."""
        prior = ((self.metadata.get("links") or {}).get("part_prior") or {}).get("weight")
        return {PART_OF_HIT: float(prior)} if isinstance(prior, (int, float)) else {}

    @property
    def learned_links(self) -> bool:
        """The model carries a link model learned from its training web's links: the crawl's link
        learner then leaves the links' words to it (``LinkRewardLearner.use_link_model``). A link
        reading written from a user's words (``relevance.query``) knows only those words, so the
        learner still learns the rest from the crawl's pages."""
        return self.link_pipeline is not None and (self.metadata.get("links") or {}).get("kind") != "query"

    @property
    def labelled_off_topic(self) -> bool:
        """The model was trained against labelled off-topic pages (``metadata["off_topic"]["kind"]``
        "examples", or a model that does not say); one made from words ("query") or from on-topic
        pages against a background ("background") has only guessed what is off topic."""
        return (self.metadata.get("off_topic") or {}).get("kind") not in ("query", "background")

    @property
    def even_odds_score(self) -> float:
        """The score at which a page is as likely on topic as not, at the base rate the model was
        trained on. The classifier is trained class-balanced, as if half of all pages were on
        topic, so its probability overstates a minority topic; undoing the balancing puts even
        odds at the training share of negative examples (0.5 when it is not known). The learner
        counts a page as a hit from this score: crediting borderline look-alikes (a course's
        syllabus for a course) sends the crawl after more of them (on WebKB, a real course crawl
        at 0.5 spent requests 200-400 on syllabi and TA lists)."""
        even_odds = self.metadata.get("even_odds")
        if isinstance(even_odds, float) and 0.0 < even_odds < 1.0:
            return even_odds  # a model whose training share of negatives is no base rate (a background's size)
        n_pos, n_neg = self.metadata.get("n_positive"), self.metadata.get("n_negative")
        if not isinstance(n_pos, int) or not isinstance(n_neg, int) or n_pos <= 0 or n_neg <= 0:
            return 0.5
        return n_neg / (n_pos + n_neg)

    def with_link_evidence(self, page_score: float, link_score: float | None, weight: float = 1.0) -> float:
        """A fetched page's score with the evidence of the link that led to it added, on the page
        score's own scale (compare it with the same thresholds).

        Both models are trained class-balanced, so each one's log-odds is its evidence (a
        log likelihood ratio); adding them, the link's times ``weight``, is the naive-Bayes
        combination. The page's words cannot tell a course's home page from its syllabus, nor a
        student's home page from her CV, and the link that led there often can ("CS 302" against
        "Syllabus"): on WebKB's four departments this lifts the precision of the learner's hits at
        the same recall (course 0.53 -> 0.65, student 0.70 -> 0.91), and it ranks a crawl's items
        better (see docs/research.md). Without a link model the link was scored by this same topic
        model, which would count one model twice: the page score is returned as it is, as it is for
        seeds (no link) and ``weight`` 0."""
        if link_score is None or weight <= 0 or self.link_pipeline is None:
            return page_score
        return _sigmoid(_logit(page_score) + weight * _logit(float(link_score)))

    def probability(self, score: float) -> float:
        """A score (the balanced classifier's scale) as the probability of being on topic at the
        base rate of the training examples: even odds (``even_odds_score``) maps to 0.5."""
        return _sigmoid(_logit(score) - _logit(self.even_odds_score))

    def document(self, title: str, text: str) -> str:
        """The one string the pipeline reads for a page (``model_document`` of ``read_page``): what
        a part that works in the model's own feature space (the labelling queue) transforms."""
        return model_document(*self.read_page(title, text))

    def read_page(self, title: str, text: str) -> tuple[str, str]:
        """A page's title and text as the model reads them: each word it does not know read as the
        known words it is made of (``relevance.compounds``: ``ctest`` as ``test``,
        ``CTEST_TEST_TIMEOUT`` as ``test timeout``), as its links' names are. A model trained on
        one manual's pages knows ``test`` and ``debug``; another manual's testing pages name
        ``ctest``, ``add_test`` and ``set_tests_properties``, words it never saw whole, so read
        as they are written the pages it should rank first score like any other. A known word is
        read as it is, so the pages the model was trained on score as they did.

        A model whose metadata says ``page_reading: written`` (``page_reading``) reads a page as
        written: one made from words declares it (``query.build_query_model``)."""
        read = self._compound_reader() if self.page_reading == "compounds" else None
        return (read(title or ""), read(text or "")) if read is not None else (title, text)

    @property
    def page_reading(self) -> str:
        """How the model reads a page's words (``PAGE_READINGS``): "compounds" (the default), each
        word it does not know as the known words it is made of (``read_page``); "written", as
        written."""
        return self.metadata.get("page_reading", "compounds")

    def score(self, title: str, text: str) -> float:
        return self.score_many([(title, text)])[0]

    def score_page(self, title: str, text: str, links=()) -> float:
        """A fetched page's score by its title, its text and, when the model reads them
        (``link_field``), the ``(anchor, context, url)`` of its own links (an iterable, read once
        and only then)."""
        score = self.score(title, text)
        if self.link_field is None:
            return score
        evidence = self.link_field.evidence(links)
        return _sigmoid(_logit(score) + evidence) if evidence else score

    def score_many(self, docs: list[tuple[str, str]]) -> list[float]:
        """P(on topic) of each page ``(title, text)``, read as ``read_page`` reads it."""
        if not docs:
            return []
        return self._proba(self.pipeline, [self.document(t, x) for t, x in docs])

    def score_links(self, links: list[tuple[str, str, str]]) -> list[float]:
        """How likely each ``(anchor, context, url)`` is to lead to an on-topic page: the link
        model when there is one, else the topic model reading the link's words as a tiny page,
        the compound words of its own names, anchor and URL (``ctest``, ``CTEST_TEST_TIMEOUT``),
        read as the known words they are made of (``relevance.compounds``), as a page's are; the
        text around it is read as written (a list of identifiers beside a link names the list,
        not the link)."""
        if not links:
            return []
        if self.link_pipeline is not None:
            return self._proba(self.link_pipeline, links)
        read = self._compound_reader() or (lambda text: text)
        return self._proba(self.pipeline, [model_document(read(anchor), f"{context} {read(' '.join(url_tokens(url)))}")
                                           for anchor, context, url in links])

    def _compound_reader(self) -> CompoundReader | None:
        """The page model's compound reader, built once per pipeline (a grown model swaps it)."""
        if self._compounds is None or self._compounds[0] is not self.pipeline:
            self._compounds = (self.pipeline, CompoundReader.for_pipeline(self.pipeline))
        return self._compounds[1]

    def explain(self, title: str, text: str, top: int = 5) -> list[tuple[str, float]]:
        """The words that moved a page's score most: ``(term, contribution to the log-odds)``,
        largest first by size, for a linear pipeline (TF-IDF then logistic regression; empty for
        another). A model made from words lists the query's words the page uses."""
        steps = getattr(self.pipeline, "steps", [])
        if len(steps) != 2 or not hasattr(steps[1][1], "coef_") or not hasattr(steps[0][1], "get_feature_names_out"):
            return []
        vectorizer, classifier = steps[0][1], steps[1][1]
        row = vectorizer.transform([self.document(title, text)]).tocsr()
        terms = vectorizer.get_feature_names_out()
        parts = [(str(terms[j]), float(value * classifier.coef_[0][j])) for j, value in zip(row.indices, row.data)]
        parts.sort(key=lambda part: -abs(part[1]))
        return [(term, round(weight, 4)) for term, weight in parts[:max(int(top), 0)] if weight]

    def _proba(self, pipeline: Pipeline, docs: list) -> list[float]:
        """``pipeline.predict_proba(docs)[:, 1]``, by a LinearScorer when the pipeline is one it
        reads (the same numbers, without scikit-learn's per-call overhead: the crawl scores one
        page at a time)."""
        cached = self._scorers.get(id(pipeline))
        if cached is None or cached[0] is not pipeline:
            cached = self._scorers[id(pipeline)] = (pipeline, LinearScorer.for_pipeline(pipeline))
        scorer = cached[1]
        if scorer is None:
            return [float(p) for p in pipeline.predict_proba(docs)[:, 1]]
        return scorer.score_many(docs)

    def save(self, path) -> None:
        """Write atomically (temp file, then rename), creating parent folders."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "format": MODEL_FORMAT,
            "version": MODEL_VERSION,
            "pipeline": self.pipeline,
            "metadata": self.metadata,
            "link_pipeline": self.link_pipeline,
            "link_field": self.link_field,
        }
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        os.close(fd)
        try:
            joblib.dump(payload, tmp, compress=3)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)

    @classmethod
    def load(cls, path) -> "TopicModel":
        """Load a saved model; a file loaded before in this process (same size and mtime) is not
        read again, so checking a model before a crawl costs nothing when the crawl loads it."""
        path = Path(path)
        try:
            info = path.stat()
            key = (str(path.resolve()), info.st_size, info.st_mtime_ns)
        except OSError:
            key = None
        if key is not None and key in _LOADED:
            return _LOADED[key]
        model = cls._load(path)
        if key is not None:
            _LOADED.clear()  # keep one: a crawl uses one model
            _LOADED[key] = model
        return model

    @classmethod
    def _load(cls, path: Path) -> "TopicModel":
        if not path.exists():
            raise ModelError(f"model file not found: {path}")
        if not path.is_file():
            raise ModelError(f"model path is not a file: {path}")
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                payload = joblib.load(path)
        except Exception as exc:  # pickle, zlib, EOF, KeyError...: all mean "not a good file"
            raise ModelError(
                f"{path} is not a readable focuscrawl model (corrupt, truncated or not a joblib "
                f"file: {type(exc).__name__})"
            ) from None
        for warning in caught:
            if "version" in str(warning.message).lower():
                logger.warning("%s: %s", path, str(warning.message).splitlines()[0])
        if not isinstance(payload, dict) or payload.get("format") != MODEL_FORMAT:
            kind = type(payload).__name__
            raise ModelError(f"{path} is not a focuscrawl topic model (it holds a {kind})")
        if payload.get("version") != MODEL_VERSION:
            raise ModelError(
                f"{path} is topic model format version {payload.get('version')!r}; "
                f"this focuscrawl reads version {MODEL_VERSION}: retrain it with scrapy train"
            )
        pipeline = payload.get("pipeline")
        if not hasattr(pipeline, "predict_proba"):
            raise ModelError(f"{path} is a damaged topic model (no fitted pipeline)")
        link_pipeline = payload.get("link_pipeline")
        if link_pipeline is not None and not hasattr(link_pipeline, "predict_proba"):
            raise ModelError(f"{path} is a damaged topic model (its link model is not a fitted pipeline)")
        link_field = payload.get("link_field")
        if link_field is not None and not hasattr(link_field, "evidence"):
            raise ModelError(f"{path} is a damaged topic model (its reading of a page's links has no evidence)")
        metadata = payload.get("metadata") or {}
        if metadata.get("page_reading", "compounds") not in PAGE_READINGS:
            raise ModelError(f"{path} reads pages as {metadata['page_reading']!r}, which this focuscrawl does not "
                             f"know (it knows {', '.join(PAGE_READINGS)}): retrain it with scrapy train")
        if metadata.get("start") == "query" and "page_reading" not in metadata:
            # a words model saved before models declared their reading read pages as written
            metadata = {**metadata, "page_reading": "written"}
        return cls(pipeline, metadata, link_pipeline, link_field)


def train_topic_model(examples, positive_labels, cv_folds: int = 5, random_state: int = 0, link_model: bool = True,
                      background: bool = True, unlabelled=None):
    """Cross-validate, then fit on every example. Returns ``(TopicModel, report)``.

    Examples that are all on topic are contrasted with the shipped background corpus
    (``relevance.background``) when ``background`` is true, else refused: ``report["off_topic"]``
    says where the off-topic side came from (``{"kind": "examples"}`` or the background's source,
    licence and size).

    ``unlabelled`` pages (examples all on topic only: other pages of their sites, which the user
    did not pick, most off topic and some on) join the background as the other side, and the
    model is calibrated for them (positive-unlabelled learning, ``relevance.calibration``: Elkan &
    Noto's c estimated on the positives each held out of a fit, the model shifted to score 0.5
    where P(on topic) is 1/2); ``report["off_topic"]["unlabelled"]`` records c and how it was
    estimated, and ``report["cv"]`` is None (unlabelled pages give no precision).

    When ``examples`` carry labelled links (``ExampleList.links``, read from WARC inputs) and
    ``link_model`` is true, a link model is trained too; ``report["links"]`` says how it went.

    The report (also stored as ``model.metadata``) holds examples per class, positive and
    negative counts, ``sources`` (where the examples were read: ``ExampleList.sources``, so the
    model can be retrained from them with more labels), and ``cv``: pooled out-of-fold precision/recall/F1 with the number of
    folds (fewer than asked when a class is small), or None when a class has one example.
    """
    if isinstance(positive_labels, str):
        positive_labels = [positive_labels]
    positive = [p.strip() for p in positive_labels if p and p.strip()]
    if not positive:
        raise TrainingError("no positive label given")
    links = getattr(examples, "links", None) or []
    sources = list(getattr(examples, "sources", None) or [])
    examples = list(examples)
    if not examples:
        raise TrainingError("no training examples")
    per_class = dict(sorted(Counter(e.label for e in examples).items()))
    for label in positive:
        if label not in per_class and label != ON_TOPIC:
            present = ", ".join(per_class)
            raise TrainingError(f"unknown label {label!r}; labels present: {present}")
    # a person's "on-topic" (scrapy label, the console) is a positive example whatever the topic's name
    if ON_TOPIC in per_class and ON_TOPIC not in positive:
        positive.append(ON_TOPIC)
    y = np.array([e.label in positive for e in examples], dtype=int)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    off_topic, even_odds = {"kind": "examples"}, None
    unlabelled = list(unlabelled or [])
    if unlabelled and n_neg:
        raise TrainingError("unlabelled pages are for on-topic examples alone; these have off-topic examples")
    if n_neg == 0:
        if not background:
            raise TrainingError(
                f"all {n_pos} examples are positive ({', '.join(per_class)}); training needs "
                "negative examples too: pages with other labels"
            )
        from focuscrawl.relevance.background import LABEL, describe, load_background

        contrast = load_background()
        examples = examples + contrast
        y = np.concatenate([y, np.zeros(len(contrast), dtype=int)])
        n_neg = len(contrast)
        per_class[LABEL] = n_neg
        off_topic = {"kind": "background", **describe()}
        # the background's size is the corpus's, not a share of the web: its base rate says nothing
        even_odds = 0.5
        if unlabelled:
            examples = examples + unlabelled
            y = np.concatenate([y, np.zeros(len(unlabelled), dtype=int)])
            n_neg += len(unlabelled)
            per_class[CONTRAST_CLASS] = len(unlabelled)
    docs = [model_document(e.title, e.text) for e in examples]

    folds = min(int(cv_folds or 0), n_pos, n_neg)
    cv = None
    if unlabelled:
        off_topic["unlabelled"] = _calibrate_for_unlabelled(docs, y, len(unlabelled), random_state)
        folds = 0  # the pages not picked are no off-topic labels: precision cannot be measured on them
    if folds >= 2:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=random_state)
        proba = cross_val_predict(
            build_pipeline(len(docs)), docs, y, cv=splitter, method="predict_proba"
        )[:, 1]
        precision, recall, f1, _ = precision_recall_fscore_support(
            y, proba >= CV_THRESHOLD, average="binary", zero_division=0
        )
        cv = {"folds": folds, "precision": float(precision), "recall": float(recall), "f1": float(f1)}

    pipeline = build_pipeline(len(docs)).fit(docs, y)
    if unlabelled:
        # score 0.5 where g(x) = c / 2: items, the learner's hits and the parent scores all read
        # even odds there, as for any other model
        pipeline.named_steps["classifier"].intercept_ -= off_topic["unlabelled"]["even_odds_logit"]
    link_pipeline, link_report = (train_link_model(links, positive, cv_folds, random_state)
                                  if links and link_model else (None, None))
    report = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "examples_per_class": per_class,
        "positive_labels": positive,
        "n_positive": n_pos,
        "n_negative": n_neg,
        "off_topic": off_topic,
        "even_odds": even_odds,
        "cv": cv,
        "links": link_report,
        "sources": sources,
        # its vocabulary is pages', retrained from a words model's crawl too
        "page_reading": "compounds",
        "versions": {
            "sklearn": sklearn.__version__,
            "numpy": np.__version__,
            "focuscrawl": focuscrawl.__version__,
        },
    }
    return TopicModel(pipeline, report, link_pipeline), report


#: the class of the unlabelled pages in a model's ``examples_per_class``
CONTRAST_CLASS = "unlabelled"


def _calibrate_for_unlabelled(docs: list[str], y, n_unlabelled: int, random_state: int) -> dict:
    """Elkan & Noto's c for a model trained on ``docs`` (positives ``y`` 1 against the background
    and ``n_unlabelled`` unlabelled pages), and where even odds falls on its class-balanced scale."""
    from focuscrawl.relevance import calibration

    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    if n_pos < 2:
        raise TrainingError("calibrating against unlabelled pages needs at least two on-topic examples "
                            "(each is held out of a fit in turn)")
    scores = calibration.held_out_positive_scores(build_pipeline(len(docs)), docs, y, random_state=random_state)
    c = calibration.labelling_propensity(scores)
    if c < calibration.MIN_PROPENSITY:
        raise TrainingError(f"the on-topic examples, each held out, score {c:.2g} on average against the "
                            "unlabelled pages: too unlike each other to calibrate; give more examples")
    threshold = c / 2.0
    return {
        "pages": n_unlabelled,
        "method": "Elkan & Noto 2008: P(on topic | x) = g(x) / c, g trained on the examples against "
                  "the rest, c = mean g of each example held out of a fit",
        "c": round(c, 6),
        "folds": min(calibration.MAX_FOLDS, n_pos),
        "held_out_found": int((scores >= threshold).sum()),
        "held_out": n_pos,
        "even_odds_logit": calibration.even_odds_logit(c, n_pos, n_neg),
    }
