"""Download handlers.

Twisted's connection pool silently re-sends an idempotent request when a reused keep-alive
connection turns out to be closed by the server. That retry never passes the frontier, so it
can hit a host a few milliseconds after the previous request, below its delay. Here the pool
does not retry on its own; Scrapy's RetryMiddleware retries instead, through the frontier.

Scrapy keeps CONCURRENT_REQUESTS_PER_DOMAIN (here 1) idle connections per pool key. Behind an
HTTP proxy every host shares one key, the proxy's, so all but one of the concurrent requests
opened a new connection to it (300-500 of 1,000 in a replay crawl). The pool here keeps up to
CONCURRENT_REQUESTS. A direct crawl is unchanged: the frontier never has two requests in flight to
one host, so no host ever has more than one connection to give back.
"""

from __future__ import annotations

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler


class PoliteHTTP11DownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler):
        super().__init__(crawler)
        self._pool.retryAutomatically = False
        self._pool.maxPersistentPerHost = max(self._pool.maxPersistentPerHost,
                                              crawler.settings.getint("CONCURRENT_REQUESTS"))
