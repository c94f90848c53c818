"""Reading a link by the topic's words: its anchor's and context's words and its URL's words.

On a manual's web a link says what its page is about: ``ctest.1.html``, ``cpp/regex/regex_match``,
an anchor "Thread Objects". A topic model's page classifier reads a link badly (a link is not a
small page: its few words dilute nothing, and the classifier's weights are tuned to whole pages),
so a model carries a *link reading*: a vocabulary of the topic's words, found on a link by
``LinkWords``, weighted, and a logistic regression turning the sum into P(the link leads on topic)
on the class-balanced scale the page model uses (so ``TopicModel.with_link_evidence`` adds the two
log-odds). One reader, two ways to weigh its words:

- written from a user's words (``relevance.query``): the query's words at their rarity;
- learned from example pages (``learn_link_reading``): each example is read as the link that would
  lead to it, its title as the anchor and its own URL (a link's anchor is most often its target's
  title or a part of it); the vocabulary is the words that more of the on-topic examples' links
  use than of the others' (a share, so the classes' sizes do not matter) and at least
  ``MIN_POSITIVE_LINKS`` of them (one page's own name is not the topic's); a class-balanced
  logistic regression weighs them. Its even odds is a link naming none of them: no evidence either
  way (an example's title names far more than a link's anchor does, so the share of the examples'
  links naming none, which the regression's intercept measures, is not a crawl's). Nothing is
  fitted to a web beyond the examples themselves.

A learned reading orders the frontier (a link's ``link_score``, which the learner weighs and
re-weighs by what the crawl finds) but does not judge the page a link leads to
(``TopicModel.with_link_evidence``): its words are the training web's own (Boost's ``xpressive``
for text, people's names on WebKB), so counted as evidence about a page they decide which pages
count as found on a web that does not use them (docs/research.md, "One learner for every web").
A crawl's learner still learns link words from the crawl's own pages beside either reading
(``TopicModel.learned_links`` is false for both): the reading knows only the words of its
examples or its query.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from focuscrawl.urls import url_tokens

#: the words the readers read: two characters or more, accents stripped, lower case
TOKEN = re.compile(r"(?u)\b\w\w+\b")
#: a learned word is one that at least this many on-topic examples' links use
MIN_POSITIVE_LINKS = 2
#: the ``metadata["links"]["kind"]`` of a reading of the topic's words (not a link model)
LINK_READINGS = ("query", "terms")
#: the kind of a reading learned from example pages
LEARNED_READING = "terms"
#: the learned reading's regularisation, scikit-learn's default: the vocabulary is already chosen
LEARNED_C = 1.0


def link_analyzer():
    """Word 1-2 grams as the readers and the page model's vectorizer read them."""
    return TfidfVectorizer(strip_accents="unicode", token_pattern=TOKEN.pattern, ngram_range=(1, 2)).build_analyzer()


class LinkWords:
    """The vocabulary's words a link ``(anchor, context, url)`` uses: its anchor's and context's
    words, and its URL's path and query split into words (``cpp/regex/regex_match``,
    ``CTEST_TEST_TIMEOUT``), each URL word counted once. Without a vocabulary, every word (what a
    reading's vocabulary is chosen from). A module-level class, so a model holding one pickles."""

    def __init__(self, vocabulary=None):
        self.vocabulary = None if vocabulary is None else frozenset(vocabulary)
        self.words = link_analyzer()

    def __call__(self, link) -> list[str]:
        anchor, context, url = link
        found = self.words(f"{anchor} {context}")
        path = " ".join(dict.fromkeys(url_tokens(url)))
        found += list(dict.fromkeys(self.words(path)))
        if self.vocabulary is None:
            return found
        return [w for w in found if w in self.vocabulary]


def example_link(url: str, title: str) -> tuple[str, str, str]:
    """The link that would lead to an example page: its title as the anchor, its own URL."""
    return (title or "", "", url or "")


def topical_terms(links, y) -> dict[str, float]:
    """The words more on-topic links use than others, as a share of each class (``y``: 1 on topic),
    used by at least ``MIN_POSITIVE_LINKS`` on-topic links: term -> log of the ratio of shares
    (add-one smoothed), largest first."""
    y = np.asarray(y, dtype=int)
    n_pos, n_neg = int(y.sum()), int(len(y) - y.sum())
    reader = LinkWords()
    on, off = Counter(), Counter()
    for link, label in zip(links, y):
        (on if label else off).update(set(reader(link)))
    ratio = {}
    for term, count in on.items():
        if count < MIN_POSITIVE_LINKS:
            continue
        lift = ((count + 1) / (n_pos + 2)) / ((off.get(term, 0) + 1) / (n_neg + 2))
        if lift > 1.0:
            ratio[term] = float(np.log(lift))
    return dict(sorted(ratio.items(), key=lambda item: (-item[1], item[0])))


def learn_link_reading(links, y) -> tuple[Pipeline | None, dict]:
    """A link reading learned from the links ``(anchor, context, url)`` to labelled pages (``y``: 1
    on topic): the topical terms read by ``LinkWords``, weighed by a class-balanced logistic
    regression. ``(None, report)`` when no word qualifies or a class is empty."""
    y = np.asarray(y, dtype=int)
    if y.sum() == 0 or y.sum() == len(y):
        return None, {"kind": "terms", "terms": 0, "why": "one class only"}
    terms = topical_terms(links, y)
    if not terms:
        return None, {"kind": "terms", "terms": 0, "why": f"no word that {MIN_POSITIVE_LINKS}+ on-topic links use more than others"}
    vocabulary = {term: i for i, term in enumerate(sorted(terms))}
    pipeline = Pipeline([
        ("tfidf", TfidfVectorizer(analyzer=LinkWords(vocabulary), vocabulary=vocabulary, sublinear_tf=True,
                                  norm=None, dtype=np.float64)),
        ("classifier", LogisticRegression(class_weight="balanced", C=LEARNED_C, max_iter=2000)),
    ])
    pipeline.fit(list(links), y)
    # a link naming none of the words is no evidence either way: an example's title, read as its
    # anchor, names far more than a link's anchor does, so the examples' share of links naming none
    # is not a crawl's
    pipeline.named_steps["classifier"].intercept_[:] = 0.0
    coef = pipeline.named_steps["classifier"].coef_[0]
    weights = sorted(((float(coef[i]), term) for term, i in vocabulary.items()), reverse=True)
    report = {"kind": "terms", "terms": len(vocabulary),
              "top": [[term, round(weight, 3)] for weight, term in weights[:12] if weight > 0]}
    return pipeline, report


__all__ = ["LEARNED_READING", "LINK_READINGS", "LinkWords", "example_link", "learn_link_reading", "link_analyzer", "topical_terms"]
