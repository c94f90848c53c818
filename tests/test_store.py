"""The SQLite crawl store (focuscrawl.store), on real files."""

from __future__ import annotations

import dataclasses
import sqlite3
import subprocess
import sys
import textwrap

import pytest
from scrapy.settings import Settings

from focuscrawl.config import FocusConfig
from focuscrawl.items import PageItem
from focuscrawl.parsing import Link
from focuscrawl.store import FIELDS, SCHEMA_VERSION, CrawlStore, StoreError, resolve_store_path
from focuscrawl.store.sqlite import MAX_ANCHOR_CHARS, MAX_CONTEXT_CHARS, MAX_LINKS_PER_PAGE


def page(n: int, **overrides) -> PageItem:
    values = dict(
        url=f"http://example.com/{n}",
        final_url=f"http://example.com/{n}?r=1",
        status=200,
        content_type="text/html; charset=utf-8",
        title=f"Pägé {n}",
        text=f"main text of page {n} — naïve",
        score=n / 10,
        relevant=n % 2 == 0,
        fetched_at=f"2026-01-01T00:00:{n:02d}+00:00",
        depth=n,
        referrer=f"http://example.com/{n - 1}" if n else None,
        content_hash=f"{n:040x}",
        outlinks=n * 3,
        elapsed=0.25,
        length=1000 + n,
        encoding="utf-8",
        extra={"labels": ["a", n], "note": "ü"},
    )
    values.update(overrides)
    return PageItem(**values)


def test_round_trip_keeps_every_field_in_fetch_order(tmp_path):
    path = tmp_path / "deep" / "dir" / "crawl.db"  # parent dirs are created
    items = [page(n) for n in range(5)] + [page(5, score=None, duplicate_of="http://example.com/1", duplicate_kind="near")]
    with CrawlStore(path) as store:
        for item in items:
            store.add_page(item)
    with CrawlStore(path, create=False) as store:
        pages = list(store.iter_pages())
        assert store.meta()["schema_version"] == str(SCHEMA_VERSION)
    # every PageItem field is a column but the links, which go to the links table
    assert set(FIELDS) == {f.name for f in dataclasses.fields(PageItem)} - {"links", "restored", "exported", "record_only"}
    assert pages == [{k: v for k, v in dataclasses.asdict(item).items() if k in FIELDS} for item in items]
    assert all(list(p) == list(FIELDS) for p in pages)
    assert pages[0]["relevant"] is True and pages[1]["relevant"] is False


