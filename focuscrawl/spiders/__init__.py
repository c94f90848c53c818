"""focuscrawl's spiders (``SPIDER_MODULES``)."""
