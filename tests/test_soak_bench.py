"""bench/soak.py's generated hostile web and its proxy: every hostile kind answers as it claims, the
same way every time, and the proxy streams, throttles and logs as the politeness audit reads it.
(The 20-minute soak itself is a bench, not a test.)"""

from __future__ import annotations

import gzip
import http.client
import re
import sys
import zlib
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from focuscrawl.politeness.audit import audit_report, load_log

BENCH = Path(__file__).resolve().parents[1] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))  # the bench's modules import each other by name

import soakweb  # noqa: E402
from soakproxy import SoakProxy  # noqa: E402
from soakweb import SoakWeb  # noqa: E402

MAXSIZE = 10 * 1024 * 1024


@pytest.fixture(scope="module")
def web():
    return SoakWeb(seed=0)


@pytest.fixture(scope="module")
def examples(web):
    return web.examples()


def hrefs(body: bytes) -> list[str]:
    return re.findall(r'href="([^"]+)"', body.decode("utf-8", "replace").replace("&amp;", "&"))


def test_the_web_is_big_deterministic_and_not_stored(web, examples):
    assert len(web.profiles) == 1000 and 90_000 <= len(web) <= 110_000
    again = SoakWeb(seed=0)
    for url in list(examples.values())[:12]:
        assert again.respond("GET", url).body == web.respond("GET", url).body
    other = SoakWeb(seed=1)
    assert other.respond("GET", examples["page"]).body != web.respond("GET", examples["page"]).body
    assert web.plan.cache_info().maxsize == 65536  # page paths are cached within a bound, pages never


def test_pages_link_within_and_across_hosts_and_topical_pages_are_on_topic(web, examples):
    page = web.respond("GET", examples["page"])
    links = [urljoin(examples["page"], h) for h in hrefs(page.body)]
    host = urlsplit(examples["page"]).netloc
    assert sum(urlsplit(u).netloc == host for u in links) >= 8
    assert any(urlsplit(u).netloc != host for u in links)
    fresh = SoakWeb(seed=0)  # a host's 429 count must not depend on the other tests
    inside = [u for u in links if urlsplit(u).netloc == host and soakweb.PAGE_RE.match(urlsplit(u).path)
              and "missing-page" not in u]  # the broken links are 404 on purpose
    assert inside and all(fresh.respond("GET", u).status == 200 for u in inside)
    topical = web.respond("GET", examples["topic_page"])
    assert topical.kind == "topic_page"
    topic_words = set(soakweb.V.theme_words("astronomy"))
    words = re.findall(r"[a-z-]+", topical.body.decode("utf-8", "replace").lower())
    assert sum(w in topic_words for w in words) > 0.1 * len(words)


def test_robots_txt_of_every_sort(web, examples):
    answers = {kind: web.respond("GET", examples[f"robots_{kind}"]) for kind in ("none", *soakweb.ROBOTS_KINDS)}
    assert answers["none"].status == 404
    assert answers["error"].status >= 500
    assert answers["redirect"].status == 301 and answers["redirect"].header("Location") == "/robots-real.txt"
    assert b"Crawl-delay:" in answers["crawl_delay"].body
    assert any(p.crawl_delay > 30 for p in web.profiles)  # past FOCUS_MAX_CRAWL_DELAY: crawled at the cap
    assert b"Disallow: /private/" in answers["disallow"].body
    assert answers["garbage"].status == 200
    target = urljoin(examples["robots_redirect"], "/robots-real.txt")
    assert b"Disallow: /private/" in web.respond("GET", target).body
    # what a polite crawler obeys: 404 allows everything, 5xx and unreachable hosts nothing
    assert web.robots_for_audit(urlsplit(examples["robots_none"]).netloc) == ""
    assert "Disallow: /\n" in web.robots_for_audit(urlsplit(examples["robots_error"]).netloc)
    assert "Disallow: /\n" in web.robots_for_audit(urlsplit(examples["unknown_host"]).netloc)


