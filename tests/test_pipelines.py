"""The item pipelines: unit-level through a Crawler's settings and stats, then a real crawl."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from scrapy.exceptions import DropItem
from scrapy.utils.test import get_crawler

from focuscrawl.dedup import content_hash
from focuscrawl.items import PageItem
from focuscrawl.pipelines import DuplicatesPipeline, RelevantItemsPipeline, StorePipeline
from focuscrawl.store import CrawlStore

BODY = " ".join(f"word{i % 97} topic{i % 13} thing{i % 7}" for i in range(150))


def item(url: str, text: str = BODY, relevant: bool = True, **kw) -> PageItem:
    return PageItem(url=url, final_url=url, status=200, text=text, relevant=relevant, score=0.9 if relevant else 0.1,
                    content_hash=content_hash(text) if text else "", **kw)


def test_duplicates_pipeline_marks_exact_then_near_and_counts(tmp_path):
    crawler = get_crawler(settings_dict={"FOCUS_NEAR_DUP_THRESHOLD": 0.9})
    pipe = DuplicatesPipeline.from_crawler(crawler)
    first = pipe.process_item(item("http://a/1"))
    exact = pipe.process_item(item("http://a/2", text=BODY.upper()))
    near = pipe.process_item(item("http://a/3", text="Updated today. " + BODY))
    other = pipe.process_item(item("http://a/4", text=" ".join(reversed(BODY.split()))))
    assert (first.duplicate_of, first.duplicate_kind) == (None, None)
    assert (exact.duplicate_of, exact.duplicate_kind) == ("http://a/1", "exact")
    assert (near.duplicate_of, near.duplicate_kind) == ("http://a/1", "near")
    assert other.duplicate_of is None
    assert crawler.stats.get_value("focus/dedup/exact") == 1
    assert crawler.stats.get_value("focus/dedup/near") == 1


def test_duplicates_pipeline_skips_pages_without_text_and_computes_a_missing_hash():
    crawler = get_crawler()
    pipe = DuplicatesPipeline.from_crawler(crawler)
    assert pipe.process_item(item("http://a/404", text="")).duplicate_of is None
    assert pipe.process_item(item("http://a/500", text="  ")).duplicate_of is None
    pipe.process_item(PageItem(url="http://a/d1", final_url="http://a/d1", status=200, text="short text here"))
    dup = pipe.process_item(PageItem(url="http://a/d2", final_url="http://a/d2", status=200,
                                     text="Short  text here"))  # no content_hash
    assert dup.duplicate_of == "http://a/d1" and dup.duplicate_kind == "exact"


def test_a_project_spiders_own_items_pass_the_pipelines_untouched(tmp_path):
    """Under focuscrawl.Addon a project's spider yields its own items: focuscrawl's pipelines
    neither judge, store nor drop them; its page records are judged, stored and then dropped."""
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path / "job")})
    dedup, store, gate = (DuplicatesPipeline.from_crawler(crawler), StorePipeline.from_crawler(crawler),
                          RelevantItemsPipeline.from_crawler(crawler))
    store.open_spider()
    own = {"url": "http://a/1", "text": BODY, "name": "a product"}
    for pipe in (dedup, store, gate):
        assert pipe.process_item(own) is own
    assert own == {"url": "http://a/1", "text": BODY, "name": "a product"}
    record = item("http://a/1")
    record.record_only = True
    for pipe in (dedup, store):
        assert pipe.process_item(record) is record
    with pytest.raises(DropItem) as dropped:
        gate.process_item(record)
    assert dropped.value.log_level == "DEBUG"
    store.close_spider()
    with CrawlStore(tmp_path / "job" / "crawl.db", create=False) as db:
        assert [(p["url"], p["relevant"]) for p in db.iter_pages()] == [("http://a/1", 1)]
    assert crawler.stats.get_value("focus/items/page_records") == 1


def test_duplicates_pipeline_reads_its_settings():
    crawler = get_crawler(settings_dict={"FOCUS_NEAR_DUP_THRESHOLD": 0.5, "FOCUS_MINHASH_PERMUTATIONS": 64,
                                         "FOCUS_SHINGLE_SIZE": 3})
    pipe = DuplicatesPipeline.from_crawler(crawler)
    assert (pipe.near.threshold, pipe.near.num_perm, pipe.near.shingle_size) == (0.5, 64, 3)


def test_relevant_items_pipeline_drops_quietly_and_counts():
    crawler = get_crawler()
    pipe = RelevantItemsPipeline.from_crawler(crawler)
    keep = item("http://a/1")
    assert pipe.process_item(keep) is keep
    with pytest.raises(DropItem) as dropped:
        pipe.process_item(item("http://a/2", relevant=False))
    assert dropped.value.log_level == "DEBUG"
    with pytest.raises(DropItem, match="near duplicate of http://a/1") as dropped:
        pipe.process_item(item("http://a/3", duplicate_of="http://a/1", duplicate_kind="near"))
    assert dropped.value.log_level == "DEBUG"
    stats = crawler.stats.get_stats()
    assert stats["focus/items/relevant"] == 1
    assert stats["focus/items/dropped_irrelevant"] == 1
    assert stats["focus/items/dropped_duplicate"] == 1


def test_store_pipeline_stores_everything_at_the_resolved_path(tmp_path):
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path / "job")})
    pipe = StorePipeline.from_crawler(crawler)
    pipe.open_spider()
    pipe.process_item(item("http://a/1"))
    pipe.process_item(item("http://a/2", relevant=False, duplicate_of="http://a/1", duplicate_kind="exact"))
    pipe.process_item(PageItem(url=None, final_url="", status=200))  # no url: logged and skipped, not a crash
    pipe.close_spider()
    with CrawlStore(tmp_path / "job" / "crawl.db", create=False) as store:
        pages = list(store.iter_pages())
    assert [(p["url"], p["duplicate_kind"]) for p in pages] == [("http://a/1", None), ("http://a/2", "exact")]
    assert crawler.stats.get_value("focus/store/pages") == 2
    assert crawler.stats.get_value("focus/store/skipped") == 1


def test_duplicate_indexes_live_in_the_store_and_a_failing_one_lets_the_page_through(tmp_path, caplog):
    crawler = get_crawler(settings_dict={"JOBDIR": str(tmp_path / "job")})
    dedup, store = DuplicatesPipeline.from_crawler(crawler), StorePipeline.from_crawler(crawler)
    store.open_spider()
    for page in (item("http://a/1"), item("http://a/2", text=BODY.upper())):
        store.process_item(dedup.process_item(page))
    rows = store.store.connection.execute("SELECT url FROM dedup_exact").fetchall()
    assert rows == [("http://a/1",)]  # committed with the page: none a page in this process
    store.store.connection.execute("DROP TABLE dedup_near")
    with caplog.at_level(logging.WARNING):
        kept = dedup.process_item(item("http://a/3", text="Updated today. " + BODY))
    assert kept.duplicate_of is None and "http://a/3 not checked for duplicates" in caplog.text
    assert crawler.stats.get_value("focus/dedup/errors") == 1
    store.process_item(kept)  # the page is stored all the same
    store.close_spider()
    with CrawlStore(tmp_path / "job" / "crawl.db", create=False) as db:
        assert [p["url"] for p in db.iter_pages()] == ["http://a/1", "http://a/2", "http://a/3"]


# --- a real crawl: the project's ITEM_PIPELINES run by Scrapy, feed export included ---------------

CRAWL_SCRIPT = textwrap.dedent(
    '''
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from focuscrawl import settings as project
    from focuscrawl.addon import COMPONENTS
    from focuscrawl.dedup import content_hash
    from focuscrawl.items import PageItem

    BODY = " ".join(f"alpha{i % 89} beta{i % 11} gamma{i % 5}" for i in range(150))
    PAGES = [  # url, text, relevant
        ("http://a.test/1", BODY, True),
        ("http://b.test/copy", BODY, True),                                # exact duplicate of /1
        ("http://a.test/1?print=1", "Printed 1 May 2026. " + BODY, True),  # near duplicate of /1
        ("http://a.test/off-topic", "cooking recipes " * 40, False),
        ("http://a.test/2", " ".join(reversed(BODY.split())), True),
        ("http://a.test/missing", "", False),                              # a 404: no text
        ("http://a.test/3", "A short relevant page", True),
        ("http://c.test/3", "a  SHORT relevant page", False),              # exact dup, irrelevant
    ]

    class Items(scrapy.Spider):
        name = "items"

        async def start(self):
            for url, text, relevant in PAGES:
                yield PageItem(url=url, final_url=url, status=404 if not text else 200, text=text,
                               relevant=relevant, score=0.9 if relevant else 0.1,
                               content_hash=content_hash(text) if text else "")

    out, jobdir, stats_path = sys.argv[1:4]
    process = CrawlerProcess({
        "ITEM_PIPELINES": COMPONENTS["ITEM_PIPELINES"],
        "FEED_EXPORT_FIELDS": project.FEED_EXPORT_FIELDS,
        "FEED_EXPORT_ENCODING": "utf-8",
        "FEEDS": {out: {"format": "jsonlines", "overwrite": True}},
        "JOBDIR": jobdir,
        "LOG_LEVEL": "INFO",
        "TELNETCONSOLE_ENABLED": False,
    })
    crawler = process.create_crawler(Items)
    process.crawl(crawler)
    process.start()
    with open(stats_path, "w") as fh:
        json.dump(crawler.stats.get_stats(), fh, default=str)
    '''
)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("crawl")
    (tmp / "crawl.py").write_text(CRAWL_SCRIPT)
    out, jobdir, stats = tmp / "out.jsonl", tmp / "job", tmp / "stats.json"
    result = subprocess.run(
        [sys.executable, str(tmp / "crawl.py"), str(out), str(jobdir), str(stats)],
        cwd=tmp, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        "feed": [json.loads(line) for line in out.read_text().splitlines()],
        "store": Path(jobdir) / "crawl.db",
        "stats": json.loads(stats.read_text()),
        "log": result.stderr,
    }


@pytest.mark.slow
def test_crawl_stores_every_page_with_duplicates_marked(crawl):
    with CrawlStore(crawl["store"], create=False) as store:
        pages = {p["url"]: p for p in store.iter_pages()}
    assert len(pages) == 8
    marks = {url: (p["duplicate_of"], p["duplicate_kind"]) for url, p in pages.items() if p["duplicate_of"]}
    assert marks == {
        "http://b.test/copy": ("http://a.test/1", "exact"),
        "http://a.test/1?print=1": ("http://a.test/1", "near"),
        "http://c.test/3": ("http://a.test/3", "exact"),
    }
    assert pages["http://a.test/missing"]["status"] == 404


@pytest.mark.slow
def test_crawl_feed_has_only_relevant_unique_pages_with_the_export_fields(crawl):
    from focuscrawl.settings import FEED_EXPORT_FIELDS

    assert [row["url"] for row in crawl["feed"]] == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert all(list(row) == FEED_EXPORT_FIELDS for row in crawl["feed"])


@pytest.mark.slow
def test_crawl_stats_count_duplicates_stores_and_drops(crawl):
    stats = crawl["stats"]
    assert stats["focus/dedup/exact"] == 2
    assert stats["focus/dedup/near"] == 1
    assert stats["focus/store/pages"] == 8
    assert stats["focus/items/relevant"] == 3
    assert stats["focus/items/dropped_duplicate"] == 3
    assert stats["focus/items/dropped_irrelevant"] == 2
    assert stats["item_dropped_count"] == 5


@pytest.mark.slow
def test_crawl_drops_are_not_logged_as_warnings(crawl):
    assert "Dropped:" not in crawl["log"]
    assert "Traceback" not in crawl["log"]
