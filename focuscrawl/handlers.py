"""Download handlers.

Twisted's connection pool silently re-sends an idempotent request when a reused keep-alive
connection turns out to be closed by the server. That retry never passes the frontier, so it
can hit a host a few milliseconds after the previous request, below its delay. Here the pool
does not retry on its own; Scrapy's RetryMiddleware retries instead, through the frontier.
"""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler


class PoliteHTTP11DownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler):
        super().__init__(crawler)
        self._pool.retryAutomatically = False
