"""The crawl store: one SQLite row per fetched page, relevant or not, duplicates included.

It is the crawl's memory for people and for retraining, so it must survive a killed process:
WAL journalling with ``synchronous=NORMAL`` makes a commit a cheap append to the WAL (about
50 microseconds), which lets the store commit every page by default; a SIGKILL then loses at most
the pages added since the last commit (``commit_every - 1``), a graceful close loses nothing.

The columns mirror :class:`focuscrawl.items.PageItem`; ``extra`` is stored as JSON. A field added
to PageItem later becomes a new column when an older store is opened.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from typing import Any

from focuscrawl.config import FocusConfig
from focuscrawl.items import PageItem

SCHEMA_NAME = "focuscrawl-crawl-store"
SCHEMA_VERSION = 1

#: PageItem field names in declaration order: the store's columns and the keys of iter_pages().
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PageItem))
_BOOL_FIELDS = {"relevant"}
_JSON_FIELDS = {"extra"}
_INDEXED = ("url", "final_url", "relevant", "score")


def _column_type(annotation: str) -> str:
    base = str(annotation).replace(" | None", "").strip()
    return {"int": "INTEGER", "bool": "INTEGER", "float": "REAL"}.get(base, "TEXT")


_COLUMNS = {f.name: _column_type(f.type) for f in dataclasses.fields(PageItem)}


class StoreError(Exception):
    """The store cannot be used (missing, not a focuscrawl store, corrupt); a one-line message."""


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


class CrawlStore:
    """A SQLite file of fetched pages, keyed by the requested URL (a re-fetch replaces the row).

    ``create=False`` refuses to create a missing file (for readers such as ``scrapy export``).
    """

    def __init__(self, path: str | os.PathLike, *, create: bool = True, commit_every: int = 1) -> None:
        self.path = os.fspath(path)
        self.commit_every = max(1, int(commit_every))
        self._pending = 0
        self._conn: sqlite3.Connection | None = None
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
                self._create_schema()
            else:
                self._check_schema(tables)
                self._add_missing_columns()
        except sqlite3.DatabaseError as exc:
            self._abandon()
            raise StoreError(f"{self.path} is not a usable focuscrawl crawl store ({exc})") from exc
        except StoreError:
            self._abandon()
            raise

    # --- schema -------------------------------------------------------------------------------

    def _create_schema(self) -> None:
        conn = self._db
        columns = ", ".join(
            f"{name} {ctype}" + (" NOT NULL UNIQUE" if name == "url" else "") for name, ctype in _COLUMNS.items()
        )
        with conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema", SCHEMA_NAME),
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("created_at", datetime.now(timezone.utc).isoformat(timespec="seconds")),
                ],
            )
            # id orders rows by (latest) fetch; AUTOINCREMENT never reuses an id after a replace.
            conn.execute(f"CREATE TABLE pages (id INTEGER PRIMARY KEY AUTOINCREMENT, {columns})")
            for name in _INDEXED:
                if name != "url":  # UNIQUE already indexes it
                    conn.execute(f"CREATE INDEX pages_{name} ON pages ({name})")

    def _check_schema(self, tables: set[str]) -> None:
        if "meta" not in tables or "pages" not in tables:
            raise StoreError(f"{self.path} is a SQLite file but not a focuscrawl crawl store")
        meta = dict(self._db.execute("SELECT key, value FROM meta"))
        if meta.get("schema") != SCHEMA_NAME:
            raise StoreError(f"{self.path} is a SQLite file but not a focuscrawl crawl store")
        try:
            version = int(meta.get("schema_version", ""))
        except ValueError:
            raise StoreError(f"{self.path} has an unreadable schema version") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} was written by a newer focuscrawl (store schema {version}, this one reads {SCHEMA_VERSION})"
            )

    def _add_missing_columns(self) -> None:
        present = {row[1] for row in self._db.execute("PRAGMA table_info(pages)")}
        missing = [name for name in _COLUMNS if name not in present]
        if missing:
            with self._db:
                for name in missing:
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {name} {_COLUMNS[name]}")

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError(f"the crawl store {self.path} is closed")
        return self._conn

    def _abandon(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # --- writing ------------------------------------------------------------------------------

    def add_page(self, item: PageItem | Mapping[str, Any]) -> None:
        """Store one page (a PageItem or a dict with its fields); a re-fetch of a URL replaces it."""
        data = _item_dict(item)
        if not data.get("url"):
            raise ValueError("a page without a url cannot be stored")
        row = []
        for name in FIELDS:
            value = data.get(name)
            if name in _JSON_FIELDS:
                value = json.dumps(value or {}, ensure_ascii=False, default=str)
            elif name in _BOOL_FIELDS:
                value = int(bool(value))
            row.append(value)
        names = ", ".join(FIELDS)
        marks = ", ".join("?" * len(FIELDS))
        try:
            self._db.execute(f"INSERT OR REPLACE INTO pages ({names}) VALUES ({marks})", row)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot write to the crawl store {self.path} ({exc})") from exc
        self._pending += 1
        if self._pending >= self.commit_every:
            self.flush()

    def flush(self) -> None:
        """Commit the pages added since the last commit."""
        if self._pending:
            try:
                self._db.commit()
            except sqlite3.DatabaseError as exc:
                raise StoreError(f"cannot commit to the crawl store {self.path} ({exc})") from exc
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

    @staticmethod
    def _where(min_score: float | None, relevant_only: bool, unique_only: bool) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if min_score is not None:
            clauses.append("score >= ?")
            params.append(float(min_score))
        if relevant_only:
            clauses.append("relevant = 1")
        if unique_only:
            clauses.append("duplicate_of IS NULL")
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def iter_pages(
        self, min_score: float | None = None, relevant_only: bool = False, unique_only: bool = False
    ) -> Iterator[dict[str, Any]]:
        """Stored pages as dicts keyed by PageItem field names, in fetch order.

        ``min_score`` keeps pages scored at least that (unscored pages drop out);
        ``relevant_only`` keeps relevant pages; ``unique_only`` leaves out duplicates."""
        where, params = self._where(min_score, relevant_only, unique_only)
        try:
            cursor = self._db.execute(f"SELECT {', '.join(FIELDS)} FROM pages{where} ORDER BY id", params)
            while rows := cursor.fetchmany(500):
                for row in rows:
                    yield self._decode(row)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read the crawl store {self.path} ({exc})") from exc

    def count(self, min_score: float | None = None, relevant_only: bool = False, unique_only: bool = False) -> int:
        """How many pages iter_pages() with the same filters would yield."""
        where, params = self._where(min_score, relevant_only, unique_only)
        try:
            return self._db.execute(f"SELECT COUNT(*) FROM pages{where}", params).fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read the crawl store {self.path} ({exc})") from exc

    def get_page(self, url: str) -> dict[str, Any] | None:
        """The stored page requested as ``url``, or None."""
        try:
            row = self._db.execute(f"SELECT {', '.join(FIELDS)} FROM pages WHERE url = ?", (url,)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read the crawl store {self.path} ({exc})") from exc
        return None if row is None else self._decode(row)

    @staticmethod
    def _decode(row: tuple[Any, ...]) -> dict[str, Any]:
        page = dict(zip(FIELDS, row))
        for name in _BOOL_FIELDS:
            page[name] = bool(page[name])
        for name in _JSON_FIELDS:
            try:
                page[name] = json.loads(page[name]) if page[name] else {}
            except ValueError:
                page[name] = {}
        return page

    def meta(self) -> dict[str, str]:
        """The store's meta table (schema name and version, created_at)."""
        try:
            return dict(self._db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot read the crawl store {self.path} ({exc})") from exc


__all__ = ["FIELDS", "SCHEMA_VERSION", "CrawlStore", "StoreError", "resolve_store_path"]
