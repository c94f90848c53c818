"""focuscrawl.Addon: the focused crawl's settings at Scrapy's ``addon`` priority, a project's own
settings over them, and the settings that would do nothing named at the start."""

from __future__ import annotations

import logging

import pytest
from scrapy import Spider
from scrapy.crawler import Crawler
from scrapy.settings import Settings

import focuscrawl
from focuscrawl.addon import SETTINGS, Addon, focus_defaults, note_ignored_settings, warn_unknown_settings
from focuscrawl.config import DEFAULTS, FocusConfig


def applied(values: dict | None = None, priority: str = "project") -> Settings:
    """Settings as a crawler has them once its add-ons have updated them."""
    settings = Settings({"ADDONS": {"focuscrawl.Addon": 0}})
    settings.setdict(values or {}, priority)
    crawler = Crawler(Spider, settings)
    crawler.addons.load_settings(crawler.settings)
    return crawler.settings


def test_the_addon_is_importable_from_the_package():
    assert focuscrawl.Addon is Addon


def test_every_focus_default_is_in_the_settings_at_the_addon_priority():
    settings = applied()
    for name, default in focus_defaults().items():
        assert settings[name] == default and settings.getpriority(name) == 15, name
    assert FocusConfig.from_settings(settings) == DEFAULTS
    assert settings["SCHEDULER"] == "focuscrawl.scheduler.FocusScheduler"
    assert settings["DOWNLOAD_DELAY"] == SETTINGS["DOWNLOAD_DELAY"] == DEFAULTS.download_delay
    assert settings["ROBOTSTXT_USER_AGENT"] == DEFAULTS.robots_agent


def test_the_early_settings_have_the_focus_defaults_for_commands():
    settings = Settings({"ADDONS": {"focuscrawl.Addon": 0}})
    from scrapy.addons import AddonManager

    AddonManager.load_pre_crawler_settings(settings)
    assert settings["FOCUS_RELEVANCE_THRESHOLD"] == DEFAULTS.relevance_threshold


def test_a_projects_own_settings_and_components_win():
    settings = applied({
        "DOWNLOAD_DELAY": 2.5, "FOCUS_BUDGET": 7, "USER_AGENT": "mybot (+https://example.org)",
        "DOWNLOADER_MIDDLEWARES": {"focuscrawl.middlewares.CrawlLogMiddleware": None},
        "ITEM_PIPELINES": {"myproject.pipelines.Mine": 300},
        "DOWNLOAD_HANDLERS": {"https": "myproject.handlers.Mine"},
    })
    assert settings.getfloat("DOWNLOAD_DELAY") == 2.5 and settings.getint("FOCUS_BUDGET") == 7
    assert settings["USER_AGENT"] == "mybot (+https://example.org)"
    assert settings.get("ROBOTSTXT_USER_AGENT") is None  # the project's User-Agent is matched, not ours
    assert settings["DOWNLOADER_MIDDLEWARES"]["focuscrawl.middlewares.CrawlLogMiddleware"] is None
    assert settings["DOWNLOADER_MIDDLEWARES"]["scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"] is None
    pipelines = settings.getdict("ITEM_PIPELINES")
    assert pipelines["myproject.pipelines.Mine"] == 300
    # focuscrawl's run first: a page record leaves before the project's pipelines see it
    assert max(pipelines[f"focuscrawl.pipelines.{name}"] for name in
               ("DuplicatesPipeline", "StorePipeline", "RelevantItemsPipeline")) < 300
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    assert handlers["https"] == "myproject.handlers.Mine"
    assert handlers["http"] == "focuscrawl.rendering.browser.FocusDownloadHandler"


#: misspelt settings, spelt apart so that tests/test_config.py's search for FOCUS_* names skips them
TYPO, STRANGER = "FOCUS_" + "BUDGT", "FOCUS_" + "NOTHING_LIKE_IT_AT_ALL"


def test_an_unknown_focus_setting_is_a_warning_naming_the_closest(caplog):
    with caplog.at_level(logging.WARNING, logger="focuscrawl.addon"):
        applied({TYPO: 10, STRANGER: 1}, "cmdline")
    messages = [r.getMessage() for r in caplog.records]
    assert f"{TYPO} is no focuscrawl setting and is ignored; did you mean FOCUS_BUDGET?" in messages
    assert any(m.startswith(f"{STRANGER} is no focuscrawl setting") and "did you mean" not in m for m in messages)


def test_known_settings_and_scrapys_own_raise_no_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="focuscrawl"):
        applied({"FOCUS_BUDGET": 10, "DOWNLOAD_DELAY": 0, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
                 "AUTOTHROTTLE_ENABLED": False})
    assert not caplog.records


def test_the_scrapy_settings_the_scheduler_ignores_are_named_once(caplog):
    with caplog.at_level(logging.WARNING, logger="focuscrawl.addon"):
        applied({"DEPTH_PRIORITY": 1, "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
                 "CONCURRENT_REQUESTS_PER_DOMAIN": 8, "AUTOTHROTTLE_ENABLED": True})
    notes = [r.getMessage() for r in caplog.records]
    assert len(notes) == 1 and notes[0].startswith("the focused scheduler ignores ")
    for name in ("DEPTH_PRIORITY", "SCHEDULER_DISK_QUEUE", "CONCURRENT_REQUESTS_PER_DOMAIN", "AUTOTHROTTLE_ENABLED"):
        assert name in notes[0]


