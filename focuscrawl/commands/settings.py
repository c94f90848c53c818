"""``scrapy settings``, with the add-ons' settings: Scrapy's own command reads the project's settings
before any add-on has put its own in, so ``--get FOCUS_RELEVANCE_THRESHOLD`` would print ``None``
and ``--get SCHEDULER`` Scrapy's scheduler. Here the add-ons (``ADDONS``) update the settings as
they do for a crawl, without starting one (Scrapy's own command does not yet: scrapy/scrapy#7010,
whose fix, scrapy/scrapy#7828, is under review; this command can go once a release has it)."""

from __future__ import annotations

import logging

from scrapy import Spider
from scrapy.commands.settings import Command as ScrapySettingsCommand
from scrapy.crawler import Crawler


class Command(ScrapySettingsCommand):
    def short_desc(self) -> str:
        return "Get settings values (with the add-ons' settings, focuscrawl's defaults included)"

    def run(self, args, opts) -> None:
        self.settings = with_addons(self.settings)
        super().run(args, opts)


def with_addons(settings):
    """A copy of ``settings`` updated by its add-ons, as a crawler's are before it starts (what
    an add-on says while it updates them, a warning about a setting, is for the crawl's log)."""
    from scrapy.addons import AddonManager

    settings = settings.copy()
    AddonManager.load_pre_crawler_settings(settings)
    crawler = Crawler(Spider, settings)
    quiet = logging.getLogger("focuscrawl")
    level, quiet.level = quiet.level, logging.CRITICAL
    try:
        crawler.addons.load_settings(crawler.settings)
    finally:
        quiet.level = level
    return crawler.settings
