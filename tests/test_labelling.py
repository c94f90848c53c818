"""The labelling loop's cores: labels in the crawl store, the queue that picks pages to judge, and
retraining a model from the labels given (``scrapy train CRAWL.db``)."""

from __future__ import annotations

import json
import random
import sqlite3

import numpy as np
import pytest
from scipy import sparse

from focuscrawl.labelling import LabelError
from focuscrawl.labelling.queue import LabelQueue, choose, density, extract_of, section_of, uncertainty
from focuscrawl.relevance import TopicModel, load_examples, train_topic_model
from focuscrawl.store import CrawlStore
from tests.test_train_command import assert_one_error, scrapy

TOPIC = "telescope galaxy orbit nebula comet planet astronomer spectrum".split()
OTHER = "recipe flour oven butter sugar bake dough kitchen".split()
COMMON = "the page news about our site today".split()


def text(words, rng, n=40, mix=None):
    pool = words * 3 + COMMON + (mix or [])
    return " ".join(rng.choice(pool) for _ in range(n))


def page(url, title, body, **extra):
    return {"url": url, "final_url": url, "status": 200, "title": title, "text": body, "score": 0.5, **extra}


@pytest.fixture
def model(tmp_path):
    rng = random.Random(1)
    path = tmp_path / "examples.jsonl"
    with path.open("w") as out:
        for i in range(10):
            out.write(json.dumps({"url": f"http://train.example/a{i}", "text": text(TOPIC, rng), "label": "astro"}) + "\n")
            out.write(json.dumps({"url": f"http://train.example/b{i}", "text": text(OTHER, rng), "label": "baking"}) + "\n")
    examples = load_examples([path])
    trained, _ = train_topic_model(examples, ["astro"], cv_folds=0)
    saved = tmp_path / "start.joblib"
    trained.save(saved)
    return saved


# --- labels in the store ------------------------------------------------------------------------

def test_a_label_is_kept_with_who_and_when_and_the_latest_one_counts(tmp_path):
    store = CrawlStore(tmp_path / "crawl.db")
    store.begin_crawl()
    store.add_page(page("http://a.example/1", "One", "words"))
    store.add_page({**page("http://a.example/2", "Two", "words"), "final_url": "http://a.example/2/"})
    first = store.add_label("http://a.example/1", "On-Topic ", who="ann")
    assert first["label"] == "on-topic" and first["who"] == "ann" and first["at"] and first["crawl"] == 1
    store.add_label("http://a.example/1", "off-topic", who="bob")
    store.add_label("http://a.example/2/", "skip")  # the final URL finds the page requested as /2
    store.close()

    reopened = CrawlStore(tmp_path / "crawl.db", create=False)
    latest = {row["url"]: (row["label"], row["who"]) for row in reopened.labels()}
    assert latest == {"http://a.example/1": ("off-topic", "bob"), "http://a.example/2": ("skip", "")}
    assert [row["label"] for row in reopened.labels(history=True)] == ["on-topic", "off-topic", "skip"]
    assert reopened.label_of("http://a.example/1") == "off-topic"
    assert reopened.labels(crawl=2) == []


def test_bad_labels_and_unknown_pages_are_one_line_errors(tmp_path):
    store = CrawlStore(tmp_path / "crawl.db")
    store.add_page(page("http://a.example/1", "One", "words"))
    with pytest.raises(LabelError, match="unknown label 'maybe'"):
        store.add_label("http://a.example/1", "maybe")
    with pytest.raises(LabelError, match="holds no page"):
        store.add_label("http://a.example/404", "on-topic")
    with pytest.raises(LabelError, match="in crawl 7"):
        store.add_label("http://a.example/1", "on-topic", crawl=7)
    assert store.labels() == []


def test_labels_written_by_another_process_are_seen_by_a_store_opened_before(tmp_path):
    reader = CrawlStore(tmp_path / "crawl.db")
    reader.add_page(page("http://a.example/1", "One", "words"))
    reader.flush()
    assert reader.labels() == []  # no table yet
    writer = CrawlStore(tmp_path / "crawl.db", create=False)
    writer.add_label("http://a.example/1", "on-topic", who="console")
    writer.close()
    assert [row["label"] for row in reader.labels()] == ["on-topic"]


