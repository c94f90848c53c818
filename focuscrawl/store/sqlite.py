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
from datetime import datetime, timezone
from typing import Any

from focuscrawl.config import FocusConfig
from focuscrawl.items import PageItem
from focuscrawl.labelling.labels import LabelError, check_label, clean_who
from focuscrawl.urls import w3lib_canonical

logger = logging.getLogger(__name__)

SCHEMA_NAME = "focuscrawl-crawl-store"
SCHEMA_VERSION = 2

#: PageItem field names in declaration order: the store's columns and the keys of iter_pages()
#: (``links`` goes to the links table, not to a column).
_STORED = tuple(f for f in dataclasses.fields(PageItem) if f.metadata.get("column", True))
FIELDS: tuple[str, ...] = tuple(f.name for f in _STORED)
#: Bounds of the link table: links kept per page (in page order), characters of anchor and context.
MAX_LINKS_PER_PAGE = 300
MAX_ANCHOR_CHARS = 120
MAX_CONTEXT_CHARS = 240
#: what a row of links may inflate to: MAX_LINKS_PER_PAGE links of a URL (FOCUS_MAX_URL_LENGTH's
#: bound is a setting: 8 KiB each here is generous), an anchor and a context, as escaped JSON
_MAX_LINKS_ROW_BYTES = MAX_LINKS_PER_PAGE * 6 * (8192 + MAX_ANCHOR_CHARS + MAX_CONTEXT_CHARS)
_BOOL_FIELDS = {"relevant"}
_JSON_FIELDS = {"extra"}
_INDEXED = ("final_url", "relevant", "score")  # (crawl, url) is the table's UNIQUE key


def _column_type(annotation: str) -> str:
    base = str(annotation).replace(" | None", "").strip()
    return {"int": "INTEGER", "bool": "INTEGER", "float": "REAL"}.get(base, "TEXT")


_COLUMNS = {f.name: _column_type(f.type) for f in _STORED}
#: page: pages.id (a re-fetch gets a new id); n: how many links; data: zlib(JSON [[url, anchor, context], ...])
_LINKS_SCHEMA = "CREATE TABLE links (page INTEGER PRIMARY KEY, n INTEGER NOT NULL, data BLOB NOT NULL)"
_CRAWLS_SCHEMA = ("CREATE TABLE crawls (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at TEXT NOT NULL, "
                  "resumed_at TEXT, ended_at TEXT, end_reason TEXT, model TEXT, settings TEXT, jobdir TEXT)")
#: a person's judgement of a page: every judgement is kept (who, when); a URL's label is its latest.
#: url: the page's requested URL; crawl: the crawl whose page was judged (None: given by URL alone)
_LABELS_SCHEMA = ("CREATE TABLE IF NOT EXISTS labels (id INTEGER PRIMARY KEY AUTOINCREMENT, url TEXT NOT NULL, "
                  "crawl INTEGER, label TEXT NOT NULL, who TEXT NOT NULL DEFAULT '', at TEXT NOT NULL)")
LABEL_FIELDS = ("url", "label", "who", "at", "crawl")
#: how every SQLite database file begins
SQLITE_MAGIC = b"SQLite format 3\x00"
#: the columns a crawl is described by (``crawls()``)
CRAWL_FIELDS = ("id", "started_at", "resumed_at", "ended_at", "end_reason", "model", "settings", "jobdir")


def _pages_schema(table: str = "pages") -> str:
    """pages: a row per (crawl, requested URL); ``exported``: a durable feed has the page."""
    columns = ", ".join(f"{name} {ctype}" + (" NOT NULL" if name == "url" else "") for name, ctype in _COLUMNS.items())
    # id orders rows by (latest) fetch; AUTOINCREMENT never reuses an id after a replace.
    return (f"CREATE TABLE {table} (id INTEGER PRIMARY KEY AUTOINCREMENT, crawl INTEGER NOT NULL, {columns}, "
            f"exported INTEGER NOT NULL DEFAULT 0, UNIQUE (crawl, url))")


