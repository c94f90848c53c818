"""Training examples from every format, the topic model, cross-validation, save/load."""

from __future__ import annotations

import io
import json
import math
import random
from collections import Counter
from pathlib import Path

import joblib
import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.relevance import (
    Example,
    ExamplesError,
    ModelError,
    TopicModel,
    TrainingError,
    load_examples,
    train_topic_model,
)
from focuscrawl.relevance.linear import LinearScorer
from focuscrawl.relevance.model import build_pipeline, model_document

SHARED = Path(__file__).resolve().parents[2] / "shared"
WEBKB = SHARED / "webkb"

COURSE_WORDS = "syllabus lecture homework exam assignment midterm grading textbook semester instructor".split()
OTHER_WORDS = "research publications project funding laboratory group members paper conference".split()
COMMON_WORDS = "the university computer science department page home welcome information".split()


def fake_text(topic_words: list[str], rng: random.Random, n: int = 60) -> str:
    pool = topic_words * 2 + COMMON_WORDS
    return " ".join(rng.choice(pool) for _ in range(n))


def corpus(n_per_label: int = 12, seed: int = 0) -> list[dict]:
    """Deterministic pages: ``course`` and ``other`` words, hosts a.example / b.example."""
    rng = random.Random(seed)
    pages = []
    for label, words in (("course", COURSE_WORDS), ("other", OTHER_WORDS)):
        for i in range(n_per_label):
            host = "a.example" if i % 2 else "b.example"
            pages.append({
                "url": f"http://{host}/{label}/{i}.html",
                "title": f"{label} page {i}",
                "text": fake_text(words, rng),
                "label": label,
            })
    return pages


def html_of(page: dict) -> bytes:
    return (f"<html><head><title>{page['title']}</title></head><body><!WA0><p>{page['text']}</p>"
            f"<a href='/next'>next</a></body></html>").encode("latin-1")


def write_warc(path: Path, records: list[tuple[str, str, str, bytes]]) -> Path:
    """records: (url, status line, content type, body)."""
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=path.suffix == ".gz")
        for url, status, content_type, body in records:
            headers = StatusAndHeaders(status, [("Content-Type", content_type)], protocol="HTTP/1.0")
            writer.write_record(writer.create_warc_record(
                url, "response", payload=io.BytesIO(body), http_headers=headers))
    return path


def write_labels(path: Path, pages: list[dict], extra_column: bool = True) -> Path:
    lines = ["url\tlabel\tuniversity" if extra_column else "url\tlabel"]
    lines += [f"{p['url']}\t{p['label']}" + ("\tmisc" if extra_column else "") for p in pages]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def pages():
    return corpus()


@pytest.fixture
def warc_and_labels(tmp_path, pages):
    records = [(p["url"], "200 OK", "text/html", html_of(p)) for p in pages]
    records += [
        ("http://a.example/missing", "404 Not Found", "text/html", b"<p>gone</p>"),
        ("http://a.example/image.gif", "200 OK", "image/gif", b"GIF89a"),
        ("http://a.example/unlabelled.html", "200 OK", "text/html", b"<p>nobody labelled me</p>"),
    ]
    warc = write_warc(tmp_path / "pages.warc.gz", records)
    labels = write_labels(tmp_path / "labels.tsv", pages)
    return warc, labels


# --- examples ---------------------------------------------------------------------------------

def test_warc_examples_take_labels_from_the_tsv(warc_and_labels, pages):
    warc, labels = warc_and_labels
    examples = load_examples([warc], labels_path=labels)
    assert len(examples) == len(pages)
    assert Counter(e.label for e in examples) == {"course": 12, "other": 12}
    assert examples.skipped["no label"] == 1  # 404 and GIF are not pages
    first = examples[0]
    assert isinstance(first, Example)
    assert (first.url, first.title, first.label) == (pages[0]["url"], pages[0]["title"], "course")
    assert first.text.startswith(pages[0]["text"][:40])
    assert "WA0" not in first.text


def test_uncompressed_warc_is_read_too(tmp_path, pages):
    warc = write_warc(tmp_path / "pages.warc",
                      [(p["url"], "200 OK", "text/html; charset=iso-8859-1", html_of(p)) for p in pages])
    examples = load_examples([warc], labels_path=write_labels(tmp_path / "l.tsv", pages, False))
    assert len(examples) == len(pages)


