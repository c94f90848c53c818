"""A crawl's duplicate indexes in its crawl store (focuscrawl.store.dedup), against the in-process ones."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash
from focuscrawl.store import CrawlStore, StoreError
from focuscrawl.store.dedup import StoreExactIndex, StoreNearIndex
from tests.test_dedup import ORIGINAL, article, crawl_like_calls, near_copy


@pytest.fixture
def store(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as opened:
        opened.begin_crawl()
        yield opened


def indexes(store, crawl=None, **parameters):
    crawl = store.crawl_id if crawl is None else crawl
    return StoreExactIndex(store.connection, crawl), StoreNearIndex(store.connection, crawl, **parameters)


def judge(exact, near, key: str, text: str):
    """What DuplicatesPipeline asks: the exact index, then the near one."""
    return exact.find_or_add(key, content_hash(text)) or near.find_or_add(key, text)


@pytest.mark.parametrize("threshold", [0.5, 0.8, 0.9, 1.0])
def test_same_answers_as_the_in_process_indexes(store, threshold):
    calls = crawl_like_calls(120, seed=int(threshold * 10))
    exact, near = indexes(store, threshold=threshold)
    memory = ExactDuplicateIndex(), NearDuplicateIndex(threshold=threshold)
    answers = [judge(exact, near, *call) for call in calls]
    assert answers == [judge(*memory, *call) for call in calls]
    assert any(answers) and len(near) == len(memory[1]) and len(exact) == len(memory[0])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3), st.integers(0, 4)), max_size=25))
def test_any_order_of_pages_gets_the_in_process_answers(tmp_path_factory, calls):
    """Keys, base texts and edits drawn at random: re-fetches with new content, copies of copies."""
    bases = [ORIGINAL, article(2), article(3, words=60), "Page not found"]
    with CrawlStore(tmp_path_factory.mktemp("store") / "crawl.db") as store:
        store.begin_crawl()
        exact, near = indexes(store)
        memory = ExactDuplicateIndex(), NearDuplicateIndex()
        for key, base, edit in calls:
            text = near_copy(bases[base], edit, changes=edit * 4) if edit and len(bases[base].split()) > 5 else bases[base]
            call = (f"http://a/{key}", text)
            assert judge(exact, near, *call) == judge(*memory, *call)


def test_a_re_fetch_with_changed_content_replaces_the_signature(store):
    _, near = indexes(store)
    other = article(7)
    assert near.find_or_add("http://a/1", ORIGINAL) is None
    assert near.find_or_add("http://a/1", other) is None  # the page now says something else
    assert near.find_or_add("http://a/2", ORIGINAL) is None  # the old content is forgotten
    assert near.find_or_add("http://a/3", near_copy(other, 1)) == "http://a/1"
    assert len(near) == 2
    rows = store.connection.execute("SELECT COUNT(*) FROM dedup_bands").fetchone()[0]
    assert rows == 2 * near.bands  # the old signature's band entries went with it


def test_committed_indexes_are_found_again_by_the_same_crawl_only(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        first = store.begin_crawl()
        exact, near = indexes(store)
        assert judge(exact, near, "http://a/1", ORIGINAL) is None
        assert judge(exact, near, "http://a/2", "Page not found") is None
        store.connection.commit()
    with CrawlStore(path) as store:
        exact, near = indexes(store, crawl=first)
        assert near.kept
        assert judge(exact, near, "http://b/1", near_copy(ORIGINAL, 3)) == "http://a/1"
        assert judge(exact, near, "http://b/2", ORIGINAL.upper()) == "http://a/1"
        assert judge(exact, near, "http://b/3", " page NOT found") == "http://a/2"
        second = store.begin_crawl()
        exact, near = indexes(store, crawl=second)
        assert not near.kept and len(near) == 0 and len(exact) == 0
        assert judge(exact, near, "http://c/1", ORIGINAL) is None  # a new crawl is not judged by the old one


def test_what_was_not_committed_is_gone_with_the_process_as_its_page_is(tmp_path):
    """A SIGKILL between a page's index entries and its page's commit loses both: the index never
    holds a page the store does not."""
    path = tmp_path / "crawl.db"
    store = CrawlStore(path)
    crawl = store.begin_crawl()
    exact, near = indexes(store)
    store.connection.commit()
    assert judge(exact, near, "http://a/1", ORIGINAL) is None
    store.connection.close()  # no commit: what a kill does
    store._conn = None
    with CrawlStore(path) as again:
        exact, near = indexes(again, crawl=crawl)
        assert near.kept and len(near) == 0 and len(exact) == 0


def test_other_parameters_drop_the_crawls_entries_and_say_so(store, caplog):
    exact, near = indexes(store, threshold=0.9)
    assert not near.kept
    assert judge(exact, near, "http://a/1", ORIGINAL) is None
    assert judge(exact, near, "http://a/2", "Page not found") is None
    with caplog.at_level(logging.WARNING):
        _, other = indexes(store, threshold=0.8)
    assert not other.kept and len(other) == 0
    assert "threshold=0.9" in caplog.text and "threshold=0.8" in caplog.text
    assert indexes(store, threshold=0.8)[1].kept


def test_a_broken_store_is_a_store_error(store):
    exact, near = indexes(store)
    store.connection.execute("DROP TABLE dedup_bands")
    with pytest.raises(StoreError, match="duplicate index"):
        near.find_or_add("http://a/1", ORIGINAL)
    store.close()
    with pytest.raises(StoreError):
        exact.find_or_add("http://a/1", "digest")


def test_signatures_of_other_sizes_are_refused(store):
    _, near = indexes(store)
    m = near.minhash({"a b c d e"})
    m.hashvalues = m.hashvalues[:64]
    with pytest.raises(ValueError, match="128 permutations"):
        near.find_or_add_minhash("http://a/1", m)


def test_band_keys_are_the_same_in_every_process(store):
    """Band keys are stored: they must not depend on the process's hash seed."""
    import subprocess
    import sys

    _, near = indexes(store)
    signature = near._as_signature(near.minhash({"one two three four five"}).hashvalues)
    code = ("import numpy as np, sys; from focuscrawl.store.dedup import StoreNearIndex; import sqlite3; "
            "n = StoreNearIndex(sqlite3.connect(':memory:'), 1); "
            "print(n._band_keys(np.frombuffer(bytes.fromhex(sys.argv[1]), dtype='<u4')))")
    for seed in ("1", "2"):
        out = subprocess.run([sys.executable, "-c", code, signature.tobytes().hex()], capture_output=True, text=True,
                             env={**__import__("os").environ, "PYTHONHASHSEED": seed}, check=True).stdout
        assert out.strip() == str(near._band_keys(signature))


def test_tables_are_made_once_and_read_by_an_older_reader_as_before(store):
    indexes(store)
    indexes(store)
    tables = {row[0] for row in store.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"dedup_exact", "dedup_near", "dedup_bands", "dedup_parameters"} <= tables
    assert store.count() == 0 and store.crawls()[0]["pages"] == 0