def test_lying_charsets_and_gzip(web, examples):
    latin = web.respond("GET", examples["charset_latin1_says_utf8"])
    assert "ISO-8859-1" in latin.header("Content-Type") and "é" in latin.body.decode("utf-8")
    cp1252 = web.respond("GET", examples["charset_utf8_says_cp1252"])
    assert "utf-8" in cp1252.header("Content-Type")
    with pytest.raises(UnicodeDecodeError):
        cp1252.body.decode("utf-8")
    assert "\u201c" in cp1252.body.decode("cp1252")
    bogus = web.respond("GET", examples["charset_bogus_name"])
    assert bogus.header("Content-Type").split("charset=")[1] in soakweb.BOGUS_CHARSETS
    zipped = web.respond("GET", examples["gzip_page"])
    assert zipped.header("Content-Encoding") == "gzip" and gzip.decompress(zipped.body).startswith(b"<!DOCTYPE html>")


def test_errors_throttling_and_slow_hosts(examples):
    web = SoakWeb(seed=0)  # fresh request counts
    error = web.respond("GET", examples["server_error"])
    assert error.status in (500, 502, 503, 504) and web.respond("GET", examples["server_error"]).status == error.status
    profile = web.by_host[urlsplit(examples["throttled"]).netloc]
    statuses = [web.respond("GET", examples["throttled"]) for _ in range(2 * profile.throttle)]
    throttled = [r for r in statuses if r.status == 429]
    assert len(throttled) == 2
    assert all((r.header("Retry-After") is None) == (profile.retry_after == "none") for r in throttled)
    assert all(r.retry_after == r.header("Retry-After") for r in throttled)
    assert 1 <= web.respond("GET", examples["slow"]).latency <= 5


def test_traps_never_end(web, examples):
    url = examples["trap_calendar"]
    for _ in range(3):  # next month, and again: always a new page
        page = web.respond("GET", url)
        assert page.status == 200 and page.kind == "trap_calendar"
        anchors = re.findall(r'href="([^"]+)">([^<]+)<', page.body.decode("utf-8", "replace"))
        url = urljoin(url, next(h for h, a in anchors if a == "Next month"))
    assert "/2026/06/" in url
    session = web.respond("GET", examples["trap_session"])
    tokens = {m for h in hrefs(session.body) for m in re.findall(r"/s/([0-9a-f]{10})/", h)}
    assert tokens and "0123456789" not in tokens  # every page hands out a new session id
    assert any(";jsessionid=" in h for h in hrefs(session.body))
    deep = examples["trap_deep"]
    child = urljoin(deep, hrefs(web.respond("GET", deep).body)[0])
    assert child.startswith(deep) and web.respond("GET", child).status == 200
    facets = web.respond("GET", examples["trap_facets"])
    assert any("page=8" in h for h in hrefs(facets.body))


def test_huge_and_compressed_bodies(web, examples):
    huge = web.respond("GET", examples["huge"])
    assert huge.size > MAXSIZE and huge.with_length and huge.stream is not None
    stream = web.respond("GET", examples["huge_stream"])
    assert not stream.with_length and len(stream.read()) == stream.size > MAXSIZE
    big = web.respond("GET", examples["big"])
    body = big.read()
    assert len(body) == big.size and MAXSIZE - 1024 * 1024 < big.size < MAXSIZE
    assert body.startswith(b"<!DOCTYPE html>") and body.endswith(b"</html>\n")
    bomb = web.respond("GET", examples["gzip_bomb"])
    inflated = zlib.decompressobj(31).decompress(bomb.body, MAXSIZE + 1)
    assert len(bomb.body) < 1024 * 1024 and len(inflated) > MAXSIZE  # small on the wire, past the limit inflated
    assert len(gzip.decompress(web.respond("GET", examples["big_gzip"]).body)) < MAXSIZE
    bad = web.respond("GET", examples["bad_gzip"])
    assert bad.header("Content-Encoding") == "gzip" and not bad.body.startswith(b"\x1f\x8b")


