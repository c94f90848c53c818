"""The link reading a model learns from its example pages: which words it takes from the examples'
titles and URLs, and how it scores links with them (``relevance.link_reading``)."""

import pytest

from focuscrawl.relevance import train_topic_model
from focuscrawl.relevance.examples import Example
from focuscrawl.relevance.link_reading import LinkWords, example_link, learn_link_reading, topical_terms
from focuscrawl.relevance.query import build_query_model

THREADS = ["threading", "thread_pool", "mutex", "condition_variable", "atomic_flag", "async_future"]
OTHERS = ["string_view", "regex_match", "vector", "map", "iostream", "chrono", "filesystem", "locale",
          "bitset", "tuple", "optional", "variant"]


def examples():
    """A manual's pages: the concurrency pages live under thread/, the others elsewhere; every title
    names the manual (a word of both classes)."""
    pages = [Example(f"http://docs.test/cpp/thread/{name}.html", f"std::{name} - cppdocs",
                     f"the {name} page: threads run concurrently and share memory", "concurrency")
             for name in THREADS]
    pages += [Example(f"http://docs.test/cpp/{name.split('_')[0]}/{name}.html", f"std::{name} - cppdocs",
                      f"the {name} page: a library facility for values and text", "other")
              for name in OTHERS]
    return pages


def links_and_labels():
    pages = examples()
    return [example_link(e.url, e.title) for e in pages], [int(e.label == "concurrency") for e in pages]


def test_link_words_reads_the_anchor_context_and_url_words_each_url_word_once():
    reader = LinkWords()
    words = reader(("Thread pools", "see also", "http://docs.test/cpp/thread/thread_pool/thread.html"))
    assert words[:5] == ["thread", "pools", "see", "also", "thread pools"]
    assert words.count("thread") == 2  # once in the anchor, once for the whole URL
    assert "pool" in words and "cpp thread" in words
    assert LinkWords({"pool", "regex"})(("", "", "http://docs.test/cpp/thread/thread_pool.html")) == ["pool"]


def test_the_topical_terms_are_the_words_more_on_topic_links_use_by_share_and_at_least_two_of_them():
    terms = topical_terms(*links_and_labels())
    assert "thread" in terms and "cpp thread" in terms  # every concurrency page's URL, no other's
    assert "cppdocs" not in terms and "cpp" not in terms  # every page's: no evidence either way
    assert "mutex" not in terms  # one page's own name is not the topic's
    assert "regex" not in terms  # the other class's word
    assert list(terms) == sorted(terms, key=lambda t: (-terms[t], t))


def test_the_reading_scores_a_link_naming_the_topic_above_even_odds_and_one_naming_none_at_them():
    links, y = links_and_labels()
    reading, report = learn_link_reading(links, y)
    assert report["kind"] == "terms" and report["terms"] >= 2
    assert report["top"][0][0] in {"thread", "cpp thread", "thread html"}
    named, unnamed = reading.predict_proba([("jthread", "", "http://other.test/cpp/thread/jthread.html"),
                                            ("ranges", "", "http://other.test/cpp/ranges/ranges.html")])[:, 1]
    assert named > 0.5 and unnamed == pytest.approx(0.5)  # a link naming none of the words: no evidence


def test_no_reading_without_a_word_to_read_or_with_one_class():
    links, y = links_and_labels()
    assert learn_link_reading(links, [1] * len(y))[0] is None
    assert learn_link_reading(links, [0] * len(y))[0] is None
    lonely = [("a", "", "http://x.test/alpha.html"), ("b", "", "http://x.test/beta.html"),
              ("c", "", "http://x.test/gamma.html")]
    reading, report = learn_link_reading(lonely, [1, 0, 0])
    assert reading is None and report["terms"] == 0


def test_a_model_trained_from_example_pages_carries_the_reading_and_its_learner_keeps_learning_words():
    model, report = train_topic_model(examples(), ["concurrency"], cv_folds=0)
    assert report["links"]["kind"] == "terms"
    assert model.link_pipeline is not None and not model.learned_links
    thread, regex = model.score_links([("", "", "http://docs.test/cpp/thread/stop_token.html"),
                                       ("", "", "http://docs.test/cpp/regex/regex_search.html")])
    assert thread > 0.5 and regex == pytest.approx(0.5)
    # it orders links, it does not judge the page a link leads to: its words are the training web's
    assert not model.judges_by_links and model.with_link_evidence(0.3, thread) == 0.3
    assert train_topic_model(examples(), ["concurrency"], cv_folds=0, link_model=False)[0].link_pipeline is None


def test_a_words_model_reads_links_with_the_same_reader():
    model = build_query_model("thread mutex", background_docs=["a page about text", "another about values"])
    assert isinstance(model.link_pipeline.named_steps["tfidf"].analyzer, LinkWords)
    assert not model.learned_links and model.judges_by_links
    thread, none = model.score_links([("", "", "http://docs.test/cpp/thread/jthread.html"),
                                      ("", "", "http://docs.test/cpp/regex/regex_search.html")])
    assert thread == pytest.approx(0.5, abs=0.2) and none < thread

