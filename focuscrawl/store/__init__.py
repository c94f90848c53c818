"""The SQLite crawl store: every fetched page, for inspection, export and retraining (Scrapy-free)."""

from focuscrawl.store.sqlite import FIELDS, LABEL_FIELDS, SCHEMA_VERSION, CrawlStore, StoreError, resolve_store_path

__all__ = ["FIELDS", "LABEL_FIELDS", "SCHEMA_VERSION", "CrawlStore", "StoreError", "resolve_store_path"]
