"""The preflight's checks one by one, fast (``focuscrawl.preflight``): each failure one line that
names the setting; the real parts (a closed port, a web server that is not Splash) in
tests/test_crawl_errors.py."""

from __future__ import annotations

import socket

from scrapy.settings import Settings

from focuscrawl import preflight


def _settings(**values) -> Settings:
    settings = Settings()
    settings.setmodule("focuscrawl.settings")
    settings.setdict(values, priority="cmdline")
    return settings


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _errors(checks, spargs=None, **settings) -> list[str]:
    return preflight.run(spargs or {}, _settings(**settings), checks=checks)


def test_a_bad_setting_is_the_only_line():
    """The other checks need the settings read: a setting that cannot be is all there is to say."""
    (line,) = _errors(preflight.CHECKS, FOCUS_BUDGET="lots")
    assert "FOCUS_BUDGET" in line


def test_redis_that_does_not_answer():
    url = f"redis://127.0.0.1:{_closed_port()}/0"
    (line,) = _errors((preflight.check_redis,), FOCUS_FRONTIER_URL=url)
    assert line.startswith(f"FOCUS_FRONTIER_URL={url}: Redis does not answer") and "redis-server" in line
    assert _errors((preflight.check_redis,)) == []  # no shared frontier: nothing to reach


def test_splash_url_checks():
    assert "needs SPLASH_URL" in preflight.splash_problem(None)
    assert "not an http(s) URL" in preflight.splash_problem("127.0.0.1:8050")
    assert "no render service answers" in preflight.splash_problem(f"http://127.0.0.1:{_closed_port()}", timeout=2)


def test_the_store_and_jobdir(tmp_path):
    (line,) = _errors((preflight.check_store,), FOCUS_STORE=str(tmp_path))
    assert "FOCUS_STORE" in line and "is a folder" in line
    assert _errors((preflight.check_store,), FOCUS_STORE=str(tmp_path / "new" / "crawl.db")) == []  # made at start
    job = tmp_path / "job"
    job.write_text("")
    assert _errors((preflight.check_store, preflight.check_jobdir), JOBDIR=str(job)) == [
        f"JOBDIR={job} is a file, not a folder: use another JOBDIR"]


def test_feeds_outside_the_file_system_are_left_to_scrapy(tmp_path):
    assert _errors((preflight.check_feeds,), FEEDS={"s3://bucket/items.jsonl": {"format": "jsonlines"}}) == []
    blocker = tmp_path / "f"
    blocker.write_text("")
    (line,) = _errors((preflight.check_feeds,), FEEDS={f"file://{blocker}/items.jsonl": {"format": "jsonlines"}})
    assert "not a folder" in line


def test_recrawl_with_a_shared_frontier_is_accepted():
    assert _errors((preflight.check_backend,), FOCUS_RECRAWL=True, FOCUS_FRONTIER_URL="redis://127.0.0.1:1/0") == []


def test_a_release_policy_that_cannot_be_loaded():
    (line,) = _errors((preflight.check_release_policies,), FOCUS_RELEASE_POLICIES={"myproject.nothing.Here": 500})
    assert line.startswith("FOCUS_RELEASE_POLICIES: cannot load 'myproject.nothing.Here'")
    assert _errors((preflight.check_release_policies,), FOCUS_RELEASE_POLICIES={
        "focuscrawl.scheduling.policies.Patience": None}) == []


def test_a_backend_that_is_not_one_is_one_line():
    (line,) = _errors((preflight.check_backend,), FOCUS_BACKEND="focuscrawl.nothing.Here")
    assert line.startswith("FOCUS_BACKEND=focuscrawl.nothing.Here cannot be loaded")
    assert _errors((preflight.check_backend,), FOCUS_BACKEND="focuscrawl.backends.local.LocalBackend") == []
    (line,) = _errors((preflight.check_backend,), FOCUS_BACKEND="focuscrawl.backends.shared.SharedBackend")
    assert "needs FOCUS_FRONTIER_URL" in line
