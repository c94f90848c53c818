"""focuscrawl: a focused, polite web crawler built on Scrapy.

``focuscrawl.Addon`` makes any Scrapy project's crawls focused (``ADDONS = {"focuscrawl.Addon": 0}``);
``focuscrawl.crawl`` and ``focuscrawl.FocusCrawl`` run a crawl from a script or a notebook.
"""

__version__ = "0.1.0"

#: Where a webmaster who sees our User-Agent in a log learns who we are.
BOT_INFO_URL = "https://github.com/focuscrawl/focuscrawl#for-webmasters"
#: The token robots.txt groups are matched against (``User-agent: focuscrawl``).
BOT_NAME = "focuscrawl"
DEFAULT_USER_AGENT = f"{BOT_NAME}/{__version__} (+{BOT_INFO_URL})"

#: public names, imported when first used (``import focuscrawl`` stays light)
_LAZY = {"Addon": "focuscrawl.addon", "FocusCrawl": "focuscrawl.api", "crawl": "focuscrawl.api",
         "CrawlError": "focuscrawl.api"}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'focuscrawl' has no attribute {name!r}")


__all__ = ["Addon", "CrawlError", "FocusCrawl", "crawl", "BOT_NAME", "DEFAULT_USER_AGENT", "__version__"]
