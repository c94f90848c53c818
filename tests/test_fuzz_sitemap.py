"""Fuzzing sitemaps (focuscrawl/parsing/sitemap.py, the spider's ``parse_sitemap``): any bytes
give URLs a Request can be made of or a SitemapError; XML entities are never expanded nor
fetched (billion laughs, XXE: file and network); a gzip bomb stops at the size cap."""

from __future__ import annotations

import gzip
import html as html_escape
import math
from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from focuscrawl.parsing.sitemap import (
    CHANGEFREQS, MAX_SITEMAP_BYTES, SitemapEntry, SitemapError, SitemapLinks, parse_lastmod, read_sitemap,
)
from tests.fuzzing import any_url, requestable, trap_server, within

SITEMAP_URL = "http://site.test/sitemap.xml"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def _read(body: bytes, max_urls: int = 10_000, max_bytes: int = 10 * 1024 * 1024) -> SitemapLinks | None:
    try:
        return read_sitemap(body, SITEMAP_URL, max_urls, max_bytes)
    except SitemapError:
        return None


def _check(links: SitemapLinks | None, max_urls: int = 10_000) -> None:
    if links is None:
        return
    assert isinstance(links.kind, str)
    assert len(links.urls) <= max_urls
    for url in links.urls:
        assert requestable(url), url  # the spider makes a Request of each


@st.composite
def sitemaps(draw) -> bytes:
    """A urlset or sitemap index whose entries hold anything, now and then gzipped."""
    root = draw(st.sampled_from(["urlset", "sitemapindex", "feed", "x:urlset"]))
    entry = "sitemap" if root == "sitemapindex" else "url"
    entries = []
    for loc in draw(st.lists(st.one_of(any_url, st.sampled_from(["", " ", "/relative", "javascript:x",
                                                                  "http://a.test:99999/", "http://[::1]x/"])),
                             max_size=20)):
        text = html_escape.escape(loc) if draw(st.booleans()) else loc
        entries.append(f"<{entry}><loc>{text}</loc><lastmod>2026-01-01</lastmod></{entry}>")
    xml = f'<?xml version="1.0" encoding="UTF-8"?><{root} {NS}>{"".join(entries)}</{root}>'
    if draw(st.booleans()):
        xml = xml[:draw(st.integers(0, len(xml)))]  # torn
    body = xml.encode("utf-8", "surrogatepass")
    return gzip.compress(body) if draw(st.booleans()) else body


@given(st.one_of(st.binary(max_size=3_000), sitemaps(), st.binary(max_size=3_000).map(gzip.compress),
                 st.binary(max_size=3_000).map(lambda b: b"\x1f\x8b\x08" + b)),
       st.integers(min_value=0, max_value=30))
@example(f"<urlset {NS}><url><loc>/relative</loc></url><url><loc>http://ok.test/</loc></url></urlset>".encode(), 5)
@example(f"<urlset {NS}><url><loc>http://a.test:99999/</loc></url></urlset>".encode(), 5)  # Request: ValueError
@example(f"<urlset {NS}><url><loc>http://[::1</loc></url></urlset>".encode(), 5)  # url_tokens: ValueError
@example(b"<url><loc>http://\\", 1)  # found by the soak: urlsplit's host is "\\", Scrapy's request has none
def test_any_bytes_give_requestable_urls_or_a_sitemap_error(body, max_urls):
    """Before read_sitemap, one such ``<loc>`` raised out of parse_sitemap (in score_links or
    scrapy.Request) and lost every other URL of the sitemap."""
    _check(_read(body, max_urls), max_urls)


def test_relative_and_unfollowable_locs_are_resolved_or_dropped():
    body = (f"<urlset {NS}><url><loc>/a</loc></url><url><loc>javascript:x</loc></url>"
            "<url><loc> </loc></url><url><loc>http://b.test/x#frag</loc></url></urlset>").encode()
    assert read_sitemap(body, SITEMAP_URL, 10).urls == ["http://site.test/a", "http://b.test/x"]


def test_max_urls_caps_the_entries_read():
    body = f"<urlset {NS}>{''.join(f'<url><loc>http://a.test/{i}</loc></url>' for i in range(100))}</urlset>"
    assert len(read_sitemap(body.encode(), SITEMAP_URL, 7).urls) == 7


def test_billion_laughs_is_never_expanded():
    lol = '<!ENTITY lol0 "lol">' + "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset [{lol}]>'
            f"<urlset {NS}><url><loc>http://a.test/&lol9;</loc></url></urlset>").encode()
    with within(2, "a billion laughs"):
        links = _read(body)
    _check(links)
    assert links is None or all(len(url) < 1_000 for url in links.urls)


