"""A topic model from words alone: what a user who types "course syllabus lecture homework" gets.

The model is the same kind of scikit-learn pipeline a trained model is (a TF-IDF vectorizer, then
a logistic regression), so the crawl, the fast scorer, the learner, ``score_links`` and ``scrapy
explain`` use it unchanged; only its weights are written, not fitted:

- the vocabulary is the query's words, their plural and singular forms (a page about "lectures"
  matches "lecture"), and its adjacent word pairs (a phrase the user typed, "associate professor",
  found as typed, adds to its words' weight);
- a word weighs its inverse document frequency in the background corpus
  (``relevance.background``): "syllabus", which no software description uses, outweighs "class",
  which many do; a word typed twice weighs twice;
- a page's evidence is the sum, over the query's words it uses, of that weight times ``1 + log``
  of how often it uses it, divided by the query's whole weight: its *coverage* of the query
  (1.0: every word once; more when words repeat);
- P(on topic) = sigmoid(``SLOPE`` x (coverage - ``EVEN_COVERAGE``)): a page using half the
  query's weight is at even odds, one using none scores sigmoid(-3) = 0.05, one using every
  word once 0.95.
- a link is read on its own scale (``LinkWords``, the model's link pipeline): its anchor's and
  context's words and its URL's path split into words, with the same weights, at even odds when
  it names ``EVEN_LINK_WORDS`` of the query's average word: a link carries a few words, and one
  the user typed among them is as much evidence as half the query on a page;
- a page's own links are a field of the page (``LinkField``, the model's ``link_field``): the
  query's words they name, each once, times the share of its links that name any, add to its
  coverage (``TopicModel.score_page``): a course's home page says little but links to its
  syllabus and homework.

No length normalisation: a long page mentioning "class" once covers the query no more than a
short one does, and a course's page that says "homework" ten times covers it more than one that
says it once. It is a prior: a crawl grows a trained model from the pages it finds
(``relevance.growing``), which learns the words the user did not think of.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime, timezone

import numpy as np
import sklearn
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

import focuscrawl
from focuscrawl.relevance.model import MAX_TEXT_CHARS, TopicModel, TrainingError, model_document
from focuscrawl.urls import url_tokens

#: coverage at which a page is as likely on topic as not: half the query's weight
EVEN_COVERAGE = 0.5
#: how sharply the probability rises with coverage (a page with none of the words scores
#: sigmoid(-SLOPE / 2) = 0.05)
SLOPE = 6.0
#: a link's coverage at which it is as likely to lead on topic as not: a link carries a few words
#: (its anchor, the text around it, its URL's), so naming one of the query's words is evidence
#: that half the query is on a page; as a share of the query's weight, that of its average word
EVEN_LINK_WORDS = 1.0
#: a query needs at least one word of this many letters or more
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
#: a word inside an identifier or a path: letters and digits between anything else (underscores too)
_WORD_PART = re.compile(r"(?u)[^\W_]{2,}")


def query_terms(words: str) -> list[str]:
    """The query's words as the vectorizer reads them (lower case, accents stripped, words of two
    characters or more), in order, repeats kept."""
    analyzer = TfidfVectorizer(strip_accents="unicode", token_pattern=_TOKEN.pattern).build_analyzer()
    return analyzer(words or "")


def _forms(word: str) -> set[str]:
    """A word and its regular plural or singular: enough for a query's nouns, no stemmer needed."""
    forms = {word}
    if word.endswith("ies") and len(word) > 4:
        forms.add(word[:-3] + "y")
    elif word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        forms.add(word[:-2])
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        forms.add(word[:-1])
    else:
        forms.add(word[:-1] + "ies" if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou" else
                  word + ("es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s"))
    return forms


class LinkWords:
    """The query's vocabulary words a link ``(anchor, context, url)`` uses: its anchor's and
    context's words, and its URL's path and query split into words (``cpp/regex/regex_match``,
    ``CTEST_TEST_TIMEOUT``), each URL word counted once. A module-level class, so a model holding
    one pickles."""

    def __init__(self, vocabulary):
        self.vocabulary = frozenset(vocabulary)
        self.words = TfidfVectorizer(strip_accents="unicode", token_pattern=_TOKEN.pattern, ngram_range=(1, 2)).build_analyzer()

    def __call__(self, link) -> list[str]:
        anchor, context, url = link
        found = [w for w in self.words(f"{anchor} {context}") if w in self.vocabulary]
        path = " ".join(dict.fromkeys(url_tokens(url)))
        found += [w for w in dict.fromkeys(self.words(path)) if w in self.vocabulary]
        return found


