"""The SQLite crawl store: every fetched page, for inspection, export and retraining (Scrapy-free)."""

from focuscrawl.store.sqlite import FIELDS, SCHEMA_VERSION, CrawlStore, StoreError, resolve_store_path

__all__ = ["FIELDS", "SCHEMA_VERSION", "CrawlStore", "StoreError", "resolve_store_path"]
