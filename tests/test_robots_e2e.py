"""robots.txt end to end, audited on the server's log: a robots.txt that redirects is followed,
a host whose Crawl-delay is over the cap is skipped when so configured, and a host whose
robots.txt answers 5xx is not crawled."""

from __future__ import annotations

import pytest

from focuscrawl.replay import RecordedWeb, ReplayProxy

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

A, B, C = "http://moved.test", "http://slow.test", "http://broken.test"
TEXT = "Comets, planets and galaxies: a night at the observatory with the telescope. " * 5


def page(title, links=()):
    anchors = "".join(f'<a href="{u}">{u}</a> ' for u in links)
    body = f"<html><title>{title}</title><body><p>{title}. {TEXT}</p>{anchors}</body></html>".encode()
    return (200, [("Content-Type", "text/html")], body)


RECORDS = {
    # robots.txt redirects (twice) before it says what it says
    f"{A}/robots.txt": (301, [("Location", f"{A}/robots-old.txt")], b""),
    f"{A}/robots-old.txt": (302, [("Location", f"{A}/policy/robots.txt")], b""),
    f"{A}/policy/robots.txt": (200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /secret/\n"),
    f"{A}/": page("Moved home", [f"{A}/open.html", f"{A}/secret/plans.html", f"{B}/", f"{C}/"]),
    f"{A}/open.html": page("Open page"),
    f"{A}/secret/plans.html": page("Secret plans"),
    # asks for a Crawl-delay far over the cap: skipped
    f"{B}/robots.txt": (200, [("Content-Type", "text/plain")], b"User-agent: *\nCrawl-delay: 600\n"),
    f"{B}/": page("Slow home", [f"{B}/a.html"]),
    f"{B}/a.html": page("Slow a"),
    # robots.txt answers 503: treated as disallow-all for now (RFC 9309)
    f"{C}/robots.txt": (503, [("Content-Type", "text/plain")], b"busy"),
    f"{C}/": page("Broken home"),
}


@pytest.fixture(scope="module")
def server_log(demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("robots")
    with ReplayProxy(RecordedWeb.from_records(RECORDS)) as proxy:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds={A}/", "-a", f"model={demo_model}", "-s", f"FOCUS_STORE={out / 'c.db'}",
             "-s", "DOWNLOAD_DELAY=0.05", "-s", "FOCUS_MAX_CRAWL_DELAY=5", "-s", "FOCUS_CRAWL_DELAY_OVER_CAP=skip",
             "-s", "FOCUS_ROBOTS_ERROR_RETRY_SECONDS=3600", "-s", "FOCUS_PATIENCE=0"],
            cwd=out, env={"http_proxy": proxy.url}, timeout=120)
        log = proxy.log
    assert result.returncode == 0, result.stderr[-3000:]
    assert "focus/refused/crawl_delay_over_cap" in result.stderr
    return [r["url"] for r in log]


def test_redirected_robots_txt_is_followed_and_obeyed(server_log):
    assert f"{A}/policy/robots.txt" in server_log
    assert f"{A}/open.html" in server_log
    assert f"{A}/secret/plans.html" not in server_log
    assert server_log.index(f"{A}/policy/robots.txt") < server_log.index(f"{A}/")


def test_host_over_the_crawl_delay_cap_is_skipped(server_log):
    assert f"{B}/robots.txt" in server_log
    assert not [u for u in server_log if u.startswith(B) and not u.endswith("/robots.txt")]


def test_host_with_failing_robots_txt_is_not_crawled(server_log):
    assert f"{C}/robots.txt" in server_log
    assert f"{C}/" not in server_log