class LinkField:
    """A page's links read as a field of the page: the query's words its links name (each link's
    anchor and URL, as ``LinkWords`` reads them; not the text around it, which is the page's own
    text), each word once at the page reading's weight, counted as the share of the page's links
    that name any of them.

    A page about a topic links to the topic's parts: a course's home page to its "Syllabus",
    "Homework" and ``lectures/``, a manual's chapter on threads to ``mutex`` and ``atomic``. Its
    text often says less (a course's home page may be a few lines titled "CSE 543 Home Page"),
    and a page about one part (an assignment) uses the words in its text as much as the home page
    does but names fewer of the other parts on links. The share is the field's own length
    normalisation (as BM25F normalises each field by its length): five of a course page's ten links
    naming its parts say the page is about the course, where a manual's menu of 300 links, the
    same on every page, naming "Strings library" and "Regular expressions" says little about any
    one page. A page all of whose links name the query's every word covers the whole query once
    more. A module-level class, so a model holding one pickles."""

    def __init__(self, weights: dict[str, float]):
        #: query term -> the log-odds it adds when every link names one of the query's words
        self.weights = dict(weights)
        self.words = LinkWords(self.weights)

    def read(self, links) -> tuple[dict[str, float], float]:
        """The query's words the ``links`` (``(anchor, context, url)``) name, ``{term: log-odds}``,
        and the share of the links that name any."""
        found: dict[str, float] = {}
        naming = total = 0
        for anchor, _context, url in links:
            total += 1
            terms = self.words((anchor, "", url))
            naming += bool(terms)
            for term in terms:
                found.setdefault(term, self.weights[term])
        return found, (naming / total if total else 0.0)

    def evidence(self, links) -> float:
        """The log-odds the page's links add to its words' (0.0 when they name no query word)."""
        found, share = self.read(links)
        return float(sum(found.values()) * share)

    def explain(self, links) -> list[tuple[str, float]]:
        """``(term, log-odds it added)`` for each query word the links name, largest first."""
        found, share = self.read(links)
        return sorted(((term, round(weight * share, 4)) for term, weight in found.items()),
                      key=lambda part: (-part[1], part[0]))


def build_query_model(words: str, background_docs: list[str] | None = None) -> TopicModel:
    """A TopicModel scoring pages and links by how much of the query ``words`` they use.
    ``background_docs`` (default: the shipped background corpus) give each word's rarity."""
    terms = query_terms(words)
    if not terms:
        raise TrainingError(f"the query {words!r} has no word to look for (words of two letters or more)")
    if background_docs is None:
        from focuscrawl.relevance.background import load_background

        background_docs = [model_document(e.title, e.text) for e in load_background()]
    weights: Counter = Counter()  # vocabulary term -> how many times the query asks for it
    for term in terms:
        for form in _forms(term):
            weights[form] += 1
    for first, second in zip(terms, terms[1:]):
        if first != second:
            weights[f"{first} {second}"] += 1
    vocabulary = sorted(weights)
    vectorizer = TfidfVectorizer(vocabulary=vocabulary, ngram_range=(1, 2), sublinear_tf=True, norm=None,
                                 strip_accents="unicode", token_pattern=_TOKEN.pattern, dtype=np.float64)
    vectorizer.fit(list(background_docs) or [""])  # idf: rarity in the background (smoothed)
    idf = vectorizer.idf_
    # the query's whole weight: each typed word once per time it was typed, at its rarity; a
    # plural form shares its word's count, and a typed pair of words found together is a bonus on
    # top (a page that uses every word, apart, covers the whole query)
    total = sum(idf[vectorizer.vocabulary_[t]] for t in terms)
    classifier = LogisticRegression()
    classifier.classes_ = np.array([0, 1])
    coef = np.array([[SLOPE * weights[term] / total for term in vocabulary]])
    classifier.coef_ = coef
    classifier.intercept_ = np.array([-SLOPE * EVEN_COVERAGE])
    classifier.n_features_in_ = len(vocabulary)
    pipeline = Pipeline([("tfidf", vectorizer), ("classifier", classifier)])
    link_pipeline = _link_pipeline(vectorizer, coef, terms)
    # a term's log-odds on a page, used once: its share of the query's weight, on the page scale
    field = LinkField({term: float(coef[0][j] * idf[j]) for term, j in vectorizer.vocabulary_.items()})
    metadata = {
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "start": "query",
        # its vocabulary is the user's few words, not pages': read through them, a page's other
        # words would become them (``undergraduate`` as ``graduate``; WebKB student from words
        # fell from 0.46 to 0.11, simulated). Its links' identifiers are split by its link reading.
        "page_reading": "written",
        "query": " ".join((words or "").split()),
        "query_terms": {term: round(float(idf[vectorizer.vocabulary_[term]]), 3) for term in dict.fromkeys(terms)},
        "positive_labels": ["on-topic"],
        "even_odds": 0.5,  # coverage EVEN_COVERAGE scores exactly 0.5
        "examples_per_class": {},
        "n_positive": 0,
        "n_negative": 0,
        "off_topic": {"kind": "query", "idf": "background corpus", "pages": len(background_docs)},
        "cv": None,
        "links": {"kind": "query", "even_coverage": round(EVEN_LINK_WORDS / len(set(terms)), 4)},
        "page_links": {"kind": "query", "reads": "the query's words the page's links name (anchor and URL), "
                                                 "each once, times the share of its links naming any"},
        "sources": [],
        "versions": {"sklearn": sklearn.__version__, "numpy": np.__version__, "focuscrawl": focuscrawl.__version__},
    }
    return TopicModel(pipeline, metadata, link_pipeline, link_field=field)