def test_pages_are_in_wal_mode_and_indexed(tmp_path):
    path = tmp_path / "crawl.db"
    CrawlStore(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    indexed = {row[0] for row in conn.execute("SELECT sql FROM sqlite_master WHERE type='index' AND sql IS NOT NULL")}
    assert any("(final_url)" in s for s in indexed) and any("(score)" in s for s in indexed)
    assert any("(relevant)" in s for s in indexed)


def test_refetch_replaces_the_row_and_moves_it_to_the_end(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        store.add_page(page(1))
        store.add_page(page(2))
        store.add_page(page(1, title="new title", status=304))
        assert store.count() == 2
        pages = list(store.iter_pages())
    assert [p["url"] for p in pages] == ["http://example.com/2", "http://example.com/1"]
    assert pages[1]["title"] == "new title" and pages[1]["status"] == 304


def test_filters_by_score_relevance_and_duplicates(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        for n in range(6):
            store.add_page(page(n))
        store.add_page(page(8, duplicate_of="http://example.com/2", duplicate_kind="exact"))
        store.add_page(page(9, score=None, relevant=False))

        def urls(**filters):
            got = [p["url"].rsplit("/", 1)[1] for p in store.iter_pages(**filters)]
            assert store.count(**filters) == len(got)
            return got

        assert urls() == ["0", "1", "2", "3", "4", "5", "8", "9"]
        assert urls(min_score=0.3) == ["3", "4", "5", "8"]  # unscored pages drop out
        assert urls(relevant_only=True) == ["0", "2", "4", "8"]
        assert urls(relevant_only=True, unique_only=True) == ["0", "2", "4"]
        assert urls(relevant_only=True, unique_only=True, min_score=0.1) == ["2", "4"]


def test_dict_items_are_stored_and_a_page_without_url_is_refused(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        store.add_page({"url": "http://x/1", "status": 404, "extra": {"why": "not found"}})
        with pytest.raises(ValueError, match="without a url"):
            store.add_page({"status": 200})
        got = store.get_page("http://x/1")
    assert got["status"] == 404 and got["extra"] == {"why": "not found"} and got["relevant"] is False
    assert got["title"] is None  # fields the dict did not have are NULL


def test_pages_survive_a_killed_process(tmp_path):
    path = tmp_path / "crawl.db"
    script = textwrap.dedent(
        f"""
        import os
        from focuscrawl.items import PageItem
        from focuscrawl.store import CrawlStore
        store = CrawlStore({str(path)!r})
        for n in range(25):
            store.add_page(PageItem(url=f"http://k/{{n}}", final_url="", status=200, text="t" * 1000))
        os._exit(9)  # no close(), no flush(), no atexit: like SIGKILL
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert result.returncode == 9, result.stderr
    with CrawlStore(path, create=False) as store:
        assert store.count() == 25


def test_batched_commits_flush_and_close_commit(tmp_path):
    path = tmp_path / "crawl.db"
    store = CrawlStore(path, commit_every=10)
    outside = lambda: sqlite3.connect(path).execute("SELECT COUNT(*) FROM pages").fetchone()[0]  # noqa: E731
    for n in range(3):
        store.add_page(page(n))
    assert outside() == 0  # not committed yet: a batch is 10
    store.flush()
    assert outside() == 3
    for n in range(3, 13):
        store.add_page(page(n))
    assert outside() == 13  # the 10th page since the flush committed the batch
    store.add_page(page(13))
    store.close()
    store.close()  # harmless
    assert outside() == 14
    with pytest.raises(StoreError, match="closed"):
        store.add_page(page(14))


def test_missing_store_is_an_error_only_when_not_creating(tmp_path):
    with pytest.raises(StoreError, match="no crawl store at"):
        CrawlStore(tmp_path / "missing.db", create=False)
    assert not (tmp_path / "missing.db").exists()
    with pytest.raises(StoreError, match="is a directory"):
        CrawlStore(tmp_path)


def test_a_file_that_is_not_sqlite_is_refused(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 50)
    with pytest.raises(StoreError, match="not a usable focuscrawl crawl store"):
        CrawlStore(path)
    assert path.read_text().startswith("these are my notes")  # left untouched


def test_another_sqlite_database_is_refused(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE pages (url TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="not a focuscrawl crawl store"):
        CrawlStore(path)


def test_a_store_from_a_newer_version_is_refused(tmp_path):
    path = tmp_path / "crawl.db"
    CrawlStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer focuscrawl"):
        CrawlStore(path)


def test_a_corrupt_store_raises_store_error_not_sqlite_errors(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        for n in range(200):
            store.add_page(page(n, text="lorem ipsum " * 200))
    sqlite3.connect(path).execute("PRAGMA wal_checkpoint(TRUNCATE)").close()
    data = bytearray(path.read_bytes())
    assert len(data) > 20 * 4096
    data[2 * 4096 :] = b"\xff" * (len(data) - 2 * 4096)  # every page after the first two
    path.write_bytes(bytes(data))
    with pytest.raises(StoreError, match=str(path.name)):
        store = CrawlStore(path, create=False)
        list(store.iter_pages())


def test_a_column_missing_from_an_older_store_is_added(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        store.add_page(page(1))
    conn = sqlite3.connect(path)
    conn.execute("ALTER TABLE pages DROP COLUMN encoding")
    conn.commit()
    conn.close()
    with CrawlStore(path) as store:
        (got,) = store.iter_pages()
        assert got["encoding"] is None and got["title"] == "Pägé 1"


@pytest.mark.parametrize(
    "settings, expected",
    [
        ({}, "./crawl.db"),
        ({"JOBDIR": "jobs/run1"}, "jobs/run1/crawl.db"),
        ({"FOCUS_STORE": "/data/x.db", "JOBDIR": "jobs/run1"}, "/data/x.db"),
        ({"FOCUS_STORE": None, "JOBDIR": None}, "./crawl.db"),
    ],
)
def test_resolve_store_path_from_a_dict_and_from_scrapy_settings(settings, expected):
    assert resolve_store_path(FocusConfig.from_settings(settings)) == expected
    assert resolve_store_path(FocusConfig.from_settings(Settings(settings))) == expected


def test_resolve_store_path_with_the_project_settings_module():
    settings = Settings()
    settings.setmodule("focuscrawl.settings")
    assert resolve_store_path(FocusConfig.from_settings(settings)) == "./crawl.db"
    settings.set("JOBDIR", "jd", priority="cmdline")
    assert resolve_store_path(FocusConfig.from_settings(settings)) == "jd/crawl.db"


def links_of(store: CrawlStore) -> list[tuple[str, str, str, str]]:
    return [(l["from_url"], l["url"], l["anchor"], l["context"]) for l in store.iter_links()]


def test_links_are_stored_canonical_bounded_and_read_back_page_by_page(tmp_path):
    path = tmp_path / "crawl.db"
    many = [Link(f"http://example.com/p{i}", "a" * 500, "c" * 500) for i in range(MAX_LINKS_PER_PAGE + 20)]
    with CrawlStore(path) as store:
        assert store.has_links
        store.add_page(page(1, links=[Link("http://Example.com/b?y=2&x=1#top", "Bee", "see the bee"),
                                      {"url": "http://example.com/a", "anchor": "A"},  # a mapping works too
                                      Link("", "no url"), {"anchor": "no url either"}]))
        store.add_page(page(2, links=many))
        store.add_page(page(3))  # no links
    with CrawlStore(path, create=False) as store:
        got = links_of(store)
        assert store.count_links() == len(got) == 2 + MAX_LINKS_PER_PAGE
        # the pages' columns are untouched by links
        assert [p["url"] for p in store.iter_pages()] == [f"http://example.com/{n}" for n in (1, 2, 3)]
    assert got[:2] == [("http://example.com/1", "http://example.com/b?x=1&y=2", "Bee", "see the bee"),
                       ("http://example.com/1", "http://example.com/a", "A", "")]
    kept = got[2:]
    assert [l[1] for l in kept] == [f"http://example.com/p{i}" for i in range(MAX_LINKS_PER_PAGE)]  # page order
    assert {(len(l[2]), len(l[3])) for l in kept} == {(MAX_ANCHOR_CHARS, MAX_CONTEXT_CHARS)}
    link = next(CrawlStore(path, create=False).iter_links())
    assert link["from_final_url"] == "http://example.com/1?r=1"


def test_a_refetched_page_replaces_its_links(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        store.add_page(page(1, links=[Link("http://example.com/old1"), Link("http://example.com/old2")]))
        store.add_page(page(2, links=[Link("http://example.com/two")]))
        store.add_page(page(1, links=[Link("http://example.com/new")]))
        assert [(l[0], l[1]) for l in links_of(store)] == [("http://example.com/2", "http://example.com/two"),
                                                           ("http://example.com/1", "http://example.com/new")]
        store.add_page(page(2, status=503))  # re-fetched and failed: no links any more
        assert [l[1] for l in links_of(store)] == ["http://example.com/new"]
        assert store.count_links() == 1


def test_one_pages_links_are_read_back_as_a_model_reads_them(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        assert store.links_of("http://example.com/1") == []
        store.add_page(page(1, links=[Link("http://example.com/old")]))
        store.add_page(page(1, links=[Link("http://Example.com/b#top", "Bee", "see the bee")]))  # the latest fetch
        store.add_page(page(2))
        assert store.links_of("http://example.com/1") == [("Bee", "see the bee", "http://example.com/b")]
        assert store.links_of("http://example.com/2") == [] and store.links_of("http://example.com/9") == []


def test_a_store_without_the_links_table_opens_and_gets_it_when_written(tmp_path):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        store.add_page(page(1))
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE links")  # as a store written before the table existed
    conn.commit()
    conn.close()
    with CrawlStore(path, create=False) as store:  # a reader leaves it as it is
        assert not store.has_links and list(store.iter_links()) == [] and store.count_links() == 0
        assert [p["url"] for p in store.iter_pages()] == ["http://example.com/1"]
    with CrawlStore(path) as store:  # a resumed crawl adds it
        store.add_page(page(2, links=[Link("http://example.com/x", "X")]))
        assert store.has_links and links_of(store) == [("http://example.com/2", "http://example.com/x", "X", "")]
        assert store.count() == 2


def test_links_that_are_not_a_list_are_refused_clearly(tmp_path):
    with CrawlStore(tmp_path / "crawl.db") as store:
        with pytest.raises(TypeError, match="list of links"):
            store.add_page(page(1, links="http://example.com/x"))


def test_a_damaged_row_of_links_loses_that_pages_links_only(tmp_path, caplog):
    path = tmp_path / "crawl.db"
    with CrawlStore(path) as store:
        store.add_page(page(1, links=[Link("http://example.com/x", "X")]))
        store.add_page(page(2, links=[Link("http://example.com/y", "Y")]))
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE links SET data = ? WHERE page = (SELECT id FROM pages WHERE url = ?)",
                     (b"not zlib", "http://example.com/1"))
    conn.close()
    with CrawlStore(path, create=False) as store:
        assert [l[1] for l in links_of(store)] == ["http://example.com/y"]
    assert "damaged row of links" in caplog.text