def _crawl_row(row, extra: tuple[str, ...] = ()) -> dict[str, Any]:
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


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
        raw = inflate.decompress(data, _MAX_LINKS_ROW_BYTES)
        if inflate.unconsumed_tail:  # more than any row add_page writes: not one of its rows
            raise ValueError(f"a row of links inflates past {_MAX_LINKS_ROW_BYTES} bytes")
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


class CrawlStore:
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
                self._create_schema()
                tables = {"links"}
            else:
                version = self._check_schema(tables)
                self._add_missing_columns()
                if version < 2:
                    self._upgrade_to_crawls()
            self._links_table = "links" in tables
            self._labels_table = "labels" in tables
        except sqlite3.DatabaseError as exc:
            self._abandon()
            raise StoreError(f"{self.path} is not a usable focuscrawl crawl store ({exc})") from exc
        except StoreError:
            self._abandon()
            raise

    # --- schema -------------------------------------------------------------------------------

    def _create_schema(self) -> None:
        conn = self._db
        with conn:
            conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema", SCHEMA_NAME),
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("created_at", _now()),
                ],
            )
            conn.execute(_CRAWLS_SCHEMA)
            conn.execute(_pages_schema())
            self._create_indexes()
            conn.execute(_LINKS_SCHEMA)

    def _create_indexes(self) -> None:
        for name in _INDEXED:
            self._db.execute(f"CREATE INDEX IF NOT EXISTS pages_{name} ON pages ({name})")

    def _upgrade_to_crawls(self) -> None:
        """Schema 1 -> 2: the pages of a store written before crawl ids become crawl 1 (counted as
        exported: its feeds are not known), keeping their ids, so their links stay theirs."""
        conn = self._db
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        names = ", ".join(_COLUMNS)
        try:
            with conn:
                conn.execute(_CRAWLS_SCHEMA)
                conn.execute("INSERT INTO crawls (id, started_at, end_reason) VALUES (1, ?, ?)",
                             (meta.get("created_at") or _now(), "written before crawl ids"))
                conn.execute(_pages_schema("pages_v2"))
                conn.execute(f"INSERT INTO pages_v2 (id, crawl, {names}, exported) "
                             f"SELECT id, 1, {names}, 1 FROM pages")
                conn.execute("DROP TABLE pages")
                conn.execute("ALTER TABLE pages_v2 RENAME TO pages")
                self._create_indexes()
                conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
        except sqlite3.OperationalError as exc:
            raise StoreError(f"{self.path} was written by an older focuscrawl and cannot be upgraded "
                             f"here ({exc}); open it once where it is writable") from exc
        logger.info("crawl store %s upgraded: its pages are crawl 1", self.path)

    def _check_schema(self, tables: set[str]) -> int:
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
        return version

    def _add_missing_columns(self) -> None:
        present = {row[1] for row in self._db.execute("PRAGMA table_info(pages)")}
        missing = [name for name in _COLUMNS if name not in present]
        if missing:
            with self._db:
                for name in missing:
                    self._db.execute(f"ALTER TABLE pages ADD COLUMN {name} {_COLUMNS[name]}")

    def _add_links_table(self) -> None:
        """An older store gets the links table when it is written to (a reader leaves it as it is,
        so ``has_links`` can tell a store that never recorded links)."""
        with self._db:
            self._db.execute(_LINKS_SCHEMA)
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
                    (_now(), model, json.dumps(dict(settings or {}), sort_keys=True, default=str), jobdir))
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
                                 (_now(), crawl_id))
        self.crawl_id = int(crawl_id)

    def end_crawl(self, reason: str | None = None) -> None:
        """Record that the current crawl ended (a killed crawl never gets here: no end)."""
        if self.crawl_id is None:
            return
        self.flush()
        with self._failing("write to"):
            with self._db:
                self._db.execute("UPDATE crawls SET ended_at = ?, end_reason = ? WHERE id = ?",
                                 (_now(), reason, self.crawl_id))

    def crawls(self) -> list[dict[str, Any]]:
        """Every crawl, oldest first: its CRAWL_FIELDS (``settings`` decoded), ``pages`` and
        ``relevant`` (relevant, non-duplicate pages: what its feed and ``scrapy export`` hold)."""
        sql = (f"SELECT {', '.join('c.' + f for f in CRAWL_FIELDS)}, COUNT(p.id), "
               "COALESCE(SUM(p.relevant = 1 AND p.duplicate_of IS NULL), 0) "
               "FROM crawls c LEFT JOIN pages p ON p.crawl = c.id GROUP BY c.id ORDER BY c.id")
        with self._failing("read"):
            rows = self._db.execute(sql).fetchall()
        return [_crawl_row(row, ("pages", "relevant")) for row in rows]

    def crawl(self, crawl_id: int) -> dict[str, Any] | None:
        """One crawl's CRAWL_FIELDS (``settings`` decoded), read from its row alone (no page
        counts: ``crawls()`` passes over every page); None when the store has no such crawl."""
        with self._failing("read"):
            row = self._db.execute(f"SELECT {', '.join(CRAWL_FIELDS)} FROM crawls WHERE id = ?",
                                   (int(crawl_id),)).fetchone()
        return _crawl_row(row) if row else None

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
            if name in _JSON_FIELDS:
                value = json.dumps(value or {}, ensure_ascii=False, default=str)
            elif name in _BOOL_FIELDS:
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

    # --- labels -------------------------------------------------------------------------------

    def add_label(self, url: str, label: str, *, who: str | None = "", crawl: int | None = None) -> dict[str, Any]:
        """Record a person's judgement of the stored page requested (or finally fetched) as ``url``:
        ``label`` is one of focuscrawl.labelling.LABELS. Committed at once (a label is a person's
        work). Returns the label as ``labels()`` gives it. A page the store does not hold (in
        ``crawl``, when given) is a LabelError."""
        value = check_label(label)
        page = self._page_row(url, crawl)
        if page is None:
            where = f" in crawl {crawl}" if crawl is not None else ""
            raise LabelError(f"the crawl store {self.path} holds no page {url!r}{where}")
        page_url, page_crawl = page
        row = {"url": page_url, "label": value, "who": clean_who(who), "at": _now(), "crawl": page_crawl}
        with self._failing("write to"):
            with self._db:
                if not self._labels_table:
                    self._db.execute(_LABELS_SCHEMA)
                    self._labels_table = True
                self._db.execute("INSERT INTO labels (url, label, who, at, crawl) VALUES (?, ?, ?, ?, ?)",
                                 (row["url"], row["label"], row["who"], row["at"], row["crawl"]))
        self._pending = 0  # ``with self._db`` committed the pages pending too
        return row

    def _page_row(self, url: str, crawl: int | None) -> tuple[str, int] | None:
        """(requested url, crawl) of the latest stored fetch of ``url`` (requested or final)."""
        where = "(url = ? OR final_url = ?)" + (" AND crawl = ?" if crawl is not None else "")
        params = (url, url) + ((int(crawl),) if crawl is not None else ())
        with self._failing("read"):
            return self._db.execute(f"SELECT url, crawl FROM pages WHERE {where} ORDER BY id DESC LIMIT 1",
                                    params).fetchone()

    def _has_labels(self) -> bool:
        """Whether the labels table exists: another process (``scrapy label`` beside a running
        crawl) may have created it since this store was opened."""
        if not self._labels_table:
            with self._failing("read"):
                self._labels_table = self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'labels'").fetchone() is not None
        return self._labels_table

    def labels(self, crawl: int | None = None, *, history: bool = False,
               final_urls: bool = False) -> list[dict[str, Any]]:
        """The labels given to the pages of ``crawl`` (None: of every crawl), oldest first, each a
        dict of LABEL_FIELDS: each URL's latest judgement, or every judgement with ``history``;
        with ``final_urls``, also ``final_url``, the URL the labelled page's fetch ended at.
        Empty in a store no label was ever given in."""
        if not self._has_labels():
            return []
        fields = ", ".join(f"l.{name}" for name in LABEL_FIELDS)
        names = LABEL_FIELDS
        if final_urls:
            # a label names its page's crawl (add_label finds it): one look-up in UNIQUE (crawl, url)
            fields += ", (SELECT p.final_url FROM pages p WHERE p.crawl = l.crawl AND p.url = l.url)"
            names = (*LABEL_FIELDS, "final_url")
        where, params = ("WHERE crawl = ?", [int(crawl)]) if crawl is not None else ("", [])
        if history:
            sql = f"SELECT {fields} FROM labels l {where} ORDER BY l.id"
        else:
            sql = (f"SELECT {fields} FROM labels l WHERE l.id IN "
                   f"(SELECT MAX(id) FROM labels {where} GROUP BY url) ORDER BY l.id")
        with self._failing("read"):
            return [dict(zip(names, row)) for row in self._db.execute(sql, params)]

    def remove_label(self, given: Mapping[str, Any]) -> bool:
        """Take back a label ``add_label`` returned (``given``), if it is still its page's latest
        judgement: the undo of a key pressed by mistake. The page is left as it was before, with
        its earlier label or none (back in the labelling queue), and no reader has to know about
        withdrawn labels. A key pressed by mistake is not a judgement, so its row goes; a change
        of mind is a new label, and history keeps both. False, and nothing removed, when the page
        has been judged again since: that later judgement stands."""
        if not self._has_labels():
            return False
        with self._failing("write to"):
            with self._db:
                removed = self._db.execute(
                    "DELETE FROM labels WHERE id = (SELECT MAX(id) FROM labels WHERE url = ?) "
                    "AND label = ? AND who = ? AND at = ? AND crawl IS ?",
                    (given["url"], given["label"], given["who"], given["at"], given["crawl"])).rowcount
        self._pending = 0  # ``with self._db`` committed the pages pending too
        return removed == 1

    def label_of(self, url: str) -> str | None:
        """The latest label of the page requested as ``url``, or None."""
        if not self._has_labels():
            return None
        with self._failing("read"):
            row = self._db.execute("SELECT label FROM labels WHERE url = ? ORDER BY id DESC LIMIT 1", (url,)).fetchone()
        return None if row is None else row[0]

    # --- reading ------------------------------------------------------------------------------

    @staticmethod
    def _where(min_score: float | None, relevant_only: bool, unique_only: bool, crawl: int | None = None,
               exported: bool | None = None) -> tuple[str, list[Any]]:
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

    def iter_pages(
        self, min_score: float | None = None, relevant_only: bool = False, unique_only: bool = False,
        crawl: int | None = None, exported: bool | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Stored pages as dicts keyed by PageItem field names, in fetch order.

        ``min_score`` keeps pages scored at least that (unscored pages drop out);
        ``relevant_only`` keeps relevant pages; ``unique_only`` leaves out duplicates; ``crawl``
        keeps one crawl's pages (None: every crawl's); ``exported`` keeps the pages a durable feed
        has (True) or has not (False)."""
        where, params = self._where(min_score, relevant_only, unique_only, crawl, exported)
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
        where, params = self._where(min_score, relevant_only, unique_only, crawl, exported)
        with self._failing("read"):
            return self._db.execute(f"SELECT COUNT(*) FROM pages{where}", params).fetchone()[0]

    def get_page(self, url: str, crawl: int | None = None) -> dict[str, Any] | None:
        """The stored page requested as ``url`` in ``crawl`` (None: its latest fetch in any crawl), or None."""
        where, params = ("url = ? AND crawl = ?", (url, int(crawl))) if crawl is not None else ("url = ?", (url,))
        with self._failing("read"):
            row = self._db.execute(f"SELECT {', '.join(FIELDS)} FROM pages WHERE {where} ORDER BY id DESC LIMIT 1",
                                   params).fetchone()
        return None if row is None else self._decode(row)

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
        with self._failing("read"):
            return dict(self._db.execute("SELECT key, value FROM meta"))


__all__ = ["CRAWL_FIELDS", "FIELDS", "LABEL_FIELDS", "MAX_LINKS_PER_PAGE", "SCHEMA_VERSION", "SQLITE_MAGIC", "CrawlStore",
           "StoreError", "is_crawl_store", "resolve_store_path"]
