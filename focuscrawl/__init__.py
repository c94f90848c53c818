"""focuscrawl: a focused, polite web crawler built on Scrapy."""

__version__ = "0.1.0"

#: Where a webmaster who sees our User-Agent in a log learns who we are.
BOT_INFO_URL = "https://github.com/focuscrawl/focuscrawl#for-webmasters"
#: The token robots.txt groups are matched against (``User-agent: focuscrawl``).
BOT_NAME = "focuscrawl"
DEFAULT_USER_AGENT = f"{BOT_NAME}/{__version__} (+{BOT_INFO_URL})"