def _link_pipeline(vectorizer: TfidfVectorizer, coef: np.ndarray, terms: list[str]) -> Pipeline:
    """The query's words read on a link (``LinkWords``) with the page reading's weights, even odds
    at the coverage of ``EVEN_LINK_WORDS`` of the query's average word."""
    links = TfidfVectorizer(analyzer=LinkWords(vectorizer.vocabulary_), vocabulary=vectorizer.vocabulary_,
                            sublinear_tf=True, norm=None, dtype=np.float64)
    links.fit([("", "", "")])
    links.idf_ = vectorizer.idf_
    classifier = LogisticRegression()
    classifier.classes_ = np.array([0, 1])
    classifier.coef_ = coef.copy()
    classifier.intercept_ = np.array([-SLOPE * EVEN_LINK_WORDS / len(set(terms))])
    classifier.n_features_in_ = coef.shape[1]
    return Pipeline([("tfidf", links), ("classifier", classifier)])


#: a word read on links from a few on-topic pages is one at least this share of them use
SHARED_BY = 0.5
#: ... and this many times as often as the contrast's pages use it (Laplace-smoothed shares)
DISTINCT_RATIO = 2.0
#: as many words as a typed query has
LINK_WORD_COUNT = 6


def page_words(url: str, title: str, text: str) -> str:
    """What ``distinctive_words`` reads of a page: its URL's words (a link to it names them), its
    title and its text."""
    return f"{' '.join(url_tokens(url)) if url else ''} {title or ''} {(text or '')[:MAX_TEXT_CHARS]}"


def distinctive_words(pages: list[str], contrast: list[str], count: int = LINK_WORD_COUNT,
                      shared_by: float = SHARED_BY, ratio: float = DISTINCT_RATIO) -> list[tuple[str, float]]:
    """The words a few on-topic ``pages`` share and the ``contrast`` pages (other pages of the same
    sites, which the user did not pick) do not: ``(word, log of the two shares' ratio)``, most
    distinctive first, at most ``count``.

    A word qualifies when at least ``shared_by`` of the pages use it and they use it at least
    ``ratio`` times as often as the contrast does (each share Laplace-smoothed, so a word the
    contrast never uses is not infinitely distinctive on ten pages). The contrast is what makes
    the words the topic's rather than the site's: ten pages of one manual share its name, its
    header's and its footer's words, and so do the manual's other pages; against a corpus from
    elsewhere those words look as topical as the topic's own."""
    if not pages:
        return []
    # identifiers split into their words (``regex_search``, ``boost/xpressive/regex_primitives.hpp``),
    # as the link reading splits a URL's path: a word the pages use inside their names is theirs too
    analyze = TfidfVectorizer(strip_accents="unicode", token_pattern=_WORD_PART.pattern).build_analyzer()

    def document_frequency(docs):
        counts: Counter = Counter()
        for doc in docs:
            counts.update({w for w in analyze(doc) if not w.isdigit()})
        return counts

    used, elsewhere = document_frequency(pages), document_frequency(contrast)
    n, m = len(pages), len(contrast)
    least = max(1, int(np.ceil(shared_by * n)))
    scored = []
    for word, df in used.items():
        if df < least:
            continue
        lift = np.log((df + 1) / (n + 2)) - np.log((elsewhere[word] + 1) / (m + 2))
        if lift >= np.log(ratio):
            scored.append((word, float(lift), df))
    scored.sort(key=lambda s: (-s[1], -s[2], s[0]))
    return [(word, round(lift, 3)) for word, lift, _ in scored[:max(int(count), 0)]]


def attach_link_reading(model: TopicModel, pages: list[str], contrast: list[str], source: str,
                        background_docs: list[str] | None = None) -> list[tuple[str, float]]:
    """Give a model trained from a few on-topic pages alone a written link reading (``LinkWords``)
    over the words its pages share and ``contrast`` (pages of the same sites the user did not
    pick; ``source`` says where they came from) does not: a classifier fitted on ten pages reads a
    link as a tiny page, and a link naming the topic's words is what finds the rest of it. The
    model's ``metadata["links"]`` records the words, their lifts and the contrast; with no
    distinctive word, the model is left as it was. Returns the words chosen."""
    words = distinctive_words(pages, contrast)
    if not words:
        model.metadata["links"] = {"kind": "none", "why": "no word shared by the pages and rare in the contrast",
                                   "contrast": {"source": source, "pages": len(contrast)}}
        return []
    reading = build_query_model(" ".join(w for w, _ in words), background_docs)
    model.link_pipeline = reading.link_pipeline
    model.metadata["links"] = {
        **reading.metadata["links"],
        "words": dict(words),
        "contrast": {"source": source, "pages": len(contrast), "shared_by": SHARED_BY, "ratio": DISTINCT_RATIO},
    }
    return words
