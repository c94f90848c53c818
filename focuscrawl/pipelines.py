"""Item pipelines: mark duplicates, store every page, let only relevant unique pages through.

The order in ITEM_PIPELINES is the data flow: DuplicatesPipeline (100) marks an item,
StorePipeline (300) keeps every item, marked or not, and RelevantItemsPipeline (900) drops
irrelevant and duplicate items so the feed export (``-o``) gets only the crawl's harvest.
The work is done by the Scrapy-free cores in focuscrawl.dedup and focuscrawl.store.

Nothing is lost when the crawl is killed: the store commits every page, the feed has each item
before it counts as exported (focuscrawl/feeds.py), and a crawl resumed from its JOBDIR takes up
the same crawl id, finds its duplicate indexes in the store as its pages left them (they are
committed with each page), and re-emits the relevant pages no feed has yet
(``signals.crawl_opened``; the spider emits them first). A page fetched again after a kill is not
exported twice.

``spider=None`` on the pipeline methods: recent Scrapy (2.19) no longer passes the spider (and warns if
a method requires it); older releases still pass it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os

from itemadapter import ItemAdapter
from scrapy import signals
from scrapy.exceptions import DropItem

from focuscrawl import signals as focus_signals
from focuscrawl.backends import backend_class
from focuscrawl.config import DEFAULTS, FocusConfig
from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash
from focuscrawl.feeds import feeds_durability
from focuscrawl.items import PageItem
from focuscrawl.store import FIELDS, CrawlStore, StoreError, resolve_store_path
from focuscrawl.store.dedup import StoreExactIndex, StoreNearIndex

#: In JOBDIR: which crawl of which store this JOBDIR's crawl is, so a resumed run takes it up again.
CRAWL_RECORD = "focus-crawl.json"
#: Scheduler state in JOBDIR (focuscrawl/jobdir.py): a JOBDIR crawled before crawl ids has it.
_JOBDIR_SNAPSHOT = "focus-frontier.pickle"

logger = logging.getLogger(__name__)


class DuplicatesPipeline:
    """Sets ``duplicate_of``/``duplicate_kind`` on pages whose text was seen before.

    Exact duplicates by content hash first (cheap), then near-duplicates by MinHash LSH with
    FOCUS_NEAR_DUP_THRESHOLD, FOCUS_MINHASH_PERMUTATIONS and FOCUS_SHINGLE_SIZE. Pages without
    text (errors, non-HTML) are never duplicates. The indexes live in the crawl store beside the
    crawl's pages (``focuscrawl.store.dedup``: nothing a page in memory, committed with each page),
    in Redis for a crawl shared by several workers (FOCUS_FRONTIER_URL), or in memory when no
    store is opened (StorePipeline not enabled). A page the store's index cannot judge (a store
    error) goes on unmarked, counted as ``focus/dedup/errors``.
    """

    def __init__(self, stats, config: FocusConfig = DEFAULTS) -> None:
        self.stats = stats
        self.parameters = {"threshold": config.near_dup_threshold, "num_perm": config.minhash_permutations,
                           "shingle_size": config.shingle_size}
        # the backend's own indexes (a shared crawl's, which every worker sees), else the store's
        # once it is opened, in memory until then
        indexes = backend_class(config).duplicate_indexes(config, **self.parameters)
        self.in_store = indexes is None
        self.exact, self.near = indexes or (ExactDuplicateIndex(), NearDuplicateIndex(**self.parameters))

    @classmethod
    def from_crawler(cls, crawler):
        pipeline = cls(crawler.stats, FocusConfig.from_settings(crawler.settings))
        crawler.signals.connect(pipeline._on_crawl_opened, signal=focus_signals.crawl_opened)
        return pipeline

    def _on_crawl_opened(self, store, crawl_id, resumed, to_export=(), **kwargs):
        """The crawl's indexes are taken from its store (a shared crawl's are in Redis). A resumed
        crawl finds them as its stored pages left them; one whose pages were stored without them
        (an older focuscrawl, other near-duplicate parameters) has them rebuilt from its pages, in
        the order it fetched them, as if it had never stopped."""
        if not self.in_store:
            return
        self.exact = StoreExactIndex(store.connection, crawl_id)
        self.near = StoreNearIndex(store.connection, crawl_id, **self.parameters)
        if resumed and not self.near.kept:
            self.exact.clear()
            self.near.clear()
            pages = 0
            for page in store.iter_pages(crawl=crawl_id):
                self._find(page)
                pages += 1
            logger.info("duplicate indexes rebuilt from %d stored pages of crawl %d", pages, crawl_id)
        store.connection.commit()  # the tables made: no write left open while the crawl starts

    def _find(self, page) -> tuple[str, str] | None:
        """(original, kind) of a page whose text was seen before; remembers the page otherwise."""
        text = page.get("text") or ""
        if not text.strip():
            return None
        key = page.get("url") or page.get("final_url") or ""
        original = self.exact.find_or_add(key, page.get("content_hash") or content_hash(text))
        if original is not None:
            return original, "exact"
        original = self.near.find_or_add(key, text)
        return None if original is None else (original, "near")

    def process_item(self, item, spider=None):
        if not isinstance(item, PageItem):
            return item  # a project spider's own item (focuscrawl.Addon): not ours to judge
        adapter = ItemAdapter(item)
        if adapter.get("restored"):
            return item  # judged before the kill
        if (adapter.get("extra") or {}).get("revisit"):
            return item  # a new version of a page judged at its first fetch: not a copy of itself
        try:
            found = self._find(adapter)
        except StoreError as exc:
            logger.warning("%s not checked for duplicates: %s", adapter.get("url"), exc)
            self.stats.inc_value("focus/dedup/errors")
            return item
        if found is not None:
            adapter["duplicate_of"], adapter["duplicate_kind"] = found
            self.stats.inc_value(f"focus/dedup/{found[1]}")
        return item


class StorePipeline:
    """Writes every item into the crawl store at resolve_store_path(config), as one crawl.

    The store is opened when the spider opens, so a bad FOCUS_STORE stops the crawl before it
    fetches anything. A new crawl gets a new crawl id (a store may hold several crawls; ``scrapy
    export`` exports one); a crawl resumed from its JOBDIR takes up its own id again
    (``focus-crawl.json`` in JOBDIR). Items a feed has are marked exported: at once when every
    feed writes through (focuscrawl/feeds.py), else when the feeds have closed. The crawl's end
    and its reason are recorded when the spider closes."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.config = FocusConfig.from_settings(crawler.settings)
        self.path = resolve_store_path(self.config)
        self.store: CrawlStore | None = None
        self.crawl_id: int | None = None
        self.durability = feeds_durability(crawler.settings)
        self._exported_at_close: list[str] = []  # feeds that keep items only once closed
        crawler.signals.connect(self._on_item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._on_spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(self._on_feeds_closed, signal=signals.feed_exporter_closed)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open_spider(self, spider=None) -> None:
        self.store = CrawlStore(self.path)
        resumed = self._open_crawl()
        crawl_id = self.crawl_id = self.store.crawl_id
        to_export = self._unexported() if resumed else []
        others = [other for other in self.store.crawl_ids() if other != crawl_id]
        logger.info("crawl store: %s, crawl %d (%s)%s", self.path, crawl_id, "resumed" if resumed else "new",
                    f"; it also holds crawl(s) {', '.join(map(str, others))}: scrapy export --crawl ID" if others else "")
        if to_export:
            logger.info("%d relevant pages stored before the kill and in no feed yet are emitted again", len(to_export))
            self.crawler.stats.set_value("focus/store/reemitted", len(to_export))
        self.crawler.signals.send_catch_log(focus_signals.crawl_opened, store=self.store, crawl_id=crawl_id,
                                            resumed=resumed, to_export=to_export)

    def _open_crawl(self) -> bool:
        """Begin this run's crawl, or take up the JOBDIR's; True when taken up."""
        store, jobdir = self.store, self.config.jobdir
        record = os.path.join(jobdir, CRAWL_RECORD) if jobdir else None
        if record and os.path.exists(record):
            try:
                with open(record, encoding="utf-8") as handle:
                    known = json.load(handle)
                crawl_id, known_store = int(known["crawl"]), str(known["store"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                logger.warning("%s is unreadable (%s): a new crawl begins in the store", record, exc)
            else:
                if os.path.abspath(known_store) != os.path.abspath(self.path):
                    logger.warning("JOBDIR %s is crawl %d of the store %s, not of %s: a new crawl begins there",
                                   jobdir, crawl_id, known_store, self.path)
                elif crawl_id not in store.crawl_ids():
                    logger.warning("the store %s holds no crawl %d, which JOBDIR %s resumes: a new crawl begins",
                                   self.path, crawl_id, jobdir)
                else:
                    store.resume_crawl(crawl_id)
                    return True
        elif jobdir and os.path.exists(os.path.join(jobdir, _JOBDIR_SNAPSHOT)) \
                and (latest := store.latest_crawl()) is not None:
            store.resume_crawl(latest)  # a JOBDIR crawled before crawl ids: its store's crawl
            self._remember(record)
            return True
        elif (shared := self._shared_crawl_in_store()) is not None:
            store.resume_crawl(shared)  # a worker of a shared crawl, started again: the crawl is the same
            return True
        store.begin_crawl(model=self._model(), settings=self._settings(), jobdir=jobdir)
        if record:
            self._remember(record)
        return False

    def _shared_crawl_in_store(self) -> int | None:
        """The store's latest crawl when it is this worker's part of the same shared crawl (same
        Redis, same FOCUS_CRAWL_ID): a worker killed and started again takes its part up again."""
        latest = self.store.latest_crawl()
        if latest is None:
            return None
        return latest if backend_class(self.config).continues(self.config, self.store.crawl(latest)["settings"]) \
            else None

    def _remember(self, record: str) -> None:
        """The crawl id in JOBDIR, written whole (temporary file, then rename)."""
        partial = record + ".tmp"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump({"crawl": self.store.crawl_id, "store": os.path.abspath(self.path)}, handle)
        os.replace(partial, record)

    def _model(self) -> str | None:
        """The model's path, absolute: ``scrapy train`` and ``scrapy label`` find it from anywhere."""
        spider = self.crawler.spider
        path = getattr(spider, "model_arg", None) or self.config.model
        return os.path.abspath(path) if path else None

    def _settings(self) -> dict:
        """What sets this crawl apart: the spider, its seeds and the settings changed from their defaults."""
        changed = {f.metadata.get("setting", f.name.upper()): getattr(self.config, f.name)
                   for f in dataclasses.fields(self.config)
                   if getattr(self.config, f.name) != getattr(DEFAULTS, f.name)}
        spider = self.crawler.spider
        return {"spider": getattr(spider, "name", None), "seeds": getattr(spider, "seed_arg", None), **changed}

    def _unexported(self) -> Unexported | list:
        """Relevant, unique pages of this crawl that no durable feed has (none without a feed)."""
        if self.durability is None:
            return []
        pages = self.store.iter_pages(relevant_only=True, unique_only=True, crawl=self.store.crawl_id, exported=False)
        return Unexported(self.store, [page["url"] for page in pages])

    def process_item(self, item, spider=None):
        assert self.store is not None, "StorePipeline.process_item before open_spider"
        if not isinstance(item, PageItem):
            return item  # a project spider's own item (focuscrawl.Addon): its pages are stored as records
        adapter = ItemAdapter(item)
        if adapter.get("restored"):
            return item  # stored before the kill
        try:
            # a shallow dict: asdict() deep-copies every field (the page text too), per item
            if self.store.add_page(dict(adapter)):
                adapter["exported"] = True
        except (ValueError, TypeError) as exc:
            logger.warning("not stored: %s (%r)", exc, item)
            self.crawler.stats.inc_value("focus/store/skipped")
            return item
        self.crawler.stats.inc_value("focus/store/pages")
        self.crawler.signals.send_catch_log(focus_signals.page_stored, item=item)
        return item

    def _on_item_scraped(self, item, response=None, spider=None):
        """The feed exporter (connected first) has written the item."""
        if not isinstance(item, PageItem):
            return
        url = ItemAdapter(item).get("url")
        if not url or self.durability is None:
            return
        if self.durability == "each" and self.store is not None:
            self.store.mark_exported([url])
        else:
            self._exported_at_close.append(url)

    def close_spider(self, spider=None) -> None:
        if self.store is not None:
            self.store.flush()

    def _on_spider_closed(self, spider=None, reason=None):
        if self.store is not None:
            try:
                self.store.end_crawl(reason)
            finally:
                self.store.close()
                self.store = None

    def _on_feeds_closed(self):
        """Feeds that keep items only once closed (remote storages, post-processing) have them now."""
        if not self._exported_at_close or self.crawl_id is None:
            return
        try:
            with CrawlStore(self.path, create=False) as store:
                store.crawl_id = self.crawl_id
                store.mark_exported(self._exported_at_close)
        except StoreError as exc:
            logger.warning("the feeds' pages not marked exported in %s: %s", self.path, exc)
        self._exported_at_close.clear()


class Unexported:
    """The relevant pages of a resumed crawl that no feed has: their URLs at once, each page read
    from the store as it is emitted (a crawl run without a feed may have stored many)."""

    def __init__(self, store: CrawlStore, urls: list[str]) -> None:
        self.store, self.urls = store, urls

    def __len__(self) -> int:
        return len(self.urls)

    def __iter__(self):
        crawl = self.store.crawl_id
        for url in self.urls:
            try:
                page = self.store.get_page(url, crawl=crawl)
            except StoreError as exc:  # the store closed under the emission: the next resume emits the rest
                logger.warning("re-emission stopped: %s", exc)
                return
            if page is not None:
                yield PageItem(**{name: page[name] for name in FIELDS}, restored=True)


class RelevantItemsPipeline:
    """Drops duplicates and irrelevant pages (quietly, at DEBUG) so only the harvest is exported;
    drops the page records of a project's own spider (focuscrawl.Addon), judged and stored by now,
    so its pipelines and feeds get only its own items, which pass untouched."""

    def __init__(self, stats) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler.stats)

    def process_item(self, item, spider=None):
        if not isinstance(item, PageItem):
            return item
        adapter = ItemAdapter(item)
        if adapter.get("record_only"):
            self.stats.inc_value("focus/items/page_records")
            raise DropItem("a page record: stored, not exported", log_level="DEBUG")
        if adapter.get("exported"):
            self.stats.inc_value("focus/items/dropped_exported")
            raise DropItem("already in this crawl's feed (fetched again after a kill)", log_level="DEBUG")
        if adapter.get("duplicate_of"):
            self.stats.inc_value("focus/items/dropped_duplicate")
            raise DropItem(
                f"{adapter.get('duplicate_kind') or 'a'} duplicate of {adapter['duplicate_of']}", log_level="DEBUG"
            )
        if not adapter.get("relevant"):
            self.stats.inc_value("focus/items/dropped_irrelevant")
            raise DropItem("not relevant", log_level="DEBUG")
        self.stats.inc_value("focus/items/relevant")
        return item
