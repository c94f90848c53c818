"""Scrapy settings for focuscrawl. The focuscrawl settings (``FOCUS_*``) and their defaults are in
``focuscrawl/config.py``.

Scrapy's own settings keep their meaning:

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

from scrapy.settings import default_settings as _scrapy_defaults

from focuscrawl import BOT_NAME as _BOT, DEFAULT_USER_AGENT
from focuscrawl.items import PageItem as _PageItem

BOT_NAME = _BOT
SPIDER_MODULES = ["focuscrawl.spiders"]
NEWSPIDER_MODULE = "focuscrawl.spiders"
COMMANDS_MODULE = "focuscrawl.commands"

# --- identification -------------------------------------------------------------------------
USER_AGENT = DEFAULT_USER_AGENT
ROBOTSTXT_USER_AGENT = _BOT

# --- politeness (enforced by the frontier; see focuscrawl/politeness) ------------------------
ROBOTSTXT_OBEY = True
DOWNLOAD_DELAY = 1.0
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 1
CONCURRENT_REQUESTS_PER_IP = 0
REDIRECT_MAX_TIMES = 5  # robots.txt may redirect 5 times (RFC 9309); pages FOCUS_MAX_REDIRECTS
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 10 * 1024 * 1024
DOWNLOAD_WARNSIZE = 2 * 1024 * 1024
RETRY_TIMES = 1
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
AUTOTHROTTLE_ENABLED = False  # the adaptive per-host delay replaces it

# Twisted's pool would re-send a request on a reset keep-alive connection behind the frontier's back;
# a request the scheduler made a render goes to a browser, started at the first (focuscrawl/rendering).
DOWNLOAD_HANDLERS = {
    "http": "focuscrawl.rendering.browser.FocusDownloadHandler",
    "https": "focuscrawl.rendering.browser.FocusDownloadHandler",
}

# The render backend's components (FOCUS_RENDER_BACKEND=splash: scrapy-splash's middlewares)
ADDONS = {"focuscrawl.rendering.addon.RenderBackend": 0}

# --- the crawl brain ---------------------------------------------------------------------------
SCHEDULER = "focuscrawl.scheduler.FocusScheduler"

DOWNLOADER_MIDDLEWARES = {
    # robots.txt is fetched by the frontier itself (so robots.txt requests obey the per-host
    # delay), with Crawl-delay and RFC 9309 error semantics. Scrapy's middleware is replaced.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    # Next to the downloader: sees every raw response (redirects included) for the request log.
    "focuscrawl.middlewares.CrawlLogMiddleware": 950,
    # Nearer still, so that a response or a lookup it refuses is logged once, as refused.
    "focuscrawl.network_guard.NetworkGuardMiddleware": 960,
}

# Resident memory that is what the crawl holds, not the high-water mark of its biggest page;
# the web console (FOCUS_CONSOLE_PORT; off by default); the progress line or panel
# (FOCUS_PROGRESS_SECONDS).
EXTENSIONS = {
    "focuscrawl.memory.MemoryTrim": 0,
    "focuscrawl.observe.progress.Progress": 400,
    "focuscrawl.observe.console.ConsoleExtension": 500,
    # grows a model made from words or on-topic pages alone from the crawl's pages (FOCUS_GROW_MODEL)
    "focuscrawl.relevance.growing_ext.GrowModel": 600,
}

# --- network safety: no fetch into private networks (focuscrawl/network_guard.py) -------------
# A name is judged by the address it resolves to, which is then the address connected to.
if hasattr(_scrapy_defaults, "TWISTED_DNS_RESOLVER"):
    TWISTED_DNS_RESOLVER = "focuscrawl.network_guard.GuardedResolver"
else:  # a Scrapy from before the setting's rename
    DNS_RESOLVER = "focuscrawl.network_guard.GuardedResolver"

ITEM_PIPELINES = {
    "focuscrawl.pipelines.DuplicatesPipeline": 100,
    "focuscrawl.pipelines.StorePipeline": 300,
    "focuscrawl.pipelines.RelevantItemsPipeline": 900,
}

# Local feed files are written with no buffer in the process, so a SIGKILLed crawl loses no line
# it counted as exported (focuscrawl/feeds.py); a resumed crawl re-emits what no feed has.
FEED_STORAGES = {
    "": "focuscrawl.feeds.DurableFileFeedStorage",
    "file": "focuscrawl.feeds.DurableFileFeedStorage",
}
FEED_EXPORT_ENCODING = "utf-8"
FEED_EXPORT_FIELDS = list(_PageItem.EXPORT_FIELDS)  # the same fields, in the same order, as `scrapy export`

LOG_LEVEL = "INFO"

# --- focuscrawl settings (FOCUS_*) ---------------------------------------------------------------
# Every FOCUS_* setting, its default and its check live in focuscrawl/config.py (FocusConfig), the
# one place the crawl's parts read them from: set one here or with -s to override its default.