def test_a_store_without_a_labels_table_reads_as_unlabelled(tmp_path):
    CrawlStore(tmp_path / "crawl.db").close()
    with sqlite3.connect(tmp_path / "crawl.db") as conn:
        assert "labels" not in {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    store = CrawlStore(tmp_path / "crawl.db", create=False)
    assert store.labels() == [] and store.label_of("http://x/") is None


def test_a_label_reads_with_where_its_page_ended(tmp_path):
    store = CrawlStore(tmp_path / "crawl.db")
    store.add_page({**page("http://a.example/2", "Two", "words"), "final_url": "http://a.example/2/"})
    store.add_page(page("http://a.example/3", "Three", "words"))
    store.add_label("http://a.example/2", "on-topic")
    store.add_label("http://a.example/3", "off-topic")
    ends = {row["url"]: row["final_url"] for row in store.labels(final_urls=True)}
    assert ends == {"http://a.example/2": "http://a.example/2/", "http://a.example/3": "http://a.example/3"}
    assert "final_url" not in store.labels()[0]


def test_the_model_a_crawl_used_is_read_from_its_row_and_found_beside_the_store(tmp_path, monkeypatch):
    (tmp_path / "stores").mkdir()
    (tmp_path / "stores" / "m.joblib").write_bytes(b"x")
    store = CrawlStore(tmp_path / "stores" / "crawl.db")
    assert store.crawl_model() is None and store.crawl(1) is None
    store.begin_crawl(model="m.joblib", settings={"FOCUS_BUDGET": 10})  # relative: an older store
    store.end_crawl()
    store.begin_crawl()  # a crawl that names no model
    monkeypatch.chdir(tmp_path)
    assert store.crawl_model() == (str(tmp_path / "stores" / "m.joblib"), 1)
    assert store.crawl_model(2) is None
    assert store.crawl(1)["settings"] == {"FOCUS_BUDGET": 10} and store.crawl(1)["end_reason"] is None
    assert store.crawl(2)["model"] is None and "pages" not in store.crawl(2)


def test_only_a_file_that_starts_as_sqlite_reads_as_a_crawl_store(tmp_path):
    from focuscrawl.store import is_crawl_store

    CrawlStore(tmp_path / "crawl.db").close()
    (tmp_path / "notes.txt").write_text("SQLite is a database")
    assert is_crawl_store(tmp_path / "crawl.db")
    assert not is_crawl_store(tmp_path / "notes.txt") and not is_crawl_store(tmp_path / "absent.db")
    assert not is_crawl_store(tmp_path)


# --- choosing pages ---------------------------------------------------------------------------------

def unit(rows):
    X = np.asarray(rows, dtype=float)
    return sparse.csr_matrix(X / np.linalg.norm(X, axis=1, keepdims=True))


def test_the_page_the_model_is_least_sure_of_comes_first_then_turns_alternate_sides():
    X = unit(np.eye(5))
    picks = choose(X, [0.97, 0.52, 0.03, 0.8, 0.3], ["a", "b", "c", "d", "e"], 5, densities=np.ones(5))
    # on-topic side: 0.52, 0.8, 0.97; off-topic side: 0.3, 0.03; each side most uncertain first
    assert [i for i, _ in picks] == [1, 4, 3, 2, 0]
    assert uncertainty([0.5])[0] == 1.0 and uncertainty([0.0, 1.0]).tolist() == [0.0, 0.0]


def test_a_crawl_where_the_model_leans_off_topic_still_gets_its_on_topic_side_judged():
    X = unit(np.eye(40))
    p = np.r_[np.full(36, 0.45), [0.9, 0.95, 0.97, 0.99]]  # the most uncertain pages all lean off topic
    picks = [i for i, _ in choose(X, p, [f"h{i}" for i in range(40)], 10, densities=np.ones(40))]
    assert sorted(i for i in picks if i >= 36) == [36, 37, 38, 39]  # every on-leaning page, in turn
    assert picks[:2] == [36, picks[1]] and picks[1] < 36


def test_a_batch_is_spread_over_hosts():
    X = unit(np.eye(6))
    hosts = ["a"] * 4 + ["b", "b"]
    picks = [i for i, _ in choose(X, [0.5] * 4 + [0.45, 0.45], hosts, 4, densities=np.ones(6))]
    assert picks[0] in range(4) and picks[1] in (4, 5)  # the most uncertain, then the other host
    assert sorted(hosts[i] for i in picks) == ["a", "a", "b", "b"]


def test_a_page_like_one_already_judged_waits():
    X = unit([[1, 0, 0], [1, 0.01, 0], [0, 1, 0]])
    labelled = unit([[1, 0, 0]])
    picks = [i for i, _ in choose(X, [0.5, 0.5, 0.4], ["a", "b", "c"], 3, labelled=labelled, densities=np.ones(3))]
    assert picks[0] == 2


def test_a_representative_page_is_worth_more_than_an_equally_uncertain_outlier():
    X = unit([[1, 0.1 * i, 0] for i in range(1, 6)] + [[0, 0, 1]])
    assert density(X, X)[:5].min() > 0.7 and density(X, X)[5] == 0.0  # five neighbours: the outlier is one
    first = choose(X, [0.5] * 6, [f"h{i}" for i in range(6)], 1)[0][0]
    assert first in range(5)


def test_section_and_extract():
    assert section_of("http://www.cs.wisc.edu/~smith/cs302.html") == ("www.cs.wisc.edu", "/~smith/")
    assert section_of("http://www.cs.wisc.edu/index.html") == ("www.cs.wisc.edu", "/")
    long = "word " * 500
    assert len(extract_of(long)) <= 602 and extract_of(long).endswith("…")
    assert extract_of("  a\n b  ") == "a b"


def test_the_queue_reads_a_growing_store_and_leaves_out_what_it_should(tmp_path, model):
    rng = random.Random(2)
    store = CrawlStore(tmp_path / "crawl.db")
    store.begin_crawl(model=str(model))
    for i in range(6):
        store.add_page(page(f"http://s{i % 3}.example/p/{i}", f"page {i}", text(TOPIC, rng, mix=OTHER * 4)))
    store.add_page(page("http://s0.example/dup", "dup", text(TOPIC, rng), duplicate_of="http://s0.example/p/0"))
    store.add_page({**page("http://s0.example/gone", "", ""), "status": 404})
    store.add_page(page("http://s1.example/empty", "", ""))
    queue = LabelQueue(store, TopicModel.load(model))
    first = queue.next(3)
    assert len(first) == 3 and len({c.host for c in first}) == 3  # three hosts, three pages
    every = queue.next(20)
    assert {c.url for c in every} == {f"http://s{i % 3}.example/p/{i}" for i in range(6)}
    assert all(0.0 <= c.score <= 1.0 and c.why and c.extract and c.crawl == 1 for c in every)
    for side in ([c for c in every if c.score >= 0.5], [c for c in every if c.score < 0.5]):
        assert [c.value for c in side] == sorted((c.value for c in side), reverse=True)  # each side best first

    store.add_label(first[0].url, "on-topic", who="t")
    store.add_label(first[1].url, "skip", who="t")
    store.add_page(page("http://s9.example/new", "new", text(TOPIC, rng, mix=OTHER * 4)))  # the crawl goes on
    after = {c.url for c in queue.next(20)}
    assert first[0].url not in after and first[1].url not in after
    assert "http://s9.example/new" in after
    assert len(queue.pool()) == len(after)


# --- retraining from the labels given -------------------------------------------------------------

@pytest.mark.slow
def test_scrapy_train_retrains_the_crawls_model_with_the_labels_given(tmp_path, model):
    rng = random.Random(3)
    store = CrawlStore(tmp_path / "crawl.db")
    store.begin_crawl(model=str(model))
    for i in range(8):
        words = TOPIC if i % 2 else OTHER
        store.add_page(page(f"http://c.example/{i}", f"crawl {i}", text(words, rng)))
    for i in range(8):
        store.add_label(f"http://c.example/{i}", "on-topic" if i % 2 else "off-topic", who="t")
    store.add_label("http://c.example/0", "skip", who="t")  # the latest judgement counts: no evidence
    store.close()
    result = scrapy(["train", str(tmp_path / "crawl.db"), "-o", str(tmp_path / "new.joblib"), "--cv-folds", "0"],
                    tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"retraining {model}" in result.stdout
    assert "has none: the crawl learns its links' words as it goes" in result.stdout  # none before, none after
    new = TopicModel.load(tmp_path / "new.joblib")
    assert new.link_pipeline is None
    per_class = new.metadata["examples_per_class"]
    assert per_class == {"astro": 10, "baking": 10, "on-topic": 4, "off-topic": 3}
    assert set(new.positive_labels) == {"astro", "on-topic"}
    assert [len(group["paths"]) for group in new.metadata["sources"]] == [1, 1]
    assert new.metadata["sources"][1]["paths"] == [str((tmp_path / "crawl.db").resolve())]
    # the new model remembers both: retraining it again reads the examples and the store
    again = scrapy(["train", str(tmp_path / "crawl.db"), "--base", str(tmp_path / "new.joblib"),
                    "-o", str(tmp_path / "again.joblib"), "--cv-folds", "0"], tmp_path)
    assert again.returncode == 0, again.stderr
    assert TopicModel.load(tmp_path / "again.joblib").metadata["n_positive"] == 14


@pytest.mark.slow
def test_a_store_labelled_only_by_people_trains_without_a_positive_label(tmp_path):
    rng = random.Random(4)
    store = CrawlStore(tmp_path / "crawl.db")
    for i in range(6):
        store.add_page(page(f"http://c.example/{i}", f"crawl {i}", text(TOPIC if i % 2 else OTHER, rng)))
        store.add_label(f"http://c.example/{i}", "on-topic" if i % 2 else "off-topic")
    store.close()
    result = scrapy(["train", str(tmp_path / "crawl.db"), "-o", str(tmp_path / "m.joblib"), "--cv-folds", "0"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert TopicModel.load(tmp_path / "m.joblib").positive_labels == ["on-topic"]


@pytest.mark.slow
def test_retraining_when_the_models_examples_are_gone_is_one_line(tmp_path, model):
    (tmp_path / "examples.jsonl").unlink()
    store = CrawlStore(tmp_path / "crawl.db")
    store.begin_crawl(model=str(model))
    store.add_page(page("http://c.example/1", "one", "telescope galaxy"))
    store.add_label("http://c.example/1", "on-topic")
    store.close()
    result = scrapy(["train", str(tmp_path / "crawl.db"), "-o", str(tmp_path / "m.joblib")], tmp_path)
    assert_one_error(result, "training examples are gone", "examples.jsonl")


@pytest.mark.slow
def test_retraining_a_crawl_whose_model_is_gone_names_it(tmp_path, model):
    store = CrawlStore(tmp_path / "crawl.db")
    store.begin_crawl(model=str(tmp_path / "moved.joblib"))
    store.add_page(page("http://c.example/1", "one", "telescope galaxy"))
    store.add_label("http://c.example/1", "on-topic")
    store.close()
    result = scrapy(["train", str(tmp_path / "crawl.db"), "-o", str(tmp_path / "m.joblib")], tmp_path)
    assert_one_error(result, "moved.joblib", "which is gone", "--base")


@pytest.mark.slow
def test_an_unlabelled_store_says_how_to_label_it(tmp_path):
    store = CrawlStore(tmp_path / "crawl.db")
    store.add_page(page("http://c.example/1", "one", "telescope galaxy"))
    store.close()
    result = scrapy(["train", str(tmp_path / "crawl.db"), "--positive", "astro", "-o", str(tmp_path / "m.joblib")],
                    tmp_path)
    assert_one_error(result, "scrapy label")