def test_external_entities_are_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY fromdtd "TOPSECRET">')
    body = (f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{dtd.as_uri()}" '
            f'[<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
            f"<urlset {NS}><url><loc>http://a.test/&xxe;</loc></url>"
            f"<url><loc>http://a.test/&fromdtd;</loc></url><url><loc>http://a.test/ok</loc></url></urlset>").encode()
    links = _read(body)
    _check(links)
    assert links is not None and "http://a.test/ok" in links.urls
    assert not any("TOPSECRET" in url for url in links.urls)


def test_no_entity_or_dtd_is_fetched_over_the_network():
    with trap_server(b'<!ENTITY fromdtd "TOPSECRET">') as (base, hits):
        body = (f'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "{base}/evil.dtd" '
                f'[<!ENTITY xxe SYSTEM "{base}/secret"> <!ENTITY % pe SYSTEM "{base}/pe.dtd"> %pe;]>'
                f"<urlset {NS}><url><loc>http://a.test/&xxe;&fromdtd;</loc></url></urlset>").encode()
        _check(_read(body))
    assert hits == []


def _gzip_of_zeros(mebibytes: int) -> bytes:
    """A gzip of ``mebibytes`` MiB of zero bytes: one gzip member of 1 MiB (1 KB), repeated (a
    gzip file may be a series of members), so it costs nothing to build."""
    return gzip.compress(b"\0" * (1 << 20), compresslevel=9) * mebibytes


@pytest.mark.parametrize("max_bytes", [10 * 1024 * 1024, 0])
def test_a_gzip_bomb_stops_at_the_cap(max_bytes):
    """1 GiB of zeros in 1 MB of gzip. DOWNLOAD_MAXSIZE is the cap; 0 (Scrapy's "no limit") means
    the sitemap protocol's 50 MiB, where gunzip without a cap would inflate the whole GiB."""
    bomb = _gzip_of_zeros(1024)
    assert len(bomb) < 2 * 1024 * 1024
    with within(5, "a gzip bomb"), pytest.raises(SitemapError, match="exceeded"):
        read_sitemap(bomb, SITEMAP_URL, 10, max_bytes=max_bytes)


def test_a_sitemap_under_the_cap_is_read_whole():
    entries = "".join(f"<url><loc>http://a.test/{i}</loc></url>" for i in range(10_000))
    body = gzip.compress(f"<urlset {NS}>{entries}</urlset>".encode())
    with within(10, "10,000 gzipped entries"):
        links = read_sitemap(body, SITEMAP_URL, 10_000, max_bytes=MAX_SITEMAP_BYTES)
    assert len(links.urls) == 10_000 and links.kind == "urlset"


# --- freshness hints: lastmod, changefreq, priority -------------------------------------------------

