"""``scrapy crawl``, with the focused spider's configuration checked before the crawl starts
(``focuscrawl.preflight``): a missing model, an empty seeds file, a Redis nobody runs, a browser
that is not there or a bad setting is one clear line each, exit code 2, rather than a traceback.
A crawl stopped for a configuration found wrong once it ran (a ``SPLASH_URL`` that is not Splash:
``rendering.splash.watch``) exits with 2 as well."""

from __future__ import annotations

import sys

from scrapy import signals
from scrapy.commands import ScrapyHelpFormatter
from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from focuscrawl import preflight
from focuscrawl.rendering.splash.watch import ERROR_STAT
from focuscrawl.rendering.splash.watch import FINISH_REASON as RENDER_SERVICE_NOT_SPLASH
from focuscrawl.spiders.focused import arguments_help

#: finish reasons that are a configuration found wrong while crawling
CONFIGURATION_REASONS = frozenset({RENDER_SERVICE_NOT_SPLASH})


class _EpilogAsWritten(ScrapyHelpFormatter):
    """Scrapy's help, with the spider's arguments laid out as written (one a line)."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True))


class Command(ScrapyCrawlCommand):
    def add_options(self, parser) -> None:
        super().add_options(parser)
        parser.epilog = arguments_help()
        parser.formatter_class = _EpilogAsWritten

    def run(self, args, opts):
        if args and args[0] == "focused":
            errors = preflight.run(opts.spargs, self.settings)
            for line in errors:
                print(f"error: {line}", file=sys.stderr)
            if errors:
                self.exitcode = 2
                return
        self._errors: list[str] = []
        super().run(args, opts)
        for line in self._errors:
            print(f"error: {line}", file=sys.stderr)
        if self._errors and self.exitcode == 0:
            self.exitcode = 2

    def _create_crawler(self, spidercls):
        crawler = super()._create_crawler(spidercls)
        crawler.signals.connect(self._closed, signal=signals.spider_closed)
        return crawler

    def _closed(self, spider, reason):
        if reason in CONFIGURATION_REASONS:
            self._errors.append(spider.crawler.stats.get_value(ERROR_STAT) or reason)
