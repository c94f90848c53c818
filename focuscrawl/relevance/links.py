"""The link model: a link's words and shape -> probability that it leads to an on-topic page.

The topic model reads pages; read on a link's few words (anchor, nearby text, URL) it guesses
poorly, because links do not talk like the pages they point to ("CSE 451" vs a syllabus). So
``scrapy train`` also learns from the links of the training web, as Rennie & McCallum's crawler
learned from the links of the sites it trained on: every link whose target the training data
knows (a labelled page, or a URL the web never answered) is one example, labelled by its target.

On WebKB, trained on the "misc" universities' links and tested on the four departments' links,
the link model ranks links to course pages with average precision 0.42 (ROC AUC 0.96) where the
topic model read on the link's words reaches 0.06 (0.77); ``bench/link_model.py`` measures it.

Documents are ``(anchor, context, url)`` tuples; the pipeline is TF-IDF over prefixed tokens
(``a:`` anchor words, ``c:`` context words, ``u:`` URL words, ``a#:``/``u#:`` the shapes of the
numbers in the anchor and the path, and the URL's shape) and a
class-balanced logistic regression, so ``predict_proba`` ranks links; it is not calibrated.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import average_precision_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import Pipeline

from focuscrawl.learning.features import STOPWORDS, digit_shapes, words
from focuscrawl.learning.learner import LINK_PRIORS, WASTE_REWARD
from focuscrawl.urls import extension, is_part_of, url_tokens, w3lib_canonical

#: The label of a link whose target the training web never answered (it leads nowhere).
MISSING = "(not recorded)"
#: Kinds of input a LinkedWeb's pages come from (see LinkedWeb).
RECORDED, CRAWLED = "WARC", "crawl store"
#: Fewer positive links than this and no link model is trained (the topic model reads links).
MIN_POSITIVE_LINKS = 10
MAX_REDIRECTS = 5
#: ``part_prior`` reads the links the link model rates at least this (out of fold)...
PART_PRIOR_MIN_SCORE = 0.4
#: ...and needs this many parts and as many other links among them.
PART_PRIOR_MIN_LINKS = 20

LinkDocument = tuple[str, str, str]  # anchor, context, absolute URL


def link_tokens(doc: LinkDocument) -> list[str]:
    """The tokens the link model reads (module level: a fitted pipeline pickles a reference)."""
    anchor, context, url = doc
    tokens = ["a:" + w for w in words(anchor, 12)]
    tokens += ["c:" + w for w in words(context, 16)]
    tokens += ["u:" + w for w in dict.fromkeys(url_tokens(url)) if len(w) > 1 and w not in STOPWORDS]
    path = urlsplit(url).path
    tokens += ["ext:" + (extension(url) or "none"), "depth:%d" % min(path.count("/"), 6)]
    if "~" in path:
        tokens.append("tilde")
    if "?" in url:
        tokens.append("query")
    if not anchor.strip():
        tokens.append("no_anchor")
    # the shapes of numbers in the anchor and the path ("CSE 451", "courses/373/96w/"): words drop them
    tokens += ["a#:" + shape for shape in digit_shapes(anchor)]
    tokens += ["u#:" + shape for shape in digit_shapes(path)]
    return tokens


def build_link_pipeline(n_links: int) -> Pipeline:
    return Pipeline([
        ("tfidf", TfidfVectorizer(analyzer=link_tokens, sublinear_tf=True, min_df=2 if n_links >= 50 else 1,
                                  dtype=np.float32)),
        ("classifier", LogisticRegression(class_weight="balanced", C=0.3, max_iter=2000)),
    ])


@dataclass(frozen=True)
class LinkExample:
    anchor: str
    context: str
    url: str
    label: str  # the target's label, or MISSING
    source_label: str | None = None  # the label of the page the link is on, if it has one
    part: bool = False  # the target lies in the source page's directory (``urls.is_part_of``)

    @property
    def document(self) -> LinkDocument:
        return (self.anchor, self.context, self.url)


class LinkedWeb:
    """What the training inputs say about their links: each page's links, which URLs were
    answered or failed, and where redirects lead. Filled while examples are read; turned into
    LinkExamples once every input is known (a link may point to a record further on).

    Pages come from two kinds of input, which differ in what a target they never saw means. A
    recorded web (a WARC, ``crawled=False``) holds every URL its web answered, so a target it
    never recorded leads nowhere (MISSING). A crawl (a crawl store, ``crawled=True``) fetched only
    some of its pages' targets: one it never fetched is unknown and teaches nothing, while one it
    fetched and failed on (``add_failure``: an error status, DNS, a timeout) is dead (MISSING)."""

    def __init__(self) -> None:
        self.pages: list[tuple[str, list[LinkDocument], str, bool]] = []  # url, links, source, crawled
        self.recorded: set[str] = set()
        self.redirects: dict[str, str] = {}
        self.dead: set[str] = set()
        self._page_keys: set[str] = set()
        #: after examples(): per source, its kind and how its links were labelled or why skipped
        self.tally: dict[str, Counter] = {}
        self.kinds: dict[str, str] = {}

    def add_page(self, url: str, links: list[LinkDocument], *, source: str = "", crawled: bool = False) -> None:
        """A page and its links; a page already added (the same URL from another input, or two
        stored fetches redirected to one page) keeps its first links, so none is counted twice."""
        key = w3lib_canonical(url)
        self.recorded.add(key)
        if key in self._page_keys:
            return
        self._page_keys.add(key)
        self.kinds.setdefault(source, CRAWLED if crawled else RECORDED)
        if links:
            self.pages.append((url, links, source, crawled))

    def add_record(self, url: str, location: str | None = None) -> None:
        """Any answered URL (error pages included); ``location`` for a redirect."""
        key = w3lib_canonical(url)
        self.recorded.add(key)
        if location:
            self.redirects[key] = w3lib_canonical(location)

    def add_failure(self, url: str) -> None:
        """A URL a crawl fetched and failed on (an error status, no response): a link to it is dead."""
        self.dead.add(w3lib_canonical(url))

    def examples(self, label_of, keep_url=lambda url: True) -> list[LinkExample]:
        """One LinkExample per link (from a page ``keep_url`` keeps, to a target it keeps) whose
        target is labelled (``label_of(url)``, after redirects) or dead: failed in a crawl, or,
        for a recorded web's page, never recorded. A link to a page without a label, or from a
        crawled page to a URL the crawl never fetched, teaches nothing and is left out."""
        out = []
        self.tally = {}
        for page_url, links, source, crawled in self.pages:
            if not keep_url(page_url):
                continue
            tally = self.tally.setdefault(source, Counter())
            source_label = label_of(w3lib_canonical(page_url))
            for anchor, context, url in links:
                if not keep_url(url):
                    continue
                label, outcome = self._target_label(url, label_of, crawled)
                tally[outcome] += 1
                if label is not None:
                    out.append(LinkExample(anchor, context, url, label, source_label, is_part_of(url, page_url)))
        return out

    def _target_label(self, url: str, label_of, crawled: bool) -> tuple[str | None, str]:
        """(label or None, outcome): the outcome is the tally key, one of LINK_OUTCOMES."""
        key = w3lib_canonical(url)
        for _ in range(MAX_REDIRECTS + 1):
            label = label_of(key)
            if label is not None:
                return label, "labelled"
            if key not in self.redirects:
                break
            key = self.redirects[key]
        if key in self.dead:
            return MISSING, "dead"
        if key in self.recorded:
            return None, "unlabelled"
        return (None, "unknown") if crawled else (MISSING, "dead")


#: What became of a link (LinkedWeb.tally's keys): an example labelled by its target, an example
#: to a dead URL; skipped: its target was answered but is unlabelled, or a crawl never fetched it.
LINK_OUTCOMES = ("labelled", "dead", "unlabelled", "unknown")


def part_prior(links: list[LinkExample], scores: np.ndarray, positive_labels: list[str]) -> dict:
    """What the training web says about a found page's parts, as a starting weight for the
    learner's ``part_of_hit`` feature.

    Whether a link from an on-topic page into that page's own directory leads on topic depends
    on the web: a course's syllabus and homework are not course pages (WebKB), a magazine
    section's articles are on the section's topic (the demo web). The link model reads a link's
    words, not where it stands, so it rates both kinds alike. Over the links from on-topic pages
    that it rates at least PART_PRIOR_MIN_SCORE (those that compete for the top of the frontier),
    the weight is how much more (or less) a part's target was worth to the learner than another
    link's, beyond what its link score already says: the difference between the two groups' mean
    residual ``reward - LINK_PRIORS' link_score weight x score``, where a target on topic is worth
    1, another page 0 and a URL never recorded the waste reward. Fewer than PART_PRIOR_MIN_LINKS
    links in either group: no weight (None)."""
    reward = np.array([1.0 if link.label in positive_labels else WASTE_REWARD if link.label == MISSING else 0.0
                       for link in links])
    from_topic = np.array([link.source_label in positive_labels for link in links], dtype=bool)
    chosen = from_topic & (scores >= PART_PRIOR_MIN_SCORE)
    part = np.array([link.part for link in links], dtype=bool)
    residual = reward - LINK_PRIORS[True]["link_score"] * scores
    groups = {"parts": chosen & part, "others": chosen & ~part}
    report = {name: {"links": int(mask.sum()), "on_topic": int((reward[mask] == 1.0).sum())}
              for name, mask in groups.items()}
    weight = None
    if min(int(mask.sum()) for mask in groups.values()) >= PART_PRIOR_MIN_LINKS:
        weight = float(np.clip(residual[groups["parts"]].mean() - residual[groups["others"]].mean(), -1.0, 1.0))
    report["weight"] = None if weight is None else round(weight, 3)
    report["min_score"] = PART_PRIOR_MIN_SCORE
    return report


def train_link_model(links: list[LinkExample], positive_labels: list[str], cv_folds: int = 5,
                     random_state: int = 0) -> tuple[Pipeline | None, dict]:
    """Fit the link model; the report says how many links taught it and how well it ranks
    held-out links (pooled out-of-fold average precision against the base rate). Returns
    ``(None, report)`` when there are too few positive links to learn from."""
    y = np.array([link.label in positive_labels for link in links], dtype=int)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    report = {"n_links": len(links), "n_positive": n_pos, "n_missing": sum(link.label == MISSING for link in links),
              "targets": dict(sorted(Counter(link.label for link in links).items())), "cv": None}
    if n_pos < MIN_POSITIVE_LINKS or n_neg < MIN_POSITIVE_LINKS:
        report["skipped"] = f"{n_pos} links to positive pages and {n_neg} to others; {MIN_POSITIVE_LINKS} of each needed"
        return None, report
    docs = [link.document for link in links]
    folds = min(int(cv_folds or 0), n_pos)
    if folds >= 2:
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=random_state)
        proba = cross_val_predict(build_link_pipeline(len(docs)), docs, y, cv=splitter, method="predict_proba")[:, 1]
        report["cv"] = {"folds": folds, "average_precision": float(average_precision_score(y, proba)),
                        "base_rate": n_pos / len(y)}
    pipeline = build_link_pipeline(len(docs)).fit(docs, y)
    if folds < 2:  # no held-out scores: the fitted model's own (optimistic) ones
        proba = pipeline.predict_proba(docs)[:, 1]
    report["part_prior"] = part_prior(links, proba, positive_labels)
    return pipeline, report