def test_host_filters(warc_and_labels):
    warc, labels = warc_and_labels
    only_a = load_examples([warc], labels_path=labels, include_host=r"^a\.example$")
    assert only_a and all("//a.example/" in e.url for e in only_a)
    not_a = load_examples([warc], labels_path=labels, exclude_host=r"^a\.")
    assert not_a and all("//b.example/" in e.url for e in not_a)
    assert len(only_a) + len(not_a) == 24
    assert not_a.skipped["host filtered"] == len(only_a)  # unlabelled pages are counted apart


def test_jsonl_examples(tmp_path, pages):
    path = tmp_path / "examples.jsonl"
    lines = [json.dumps({"url": p["url"], "html": html_of(p).decode("latin-1"), "label": p["label"]})
             for p in pages[:4]]
    lines += [json.dumps({"text": "  plain   text page ", "title": "T", "label": "other"})]
    lines += ["this is not json", json.dumps([1, 2]), json.dumps({"text": "no label"}),
              json.dumps({"url": "http://x.example/", "label": "course"}), ""]
    lines += [json.dumps({"url": "http://labelled.example/", "text": "label from the tsv"})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    labels = tmp_path / "labels.tsv"
    labels.write_text("url\tlabel\nhttp://labelled.example/\tcourse\n", encoding="utf-8")
    examples = load_examples([path], labels_path=labels)
    assert [e.label for e in examples] == ["course"] * 4 + ["other", "course"]
    assert examples[0].title == pages[0]["title"]
    assert examples[4].text == "plain text page" and examples[4].title == "T"
    assert examples.skipped == {"not JSON": 1, "not a JSON object": 1, "no label": 1,
                                "no html or text": 1}


def test_folder_examples(tmp_path):
    for label in ("course", "other"):
        (tmp_path / "ex" / label).mkdir(parents=True)
    (tmp_path / "ex" / "course" / "a.html").write_bytes(b"<title>CS 101</title><p>syllabus</p>")
    (tmp_path / "ex" / "course" / "b.txt").write_bytes("Cours d'été, théorème".encode("latin-1"))
    (tmp_path / "ex" / "other" / "c.htm").write_text("<p>research</p>", encoding="utf-8")
    (tmp_path / "ex" / "other" / "ignored.pdf").write_bytes(b"%PDF")
    (tmp_path / "ex" / "README").write_text("not a label folder", encoding="utf-8")
    examples = load_examples([tmp_path / "ex"])
    assert [(e.label, e.title, e.text) for e in examples] == [
        ("course", "CS 101", "syllabus"),
        ("course", "", "Cours d'été, théorème"),
        ("other", "", "research"),
    ]
    assert examples[0].url.startswith("file://")


def test_crawl_store_examples(tmp_path, pages):
    pytest.importorskip("focuscrawl.store")
    from focuscrawl.items import PageItem
    from focuscrawl.store import CrawlStore

    store = CrawlStore(str(tmp_path / "crawl.db"))
    for i, p in enumerate(pages[:6]):
        final = p["url"] + "?redirected" if i == 1 else p["url"]
        store.add_page(PageItem(url=p["url"] if i != 1 else "http://a.example/old", final_url=final,
                                status=200, title=p["title"], text=p["text"]))
    store.add_page(PageItem(url="http://a.example/unlabelled", final_url="http://a.example/unlabelled",
                            status=200, title="t", text="x"))
    store.close()
    labels = tmp_path / "labels.tsv"
    rows = ["url\tlabel"] + [f"{p['url']}\t{p['label']}" for p in pages[:6]]
    rows[2] = f"{pages[1]['url']}?redirected\t{pages[1]['label']}"  # matched on final_url
    labels.write_text("\n".join(rows) + "\n", encoding="utf-8")
    examples = load_examples([tmp_path / "crawl.db"], labels_path=labels)
    assert len(examples) == 6
    assert examples.skipped["no label"] == 1
    assert {e.title for e in examples} == {p["title"] for p in pages[:6]}


@pytest.mark.parametrize("make,message", [
    (lambda d: d / "nope.warc.gz", "no such file or folder"),
    (lambda d: _write(d / "notes.csv", b"a,b,c\n1,2,3\n"), "unknown format"),
    (lambda d: _write(d / "empty.jsonl", b"not json\n"), "no usable example"),
    (lambda d: _mkdir(d / "emptyfolder"), "has no examples"),
    (lambda d: _write(d / "broken.warc", b"WARC/1.0\r\nthis is not a warc\r\n\r\n"), "WARC"),
])
def test_examples_errors(tmp_path, make, message):
    with pytest.raises(ExamplesError, match=message):
        load_examples([make(tmp_path)])


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _mkdir(path: Path) -> Path:
    path.mkdir()
    return path


def test_warc_needs_labels(warc_and_labels):
    warc, _ = warc_and_labels
    with pytest.raises(ExamplesError, match="--labels"):
        load_examples([warc])


def test_warc_with_no_labelled_pages(warc_and_labels, tmp_path):
    warc, _ = warc_and_labels
    labels = tmp_path / "other.tsv"
    labels.write_text("url\tlabel\nhttp://elsewhere.example/\tcourse\n", encoding="utf-8")
    with pytest.raises(ExamplesError, match="no page in .* has a label"):
        load_examples([warc], labels_path=labels)


def test_labels_file_without_url_label_columns(warc_and_labels, tmp_path):
    warc, _ = warc_and_labels
    labels = tmp_path / "bad.tsv"
    labels.write_text("address\tclass\nhttp://a.example/\tcourse\n", encoding="utf-8")
    with pytest.raises(ExamplesError, match="'url' and 'label' columns"):
        load_examples([warc], labels_path=labels)
    with pytest.raises(ExamplesError, match="labels file not found"):
        load_examples([warc], labels_path=tmp_path / "missing.tsv")


def test_bad_host_regex(warc_and_labels):
    warc, labels = warc_and_labels
    with pytest.raises(ExamplesError, match="not a valid regular expression"):
        load_examples([warc], labels_path=labels, include_host="(")


# --- training ---------------------------------------------------------------------------------

def examples_of(pages: list[dict]) -> list[Example]:
    return [Example(p["url"], p["title"], p["text"], p["label"]) for p in pages]


def test_training_cross_validates_and_scores(pages):
    model, report = train_topic_model(examples_of(pages), ["course"], cv_folds=3)
    assert report["examples_per_class"] == {"course": 12, "other": 12}
    assert (report["n_positive"], report["n_negative"]) == (12, 12)
    assert report["cv"]["folds"] == 3
    assert report["cv"]["f1"] > 0.9
    on = model.score("CS 101", "syllabus lecture homework exam midterm grading")
    off = model.score("Lab", "research publications funding laboratory conference")
    assert 0.0 <= off < 0.5 < on <= 1.0
    assert model.score_many([("CS 101", "syllabus homework"), ("Lab", "research funding")])[0] > 0.5
    assert model.score_many([]) == []
    assert model.positive_labels == ["course"]


def test_fewer_folds_when_a_class_is_small(pages):
    small = pages[:3] + pages[12:]  # 3 course, 12 other
    _, report = train_topic_model(examples_of(small), ["course"], cv_folds=5)
    assert report["cv"]["folds"] == 3
    _, report = train_topic_model(examples_of(pages[:1] + pages[12:]), ["course"], cv_folds=5)
    assert report["cv"] is None


def test_several_positive_labels(pages):
    extra = [dict(p, label="seminar") for p in corpus(4, seed=1)[:4]]
    model, report = train_topic_model(examples_of(pages + extra), "course,seminar".split(","), cv_folds=2)
    assert report["n_positive"] == 16 and report["positive_labels"] == ["course", "seminar"]


def test_training_refuses_unknown_label(pages):
    with pytest.raises(TrainingError, match="unknown label 'courses'; labels present: course, other"):
        train_topic_model(examples_of(pages), ["courses"])


def test_training_refuses_without_negatives(pages):
    with pytest.raises(TrainingError, match="negative"):
        train_topic_model(examples_of(pages[:12]), ["course"], background=False)
    with pytest.raises(TrainingError, match="no training examples"):
        train_topic_model([], ["course"])
    with pytest.raises(TrainingError, match="no positive label"):
        train_topic_model(examples_of(pages), [" "])


def test_even_odds_score_undoes_the_class_balancing(pages):
    """Trained class-balanced, the model scores as if half the pages were on topic: with 4 on-topic
    examples in 16, a page is as likely on topic as not where the model says 12/16."""
    model, _ = train_topic_model(examples_of(pages[:4] + pages[12:]), ["course"], cv_folds=2)
    assert model.even_odds_score == pytest.approx(12 / 16)
    balanced, _ = train_topic_model(examples_of(pages), ["course"], cv_folds=2)
    assert balanced.even_odds_score == pytest.approx(0.5)
    assert TopicModel(balanced.pipeline, {}).even_odds_score == 0.5  # counts unknown: no correction


def test_link_evidence_adds_the_links_log_odds_to_the_pages(pages):
    """Both models are trained class-balanced, so each one's log-odds is its evidence: the link's
    (times the weight) is added to the page's; a neutral link (0.5) changes nothing, and without a
    link, a weight or a link model the page's score stands."""
    model, _ = train_topic_model(examples_of(pages[:4] + pages[12:]), ["course"], cv_folds=2)
    model.link_pipeline = object()  # only its presence matters here

    def logit(p):
        return math.log(p / (1 - p))

    for score, link, weight in ((0.9, 0.8, 1.0), (0.9, 0.1, 1.0), (0.3, 0.95, 0.5), (0.6, 0.5, 1.0)):
        combined = model.with_link_evidence(score, link, weight)
        assert logit(combined) == pytest.approx(logit(score) + weight * logit(link))
    assert model.with_link_evidence(0.7, 0.5) == pytest.approx(0.7)
    assert model.with_link_evidence(0.7, 0.9) > 0.7 > model.with_link_evidence(0.7, 0.2)
    assert 0 < model.with_link_evidence(1.0, 0.0) < 1  # clipped: no infinite log-odds
    assert 0 <= model.with_link_evidence(0.01, 1e-9, weight=60) < 1e-300  # far past exp's range: no overflow
    assert model.with_link_evidence(0.7, None) == model.with_link_evidence(0.7, 0.9, weight=0) == 0.7
    model.link_pipeline = None  # links were read by this same model: not counted twice
    assert model.with_link_evidence(0.7, 0.9) == 0.7


def test_probability_puts_even_odds_at_one_half(pages):
    model, _ = train_topic_model(examples_of(pages[:4] + pages[12:]), ["course"], cv_folds=2)
    assert model.probability(model.even_odds_score) == pytest.approx(0.5)
    assert model.probability(0.5) == pytest.approx(4 / 16)  # the balanced 0.5 is the base rate
    assert model.probability(0.99) > model.probability(0.9) > 0.5 > model.probability(0.6)


def test_save_load_round_trip(tmp_path, pages):
    model, report = train_topic_model(examples_of(pages), ["course"], cv_folds=3)
    path = tmp_path / "models" / "course.joblib"
    model.save(path)
    loaded = TopicModel.load(path)
    docs = [(p["title"], p["text"]) for p in pages]
    assert loaded.score_many(docs) == pytest.approx(model.score_many(docs))
    meta = loaded.metadata
    assert meta["positive_labels"] == ["course"]
    assert meta["examples_per_class"] == {"course": 12, "other": 12}
    assert set(meta["versions"]) == {"sklearn", "numpy", "focuscrawl"}
    assert set(meta["cv"]) >= {"precision", "recall", "f1"}
    assert meta["created"].endswith("+00:00")
    raw = joblib.load(path)
    assert (raw["format"], raw["version"]) == ("focuscrawl-topic-model", 1)
    assert list(path.parent.iterdir()) == [path]  # no temp file left behind


def test_load_errors(tmp_path, pages):
    model, _ = train_topic_model(examples_of(pages), ["course"], cv_folds=0)
    good = tmp_path / "good.joblib"
    model.save(good)
    data = good.read_bytes()
    cases = {
        "missing.joblib": None,
        "garbage.joblib": bytes(random.Random(1).randrange(256) for _ in range(2000)),
        "truncated.joblib": data[: len(data) // 2],
        "text.joblib": b"hello, I am a text file\n",
    }
    for name, content in cases.items():
        if content is not None:
            (tmp_path / name).write_bytes(content)
        with pytest.raises(ModelError) as info:
            TopicModel.load(tmp_path / name)
        assert "\n" not in str(info.value) and name in str(info.value)
    joblib.dump([1, 2, 3], tmp_path / "list.joblib")
    with pytest.raises(ModelError, match="not a focuscrawl topic model .*list"):
        TopicModel.load(tmp_path / "list.joblib")
    payload = joblib.load(good)
    payload["version"] = 99
    joblib.dump(payload, tmp_path / "future.joblib")
    with pytest.raises(ModelError, match="version 99"):
        TopicModel.load(tmp_path / "future.joblib")
    with pytest.raises(ModelError, match="not a file"):
        TopicModel.load(tmp_path)


# --- WebKB (real 1996 pages) -------------------------------------------------------------------

@pytest.mark.webkb
@pytest.mark.skipif(not (WEBKB / "webkb.warc.gz").exists(), reason="../shared/webkb is absent")
def test_webkb_misc_universities_course_model():
    """Train on the 'misc' universities only (the four departments are for crawling)."""
    examples = load_examples([WEBKB / "webkb.warc.gz"], labels_path=WEBKB / "labels.tsv",
                             exclude_host=r"(^|\.)(cornell|utexas|washington|wisc)\.edu$")
    assert 3500 < len(examples) < 4500
    assert Counter(e.label for e in examples)["course"] > 600
    model, report = train_topic_model(examples, ["course"], cv_folds=3)
    # Measured: precision 0.86, recall 0.92, F1 0.89 with 5 folds.
    assert report["cv"]["f1"] > 0.8
    assert model.score("CS 302 Fall 1996", "Syllabus, lecture notes, homework 3 due Friday") > 0.5
    # the link model learned from the misc pages' links (measured: average precision 0.43 with
    # 5 folds, base rate 0.008)
    assert report["links"]["n_positive"] > 300
    assert report["links"]["cv"]["average_precision"] > 0.3


# --- the fast scorer: the pipeline's probabilities without its per-call overhead ------------------

def scoring_docs(pages) -> list[str]:
    """Every page, one page with no word the model knows, an empty one, one word many times."""
    docs = [(p["title"], p["text"]) for p in pages] + [("zzz", "qqq unknownword"), ("", ""), ("CS", "syllabus " * 50)]
    return [model_document(title, text) for title, text in docs]


@pytest.mark.parametrize("vectorizer", [
    None,  # the pipeline scrapy train builds: float32, word 1-2 grams, sublinear tf, accents stripped
    TfidfVectorizer(),  # float64, plain tf
    TfidfVectorizer(binary=True, use_idf=False, norm=None),
    TfidfVectorizer(sublinear_tf=True, dtype=np.float32, norm=None),
])
def test_the_fast_scorer_computes_the_pipelines_probabilities_exactly(pages, vectorizer):
    texts = [model_document(p["title"], p["text"]) for p in pages]
    labels = [p["label"] == "course" for p in pages]
    if vectorizer is None:
        pipeline = build_pipeline(len(texts)).fit(texts, labels)
    else:
        pipeline = make_pipeline(vectorizer, LogisticRegression(C=10.0)).fit(texts, labels)
    docs = scoring_docs(pages)
    expected = pipeline.predict_proba(docs)[:, 1]
    scorer = LinearScorer.for_pipeline(pipeline)
    assert np.array_equal(scorer._proba(docs), expected)  # the same numbers, not close ones
    assert np.array_equal(scorer._proba(docs[:1]), expected[:1])  # one at a time, as the crawl scores
    assert scorer.score_many(docs) == expected.tolist() and scorer.checked and not scorer.disagrees


def test_topic_model_scores_with_the_fast_scorer_and_steps_aside_when_it_disagrees(pages):
    model, _ = train_topic_model(examples_of(pages), ["course"], cv_folds=0)
    docs = [(p["title"], p["text"]) for p in pages]
    expected = model.pipeline.predict_proba([model_document(t, x) for t, x in docs])[:, 1].tolist()
    assert [model.score(t, x) for t, x in docs] == expected and model.score_many(docs) == expected
    # a scikit-learn that computed otherwise: the first batch is checked, the pipeline takes over
    scorer = LinearScorer.for_pipeline(model.pipeline)
    scorer.coef = scorer.coef * 1.01
    texts = [model_document(t, x) for t, x in docs]
    assert scorer.score_many(texts) == expected and scorer.disagrees
    assert scorer.score_many(texts[:2]) == expected[:2]


def test_the_fast_scorer_reads_only_tfidf_and_binary_logistic_regression_pipelines(pages):
    texts = [model_document(p["title"], p["text"]) for p in pages]
    three = [("course", "other", "third")[i % 3] for i in range(len(texts))]
    assert LinearScorer.for_pipeline(make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(texts, three)) is None
    assert LinearScorer.for_pipeline(make_pipeline(TfidfVectorizer(norm="l1"), LogisticRegression())
                                     .fit(texts, [t == "course" for t in three])) is None
    assert LinearScorer.for_pipeline(build_pipeline(len(texts))) is None  # not fitted
    assert LinearScorer.for_pipeline(LogisticRegression()) is None
