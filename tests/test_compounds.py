"""Compound words read as the known words they are made of (``relevance.compounds``), and the page
model reading a link (``TopicModel.score_links`` without a link model) and a page that way."""
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import Pipeline

from focuscrawl.relevance.compounds import CompoundReader, segment
from focuscrawl.relevance.model import TopicModel, build_pipeline, model_document

KNOWN = {"test", "testing", "regex", "string", "view", "thread", "unit", "over", "loss", "make", "timeout"}


def test_an_unknown_compound_is_read_as_its_longest_known_parts():
    assert segment("ctest", KNOWN) == ["test"]  # a one-letter prefix is skipped, not read
    assert segment("unittest", KNOWN) == ["unit", "test"]
    assert segment("stringview", KNOWN) == ["string", "view"]
    assert segment("regexp", KNOWN | {"rege", "exp"}) == ["regex"]  # the longest word, not the most letters
    assert segment("multithreading", KNOWN | {"multi"}) == ["multi", "thread"]
    assert segment("multithreading", KNOWN) == []  # "thread" alone is not most of it


def test_parts_must_make_up_most_of_the_word_and_be_long_enough():
    assert segment("governance", KNOWN) == []  # "over" is a coincidence of spelling
    assert segment("glossary", KNOWN) == []  # half its letters: not most of it
    assert segment("xyz", KNOWN) == []
    assert segment("stview", {"st", "view"}) == ["view"]  # "st" is shorter than a part may be
    assert segment("ststview", {"st", "view"}) == []  # and "view" alone is not most of this one


def test_the_reader_rewrites_unknown_words_and_identifiers_only():
    read = CompoundReader(KNOWN | {"html", "ctestx"})
    assert read("ctest(1) unittest") == "test(1) unit test"
    assert read("CTEST_TEST_TIMEOUT") == "test test timeout"  # an identifier's pieces, each segmented
    assert read("testing ctestx html") == "testing ctestx html"  # known words read as they are
    assert read("governance qwerty") == "governance qwerty"  # nothing known in them: left as they are


def test_a_page_model_reads_compound_words_as_their_parts():
    """A model that knows "test" from its pages but never saw "ctest" reads a link to ``ctest.1.html``
    as one naming "test", and a page naming ``ctest`` as one naming "test"; the text around a link
    is read as written."""
    on = [("Testing", "unit test test suite testing assert"), ("Test driver", "run the test and check results")]
    off = [("Install", "download package install build"), ("Colors", "theme color palette font")] * 2
    docs = [model_document(t, x) for t, x in on + off]
    pipeline = build_pipeline(len(docs)).fit(docs, [1] * len(on) + [0] * len(off))
    model = TopicModel(pipeline, {})
    assert "ctest" not in pipeline.steps[0][1].vocabulary_
    ctest, other = model.score_links([("ctest(1)", "", "http://h.test/manual/ctest.1.html"),
                                      ("cpack(1)", "", "http://h.test/manual/cpack.1.html")])
    assert ctest > other
    assert ctest == model.score_many([("test(1)", " manual test 1 html")])[0]
    beside = model.score_links([("cpack(1)", "see ctest(1)", "http://h.test/manual/cpack.1.html")])[0]
    as_written = pipeline.predict_proba([model_document("cpack(1)", "see ctest(1) manual cpack 1 html")])[0, 1]
    assert beside == pytest.approx(as_written)  # the text around a link is not read so
    assert model.read_page("CTEST_TIMEOUT", "add_test(name)") == ("test", "test(name)")  # known parts only
    assert model.score("ctest", "run ctest") == model.score("test", "run test")
    assert model.score("ctest", "run ctest") > model.score("qwerty", "run qwerty")
    assert model.score("Testing", "unit test") == pytest.approx(
        pipeline.predict_proba([model_document("Testing", "unit test")])[0, 1])  # known words as they are


def test_a_pipeline_without_a_vocabulary_reads_links_unchanged():
    assert CompoundReader.for_pipeline(object()) is None
    vectorizer = TfidfVectorizer(analyzer=lambda doc: doc.split())
    vectorizer.fit(["a b"])  # a vocabulary of its own: read against it
    pipeline = Pipeline([("tfidf", vectorizer), ("classifier", LogisticRegression())])
    assert CompoundReader.for_pipeline(pipeline) is not None


def test_a_model_declares_how_it_reads_pages(tmp_path):
    """A trained model reads compounds, a words model reads as written (its metadata says so), a
    words model saved before models declared it still reads as written, and a reading this
    focuscrawl does not know is refused with a clear error."""
    from focuscrawl.relevance.model import ModelError
    from focuscrawl.relevance.query import build_query_model

    on = [("Testing", "unit test test suite testing assert")] * 2
    off = [("Install", "download package install build")] * 2
    pipeline = build_pipeline(4).fit([model_document(t, x) for t, x in on + off], [1, 1, 0, 0])
    trained = TopicModel(pipeline, {})
    assert trained.page_reading == "compounds" and trained.labelled_off_topic  # a model that does not say
    words = build_query_model("student graduate advisor", background_docs=["software package"] * 3)
    assert words.page_reading == "written"
    old = tmp_path / "old.joblib"
    words.metadata.pop("page_reading")
    words.save(old)
    assert TopicModel.load(old).page_reading == "written"
    strange = tmp_path / "strange.joblib"
    trained.metadata["page_reading"] = "backwards"
    trained.save(strange)
    with pytest.raises(ModelError, match="reads pages as 'backwards'"):
        TopicModel.load(strange)
