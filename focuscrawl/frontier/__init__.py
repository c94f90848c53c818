"""The URL frontier, free of Scrapy: Mercator back queues per host, a heap of host ready
times, global best-first selection among ready hosts, lazy re-scoring, bounded size; and the
seen set."""

from focuscrawl.frontier.mercator import Entry, Frontier
from focuscrawl.frontier.seen import SeenSet, url_fingerprint

__all__ = ["Entry", "Frontier", "SeenSet", "url_fingerprint"]
