"""The crawl's state behind one interface (``CrawlBackend``): where the frontier, the seen set, the
exclusion list, the request budget and the pages in work live, and what survives a restart.

Chosen by ``FOCUS_BACKEND`` (a class path, built with ``from_crawler`` as Scrapy builds its
``DUPEFILTER_CLASS``); by default ``SharedBackend`` (Redis, several processes on one crawl) when
``FOCUS_FRONTIER_URL`` is set, else ``LocalBackend`` (this process, JOBDIR for a resume). The
scheduler, the pipelines and the crawl status read the interface only; the shared backend's
module (and redis-py) is imported only when it is the one chosen.
"""

from focuscrawl.backends.base import BackendUnavailable, CrawlBackend, backend_class

__all__ = ["BackendUnavailable", "CrawlBackend", "backend_class"]
