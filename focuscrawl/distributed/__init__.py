"""Several crawler processes, one crawl: the frontier and the crawl's shared state on Redis.

``FOCUS_FRONTIER_URL=redis://HOST:PORT/DB`` makes a crawler process one worker of the crawl named
``FOCUS_CRAWL_ID``; without it everything lives in the process (the embedded default).
"""
