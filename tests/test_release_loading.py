"""Release policies loaded from FOCUS_RELEASE_POLICIES as Scrapy loads its middlewares: the base
merged with a project's dict, in ascending order, None turning one off, each built from the
crawler and switching itself off with NotConfigured; a policy with state kept by JOBDIR."""

from __future__ import annotations

import logging

import pytest
from scrapy import Request
from scrapy.exceptions import NotConfigured
from scrapy.settings import Settings

from focuscrawl.config import DEFAULTS, ConfigError, FocusConfig
from focuscrawl.scheduling.aliases import UrlAliases
from focuscrawl.scheduling.policies import HeadCheck, Patience
from focuscrawl.scheduling.recrawl import Recrawl
from focuscrawl.scheduling.release import policy_paths
from focuscrawl.scheduling.rendering import RenderContinuation, RenderRouting
from focuscrawl.scheduler import FocusScheduler
from tests.test_scheduler import built, make_scheduler, opened

PATIENCE = "focuscrawl.scheduling.policies.Patience"
HEAD_CHECK = "focuscrawl.scheduling.policies.HeadCheck"


class Tagging:
    """A project's policy: each request it lets go carries the crawl's name in a header, and what
    goes out is counted."""

    def __init__(self, stats):
        self.stats = stats
        self.released_urls: list[str] = []

    @classmethod
    def from_crawler(cls, crawler, scheduler):
        return cls(crawler.stats)

    def review(self, host, entry, request, now):
        return request.replace(headers={**request.headers.to_unicode_dict(), "X-Crawl": "topic"})

    def released(self, host, request, entry, now):
        self.released_urls.append(request.url)


class Off:
    @classmethod
    def from_crawler(cls, crawler, scheduler):
        raise NotConfigured


class OffWithReason:
    @classmethod
    def from_crawler(cls, crawler, scheduler):
        raise NotConfigured("no calendar given")


class Visits:
    """A policy with state: how many requests it saw released, kept by JOBDIR under its name."""

    name = "visits"

    def __init__(self):
        self.count = 0

    @classmethod
    def from_crawler(cls, crawler, scheduler):
        return cls()

    def released(self, host, request, entry, now):
        self.count += 1

    def state(self):
        return {"count": self.count}

    def restore(self, state):
        self.count = state["count"]


def kinds(scheduler) -> list[type]:
    return [type(policy) for policy in scheduler.policies]


def test_the_base_policies_come_in_order_each_on_by_its_own_setting():
    # FOCUS_PATIENCE=0 (built's), no head check, no recrawl, nothing rendered
    assert kinds(built(FOCUS_RENDER="never")) == [UrlAliases, RenderContinuation]
    everything = built(FOCUS_PATIENCE=2.0, FOCUS_HEAD_CHECK=True, FOCUS_RECRAWL=True, FOCUS_RENDER="always",
                       FOCUS_RENDER_BACKEND="splash", SPLASH_URL="http://127.0.0.1:1")
    assert kinds(everything) == [UrlAliases, Patience, HeadCheck, Recrawl, RenderRouting, RenderContinuation]
    assert kinds(built(FOCUS_URL_ALIASES=False, FOCUS_RENDER="never")) == [RenderContinuation]


def test_the_project_dict_is_merged_over_the_base_and_none_turns_one_off():
    config = FocusConfig.from_settings(Settings({"FOCUS_RELEASE_POLICIES": {PATIENCE: None, HEAD_CHECK: 50}}))
    paths = policy_paths(config)
    assert paths[0] == HEAD_CHECK and PATIENCE not in paths
    assert paths[1:] == [p for p in policy_paths(DEFAULTS) if p not in (PATIENCE, HEAD_CHECK)]
    scheduler = built(FOCUS_PATIENCE=2.0, FOCUS_HEAD_CHECK=True, FOCUS_RELEASE_POLICIES={PATIENCE: None})
    assert Patience not in kinds(scheduler) and HeadCheck in kinds(scheduler)


def test_the_dict_may_come_as_json_from_the_command_line():
    config = FocusConfig.from_settings(Settings({"FOCUS_RELEASE_POLICIES": '{"%s": null}' % PATIENCE}))
    assert PATIENCE not in policy_paths(config)
    for bad in ('{"a.B": "first"}', "[1, 2", {"a.B": True}):
        with pytest.raises(ConfigError, match="FOCUS_RELEASE_POLICIES"):
            FocusConfig.from_settings(Settings({"FOCUS_RELEASE_POLICIES": bad}))


def test_a_project_policy_added_by_setting_is_asked_in_its_place():
    scheduler = make_scheduler(FOCUS_HEAD_CHECK=True, FOCUS_RENDER="never", FOCUS_RELEASE_POLICIES={Tagging: 250})
    assert kinds(scheduler) == [UrlAliases, Tagging, HeadCheck, RenderContinuation]
    spider = scheduler.spider
    assert scheduler.enqueue_request(Request("http://a.test/page.html", callback=spider.parse))
    assert scheduler.enqueue_request(Request("http://b.test/data", callback=spider.parse))
    sent = {r.url: r for r in (scheduler.next_request(), scheduler.next_request())}
    assert sent["http://a.test/page.html"].headers["X-Crawl"] == b"topic"
    head = sent["http://b.test/data"]  # tagged first, then checked: the HEAD carries the tag
    assert head.method == "HEAD" and head.headers["X-Crawl"] == b"topic"
    (tagging,) = [p for p in scheduler.policies if isinstance(p, Tagging)]
    assert sorted(tagging.released_urls) == sorted(sent)


