"""One crawl, one record: a store holds several crawls without mixing them, a resumed JOBDIR
takes its own crawl up again, a killed run's unexported pages are emitted again, a page fetched
again after a kill is not exported twice, and ``scrapy export`` exports one crawl."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys

import pytest
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from focuscrawl import signals as focus_signals
from focuscrawl.dedup import content_hash
from focuscrawl.feeds import DurableFileFeedStorage, feeds_durability
from focuscrawl.items import PageItem
from focuscrawl.pipelines import CRAWL_RECORD, DuplicatesPipeline, RelevantItemsPipeline, StorePipeline
from focuscrawl.store import FIELDS, CrawlStore, StoreError

BODY = " ".join(f"word{i % 97} topic{i % 13} thing{i % 7}" for i in range(150))


def page(url: str, relevant: bool = True, text: str = BODY, **kw) -> PageItem:
    return PageItem(url=url, final_url=url, status=200, text=text, relevant=relevant, score=0.9 if relevant else 0.1,
                    content_hash=content_hash(text) if text else "", **kw)


# --- the store's crawls ------------------------------------------------------------------------

def test_a_second_crawl_never_overwrites_the_first(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        first = store.begin_crawl(model="models/a.joblib", settings={"FOCUS_BUDGET": 10})
        store.add_page(page("http://a/1"))
        store.add_page(page("http://a/2", relevant=False))
        store.end_crawl("finished")
    with CrawlStore(path) as store:
        second = store.begin_crawl(model="models/b.joblib")
        store.add_page(page("http://a/1", title="second"))
    assert (first, second) == (1, 2)
    with CrawlStore(path, create=False) as store:
        assert [p["url"] for p in store.iter_pages(crawl=1)] == ["http://a/1", "http://a/2"]
        assert [p["title"] for p in store.iter_pages(crawl=2)] == ["second"]
        assert store.count() == 3 and store.count(crawl=1, relevant_only=True) == 1
        assert store.get_page("http://a/1")["title"] == "second"  # the latest fetch
        assert store.get_page("http://a/1", crawl=1)["title"] == ""
        crawls = store.crawls()
        assert [(c["id"], c["pages"], c["relevant"], c["model"]) for c in crawls] == [
            (1, 2, 1, "models/a.joblib"), (2, 1, 1, "models/b.joblib")]
        assert crawls[0]["settings"] == {"FOCUS_BUDGET": 10} and crawls[0]["end_reason"] == "finished"
        assert crawls[1]["ended_at"] is None  # never ended: running, or killed
        assert store.latest_crawl() == 2 and store.crawl_ids() == [1, 2]


def test_a_writer_without_a_crawl_gets_one_and_resume_needs_a_known_crawl(tmp_path):
    with CrawlStore(tmp_path / "s.db") as store:
        store.add_page(page("http://a/1"))
        assert store.crawl_id == 1
        with pytest.raises(StoreError, match="holds no crawl 7"):
            store.resume_crawl(7)


def test_exported_marks_survive_a_refetch(tmp_path):
    with CrawlStore(tmp_path / "s.db") as store:
        store.begin_crawl()
        assert store.add_page(page("http://a/1")) is False
        store.add_page(page("http://a/2"))
        store.mark_exported(["http://a/1"])
        assert [p["url"] for p in store.iter_pages(crawl=1, exported=False)] == ["http://a/2"]
        assert store.add_page(page("http://a/1", title="again")) is True  # fetched again: still exported
        assert store.count(exported=True) == 1


def _v1_store(path) -> None:
    """A store as focuscrawl wrote it before crawl ids (schema 1), with a page and its links."""
    conn = sqlite3.connect(path)
    cols = ", ".join(f"{name} TEXT" + (" NOT NULL UNIQUE" if name == "url" else "") for name in FIELDS)
    conn.executescript(f"""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema', 'focuscrawl-crawl-store'), ('schema_version', '1'),
                                ('created_at', '2026-01-01T00:00:00+00:00');
        CREATE TABLE pages (id INTEGER PRIMARY KEY AUTOINCREMENT, {cols});
        CREATE TABLE links (page INTEGER PRIMARY KEY, n INTEGER NOT NULL, data BLOB NOT NULL);
        INSERT INTO pages (url, final_url, status, relevant, text) VALUES ('http://old/1', 'http://old/1', 200, 1, 'x');
    """)
    conn.commit()
    conn.close()


def test_a_store_from_before_crawl_ids_is_upgraded_in_place(tmp_path):
    path = tmp_path / "old.db"
    _v1_store(path)
    with CrawlStore(path, create=False) as store:
        assert store.meta()["schema_version"] == "2"
        assert [(c["id"], c["pages"]) for c in store.crawls()] == [(1, 1)]
        assert store.count(crawl=1, exported=True) == 1  # its feeds are unknown: nothing is emitted again
    with CrawlStore(path) as store:
        store.begin_crawl()
        store.add_page(page("http://old/1"))  # the same URL in a new crawl: a row of its own
        assert store.count() == 2


# --- the pipelines: one crawl id per JOBDIR, re-emission, no second export ----------------------

def _pipelines(tmp_path, feeds=True, **settings):
    from focuscrawl.addon import MAPPINGS

    values = {"JOBDIR": str(tmp_path / "job"), "FEED_STORAGES": MAPPINGS["FEED_STORAGES"], **settings}
    if feeds:
        values["FEEDS"] = {str(tmp_path / "out.jsonl"): {"format": "jsonlines"}}
    crawler = get_crawler(settings_dict=values)
    opened = []
    crawler.signals.connect(lambda **kw: opened.append(kw), signal=focus_signals.crawl_opened, weak=False)
    dedup, store, gate = (DuplicatesPipeline.from_crawler(crawler), StorePipeline.from_crawler(crawler),
                          RelevantItemsPipeline.from_crawler(crawler))
    store.open_spider()
    return crawler, dedup, store, gate, opened[0]


def _through(crawler, pipes, item):
    """An item through the pipelines and, like Scrapy, item_scraped when none dropped it."""
    try:
        for pipe in pipes:
            item = pipe.process_item(item)
    except DropItem:
        return None
    crawler.signals.send_catch_log(__import__("scrapy").signals.item_scraped, item=item, response=None, spider=None)
    return item


def test_a_resumed_jobdir_takes_its_crawl_up_and_emits_what_no_feed_has(tmp_path):
    crawler, dedup, store, gate, opened = _pipelines(tmp_path)
    assert (opened["crawl_id"], opened["resumed"], list(opened["to_export"])) == (1, False, [])
    assert json.loads((tmp_path / "job" / CRAWL_RECORD).read_text())["crawl"] == 1
    pipes = (dedup, store, gate)
    _through(crawler, pipes, page("http://a/1"))
    # the kill: a/2 reached the store, not the feed; a/3 is a duplicate; a/4 is irrelevant
    for item in (page("http://a/2", text="a page of its own " * 30), page("http://a/3"),
                 page("http://a/4", relevant=False, text="other words entirely " * 20)):
        dedup.process_item(item)
        store.process_item(item)
    # resumed: the same JOBDIR
    crawler2, dedup2, store2, gate2, opened2 = _pipelines(tmp_path)
    assert (opened2["crawl_id"], opened2["resumed"]) == (1, True)
    to_export = list(opened2["to_export"])
    assert len(opened2["to_export"]) == 1 and [(p.url, p.restored) for p in to_export] == [("http://a/2", True)]
    pipes2 = (dedup2, store2, gate2)
    assert _through(crawler2, pipes2, to_export[0]) is not None
    # a/1 fetched again (in flight at the kill): stored, not exported twice
    assert _through(crawler2, pipes2, page("http://a/1")) is None
    assert crawler2.stats.get_value("focus/items/dropped_exported") == 1
    # the duplicate indexes were rebuilt: a copy of a/1 is still a duplicate after the resume
    copy = dedup2.process_item(page("http://b/copy"))
    assert copy.duplicate_of == "http://a/1"
    store2._on_spider_closed(reason="finished")
    with CrawlStore(tmp_path / "job" / "crawl.db", create=False) as db:
        assert [(c["id"], c["end_reason"]) for c in db.crawls()] == [(1, "finished")]
        assert {p["url"] for p in db.iter_pages(exported=True)} == {"http://a/1", "http://a/2"}


@pytest.mark.parametrize("older_store", [False, True])
def test_a_resumed_crawl_finds_its_duplicate_indexes_or_rebuilds_them_from_its_pages(tmp_path, caplog, older_store):
    crawler, dedup, store, gate, _ = _pipelines(tmp_path)
    for item in (page("http://a/1"), page("http://a/2", text="a page of its own " * 30), page("http://a/3")):
        _through(crawler, (dedup, store, gate), item)
    if older_store:  # pages stored by a focuscrawl that kept its indexes in memory
        with sqlite3.connect(tmp_path / "job" / "crawl.db") as db:
            for table in ("dedup_exact", "dedup_near", "dedup_bands", "dedup_parameters"):
                db.execute(f"DROP TABLE {table}")
    with caplog.at_level(logging.INFO, logger="focuscrawl.pipelines"):
        crawler2, dedup2, *_ = _pipelines(tmp_path)
    assert ("rebuilt from 3 stored pages" in caplog.text) is older_store
    assert dedup2.process_item(page("http://b/copy")).duplicate_of == "http://a/1"
    assert dedup2.process_item(page("http://b/own", text="a page of its own " * 30)).duplicate_of == "http://a/2"
    assert dedup2.process_item(page("http://a/2", text="a page of its own " * 30)).duplicate_of is None


def test_a_new_jobdir_into_the_same_store_is_a_new_crawl(tmp_path):
    shared = str(tmp_path / "shared.db")
    *_, first = _pipelines(tmp_path / "one", FOCUS_STORE=shared)
    *_, second = _pipelines(tmp_path / "two", FOCUS_STORE=shared)
    assert (first["crawl_id"], second["crawl_id"], second["resumed"]) == (1, 2, False)


def test_no_feed_means_nothing_marked_and_nothing_emitted_until_a_run_has_one(tmp_path):
    crawler, dedup, store, gate, _ = _pipelines(tmp_path, feeds=False)
    _through(crawler, (dedup, store, gate), page("http://a/1"))
    *_, resumed = _pipelines(tmp_path, feeds=True)  # the same crawl, now with a feed
    assert [(p.url, p.text, p.restored) for p in resumed["to_export"]] == [("http://a/1", BODY, True)]


def test_feed_durability_is_read_from_the_feeds(tmp_path):
    def durability(feeds):
        from focuscrawl.addon import MAPPINGS

        return feeds_durability(get_crawler(settings_dict={"FEEDS": feeds,
                                                           "FEED_STORAGES": MAPPINGS["FEED_STORAGES"]}).settings)
    assert durability({}) is None
    assert durability({str(tmp_path / "a.jsonl"): {"format": "jsonlines"}}) == "each"
    assert durability({f"file://{tmp_path}/a.jsonl": {"format": "jsonlines"}}) == "each"
    assert durability({"s3://bucket/a.jsonl": {"format": "jsonlines"}}) == "at-close"
    assert durability({str(tmp_path / "a.jsonl.gz"): {"format": "jsonlines",
                       "postprocessing": ["scrapy.extensions.postprocessing.GzipPlugin"]}}) == "at-close"


def test_the_durable_feed_file_has_each_line_without_a_flush(tmp_path):
    storage = DurableFileFeedStorage(str(tmp_path / "sub" / "f.jsonl"))
    handle = storage.open(None)
    handle.write(b'{"a": 1}\n')
    assert (tmp_path / "sub" / "f.jsonl").read_bytes() == b'{"a": 1}\n'  # in the OS, not a buffer
    storage.store(handle)


# --- scrapy export --crawl / --crawls -------------------------------------------------------------

def _export(cwd, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")}
    return subprocess.run([sys.executable, "-m", "focuscrawl", "export", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_export_takes_the_latest_crawl_or_the_one_named(tmp_path):
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = focuscrawl.settings\n")
    with CrawlStore(tmp_path / "crawl.db") as store:
        store.begin_crawl(model="a.joblib")
        store.add_page(page("http://a/1"))
        store.add_page(page("http://a/2"))
        store.end_crawl("finished")
        store.begin_crawl(model="b.joblib")
        store.add_page(page("http://b/1"))
    latest = _export(tmp_path, "-o", "latest.jsonl")
    assert latest.returncode == 0, latest.stderr
    assert "wrote 1 page of crawl 2" in latest.stdout and "1 other crawl" in latest.stdout
    assert [json.loads(line)["url"] for line in (tmp_path / "latest.jsonl").read_text().splitlines()] == ["http://b/1"]
    first = _export(tmp_path, "-o", "first.jsonl", "--crawl", "1")
    assert first.returncode == 0 and "wrote 2 pages of crawl 1" in first.stdout
    listing = _export(tmp_path, "--crawls")
    assert listing.returncode == 0
    rows = [line.split() for line in listing.stdout.splitlines()[1:]]
    assert [(r[0], r[-1]) for r in rows] == [("1", "a.joblib"), ("2", "b.joblib")]
    missing = _export(tmp_path, "-o", "x.jsonl", "--crawl", "9")
    assert missing.returncode == 2 and "holds no crawl 9 (its crawls: 1, 2)" in missing.stderr
    bad = _export(tmp_path, "-o", "x.jsonl", "--crawl", "latest")
    assert bad.returncode == 2 and "--crawl must be a crawl id" in bad.stderr


def test_a_worker_of_a_shared_crawl_started_again_takes_its_part_up(tmp_path, redis_url):
    """No JOBDIR: the worker's store knows its part of the shared crawl by the Redis and crawl name."""
    def opened_with(**settings):
        crawler = get_crawler(settings_dict={"FOCUS_STORE": str(tmp_path / "w.db"), "FOCUS_FRONTIER_URL": redis_url,
                                             **settings})
        opened = []
        crawler.signals.connect(lambda **kw: opened.append(kw), signal=focus_signals.crawl_opened, weak=False)
        store = StorePipeline.from_crawler(crawler)
        store.open_spider()
        store.store.close()
        return opened[0]

    first = opened_with(FOCUS_CRAWL_ID="one")
    again = opened_with(FOCUS_CRAWL_ID="one")
    other = opened_with(FOCUS_CRAWL_ID="two")
    assert (first["crawl_id"], first["resumed"]) == (1, False)
    assert (again["crawl_id"], again["resumed"]) == (1, True)
    assert (other["crawl_id"], other["resumed"]) == (2, False)
