"""Item pipelines: mark duplicates, store every page, let only relevant unique pages through.

The order in ITEM_PIPELINES is the data flow: DuplicatesPipeline (100) marks an item,
StorePipeline (300) keeps every item, marked or not, and RelevantItemsPipeline (900) drops
irrelevant and duplicate items so the feed export (``-o``) gets only the crawl's harvest.
The work is done by the Scrapy-free cores in focuscrawl.dedup and focuscrawl.store.

``spider=None`` on the pipeline methods: recent Scrapy (2.19) no longer passes the spider (and warns if
a method requires it); older releases still pass it.
"""

from __future__ import annotations

import logging

from itemadapter import ItemAdapter
from scrapy.exceptions import DropItem

from focuscrawl.config import DEFAULTS, FocusConfig
from focuscrawl.dedup import ExactDuplicateIndex, NearDuplicateIndex, content_hash
from focuscrawl.store import CrawlStore, resolve_store_path

logger = logging.getLogger(__name__)


class DuplicatesPipeline:
    """Sets ``duplicate_of``/``duplicate_kind`` on pages whose text was seen before.

    Exact duplicates by content hash first (cheap), then near-duplicates by MinHash LSH with
    FOCUS_NEAR_DUP_THRESHOLD, FOCUS_MINHASH_PERMUTATIONS and FOCUS_SHINGLE_SIZE. Pages without
    text (errors, non-HTML) are never duplicates. The indexes live in memory for one crawl.
    """

    def __init__(self, stats, config: FocusConfig = DEFAULTS) -> None:
        self.stats = stats
        self.exact = ExactDuplicateIndex()
        self.near = NearDuplicateIndex(threshold=config.near_dup_threshold, num_perm=config.minhash_permutations,
                                       shingle_size=config.shingle_size)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler.stats, FocusConfig.from_settings(crawler.settings))

    def process_item(self, item, spider=None):
        adapter = ItemAdapter(item)
        text = adapter.get("text") or ""
        if not text.strip():
            return item
        key = adapter.get("url") or adapter.get("final_url") or ""
        digest = adapter.get("content_hash") or content_hash(text)
        original = self.exact.find_or_add(key, digest)
        kind = "exact"
        if original is None:
            original = self.near.find_or_add(key, text)
            kind = "near"
        if original is not None:
            adapter["duplicate_of"] = original
            adapter["duplicate_kind"] = kind
            self.stats.inc_value(f"focus/dedup/{kind}")
        return item


class StorePipeline:
    """Writes every item into the crawl store at resolve_store_path(config).

    The store is opened when the spider opens, so a bad FOCUS_STORE stops the crawl before it
    fetches anything, and closed (committed) when the spider closes."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        self.path = resolve_store_path(FocusConfig.from_settings(crawler.settings))
        self.store: CrawlStore | None = None

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open_spider(self, spider=None) -> None:
        self.store = CrawlStore(self.path)
        logger.info("crawl store: %s", self.path)

    def close_spider(self, spider=None) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def process_item(self, item, spider=None):
        assert self.store is not None, "StorePipeline.process_item before open_spider"
        try:
            # a shallow dict: asdict() deep-copies every field (the page text too), per item
            self.store.add_page(dict(ItemAdapter(item)))
        except (ValueError, TypeError) as exc:
            logger.warning("not stored: %s (%r)", exc, item)
            self.crawler.stats.inc_value("focus/store/skipped")
            return item
        self.crawler.stats.inc_value("focus/store/pages")
        return item


class RelevantItemsPipeline:
    """Drops duplicates and irrelevant pages (quietly, at DEBUG) so only the harvest is exported."""

    def __init__(self, stats) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler.stats)

    def process_item(self, item, spider=None):
        adapter = ItemAdapter(item)
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