def test_nothing_is_said_of_scrapys_settings_under_another_scheduler():
    settings = Settings({"SCHEDULER": "scrapy.core.scheduler.Scheduler", "DEPTH_PRIORITY": 1})
    assert note_ignored_settings(settings) == []
    assert warn_unknown_settings(Settings({"FOCUS_BUDGET": 1})) == []


def test_the_process_gets_the_guarded_resolver_before_any_crawler():
    """Scrapy installs the DNS resolver once per process from the process's settings."""
    from scrapy.addons import AddonManager

    settings = Settings({"ADDONS": {"focuscrawl.Addon": 0}})
    AddonManager.load_pre_crawler_settings(settings)
    name = "TWISTED_DNS_RESOLVER" if "TWISTED_DNS_RESOLVER" in Settings() else "DNS_RESOLVER"
    assert settings[name] == "focuscrawl.network_guard.GuardedResolver"


# --- FocusPages: a project's own spider, its responses scored and its requests given their links ----

PAGE = b"""<html><head><title>Astronomy lecture notes</title></head><body>
<p>Telescopes, comets and the orbits of planets: this week's lecture notes.</p>
<p>Read on: <a href="/next.html">the next lecture on comets</a>, or <a href="/shop.html">our shop</a>.</p>
</body></html>"""


class ShopSpider(Spider):
    """A project's spider: its own item, its own requests (one to a URL not linked on the page)."""
    name = "shop"

    def parse(self, response):
        yield {"title": response.css("title::text").get(), "relevant": response.meta.get("focus_relevant")}
        yield response.follow("/next.html", callback=self.parse)
        yield response.follow("/elsewhere.html", callback=self.parse, priority=5)


def through_focus_pages(model_path, caplog):
    from scrapy import Request
    from scrapy.http import HtmlResponse
    from scrapy.utils.test import get_crawler

    from focuscrawl import signals as focus_signals
    from focuscrawl.items import PageItem
    from focuscrawl.meta import LINK
    from focuscrawl.spidermw import FocusPages

    crawler = get_crawler(ShopSpider, {"FOCUS_MODEL": str(model_path)})
    crawler._apply_settings()
    middleware = FocusPages.from_crawler(crawler)
    spider = ShopSpider.from_crawler(crawler)
    scored = []
    crawler.signals.connect(lambda **kw: scored.append(kw), signal=focus_signals.page_scored, weak=False)
    request = Request("http://a.test/notes.html", callback=spider.parse, meta={"depth": 1})
    response = HtmlResponse(request.url, body=PAGE, headers={"Content-Type": "text/html"}, request=request)
    with caplog.at_level(logging.WARNING, logger="focuscrawl.spidermw"):
        middleware.process_spider_input(response)
        output = list(middleware.process_spider_output(response, spider.parse(response)))
    return crawler, scored, output, LINK, PageItem


def test_a_projects_spider_keeps_its_items_and_its_requests_get_their_links_words(demo_model, caplog):
    crawler, scored, output, LINK, PageItem = through_focus_pages(demo_model, caplog)
    own, linked, unlinked, record = output
    assert set(own) == {"title", "relevant"} and own["title"] == "Astronomy lecture notes"
    page = scored[0]["page"]
    assert own["relevant"] is page.relevant and page.score is not None  # marked before the callback
    assert isinstance(record, PageItem) and record.record_only and record is page
    assert linked.callback == unlinked.callback  # the spider's own callbacks
    link = linked.meta[LINK]
    assert (link["anchor"], link["parent_url"]) == ("the next lecture on comets", "http://a.test/notes.html")
    assert "Read on" in link["context"] and link["link_score"] is not None and link["parent_score"] is not None
    assert unlinked.meta[LINK]["anchor"] == "" and crawler.stats.get_value("focus/links/not_on_page") == 1
    assert [r.getMessage() for r in caplog.records if "Request.priority" in r.getMessage()]


def test_focus_pages_is_off_for_the_focused_spider_and_without_a_model(caplog):
    from scrapy.exceptions import NotConfigured
    from scrapy.utils.test import get_crawler

    from focuscrawl.spidermw import FocusPages
    from focuscrawl.spiders.focused import FocusedSpider

    with pytest.raises(NotConfigured) as off:
        FocusPages.from_crawler(get_crawler(FocusedSpider, {"FOCUS_MODEL": "any.joblib"}))
    assert not off.value.args  # nothing to say: the spider scores its pages itself
    with caplog.at_level(logging.WARNING, logger="focuscrawl.spidermw"), pytest.raises(NotConfigured):
        FocusPages.from_crawler(get_crawler(ShopSpider, {}))
    assert "no topic model (FOCUS_MODEL)" in caplog.text
