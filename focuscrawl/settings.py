"""Scrapy settings for focuscrawl, with every focuscrawl setting and its default.

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

from scrapy.linkextractors import IGNORED_EXTENSIONS as _IGNORED_EXTENSIONS

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
# profile, BENCHMARKS.md section 2). tests/test_spider.py makes the same check once on every
# callback focuscrawl uses.
WARN_ON_GENERATOR_RETURN_VALUE = False
HTTPERROR_ALLOW_ALL = True  # every status reaches the spider, so every fetch is recorded and learned from
AUTOTHROTTLE_ENABLED = False  # the adaptive per-host delay replaces it

# Twisted's pool would re-send a request on a reset keep-alive connection behind the frontier's back.
DOWNLOAD_HANDLERS = {
    "http": "focuscrawl.handlers.PoliteHTTP11DownloadHandler",
    "https": "focuscrawl.handlers.PoliteHTTP11DownloadHandler",
}

# --- the crawl brain ---------------------------------------------------------------------------
SCHEDULER = "focuscrawl.scheduler.FocusScheduler"

DOWNLOADER_MIDDLEWARES = {
    # robots.txt is fetched by the frontier itself (so robots.txt requests obey the per-host
    # delay), with Crawl-delay and RFC 9309 error semantics. Scrapy's middleware is replaced.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    # Nearest the downloader: sees every raw response (redirects included) for the request log.
    "focuscrawl.middlewares.CrawlLogMiddleware": 950,
}

ITEM_PIPELINES = {
    "focuscrawl.pipelines.DuplicatesPipeline": 100,
    "focuscrawl.pipelines.StorePipeline": 300,
    "focuscrawl.pipelines.RelevantItemsPipeline": 900,
}

FEED_EXPORT_ENCODING = "utf-8"
FEED_EXPORT_FIELDS = list(_PageItem.EXPORT_FIELDS)  # the same fields, in the same order, as `scrapy export`

LOG_LEVEL = "INFO"

# --- focuscrawl settings (FOCUS_*) and their defaults ----------------------------------------
# Relevance: pages scoring at or above this probability are relevant (become exported items).
FOCUS_RELEVANCE_THRESHOLD = 0.5
# The link learner's hits: pages scoring at or above this count as found (full reward, and the
# hops-since-relevant count restarts). None: the model's even-odds score (its training share of
# negative examples, e.g. 0.83 for WebKB's course), stricter than the items' threshold for a
# minority topic: chasing borderline pages leads the crawl to more look-alikes.
FOCUS_REWARD_THRESHOLD = None
# A page is judged by its words and by the link that led to it: the link model's log-odds for the
# link, times this weight, are added to the page's own. The result is the item's score (against
# FOCUS_RELEVANCE_THRESHOLD, and what export filters on), the learner's hit (against
# FOCUS_REWARD_THRESHOLD), and, as the probability of being on topic, the parent score of the
# page's links. The page's words cannot tell a course's home page from its syllabus; its link often
# can. Items keep both parts (page_score, link_score). 0: the page alone. Seeds have no link.
FOCUS_LINK_EVIDENCE = 1.0
# Path of the topic model (joblib); the spider argument ``-a model=`` overrides it.
FOCUS_MODEL = None
# SQLite crawl store path; None means JOBDIR/crawl.db when JOBDIR is set, else ./crawl.db.
FOCUS_STORE = None
# JSON-lines log of every request (None: no log).
FOCUS_CRAWL_LOG = None
# Near-duplicate detection: Jaccard threshold for MinHash LSH, permutations, shingle words.
FOCUS_NEAR_DUP_THRESHOLD = 0.9
FOCUS_MINHASH_PERMUTATIONS = 128
FOCUS_SHINGLE_SIZE = 5
# Stop after this many requests have been released (robots.txt fetches not counted). 0: no limit.
FOCUS_BUDGET = 0
# Frontier: most URLs held; past it the lowest-priority are pruned (spilled to disk with JOBDIR).
FOCUS_FRONTIER_CAPACITY = 1_000_000
# Frontier entries packed as bytes (~300-700 B a queued URL, deflated when a host's queue is deep)
# instead of a live Request and feature vector (~2.5 KB), so a full frontier (the capacity above)
# fits in well under 1 GB; False keeps the objects (a few percent less CPU, BENCHMARKS.md).
FOCUS_FRONTIER_PACK = True
# Trap defences: maximum link depth, URL length, repeats of one path segment, pages per host.
FOCUS_MAX_DEPTH = 30
FOCUS_MAX_URL_LENGTH = 1024
FOCUS_MAX_REPEATED_SEGMENTS = 3
FOCUS_HOST_BUDGET = 0
# Crawl scope: only these domains (and their subdomains); empty means the whole web.
FOCUS_ALLOWED_DOMAINS = []
# Hand the sitemaps listed in robots.txt to the frontier (at most FOCUS_SITEMAP_MAX_URLS URLs each).
FOCUS_FOLLOW_SITEMAPS = True
FOCUS_SITEMAP_MAX_URLS = 10_000
# One connection per IP address too (host names sharing a server share its delay). The name is
# resolved once per host, on this machine (not through a proxy).
FOCUS_POLITENESS_PER_IP = False
# Check URLs whose extension does not say "page" with a HEAD request before fetching them.
FOCUS_HEAD_CHECK = False
# Redirect hops followed for a page (each hop goes back through the frontier and its checks).
FOCUS_MAX_REDIRECTS = 3
# Extensions never fetched (Scrapy's list of non-HTML types).
FOCUS_DENY_EXTENSIONS = sorted(_IGNORED_EXTENSIONS)
# robots.txt: cache lifetime, cap on Crawl-delay, and what to do with hosts asking for more
# ("cap": crawl at the cap; "skip": do not crawl the host).
FOCUS_ROBOTS_CACHE_SECONDS = 24 * 3600
FOCUS_MAX_CRAWL_DELAY = 30.0
FOCUS_CRAWL_DELAY_OVER_CAP = "cap"
# How long a host whose robots.txt answered 5xx or was unreachable is treated as disallowed.
FOCUS_ROBOTS_ERROR_RETRY_SECONDS = 600
# Adaptive delay: mean of the host's last 5 response times times this factor.
FOCUS_ADAPTIVE_DELAY_FACTOR = 2.0
# 429/503 without Retry-After: exponential back-off from this many seconds, capped.
FOCUS_BACKOFF_BASE = 5.0
FOCUS_BACKOFF_MAX = 3600.0
# Exclusion list file (hosts, domains, URL patterns; '#' comments), re-read when it changes.
FOCUS_EXCLUDE_FILE = None
FOCUS_EXCLUDE_CHECK_SECONDS = 5.0
# Finish rather than wait longer than this for the next host to become ready (back-offs, robots.txt
# that answered 5xx); with JOBDIR the waiting URLs are kept for a resumed crawl.
FOCUS_MAX_WAIT = 300.0
# JOBDIR checkpoint period in seconds.
FOCUS_CHECKPOINT_SECONDS = 30.0
# Patience: hold a request when a URL scoring FOCUS_PATIENCE_MARGIN more waits at a host that will
# be free within FOCUS_PATIENCE seconds (fewer requests spent on poor URLs; 0 turns it off). Seeds
# (depth 0) are never held.
FOCUS_PATIENCE = 2.0
FOCUS_PATIENCE_MARGIN = 0.25
# Link-reward learner: credit decay per ancestor hop, exploration weight, what a page's fetched
# children can add to its value at most (in relevant pages: a hub that led to many relevant pages
# is worth up to FOCUS_CREDIT_DECAY x FOCUS_HUB_CAP more than its own reward), and the link model's
# step size (AdaGrad; larger learns faster from fewer pages and is noisier).
FOCUS_CREDIT_DECAY = 0.5
FOCUS_EXPLORATION = 0.3
FOCUS_HUB_CAP = 1.5
FOCUS_LEARNING_RATE = 0.05
