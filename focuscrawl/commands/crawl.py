"""``scrapy crawl``, with the focused spider's configuration checked before the crawl starts
(``focuscrawl.preflight``): a missing model, an empty seeds file, a Redis nobody runs, a browser
that is not there or a bad setting is one clear line each, exit code 2, rather than a traceback."""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from focuscrawl import preflight


class Command(ScrapyCrawlCommand):
    def run(self, args, opts):
        if args and args[0] == "focused":
            errors = preflight.run(opts.spargs, self.settings)
            for line in errors:
                print(f"error: {line}", file=sys.stderr)
            if errors:
                self.exitcode = 2
                return
        super().run(args, opts)
