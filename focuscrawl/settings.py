"""Scrapy settings for focuscrawl's own project: the focused crawl itself comes from the add-on
(``focuscrawl.Addon``, focuscrawl/addon.py), as in any other project; the ``FOCUS_*`` settings and
their defaults are in ``focuscrawl/config.py``. What is here is the project's own.

Scrapy's own settings keep their meaning (the add-on sets them, a value here or ``-s`` wins):

- ``DOWNLOAD_DELAY``: the minimum gap, in seconds, between two requests to one host. The frontier
  enforces it (measured from the end of the previous response), so a request never waits in a
  download slot. ``0`` turns the minimum off for benchmarks; a robots.txt ``Crawl-delay`` and the
  adaptive delay still apply.
- ``CONCURRENT_REQUESTS``: requests in flight across all hosts. Per host it is always one.
- ``ROBOTSTXT_OBEY``: obey robots.txt (Protego), Crawl-delay included.
- ``USER_AGENT``: names focuscrawl and a URL about it; ``ROBOTSTXT_USER_AGENT`` is the token matched
  against robots.txt groups.
- ``JOBDIR``: checkpoint and resume; the crawl store defaults to ``JOBDIR/crawl.db``.
"""

from focuscrawl import BOT_NAME as _BOT
from focuscrawl.items import PageItem as _PageItem

BOT_NAME = _BOT
SPIDER_MODULES = ["focuscrawl.spiders"]
NEWSPIDER_MODULE = "focuscrawl.spiders"
# train, export, replay, evaluate, ... (and crawl, settings with focuscrawl's checks), in this
# project and through the `focuscrawl` command; never in other projects
COMMANDS_MODULE = "focuscrawl.commands"

# The focused crawl: scheduler, handlers, resolver, middlewares, pipelines, extensions, feed
# storages, the FOCUS_* defaults; the render backend's components (FOCUS_RENDER_BACKEND=splash:
# scrapy-splash's middlewares)
ADDONS = {"focuscrawl.Addon": 0}

COOKIES_ENABLED = False
TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False  # a crawler opens no listening ports unless asked to
# Spider output is processed by this many concurrent workers per response; Scrapy's default (100)
# spends more on creating workers than a page's item and links need.
CONCURRENT_ITEMS = 16
# Scrapy checks every callback for a generator that returns a value by reading and parsing its
# source, on every response: a bound method misses its cache (about 1% of a crawl's time in a
# profile). tests/test_spider.py makes the same check once on every callback focuscrawl uses.
WARN_ON_GENERATOR_RETURN_VALUE = False
HTTPERROR_ALLOW_ALL = True  # every status reaches the spider, so every fetch is recorded and learned from

FEED_EXPORT_ENCODING = "utf-8"
FEED_EXPORT_FIELDS = list(_PageItem.EXPORT_FIELDS)  # the same fields, in the same order, as `scrapy export`

LOG_LEVEL = "INFO"

# --- focuscrawl settings (FOCUS_*) ---------------------------------------------------------------
# Every FOCUS_* setting, its default and its check live in focuscrawl/config.py (FocusConfig), the
# one place the crawl's parts read them from: set one here or with -s to override its default.
