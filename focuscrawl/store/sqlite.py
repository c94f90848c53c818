"""The crawl store: one SQLite row per fetched page, relevant or not, duplicates included.

It is the crawl's memory for people and for retraining, so it must survive a killed process:
WAL journalling with ``synchronous=NORMAL`` makes a commit a cheap append to the WAL (about
50 microseconds), which lets the store commit every page by default; a SIGKILL then loses at most
the pages added since the last commit (``commit_every - 1``), a graceful close loses nothing.

The columns mirror :class:`focuscrawl.items.PageItem`; ``extra`` is stored as JSON. A field added
to PageItem later becomes a new column when an older store is opened.

A store holds crawls (schema 2): the ``crawls`` table records each crawl's id, start, end, model
and settings, and every page row belongs to one crawl (``pages.crawl``; a URL is unique within a
crawl, so a second crawl into the same file never overwrites the first one's pages). A crawl is
begun by the crawl that writes it (``begin_crawl``) or taken up again by a resumed one
(``resume_crawl``); readers take one crawl (``crawl=ID``) or every crawl (``crawl=None``).
``pages.exported`` says that a durable feed has the page, so a crawl resumed after a kill
re-emits exactly the relevant pages its killed run stored but had not yet written to its feed.
A store of schema 1 (one crawl, no crawl ids) is upgraded in place when opened: its pages become
crawl 1, counted as exported.

The ``links`` table keeps the link graph the crawl saw: each fetched page's followable links
(target URL in ``w3lib_canonical`` form, anchor, context), so ``scrapy train`` can learn the
link model from a crawl as it does from a WARC. One row per page (``page`` = its ``pages.id``, so
a re-fetch replaces them), the links as zlib-compressed JSON: a page's links share hosts, paths
and words, and compressed they take a quarter of the space a row per link took (on the demo
web's crawl, the table adds a fifth to the store instead of three quarters). They are bounded
(MAX_LINKS_PER_PAGE, MAX_ANCHOR_CHARS, MAX_CONTEXT_CHARS): the link model reads at most 12
anchor and 16 context words. A store written before the table existed opens as it is; the table
is added when the store is next written to.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from focuscrawl.config import FocusConfig
from focuscrawl.items import PageItem
from focuscrawl.store.labels import StoreLabels
from focuscrawl.store.schema import (BOOL_FIELDS, CRAWL_FIELDS, FIELDS, JSON_FIELDS, LABEL_FIELDS, LINKS_SCHEMA,
                                     MAX_ANCHOR_CHARS, MAX_CONTEXT_CHARS, MAX_LINKS_PER_PAGE, MAX_LINKS_ROW_BYTES,
                                     SCHEMA_VERSION, SQLITE_MAGIC, StoreError, add_missing_columns,
                                     check_schema, create_schema, crawl_row, is_crawl_store, now, upgrade_to_crawls)
from focuscrawl.urls import w3lib_canonical

logger = logging.getLogger(__name__)

def resolve_store_path(config: FocusConfig) -> str:
    """Where the crawl store lives: FOCUS_STORE, else JOBDIR/crawl.db, else ./crawl.db.

    The crawl, ``scrapy export`` and ``scrapy explain`` all use this, so they agree on the file."""
    if config.store:
        return config.store
    if config.jobdir:
        return os.path.join(config.jobdir, "crawl.db")
    return os.path.join(".", "crawl.db")


def _item_dict(item: PageItem | Mapping[str, Any]) -> dict[str, Any]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
    if isinstance(item, Mapping):
        return dict(item)
    raise TypeError(f"cannot store a {type(item).__name__}; expected a PageItem or a mapping")


def _link_rows(links: Any) -> list[tuple[str, str, str]]:
    """(canonical url, anchor, context) of the first MAX_LINKS_PER_PAGE usable links: parsing
    ``Link`` objects or mappings with url, anchor and context; an entry without a URL is skipped."""
    if not links:
        return []
    if isinstance(links, (str, bytes, Mapping)):
        raise TypeError(f"a page's links must be a list of links, not a {type(links).__name__}")
    rows = []
    for link in links:
        get = link.get if isinstance(link, Mapping) else lambda name, link=link: getattr(link, name, None)
        url = get("url")
        if not isinstance(url, str) or not url.strip():
            continue
        anchor, context = get("anchor"), get("context")
        rows.append((w3lib_canonical(url.strip()), str(anchor or "")[:MAX_ANCHOR_CHARS],
                     str(context or "")[:MAX_CONTEXT_CHARS]))
        if len(rows) >= MAX_LINKS_PER_PAGE:
            break
    return rows


def _pack_links(rows: list[tuple[str, str, str]]) -> bytes:
    return zlib.compress(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8"), 6)


def _unpack_links(data: bytes) -> list[tuple[str, str, str]]:
    """A page's links; a damaged row is logged and read as none, so one bad row loses one page's links."""
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(data, MAX_LINKS_ROW_BYTES)
        if inflate.unconsumed_tail:  # more than any row add_page writes: not one of its rows
            raise ValueError(f"a row of links inflates past {MAX_LINKS_ROW_BYTES} bytes")
        rows = json.loads(raw.decode("utf-8"))
        if not isinstance(rows, list) or not all(isinstance(row, list) and len(row) == 3 for row in rows):
            raise ValueError("not a list of [url, anchor, context] rows")
        return [(str(url), str(anchor), str(context)) for url, anchor, context in rows]
    except (zlib.error, TypeError, ValueError, RecursionError) as exc:  # deep nesting: RecursionError
        logger.warning("a damaged row of links skipped (%s)", type(exc).__name__ if isinstance(exc, RecursionError)
                       else exc)
        return []


def _links_of(crawl: int | None) -> tuple[str, tuple]:
    """The WHERE clause (on ``pages p``) and parameters that keep one crawl's links; none for every crawl."""
    return (" WHERE p.crawl = ?", (int(crawl),)) if crawl is not None else ("", ())


