"""``scrapy crawl``, with the focused spider's arguments checked before the crawl starts, so a
missing model or an empty seeds file is one clear line rather than a traceback."""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from focuscrawl.relevance import ModelError, TopicModel
from focuscrawl.scheduler import read_settings
from focuscrawl.spiders.focused import SeedsError, read_seeds


class Command(ScrapyCrawlCommand):
    def run(self, args, opts):
        if args and args[0] == "focused":
            spargs = opts.spargs
            model = spargs.get("model") or self.settings.get("FOCUS_MODEL")
            try:
                if not model:
                    raise ModelError("no topic model: use -a model=models/NAME.joblib (see `scrapy train`)")
                TopicModel.load(model)
                read_seeds(spargs.get("seeds", ""))
                if "threshold" in spargs:
                    float(spargs["threshold"])
                read_settings(self.settings)
            except (ModelError, SeedsError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
            except ValueError as exc:
                message = str(exc) if "threshold" not in spargs or _is_number(spargs["threshold"]) else (
                    f"threshold must be a number, not {spargs['threshold']!r}")
                print(f"error: {message}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
