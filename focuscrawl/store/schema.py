"""The crawl store's SQLite schema: its tables, the version it is at, and what creates, checks
and upgrades them (``sqlite.CrawlStore`` opens a store through these)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import sqlite3
from datetime import datetime, timezone
from typing import Any

from focuscrawl.items import PageItem

logger = logging.getLogger(__name__)

SCHEMA_NAME = "focuscrawl-crawl-store"
SCHEMA_VERSION = 2

#: PageItem field names in declaration order: the store's columns and the keys of iter_pages()
#: (``links`` goes to the links table, not to a column).
STORED = tuple(f for f in dataclasses.fields(PageItem) if f.metadata.get("column", True))
FIELDS: tuple[str, ...] = tuple(f.name for f in STORED)
#: Bounds of the link table: links kept per page (in page order), characters of anchor and context.
MAX_LINKS_PER_PAGE = 300
MAX_ANCHOR_CHARS = 120
MAX_CONTEXT_CHARS = 240
#: what a row of links may inflate to: MAX_LINKS_PER_PAGE links of a URL (FOCUS_MAX_URL_LENGTH's
#: bound is a setting: 8 KiB each here is generous), an anchor and a context, as escaped JSON
MAX_LINKS_ROW_BYTES = MAX_LINKS_PER_PAGE * 6 * (8192 + MAX_ANCHOR_CHARS + MAX_CONTEXT_CHARS)
BOOL_FIELDS = {"relevant"}
JSON_FIELDS = {"extra"}
INDEXED = ("final_url", "relevant", "score")  # (crawl, url) is the table's UNIQUE key


def _column_type(annotation: str) -> str:
    base = str(annotation).replace(" | None", "").strip()
    return {"int": "INTEGER", "bool": "INTEGER", "float": "REAL"}.get(base, "TEXT")


COLUMNS = {f.name: _column_type(f.type) for f in STORED}
#: page: pages.id (a re-fetch gets a new id); n: how many links; data: zlib(JSON [[url, anchor, context], ...])
LINKS_SCHEMA = "CREATE TABLE links (page INTEGER PRIMARY KEY, n INTEGER NOT NULL, data BLOB NOT NULL)"
CRAWLS_SCHEMA = ("CREATE TABLE crawls (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at TEXT NOT NULL, "
                  "resumed_at TEXT, ended_at TEXT, end_reason TEXT, model TEXT, settings TEXT, jobdir TEXT)")
#: a person's judgement of a page: every judgement is kept (who, when); a URL's label is its latest.
#: url: the page's requested URL; crawl: the crawl whose page was judged (None: given by URL alone)
LABELS_SCHEMA = ("CREATE TABLE IF NOT EXISTS labels (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, "
                  "crawl INTEGER, label TEXT NOT NULL, who TEXT NOT NULL DEFAULT '', at TEXT NOT NULL)")
LABEL_FIELDS = ("url", "label", "who", "at", "crawl")
#: how every SQLite database file begins
SQLITE_MAGIC = b"SQLite format 3\x00"
#: the columns a crawl is described by (``crawls()``)
CRAWL_FIELDS = ("id", "started_at", "resumed_at", "ended_at", "end_reason", "model", "settings", "jobdir")


def pages_schema(table: str = "pages") -> str:
    """pages: a row per (crawl, requested URL); ``exported``: a durable feed has the page."""
    columns = ", ".join(f"{name} {ctype}" + (" NOT NULL" if name == "url" else "") for name, ctype in COLUMNS.items())
    # id orders rows by (latest) fetch; AUTOINCREMENT never reuses an id after a replace.
    return (f"CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, crawl INTEGER NOT NULL, {columns}, "
            f"exported INTEGER NOT NULL DEFAULT 0, UNIQUE (crawl, url))")


def crawl_row(row, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """A crawls row (CRAWL_FIELDS, then ``extra``) as a dict, its settings decoded."""
    crawl = dict(zip((*CRAWL_FIELDS, *extra), row))
    try:
        crawl["settings"] = json.loads(crawl["settings"]) if crawl["settings"] else {}
    except ValueError:
        crawl["settings"] = {}
    return crawl


def is_crawl_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file that starts as an SQLite database does (what a crawl store is;
    opening it says whether it is one of ours). Unreadable or absent: False."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class StoreError(Exception):
    """The store cannot be used (missing, not a focuscrawl store, corrupt); a one-line message."""



def create_schema(conn: sqlite3.Connection) -> None:
    """The tables and indexes of a new store."""
    with conn:
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema", SCHEMA_NAME),
                ("schema_version", str(SCHEMA_VERSION)),
                ("created_at", now()),
            ],
        )
        conn.execute(CRAWLS_SCHEMA)
        conn.execute(pages_schema())
        create_indexes(conn)
        conn.execute(LINKS_SCHEMA)

def create_indexes(conn: sqlite3.Connection) -> None:
    for name in INDEXED:
        conn.execute(f"CREATE INDEX IF NOT EXISTS pages_{name} ON pages ({name})")

def upgrade_to_crawls(conn: sqlite3.Connection, path: str) -> None:
    """Schema 1 -> 2: the pages of a store written before crawl ids become crawl 1 (counted as
    exported: its feeds are not known), keeping their ids, so their links stay theirs."""
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    names = ", ".join(COLUMNS)
    try:
        with conn:
            conn.execute(CRAWLS_SCHEMA)
            conn.execute("INSERT INTO crawls (id, started_at, end_reason) VALUES (1, ?, ?)",
                         (meta.get("created_at") or now(), "written before crawl ids"))
            conn.execute(pages_schema("pages_v2"))
            conn.execute(f"INSERT INTO pages_v2 (id, crawl, {names}, exported) "
                         f"SELECT id, 1, {names}, 1 FROM pages")
            conn.execute("DROP TABLE pages")
            conn.execute("ALTER TABLE pages_v2 RENAME TO pages")
            create_indexes(conn)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    except sqlite3.OperationalError as exc:
        raise StoreError(f"{path} was written by an older focuscrawl and cannot be upgraded "
                         f"here ({exc}); open it once where it is writable") from exc
    logger.info("crawl store %s upgraded: its pages are crawl 1", path)

def check_schema(conn: sqlite3.Connection, path: str, tables: set[str]) -> int:
    """The schema version of the store at ``path``; StoreError when it is none of ours or a newer one."""
    if "meta" not in tables or "pages" not in tables:
        raise StoreError(f"{path} is a SQLite file but not a focuscrawl crawl store")
    meta = dict(conn.execute("SELECT key, value FROM meta"))
    if meta.get("schema") != SCHEMA_NAME:
        raise StoreError(f"{path} is a SQLite file but not a focuscrawl crawl store")
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise StoreError(f"{path} has an unreadable schema version") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer focuscrawl (store schema {version}, this one reads {SCHEMA_VERSION})"
        )
    return version

def add_missing_columns(conn: sqlite3.Connection) -> None:
    """Columns of PageItem fields newer than the store, added."""
    present = {row[1] for row in conn.execute("PRAGMA table_info(pages)")}
    missing = [name for name in COLUMNS if name not in present]
    if missing:
        with conn:
            for name in missing:
                conn.execute(f"ALTER TABLE pages ADD COLUMN {name} {COLUMNS[name]}")
