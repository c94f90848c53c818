"""The labels of a crawl store: a person's judgements of its pages, every one kept (``CrawlStore``
has them through ``StoreLabels``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from focuscrawl.labelling.labels import LabelError, check_label, clean_who
from focuscrawl.store.schema import LABELS_SCHEMA, LABEL_FIELDS, now


class StoreLabels:
    """``CrawlStore``'s labels, over its connection (``_db``), its errors (``_failing``) and its
    commits (``_pending``)."""


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
        row = {"url": page_url, "label": value, "who": clean_who(who), "at": now(), "crawl": page_crawl}
        with self._failing("write to"):
            with self._db:
                if not self._labels_table:
                    self._db.execute(LABELS_SCHEMA)
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
