"""``python tests/render_splash_crawl.py SPLASH_URL SITE_URL OUT_DIR``: two scrapy-splash crawls of
the JavaScript-built site of tests/render_site.py, run as a scrapy-splash user's code runs.

- ``upstream`` is code written for scrapy-splash as its README says (its settings, ``from
  scrapy_splash import SplashRequest``), with one line added: ``install()``.
- ``compat`` takes ``splash_settings()`` and focuscrawl's re-exports, and has ``http_user`` with
  ROBOTSTXT_OBEY (scrapy-splash then swaps in its SafeRobotsTxtMiddleware).

Both render the site's page with render.html, follow a link only its script built with render.json
(``cache_args``: through SplashDeduplicateArgsMiddleware and the argument cache), and write what
they saw to OUT_DIR/items-NAME.jsonl. Every warning goes to stderr, where the test reads them.
"""

import sys
import warnings

warnings.simplefilter("always")  # every warning, each time: the test looks for scrapy-splash's

from focuscrawl.rendering.splash.compat import install  # noqa: E402

install()  # before anything imports scrapy_splash

import scrapy  # noqa: E402
from scrapy.crawler import CrawlerProcess  # noqa: E402
from scrapy_splash import SplashRequest  # noqa: E402

from focuscrawl.rendering.splash import compat as splash_compat  # noqa: E402

SPLASH_URL, SITE, OUT = sys.argv[1:4]
JS = "document.title = 'seen by ' + document.querySelectorAll('a').length + ' links'; 1"


class UpstreamSpider(scrapy.Spider):
    name = "upstream"
    custom_settings = {  # scrapy-splash's README, verbatim
        "SPLASH_URL": SPLASH_URL,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy_splash.SplashCookiesMiddleware": 723,
            "scrapy_splash.SplashMiddleware": 725,
            "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware": 810,
        },
        "SPIDER_MIDDLEWARES": {"scrapy_splash.SplashDeduplicateArgsMiddleware": 100},
        "REQUEST_FINGERPRINTER_CLASS": "scrapy_splash.SplashRequestFingerprinter",
    }

    async def start(self):  # Scrapy 2.19 no longer calls start_requests()
        yield SplashRequest(f"{SITE}/app.html?{self.name}", self.parse, args={"wait": 0.5})

    def parse(self, response):
        links = response.css("a::attr(href)").getall()
        yield {"kind": "page", "url": response.url, "status": response.status, "links": links,
               "title": response.css("title::text").get()}
        for href in links[1:2]:  # a link the fetch()ed JSON built
            yield SplashRequest(response.urljoin(href), self.parse_json, endpoint="render.json",
                                args={"html": 1, "js_source": JS, "script": 1}, cache_args=["js_source"])

    def parse_json(self, response):
        yield {"kind": "json", "url": response.url, "status": response.status, "title": response.data["title"],
               "script": response.data.get("script")}


class CompatSpider(UpstreamSpider):
    name = "compat"
    http_user, http_pass, http_auth_domain = "user", "secret", None
    custom_settings = {**splash_compat.splash_settings(SPLASH_URL), "ROBOTSTXT_OBEY": True}

    async def start(self):
        yield splash_compat.SplashRequest(f"{SITE}/app.html?{self.name}", self.parse, args={"wait": 0.5})


if __name__ == "__main__":
    process = CrawlerProcess({
        "LOG_LEVEL": "INFO", "TELNETCONSOLE_ENABLED": False, "ROBOTSTXT_OBEY": False,
        "FEEDS": {f"{OUT}/items-%(name)s.jsonl": {"format": "jsonlines"}},
    })
    process.crawl(UpstreamSpider)
    process.crawl(CompatSpider)
    process.start()
