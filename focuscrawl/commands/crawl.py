"""``scrapy crawl``, with the focused spider's arguments and the focuscrawl settings checked before
the crawl starts, so a missing model, an empty seeds file or a bad setting is one clear line rather
than a traceback."""

from __future__ import annotations

import sys

from scrapy.commands.crawl import Command as ScrapyCrawlCommand

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.extras import MissingExtra, check_extras
from focuscrawl.politeness import ExclusionList
from focuscrawl.relevance import ModelError, TopicModel
from focuscrawl.safety import NetworkPolicy, url_address
from focuscrawl.spiders.focused import SeedsError, read_seeds


class Command(ScrapyCrawlCommand):
    def run(self, args, opts):
        if args and args[0] == "focused":
            try:
                _check(opts.spargs, self.settings)
            except (ConfigError, MissingExtra, ModelError, SeedsError) as exc:
                print(f"error: {exc}", file=sys.stderr)
                self.exitcode = 2
                return
        super().run(args, opts)


def _check(spargs: dict, settings) -> None:
    """What the crawl would refuse once started (the spider's arguments, the settings, the
    exclusion list's first reading): raises with a one-line message."""
    config = FocusConfig.from_settings(settings)
    check_extras(config)
    model = spargs.get("model") or config.model
    if not model:
        raise ModelError("no topic model: use -a model=models/NAME.joblib (see `scrapy train`)")
    TopicModel.load(model)
    _check_seed_addresses(read_seeds(spargs.get("seeds", "")), NetworkPolicy.from_config(config))
    if "threshold" in spargs:
        try:
            float(spargs["threshold"])
        except ValueError:
            raise ConfigError(f"threshold must be a number, not {spargs['threshold']!r}") from None
    if config.exclude_file:
        try:
            ExclusionList(config.exclude_file, config.exclude_check_seconds)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None


def _check_seed_addresses(seeds: list[str], policy: NetworkPolicy) -> None:
    """A seed whose host is an address the crawl may not reach would be refused as it starts,
    leaving a crawl that does nothing: say so, and how to allow it."""
    for url in seeds:
        reason = policy.url_refusal(url)
        if reason:
            raise SeedsError(f"seed {url} is refused ({reason}): allow it with -s FOCUS_ALLOWED_NETWORKS="
                             f"{url_address(url)} (or -s FOCUS_ALLOW_PRIVATE_NETWORKS=True)")