def test_a_policy_off_by_its_setting_is_silent_and_one_off_with_a_reason_says_it(caplog):
    with caplog.at_level(logging.INFO, logger="focuscrawl.scheduling.release"):
        scheduler = built(FOCUS_RELEASE_POLICIES={Off: 10, OffWithReason: 20})
    assert Off not in kinds(scheduler) and OffWithReason not in kinds(scheduler)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [f"Disabled release policy {OffWithReason!r}: no calendar given"]
    enabled = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert enabled and "UrlAliases" in enabled[-1] and "Off" not in enabled[-1]


def test_the_default_policies_off_log_no_warning(caplog):
    with caplog.at_level(logging.WARNING):
        built(FOCUS_PATIENCE=0, FOCUS_HEAD_CHECK=False, FOCUS_RECRAWL=False, FOCUS_RENDER="never")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_policy_that_cannot_be_loaded_stops_the_crawl_with_one_line():
    with pytest.raises(NotConfigured, match=r"FOCUS_RELEASE_POLICIES: cannot load 'no_such_module.Policy'"):
        built(FOCUS_RELEASE_POLICIES={"no_such_module.Policy": 10})


def test_render_routing_is_off_without_a_backend_and_a_render_it_cannot_honour_stops_the_crawl():
    assert RenderRouting not in kinds(built(FOCUS_RENDER="never"))
    with pytest.raises(NotConfigured, match="focuscrawl scheduler: FOCUS_RENDER=always but .*SPLASH_URL"):
        built(FOCUS_RENDER="always", FOCUS_RENDER_BACKEND="splash")


def test_a_stateful_policy_is_kept_by_jobdir_under_its_name(tmp_path):
    jobdir = str(tmp_path / "job")
    scheduler = opened(JOBDIR=jobdir, FOCUS_RELEASE_POLICIES={Visits: 500})
    for n in range(3):
        assert scheduler.enqueue_request(Request(f"http://h{n}.test/", callback=scheduler.spider.parse))
    while scheduler.next_request() is not None:
        pass
    (visits,) = [p for p in scheduler.policies if isinstance(p, Visits)]
    assert visits.count == 3
    scheduler.close("shutdown")
    resumed = opened(JOBDIR=jobdir, FOCUS_RELEASE_POLICIES={Visits: 500})
    (visits,) = [p for p in resumed.policies if isinstance(p, Visits)]
    assert visits.count == 3
    resumed.close("shutdown")


def test_a_stateful_policy_may_not_take_a_name_the_snapshot_uses(tmp_path):
    class Seen(Visits):
        name = "seen"

    with pytest.raises(NotConfigured, match="Seen: its name in the JOBDIR snapshot is taken: 'seen'"):
        built(JOBDIR=str(tmp_path / "job"), FOCUS_RELEASE_POLICIES={Seen: 500})


def test_the_scheduler_is_a_release_policys_only_way_in():
    """What a policy's from_crawler is given: the scheduler, through its public doors."""
    seen = {}

    class Spy:
        @classmethod
        def from_crawler(cls, crawler, scheduler):
            seen["scheduler"] = scheduler
            return cls()

    scheduler = built(FOCUS_RELEASE_POLICIES={Spy: 1})
    assert isinstance(seen["scheduler"], FocusScheduler) and seen["scheduler"] is scheduler


def test_the_add_on_puts_the_base_in_the_settings_and_a_command_line_dict_turns_one_off():
    """As a crawl reads them: the add-on sets FOCUS_RELEASE_POLICIES_BASE (a dict, at its priority)
    and -s gives FOCUS_RELEASE_POLICIES as JSON."""
    from scrapy.utils.test import get_crawler

    from tests.test_scheduler import LinkSpider

    crawler = get_crawler(LinkSpider, {"ADDONS": {"focuscrawl.Addon": 0}, "ROBOTSTXT_OBEY": False,
                                       "FOCUS_RENDER": "never", "FOCUS_HEAD_CHECK": True,
                                       "FOCUS_RELEASE_POLICIES": '{"%s": null}' % HEAD_CHECK})
    crawler._apply_settings()
    assert crawler.settings.getdict("FOCUS_RELEASE_POLICIES_BASE")[PATIENCE] == 200
    assert kinds(FocusScheduler.from_crawler(crawler)) == [UrlAliases, Patience, RenderContinuation]


def test_recrawl_hears_the_signals_itself_and_drops_only_a_revisit_the_scheduler_refused():
    """Revisits are a policy of their own: the spider's visits reach them through page_visited, and
    a queued revisit the scheduler refuses (robots.txt, the exclusion list: before its release)
    leaves the plan; one the network guard refuses after its release stays due."""
    from types import SimpleNamespace

    from focuscrawl import signals as focus_signals

    scheduler = make_scheduler(FOCUS_RECRAWL=True, FOCUS_RENDER="never")
    (recrawl,) = [p for p in scheduler.policies if isinstance(p, Recrawl)]
    send = scheduler.crawler.signals.send_catch_log
    for url in ("http://a.test/x", "http://a.test/y"):
        send(focus_signals.page_visited, request=Request(url), response=SimpleNamespace(status=200), url=url,
             kind="page", text_hash="h", weight=1.0)
    assert len(recrawl.revisits) == 2 and scheduler.has_pending_requests()
    recrawl.revisits.queued.update({"http://a.test/x", "http://a.test/y"})
    send(focus_signals.request_refused, request=Request("http://a.test/x", meta={"focus_revisit": "due"}),
         reason="robots_disallowed")
    send(focus_signals.request_refused, reason="private_address",
         request=Request("http://a.test/y", meta={"focus_revisit": "due", "focus_host": "a.test"}))
    assert len(recrawl.revisits) == 1 and recrawl.revisits.queued == {"http://a.test/y"}
