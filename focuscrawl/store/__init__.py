"""The SQLite crawl store: every fetched page, for inspection, export and retraining (Scrapy-free)."""

from focuscrawl.store.sqlite import (FIELDS, LABEL_FIELDS, SCHEMA_VERSION, SQLITE_MAGIC, CrawlStore, StoreError,
                                     is_crawl_store, resolve_store_path)

__all__ = ["FIELDS", "LABEL_FIELDS", "SCHEMA_VERSION", "SQLITE_MAGIC", "CrawlStore", "StoreError", "is_crawl_store",
           "resolve_store_path"]