def _pages_where(min_score: float | None, relevant_only: bool, unique_only: bool, crawl: int | None = None,
                 exported: bool | None = None) -> tuple[str, list[Any]]:
    """The WHERE clause and parameters that keep the pages asked for (``iter_pages``, ``count``)."""
    clauses, params = [], []
    if crawl is not None:
        clauses.append("crawl = ?")
        params.append(int(crawl))
    if exported is not None:
        clauses.append("exported = ?")
        params.append(int(bool(exported)))
    if min_score is not None:
        clauses.append("score >= ?")
        params.append(float(min_score))
    if relevant_only:
        clauses.append("relevant = 1")
    if unique_only:
        clauses.append("duplicate_of IS NULL")
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


class CrawlStore(StoreLabels):
    """A SQLite file of fetched pages, keyed by crawl and requested URL (a re-fetch in the same
    crawl replaces the row).

    ``create=False`` refuses to create a missing file (for readers such as ``scrapy export``).
    Pages are written into the crawl begun (``begin_crawl``) or resumed (``resume_crawl``); a
    writer that does neither gets a new crawl at its first page.
    """

    def __init__(self, path: str | os.PathLike, *, create: bool = True, commit_every: int = 1) -> None:
        self.path = os.fspath(path)
        self.commit_every = max(1, int(commit_every))
        self._pending = 0
        self._conn: sqlite3.Connection | None = None
        self._links_table = False
        self._labels_table = False
        self.crawl_id: int | None = None  # the crawl pages are written into
        if os.path.isdir(self.path):
            raise StoreError(f"{self.path} is a directory, not a crawl store file")
        exists = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if not exists and not create:
            raise StoreError(f"no crawl store at {self.path}")
        if not exists:
            parent = os.path.dirname(os.path.abspath(self.path))
            try:
                os.makedirs(parent, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the directory for {self.path}: {exc.strerror or exc}") from exc
        try:
            self._conn = sqlite3.connect(self.path)
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            tables = {row[0] for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables:
                if not create:
                    raise StoreError(f"{self.path} is an empty database, not a focuscrawl crawl store")
                create_schema(self._db)
                tables = {"links"}
            else:
                version = check_schema(self._db, self.path, tables)
                add_missing_columns(self._db)
                if version < 2:
                    upgrade_to_crawls(self._db, self.path)
            self._links_table = "links" in tables
            self._labels_table = "labels" in tables
        except sqlite3.DatabaseError as exc:
            self._abandon()
            raise StoreError(f"{self.path} is not a usable focuscrawl crawl store ({exc})") from exc
        except StoreError:
            self._abandon()
            raise

    def _add_links_table(self) -> None:
        """An older store gets the links table when it is written to (a reader leaves it as it is,
        so ``has_links`` can tell a store that never recorded links)."""
        with self._db:
            self._db.execute(LINKS_SCHEMA)
        self._links_table = True

    @property
    def has_links(self) -> bool:
        """Whether the store has a links table (stores written before it existed do not)."""
        return self._links_table

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the crawl store {self.path} is closed")
        return self._conn

    @property
    def connection(self) -> sqlite3.Connection:
        """The open connection, for a crawl's tables kept beside its pages (its duplicate indexes,
        ``focuscrawl.store.dedup``): what is written through it is committed with the next page."""
        return self._db

    def _abandon(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    @contextmanager
    def _failing(self, doing: str) -> Iterator[None]:
        """A SQLite error inside becomes a StoreError saying what could not be done ("read",
        "write to", "commit to") to which store."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot {doing} the crawl store {self.path} ({exc})") from exc

    # --- crawls ------------------------------------------------------------------------------

    def begin_crawl(self, *, model: str | None = None, settings: Mapping[str, Any] | None = None,
                    jobdir: str | None = None) -> int:
        """Begin a new crawl and return its id: the pages added from now on are its pages."""
        with self._failing("write to"):
            with self._db:
                cursor = self._db.execute(
                    "INSERT INTO crawls (started_at, model, settings, jobdir) VALUES (?, ?, ?, ?)",
                    (now(), model, json.dumps(dict(settings or {}), sort_keys=True, default=str), jobdir))
        self.crawl_id = int(cursor.lastrowid)
        return self.crawl_id

    def resume_crawl(self, crawl_id: int) -> None:
        """Take crawl ``crawl_id`` up again (a resumed JOBDIR): its pages and their exported marks
        stay, new pages join them. A crawl the store does not hold is a StoreError."""
        if crawl_id not in self.crawl_ids():
            raise StoreError(f"{self.path} holds no crawl {crawl_id}")
        with self._failing("write to"):
            with self._db:
                self._db.execute("UPDATE crawls SET resumed_at = ?, ended_at = NULL, end_reason = NULL WHERE id = ?",
                                 (now(), crawl_id))
        self.crawl_id = int(crawl_id)

    def end_crawl(self, reason: str | None = None) -> None:
        """Record that the current crawl ended (a killed crawl never gets here: no end)."""
        if self.crawl_id is None:
            return
        self.flush()
        with self._failing("write to"):
            with self._db:
                self._db.execute("UPDATE crawls SET ended_at = ?, end_reason = ? WHERE id = ?",
                                 (now(), reason, self.crawl_id))

    def crawls(self) -> list[dict[str, Any]]:
        """Every crawl, oldest first: its CRAWL_FIELDS (``settings`` decoded), ``pages`` and
        ``relevant`` (relevant, non-duplicate pages: what its feed and ``scrapy export`` hold)."""
        sql = (f"SELECT {', '.join('c.' + f for f in CRAWL_FIELDS)}, COUNT(p.id), "
               "COALESCE(SUM(p.relevant = 1 AND p.duplicate_of IS NULL), 0) "
               "FROM crawls c LEFT JOIN pages p ON p.crawl = c.id GROUP BY c.id ORDER BY c.id")
        with self._failing("read"):
            rows = self._db.execute(sql).fetchall()
        return [crawl_row(row, ("pages", "relevant")) for row in rows]

    def crawl(self, crawl_id: int) -> dict[str, Any] | None:
        """One crawl's CRAWL_FIELDS (``settings`` decoded), read from its row alone (no page
        counts: ``crawls()`` passes over every page); None when the store has no such crawl."""
        with self._failing("read"):
            row = self._db.execute(f"SELECT {', '.join(CRAWL_FIELDS)} FROM crawls WHERE id = ?",
                                   (int(crawl_id),)).fetchone()
        return crawl_row(row) if row else None

    def crawl_model(self, crawl: int | None = None) -> tuple[str, int] | None:
        """(path, crawl id) of the topic model ``crawl`` used (None: the latest crawl that names
        one); None when it names none. A relative path (stores written before the pipeline
        recorded absolute ones) is taken from the working directory if it is there, else from
        beside the store."""
        where, params = ("AND id = ?", (int(crawl),)) if crawl is not None else ("", ())
        with self._failing("read"):
            row = self._db.execute(f"SELECT model, id FROM crawls WHERE model IS NOT NULL AND model != '' {where} "
                                   "ORDER BY id DESC LIMIT 1", params).fetchone()
        if row is None:
            return None
        model, crawl_id = row
        if not os.path.isabs(model) and not os.path.exists(model):
            beside = os.path.join(os.path.dirname(os.path.abspath(self.path)), model)
            if os.path.exists(beside):
                model = beside
        return model, crawl_id

    def crawl_ids(self) -> list[int]:
        """The ids of the store's crawls, oldest first: what a check or a listing of ids needs,
        without the page counts of ``crawls()`` (a pass over every page)."""
        with self._failing("read"):
            return [row[0] for row in self._db.execute("SELECT id FROM crawls ORDER BY id")]

    def latest_crawl(self) -> int | None:
        """The id of the crawl begun last (None in a store without crawls)."""
        with self._failing("read"):
            return self._db.execute("SELECT MAX(id) FROM crawls").fetchone()[0]

    # --- writing ------------------------------------------------------------------------------

    def add_page(self, item: PageItem | Mapping[str, Any]) -> bool:
        """Store one page (a PageItem or a dict with its fields) and its ``links`` in the current
        crawl; a re-fetch of a URL in the same crawl replaces the page and its links. Returns
        whether the crawl had already exported the URL (a page fetched again after a kill keeps
        its mark, so it is not exported twice)."""
        data = _item_dict(item)
        if not data.get("url"):
            raise ValueError("a page without a url cannot be stored")
        links = _link_rows(data.get("links"))
        row = []
        for name in FIELDS:
            value = data.get(name)
            if name in JSON_FIELDS:
                value = json.dumps(value or {}, ensure_ascii=False, default=str)
            elif name in BOOL_FIELDS:
                value = int(bool(value))
            row.append(value)
        names = ", ".join(FIELDS)
        marks = ", ".join("?" * len(FIELDS))
        if self.crawl_id is None:
            self.begin_crawl()
        with self._failing("write to"):
            if not self._links_table:
                self._add_links_table()
            db = self._db
            before = db.execute("SELECT id, exported FROM pages WHERE crawl = ? AND url = ?",
                                (self.crawl_id, data["url"])).fetchone()
            exported = bool(before and before[1])
            if before is not None:
                db.execute("DELETE FROM links WHERE page = ?", (before[0],))
            page_id = db.execute(f"INSERT OR REPLACE INTO pages (crawl, {names}, exported) VALUES (?, {marks}, ?)",
                                 [self.crawl_id, *row, int(exported)]).lastrowid
            if links:
                db.execute("INSERT INTO links (page, n, data) VALUES (?, ?, ?)",
                           (page_id, len(links), _pack_links(links)))
        self._pending += 1
        if self._pending >= self.commit_every:
            self.flush()
        return exported

    def mark_exported(self, urls: list[str] | tuple[str, ...]) -> None:
        """A durable feed has these pages of the current crawl (requested URLs); committed at once,
        so a resumed crawl never emits them again."""
        if self.crawl_id is None or not urls:
            return
        with self._failing("write to"):
            self._db.executemany("UPDATE pages SET exported = 1 WHERE crawl = ? AND url = ?",
                                 [(self.crawl_id, url) for url in urls])
            self._db.commit()
        self._pending = 0

    def flush(self) -> None:
        """Commit the pages added since the last commit."""
        if self._pending:
            with self._failing("commit to"):
                self._db.commit()
            self._pending = 0

    def close(self) -> None:
        """Commit and close; closing twice is harmless."""
        if self._conn is None:
            return
        try:
            self.flush()
        finally:
            self._abandon()

    def __enter__(self) -> CrawlStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- reading ------------------------------------------------------------------------------

    def iter_pages(
        self, min_score: float | None = None, relevant_only: bool = False, unique_only: bool = False,
        crawl: int | None = None, exported: bool | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Stored pages as dicts keyed by PageItem field names, in fetch order.

        ``min_score`` keeps pages scored at least that (unscored pages drop out);
        ``relevant_only`` keeps relevant pages; ``unique_only`` leaves out duplicates; ``crawl``
        keeps one crawl's pages (None: every crawl's); ``exported`` keeps the pages a durable feed
        has (True) or has not (False)."""
        where, params = _pages_where(min_score, relevant_only, unique_only, crawl, exported)
        with self._failing("read"):
            cursor = self._db.execute(f"SELECT {', '.join(FIELDS)} FROM pages{where} ORDER BY id", params)
            while rows := cursor.fetchmany(500):
                for row in rows:
                    yield self._decode(row)

    def pages_after(self, after_id: int = 0, crawl: int | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
        """``(row id, page)`` of the pages stored after row ``after_id``, in fetch order, each page
        with its ``crawl``: what a reader that keeps up with a running crawl (the labelling queue)
        reads on each call. A re-fetch gets a new id, so it comes again."""
        where, params = ("id > ? AND crawl = ?", [int(after_id), int(crawl)]) if crawl is not None \
            else ("id > ?", [int(after_id)])
        with self._failing("read"):
            cursor = self._db.execute(f"SELECT id, crawl, {', '.join(FIELDS)} FROM pages WHERE {where} ORDER BY id",
                                      params)
            while rows := cursor.fetchmany(500):
                for row in rows:
                    yield row[0], {**self._decode(row[2:]), "crawl": row[1]}

    def count(self, min_score: float | None = None, relevant_only: bool = False, unique_only: bool = False,
              crawl: int | None = None, exported: bool | None = None) -> int:
        """How many pages iter_pages() with the same filters would yield."""
        where, params = _pages_where(min_score, relevant_only, unique_only, crawl, exported)
        with self._failing("read"):
            return self._db.execute(f"SELECT COUNT(*) FROM pages{where}", params).fetchone()[0]

    def get_page(self, url: str, crawl: int | None = None) -> dict[str, Any] | None:
        """The stored page requested as ``url`` in ``crawl`` (None: its latest fetch in any crawl), or None."""
        where, params = ("url = ? AND crawl = ?", (url, int(crawl))) if crawl is not None else ("url = ?", (url,))
        with self._failing("read"):
            row = self._db.execute(f"SELECT {', '.join(FIELDS)} FROM pages WHERE {where} ORDER BY id DESC LIMIT 1",
                                   params).fetchone()
        return None if row is None else self._decode(row)

    def links_of(self, url: str) -> list[tuple[str, str, str]]:
        """The stored links of the page requested as ``url`` (its latest fetch) as ``(anchor, context,
        url)``, the target canonical; none for a page without stored links or a store without a
        links table."""
        if not self._links_table:
            return []
        with self._failing("read"):
            row = self._db.execute("SELECT l.data FROM links l JOIN pages p ON p.id = l.page WHERE p.url = ? "
                                   "ORDER BY p.id DESC LIMIT 1", (url,)).fetchone()
        return [] if row is None else [(anchor, context, target) for target, anchor, context in _unpack_links(row[0])]

    def iter_links(self, crawl: int | None = None) -> Iterator[dict[str, Any]]:
        """The stored links of ``crawl`` (None: every crawl), page by page in fetch order, each as a
        dict: ``from_url`` and ``from_final_url`` (the page's url and final_url), ``url`` (the
        target, canonical), ``anchor``, ``context``. Nothing for a store without a links table
        (see ``has_links``)."""
        if not self._links_table:
            return
        where, params = _links_of(crawl)
        with self._failing("read"):
            cursor = self._db.execute(
                f"SELECT p.url, p.final_url, l.data FROM links l JOIN pages p ON p.id = l.page{where} ORDER BY l.page",
                params)
            while rows := cursor.fetchmany(200):
                for from_url, from_final, data in rows:
                    for url, anchor, context in _unpack_links(data):
                        yield {"from_url": from_url, "from_final_url": from_final, "url": url, "anchor": anchor,
                               "context": context}

    def count_links(self, crawl: int | None = None) -> int:
        """How many links iter_links() would yield."""
        if not self._links_table:
            return 0
        where, params = _links_of(crawl)
        with self._failing("read"):
            sql = f"SELECT COALESCE(SUM(l.n), 0) FROM links l JOIN pages p ON p.id = l.page{where}"
            return self._db.execute(sql, params).fetchone()[0]

    @staticmethod
    def _decode(row: tuple[Any, ...]) -> dict[str, Any]:
        page = dict(zip(FIELDS, row))
        for name in BOOL_FIELDS:
            page[name] = bool(page[name])
        for name in JSON_FIELDS:
            try:
                page[name] = json.loads(page[name]) if page[name] else {}
            except ValueError:
                page[name] = {}
        return page

    def meta(self) -> dict[str, str]:
        """The store's meta table (schema name and version, created_at)."""
        with self._failing("read"):
            return dict(self._db.execute("SELECT key, value FROM meta"))


__all__ = ["CRAWL_FIELDS", "FIELDS", "LABEL_FIELDS", "MAX_ANCHOR_CHARS", "MAX_CONTEXT_CHARS", "MAX_LINKS_PER_PAGE", "SCHEMA_VERSION", "SQLITE_MAGIC", "CrawlStore",
           "StoreError", "is_crawl_store", "resolve_store_path"]
