"""FocusConfig: the one home of every FOCUS_* setting, its default and its check."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scrapy.settings import Settings

from focuscrawl import settings as project
from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.dedup import NearDuplicateIndex
from focuscrawl.frontier.aliases import HostAliases
from focuscrawl.learning import LinkRewardLearner
from focuscrawl.politeness import DelayPolicy, ExclusionList, TrapRules

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = {name for name, _, _ in FocusConfig.settings()}


def test_every_focus_setting_named_in_the_code_is_a_focusconfig_setting():
    """A FOCUS_* name read or documented anywhere in the code is one FocusConfig knows: a typo, or
    a setting read around FocusConfig, would silently keep its default."""
    used: dict[str, str] = {}
    for path in [*ROOT.glob("focuscrawl/**/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tests/**/*.py")]:
        for name in re.findall(r"\bFOCUS_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")):
            used.setdefault(name, str(path.relative_to(ROOT)))
    assert used
    unknown = {name: where for name, where in used.items() if name not in SETTINGS}
    assert not unknown, f"FOCUS_* names that are no FocusConfig setting: {unknown}"


def test_the_project_settings_module_holds_no_focus_default():
    assert not [name for name in vars(project) if name.startswith("FOCUS_")]
    # ... so reading it gives FocusConfig's defaults, and the Scrapy settings the crawl reads
    from scrapy import Spider
    from scrapy.crawler import Crawler

    settings = Settings()
    settings.setmodule(project)
    crawler = Crawler(Spider, settings)
    crawler.addons.load_settings(crawler.settings)  # the add-on the project enables puts them in
    assert FocusConfig.from_settings(crawler.settings) == DEFAULTS
    from focuscrawl.addon import SETTINGS
    from focuscrawl import BOT_NAME

    assert (DEFAULTS.download_delay, DEFAULTS.obey_robots, DEFAULTS.robots_agent) == (
        SETTINGS["DOWNLOAD_DELAY"], SETTINGS["ROBOTSTXT_OBEY"], BOT_NAME)


def test_the_cores_default_to_the_settings_defaults():
    learner = LinkRewardLearner()
    assert (learner.credit_decay, learner.exploration, learner.hub_cap, learner.model.learning_rate) == (
        DEFAULTS.credit_decay, DEFAULTS.exploration, DEFAULTS.hub_cap, DEFAULTS.learning_rate)
    index = NearDuplicateIndex()
    assert (index.threshold, index.num_perm, index.shingle_size) == (
        DEFAULTS.near_dup_threshold, DEFAULTS.minhash_permutations, DEFAULTS.shingle_size)
    delays = DelayPolicy()
    assert (delays.minimum, delays.adaptive_factor, delays.backoff_base, delays.backoff_max,
            delays.max_crawl_delay) == (DEFAULTS.download_delay, DEFAULTS.adaptive_delay_factor,
                                        DEFAULTS.backoff_base, DEFAULTS.backoff_max, DEFAULTS.max_crawl_delay)
    traps = TrapRules()
    assert (traps.max_depth, traps.max_url_length, traps.max_repeated_segments) == (
        DEFAULTS.max_depth, DEFAULTS.max_url_length, DEFAULTS.max_repeated_segments)
    assert ExclusionList().check_seconds == DEFAULTS.exclude_check_seconds
    assert (learner.max_nodes, HostAliases().max_pages) == (DEFAULTS.learner_nodes, DEFAULTS.url_aliases_pages)


def test_values_are_converted_as_scrapy_reads_them():
    config = FocusConfig.from_settings(Settings({
        "FOCUS_BUDGET": "500", "FOCUS_HEAD_CHECK": "true", "FOCUS_FRONTIER_PACK": "0",
        "FOCUS_ALLOWED_DOMAINS": "a.test, b.test", "FOCUS_REWARD_THRESHOLD": "", "JOBDIR": "jd",
        "DOWNLOAD_SLOTS": '{"slow.test": {"delay": 3}}'}))
    assert config.budget == 500 and config.head_check is True and config.frontier_pack is False
    assert config.allowed_domains == ("a.test", "b.test") and config.reward_threshold is None
    assert config.jobdir == "jd" and config.per_host_delays == (("slow.test", 3.0),)
    assert FocusConfig.from_settings({}) == DEFAULTS  # a plain dict works too


@pytest.mark.parametrize("setting, value, message", [
    ("FOCUS_BUDGET", "lots", "FOCUS_BUDGET must be a number"),
    ("FOCUS_PATIENCE", "-1", "FOCUS_PATIENCE must be at least 0"),
    ("FOCUS_RELEVANCE_THRESHOLD", "7", "FOCUS_RELEVANCE_THRESHOLD is a probability"),
    ("FOCUS_NEAR_DUP_THRESHOLD", "0", "FOCUS_NEAR_DUP_THRESHOLD must be above 0"),
    ("FOCUS_MINHASH_PERMUTATIONS", "8", "FOCUS_MINHASH_PERMUTATIONS must be at least 16"),
    ("FOCUS_CRAWL_DELAY_OVER_CAP", "bogus", "FOCUS_CRAWL_DELAY_OVER_CAP must be 'cap' or 'skip'"),
    ("FOCUS_HEAD_CHECK", "maybe", "FOCUS_HEAD_CHECK must be true or false"),
    ("DOWNLOAD_DELAY", "-1", "DOWNLOAD_DELAY must be at least 0"),
    ("FOCUS_FRONTIER_URL", "http://127.0.0.1:6379", "FOCUS_FRONTIER_URL must be a redis://HOST:PORT/DB URL"),
    ("FOCUS_FRONTIER_URL", "redis://h:1/x", "FOCUS_FRONTIER_URL must be a redis://HOST:PORT/DB URL"),
    ("FOCUS_CRAWL_ID", "a:b", "FOCUS_CRAWL_ID must be 1-64 letters"),
    ("FOCUS_WORKER_TIMEOUT", "0.5", "FOCUS_WORKER_TIMEOUT must be at least 1.0"),
])
def test_a_bad_value_names_its_setting(setting, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        FocusConfig.from_settings(Settings({setting: value}))