def test_redirects_loops_and_dead_ends(web, examples):
    moved = web.respond("GET", examples["redirect"])
    assert moved.status == 301
    assert web.respond("GET", urljoin(examples["redirect"], moved.header("Location"))).status == 200
    loop = web.respond("GET", examples["redirect_loop"])
    back = web.respond("GET", urljoin(examples["redirect_loop"], loop.header("Location")))
    assert urljoin(examples["redirect_loop"], back.header("Location")) == examples["redirect_loop"]
    url, hops = examples["redirect_chain"], 0
    while (reply := web.respond("GET", url)).status in (301, 302):
        url, hops = urljoin(url, reply.header("Location")), hops + 1
    assert hops == soakweb.CHAIN_LENGTH and reply.status == 200
    away = web.respond("GET", examples["redirect_cross_host"]).header("Location")
    assert urlsplit(away).netloc != urlsplit(examples["redirect_cross_host"]).netloc
    assert web.respond("GET", examples["not_found"]).status == 404
    assert web.respond("GET", examples["unknown_host"]).status == 502


def _get(port: int, url: str, read: int | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", url)
        response = conn.getresponse()
        body = response.read(read) if read else response.read()
        return response.status, dict(response.getheaders()), body
    finally:
        conn.close()


def test_the_proxy_streams_throttles_and_logs_for_the_audit(examples, tmp_path):
    web = SoakWeb(seed=0)
    log = tmp_path / "server.jsonl"
    throttled = web.by_host[urlsplit(examples["throttled"]).netloc]
    with SoakProxy(web, log_path=str(log)) as proxy:
        status, headers, body = _get(proxy.port, examples["page"])
        assert status == 200 and int(headers["Content-Length"]) == len(body)
        status, headers, body = _get(proxy.port, examples["huge_stream"])
        assert "Content-Length" not in headers and headers["Connection"] == "close" and len(body) > MAXSIZE
        assert _get(proxy.port, examples["huge"], read=65536)[0] == 200  # the client gives up early
        for _ in range(throttled.throttle):
            _get(proxy.port, examples["throttled"])
        assert _get(proxy.port, examples["unknown_host"])[0] == 502
        assert _get(proxy.port, examples["robots_error"])[0] >= 500
        proxy.wait_idle()
    records = load_log(log)
    assert {"t_start", "t_end", "method", "url", "host", "path", "status", "bytes", "conn"} <= set(records[0])
    assert proxy.answered == len(records) == 5 + throttled.throttle
    huge = next(r for r in records if r["url"] == examples["huge"])
    assert huge.get("aborted") and huge["bytes"] < MAXSIZE
    rate_limited = [r for r in records if r["status"] == 429]
    assert len(rate_limited) == 1 and ("retry_after" in rate_limited[0]) == (throttled.retry_after != "none")
    # the audit reads the log; a request to a host whose robots.txt fails is a violation
    robots = {r["host"]: web.robots_for_audit(r["host"]) for r in records}
    report = audit_report(records, robots=robots, delays=0.0)
    assert report["violation_counts"]["robots_not_first"] >= 1 and report["requests"] == len(records)


def test_the_memory_held_passes_over_a_big_page_and_not_over_a_leak():
    import soak

    def samples(rss):
        return [{"t": 5.0 * i, "rss_kib": kib, "stopping": False} for i, kib in enumerate(rss)]

    flat = [100_000] * 240
    flat[180] = 130_000  # one sample while a big page is parsed
    report = soak.drift(samples(flat), until=1200)
    assert report["max_over_min"] == 1.3 and report["held_max_over_min"] == 1.0
    leak = [100_000 + 200 * i for i in range(240)]  # 2 KiB more a second: ~19% over the second half
    report = soak.drift(samples(leak), until=1200)
    assert report["held_max_over_min"] > 1.1 and report["held_last_over_first"] > 1.1