def _utc(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_entries_carry_the_hints_of_each_url():
    body = (f"<urlset {NS}>"
            "<url><loc>/a</loc><lastmod>2025-06-10T09:41:01+02:00</lastmod><changefreq> Daily </changefreq>"
            "<priority>0.8</priority></url>"
            "<url><loc>javascript:x</loc><lastmod>2025-01-01</lastmod></url>"
            "<url><loc>http://b.test/x</loc></url>"
            "<url><loc>http://b.test/y</loc><lastmod>soon</lastmod><changefreq>sometimes</changefreq>"
            "<priority>high</priority></url></urlset>").encode()
    links = read_sitemap(body, SITEMAP_URL, 10)
    assert links.urls == ["http://site.test/a", "http://b.test/x", "http://b.test/y"]
    assert links.entries == [
        SitemapEntry("http://site.test/a", lastmod=_utc(2025, 6, 10, 7, 41, 1), changefreq="daily", priority=0.8),
        SitemapEntry("http://b.test/x"),
        SitemapEntry("http://b.test/y"),
    ]


def test_a_sitemap_index_gives_the_lastmod_of_its_sitemaps():
    body = (f"<sitemapindex {NS}><sitemap><loc>/s1.xml.gz</loc><lastmod>2025-06-01</lastmod></sitemap>"
            "<sitemap><loc>/s2.xml.gz</loc></sitemap></sitemapindex>").encode()
    links = read_sitemap(body, SITEMAP_URL, 10)
    assert links.kind == "sitemapindex"
    assert [(e.url, e.lastmod) for e in links.entries] == [
        ("http://site.test/s1.xml.gz", _utc(2025, 6, 1)), ("http://site.test/s2.xml.gz", None)]


def test_max_urls_caps_the_entries_with_the_urls():
    body = f"<urlset {NS}>{''.join(f'<url><loc>http://a.test/{i}</loc></url>' for i in range(100))}</urlset>"
    links = read_sitemap(body.encode(), SITEMAP_URL, 7)
    assert [entry.url for entry in links.entries] == links.urls and len(links.urls) == 7


@pytest.mark.parametrize("text, expected", [
    ("2005-01-01", _utc(2005, 1, 1)),  # the protocol's example
    ("2004-12-23T18:00:15+00:00", _utc(2004, 12, 23, 18, 0, 15)),
    ("2004-12-23T18:00:15Z", _utc(2004, 12, 23, 18, 0, 15)),
    ("2004-12-23T18:00Z", _utc(2004, 12, 23, 18, 0)),  # minutes, no seconds
    ("2004-12-23T18:00:15.5-05:30", _utc(2004, 12, 23, 23, 30, 15, 500_000)),
    ("1997-07-16T19:20:30.45+01:00", _utc(1997, 7, 16, 18, 20, 30, 450_000)),  # W3C's example
    ("2004-12", _utc(2004, 12, 1)),  # year and month
    ("2004", _utc(2004, 1, 1)),  # year
    ("2004-12-23T18:00:15", _utc(2004, 12, 23, 18, 0, 15)),  # no offset: taken as UTC
    ("  2005-01-01\n", _utc(2005, 1, 1)),
])
def test_lastmod_reads_w3c_datetimes(text, expected):
    assert parse_lastmod(text) == expected


@pytest.mark.parametrize("text", [
    None, "", "  ", "yesterday", "2004-13-01", "2004-02-30", "2004-12-23T25:00Z", "2004-12-23T18:00+25:00",
    "12/23/2004", "Tue, 10 Jun 2025 09:41:01 GMT", "20041", "2004-1", "２００４", "0000-01-01", "NaN",
    "2004-12-23T18:00:15Z trailing", "\x00",
])
def test_lastmod_garbage_is_none(text):
    assert parse_lastmod(text) is None


@pytest.mark.parametrize("text, expected", [
    ("0.8", 0.8), ("1", 1.0), ("0", 0.0), (" 0.5 ", 0.5), ("1.0000", 1.0),
    ("1.5", None), ("-0.1", None), ("nan", None), ("inf", None), ("high", None), ("", None), ("0,5", None),
])
def test_priority_is_a_number_in_the_unit_interval_or_none(text, expected):
    body = f"<urlset {NS}><url><loc>http://a.test/</loc><priority>{text}</priority></url></urlset>".encode()
    assert read_sitemap(body, SITEMAP_URL, 10).entries[0].priority == expected


@pytest.mark.parametrize("text, expected", [
    ("always", "always"), ("HOURLY", "hourly"), (" weekly\n", "weekly"), ("never", "never"),
    ("fortnightly", None), ("", None), ("daily weekly", None),
])
def test_changefreq_is_one_of_the_protocols_words_or_none(text, expected):
    body = f"<urlset {NS}><url><loc>http://a.test/</loc><changefreq>{text}</changefreq></url></urlset>".encode()
    assert read_sitemap(body, SITEMAP_URL, 10).entries[0].changefreq == expected


_hint = st.one_of(st.text(max_size=30), st.sampled_from([
    "2025-06-10", "2025-06-10T09:41:01+02:00", "9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+01:00",
    "1e308", "-0", "0.5", "nan", "DAILY", "<x/>", "&amp;", "&#0;", "]]>"]))


@given(st.lists(st.tuples(any_url, _hint, _hint, _hint), max_size=15), st.integers(0, 20))
def test_any_hints_give_entries_aligned_with_the_urls(entries, max_urls):
    """Whatever a sitemap writes as lastmod, changefreq and priority, its URLs are kept and each
    hint is in its domain or None."""
    xml = "".join(
        f"<url><loc>{html_escape.escape(loc)}</loc><lastmod>{html_escape.escape(lastmod)}</lastmod>"
        f"<changefreq>{html_escape.escape(freq)}</changefreq><priority>{html_escape.escape(priority)}</priority></url>"
        for loc, lastmod, freq, priority in entries)
    links = _read(f"<urlset {NS}>{xml}</urlset>".encode("utf-8", "surrogatepass"), max_urls)
    _check(links, max_urls)
    if links is None:
        return
    assert [entry.url for entry in links.entries] == links.urls
    for entry in links.entries:
        assert entry.lastmod is None or math.isfinite(entry.lastmod)
        assert entry.changefreq is None or entry.changefreq in CHANGEFREQS
        assert entry.priority is None or 0.0 <= entry.priority <= 1.0
