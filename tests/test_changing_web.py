"""ChangingWeb (pages that change as Poisson processes, validators, 304s, feeds, sitemaps) and
freshness_report (freshness and age from the server log), alone and through a real ReplayProxy."""

from __future__ import annotations

import http.client
import math
import statistics
import time
from email.utils import formatdate
from pathlib import Path

import lxml.etree
import lxml.html
import pytest

from focuscrawl.replay import ChangeMix, ChangingWeb, RecordedWeb, ReplayProxy, changing, freshness_report
from focuscrawl.replay.changing import page_words
from focuscrawl.replay.validators import http_date, w3c_datetime

EPOCH = 1_800_000_000.0
HTML_TYPE = [("Content-Type", "text/html; charset=utf-8")]
WORDS = ("telescope galaxy nebula orbit comet planet eclipse meteor quasar pulsar crater "
         "aurora zenith parallax spectrum").split()
WEBKB = Path(__file__).resolve().parents[2] / "shared" / "webkb"
RSS_NS = {"atom": "http://www.w3.org/2005/Atom"}
SITEMAP_NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}


def page_html(host: int, index: int) -> bytes:
    words = " ".join(WORDS[(host + index + i) % len(WORDS)] for i in range(40))
    return (f"<html><head><title>Page {index} of h{host}</title></head>"
            f"<body><h1>Page {index}</h1><p>{words}</p></body></html>").encode()


def make_records(hosts: int = 4, per_host: int = 25) -> dict:
    records = {}
    for h in range(hosts):
        for i in range(per_host):
            records[f"http://h{h}.test/p{i}.html"] = (200, HTML_TYPE, page_html(h, i))
        records[f"http://h{h}.test/logo.png"] = (200, [("Content-Type", "image/png")], b"\x89PNG")
        records[f"http://h{h}.test/gone"] = (404, HTML_TYPE, b"<html><body>gone</body></html>")
    records["http://h0.test/robots.txt"] = (200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /private\n")
    return records


def changing_web(records=None, relevant=(), clock=lambda: EPOCH, **kwargs) -> ChangingWeb:
    web = RecordedWeb.from_records(records if records is not None else make_records())
    kwargs.setdefault("epoch", EPOCH)
    return ChangingWeb(web, relevant, clock=clock, **kwargs)


ALL_HOT = ChangeMix(hot_share=1.0, never_share=0.0, hot_interval=(100.0, 100.0))
NEVER = ChangeMix(hot_share=0.0, never_share=1.0)


def hot_web(**kwargs) -> ChangingWeb:
    """Every page changes every 100 s on average."""
    return changing_web(relevant_mix=ALL_HOT, other_mix=ALL_HOT, **kwargs)


def all_pages(web: ChangingWeb) -> list[str]:
    return [page for host in web.hosts() for page in web.pages(host)]


# --- the change process ----------------------------------------------------------------------

def test_same_seed_same_web_and_another_seed_another():
    first, again, other = changing_web(seed=3), changing_web(seed=3), changing_web(seed=4)
    pages = all_pages(first)
    for page in pages:
        assert first.rate(page) == again.rate(page)
        assert [first.change_time(page, k) for k in range(4)] == [again.change_time(page, k) for k in range(4)]
        assert first.etag(page, 2) == again.etag(page, 2)
        if first.rate(page):
            assert first.body(page, 2) == again.body(page, 2)
    assert [first.rate(p) for p in pages] != [other.rate(p) for p in pages]
    assert any(first.rate(p) for p in pages) and not all(first.rate(p) for p in pages)


def test_relevant_and_other_pages_follow_their_own_mix():
    records = make_records(hosts=20, per_host=100)
    relevant = [url for url in records if int(url.split("//h")[1].split(".")[0]) < 10 and url.endswith(".html")]
    web = changing_web(records, relevant,
                       relevant_mix=ChangeMix(hot_share=0.5, never_share=0.2, hot_interval=(60, 120), cold_interval=(600, 3600)),
                       other_mix=ChangeMix(hot_share=0.1, never_share=0.4, hot_interval=(60, 120), cold_interval=(600, 3600)))

    def shares(pages):
        intervals = [1 / web.rate(p) if web.rate(p) else None for p in pages]
        assert all(i is None or 60 <= i <= 120 or 600 <= i <= 3600 for i in intervals)
        hot = sum(1 for i in intervals if i is not None and i <= 120) / len(pages)
        never = sum(1 for i in intervals if i is None) / len(pages)
        return hot, never

    relevant_set = set(relevant)
    others = [p for p in all_pages(web) if p not in relevant_set]
    assert len(relevant) >= 1000 and len(others) >= 1000
    hot, never = shares(relevant)
    assert abs(hot - 0.5) < 0.06 and abs(never - 0.2) < 0.06
    hot, never = shares(others)
    assert abs(hot - 0.1) < 0.04 and abs(never - 0.4) < 0.06


def test_changes_arrive_as_a_poisson_process_of_the_pages_rate():
    """Intervals are exponential draws rounded up to whole seconds: mean 1/(1 - e^-rate) s,
    standard deviation close to the mean, counts in windows with variance close to their mean."""
    web = hot_web()
    page = all_pages(web)[0]
    assert web.rate(page) == pytest.approx(0.01)
    mean_gap = 1 / (1 - math.exp(-0.01))
    horizon = 1_000_000.0
    count = web.version(page, EPOCH + horizon)
    expected = horizon / mean_gap
    assert abs(count - expected) < 5 * math.sqrt(expected)
    gaps = [web.change_time(page, k + 1) - web.change_time(page, k) for k in range(1, count)]
    assert all(g >= 1 and g == int(g) for g in gaps)
    assert statistics.mean(gaps) == pytest.approx(mean_gap, rel=0.05)
    assert statistics.pstdev(gaps) / statistics.mean(gaps) == pytest.approx(1.0, abs=0.1)
    windows = [web.version(page, EPOCH + 1000 * (i + 1)) - web.version(page, EPOCH + 1000 * i) for i in range(1000)]
    assert statistics.pvariance(windows) / statistics.mean(windows) == pytest.approx(1.0, abs=0.2)


def test_version_and_change_time_agree_forwards_and_backwards():
    web = hot_web()
    for page in all_pages(web)[:10]:
        assert web.change_time(page, 0) < EPOCH
        assert web.version(page, EPOCH - 1) == 0 and web.version(page, EPOCH) == 0
        times = [web.change_time(page, k) for k in range(1, 30)]
        assert times == sorted(times) and all((t - EPOCH) == int(t - EPOCH) for t in times)
        for k in (29, 5, 17, 1, 30, 2):  # backwards and forwards from the cursor
            at = web.change_time(page, k)
            assert web.version(page, at) == k
            assert web.version(page, at - 0.5) == k - 1
    fresh = hot_web()  # the cursor is a shortcut only: a new web answers the same
    page = all_pages(web)[3]
    assert fresh.change_time(page, 7) == web.change_time(page, 7)


def test_a_never_changing_page_stays_version_0():
    web = changing_web(relevant_mix=NEVER, other_mix=NEVER)
    page = all_pages(web)[0]
    assert web.rate(page) == 0.0
    assert web.version(page, EPOCH + 10 ** 9) == 0
    assert web.change_time(page, 1) == math.inf
    assert web.change_time(page, 0) < EPOCH
    with pytest.raises(ValueError):
        web.body(page, 1)


def test_urls_that_are_not_changing_pages():
    web = hot_web()
    assert web.page_url("HTTP://H0.test:80/p1.html") == "http://h0.test/p1.html"
    for url in ("http://h0.test/logo.png", "http://h0.test/gone", "http://nowhere.test/", "not a url", "http://[::1/"):
        assert url not in web
        assert web.answer(url, {}, EPOCH) is None
    with pytest.raises(KeyError):
        web.rate("http://h0.test/logo.png")
    with pytest.raises(KeyError):
        web.version("http://nowhere.test/")


def test_mixes_and_constructor_reject_nonsense():
    with pytest.raises(ValueError):
        ChangeMix(hot_share=0.8, never_share=0.3)
    with pytest.raises(ValueError):
        ChangeMix(hot_interval=(0, 10))
    with pytest.raises(ValueError):
        ChangeMix(cold_interval=(100, 10))
    with pytest.raises(ValueError):
        changing_web(feed_share=1.5)


# --- versions, validators, conditional requests ----------------------------------------------------

def test_a_version_is_the_recorded_page_with_a_dated_paragraph_of_its_own_words():
    web = hot_web(feed_share=0.0)
    url = "http://h1.test/p3.html"
    recorded = page_html(1, 3)
    assert web.body(url, 0) == recorded
    bodies = [web.body(url, k) for k in (1, 2, 3)]
    assert len(set(bodies)) == 3
    for k, body in zip((1, 2, 3), bodies):
        start = body.index(b'<p class="page-update">')
        end = body.index(b"</p>", start) + len(b"</p>\n")
        assert body[:start] + body[end:] == recorded
        assert body[end:].startswith(b"</body>")
        paragraph = body[start:end].decode()
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(math.floor(web.change_time(url, k))))
        assert stamp in paragraph
        words = paragraph.split(": ", 1)[1].removesuffix(".</p>\n").split()
        assert len(words) == 12 and set(words) <= {w.decode() for w in page_words(recorded)}


def test_pages_without_body_or_head_tags_still_change():
    records = {"http://old.test/a.html": (200, HTML_TYPE, b"<TITLE>old page</TITLE>\n<H1>Old</H1> a plain old page"),
               "http://old.test/b.html": (200, HTML_TYPE, b"<HTML><BODY>text only here</BODY></HTML>")}
    web = hot_web(records=records, feed_share=1.0)
    a = web.body("http://old.test/a.html", 1)
    assert a.startswith(b'<link rel="alternate"') and b"<H1>Old</H1> a plain old page<p class=\"page-update\">" in a
    b = web.body("http://old.test/b.html", 2)
    assert b.index(b"<link rel=") < b.index(b"<BODY>") and b.endswith(b".</p>\n</BODY></HTML>")


def test_answer_carries_a_strong_etag_and_the_changes_date():
    web = hot_web()
    url = "http://h2.test/p0.html"
    t = web.change_time(url, 4) + 0.5
    status, headers, body, version = web.answer(url, {}, t)
    headers = dict(headers)
    assert (status, version) == (200, 4)
    assert headers["ETag"].startswith('"') and headers["ETag"].endswith('"') and headers["ETag"] == web.etag(url, 4)
    assert headers["Last-Modified"] == formatdate(math.floor(web.change_time(url, 4)), usegmt=True)
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert body == web.body(url, 4)
    assert web.answer(url, {}, t + 0.1)[1] == web.answer(url, {}, t)[1]
    assert web.etag(url, 5) != web.etag(url, 4) and web.etag("http://h2.test/p1.html", 4) != web.etag(url, 4)
    assert web.answer(url, {}, web.change_time(url, 5))[3] == 5


@pytest.fixture
def conditional():
    """(web, url, t, current ETag, current Last-Modified, previous ETag, previous Last-Modified)."""
    web = hot_web()
    url = "http://h3.test/p7.html"
    t = web.change_time(url, 3) + 0.25
    return web, url, t, web.etag(url, 3), http_date(web.change_time(url, 3)), web.etag(url, 2), http_date(web.change_time(url, 2))


@pytest.mark.parametrize("make_headers, status", [
    (lambda cur, lm, old, old_lm: {"if-none-match": cur}, 304),
    (lambda cur, lm, old, old_lm: {"If-None-Match": "W/" + cur}, 304),  # weak comparison
    (lambda cur, lm, old, old_lm: {"if-none-match": f'{old}, "x", {cur}'}, 304),
    (lambda cur, lm, old, old_lm: {"if-none-match": "*"}, 304),
    (lambda cur, lm, old, old_lm: {"if-none-match": old}, 200),
    (lambda cur, lm, old, old_lm: {"if-none-match": old, "if-modified-since": lm}, 200),  # If-None-Match wins
    (lambda cur, lm, old, old_lm: {"if-none-match": cur, "if-modified-since": old_lm}, 304),
    (lambda cur, lm, old, old_lm: {"if-modified-since": lm}, 304),
    (lambda cur, lm, old, old_lm: [("If-Modified-Since", "Sun, 01 Jan 2090 00:00:00 GMT")], 304),
    (lambda cur, lm, old, old_lm: {"if-modified-since": old_lm}, 200),
    (lambda cur, lm, old, old_lm: {"if-modified-since": "yesterday"}, 200),
    (lambda cur, lm, old, old_lm: {"if-none-match": 'garbage ,,, "'}, 200),
    (lambda cur, lm, old, old_lm: [("If-None-Match", None), (3, 4)], 200),
    (lambda cur, lm, old, old_lm: None, 200),
])
def test_conditional_requests(conditional, make_headers, status):
    web, url, t, current, last_modified, previous, previous_lm = conditional
    got, headers, body, version = web.answer(url, make_headers(current, last_modified, previous, previous_lm), t)
    assert (got, version) == (status, 3)
    headers = dict(headers)
    assert headers["ETag"] == current and headers["Last-Modified"] == last_modified
    assert (body == b"") == (status == 304)


def test_if_modified_since_a_second_before_the_change_is_modified(conditional):
    web, url, t, *_ = conditional
    just_before = formatdate(math.floor(web.change_time(url, 3)) - 1, usegmt=True)
    assert web.answer(url, {"if-modified-since": just_before}, t)[0] == 200


def test_conditions_apply_to_get_and_head_only(conditional):
    web, url, t, current, *_ = conditional
    assert web.answer(url, {"if-none-match": current}, t, method="HEAD")[0] == 304
    assert web.answer(url, {"if-none-match": current}, t, method="POST")[0] == 200


# --- feeds, sitemaps, robots.txt ---------------------------------------------------------------

def expected_changes(web: ChangingWeb, host: str, t: float, limit: int):
    every = [(web.change_time(p, k), p, k) for p in web.pages(host) for k in range(web.version(p, t) + 1)]
    return sorted(every, key=lambda c: (-c[0], c[1], c[2]))[:limit]


@pytest.mark.parametrize("since_epoch", [60, 900])  # early on, versions 0 (from before the epoch) are listed too
def test_feeds_are_rss_on_some_hosts_and_atom_on_others_and_list_the_latest_changes(since_epoch):
    web = hot_web(records=make_records(hosts=6), feed_share=1.0, feed_items=15)
    t = EPOCH + since_epoch
    kinds = {host: web.feed_kind(host) for host in web.hosts()}
    assert set(kinds.values()) == {"rss", "atom"}
    for host, kind in kinds.items():
        url = web.feed_url(host)
        assert url == f"http://{host}/feed.xml" if kind == "rss" else url == f"http://{host}/feed.atom"
        status, headers, body, version = web.answer(url, {}, t)
        assert (status, version) == (200, None)
        assert dict(headers)["Content-Type"].startswith("application/rss+xml" if kind == "rss" else "application/atom+xml")
        root = lxml.etree.fromstring(body)
        want = expected_changes(web, host, t, 15)
        if kind == "rss":
            assert root.tag == "rss" and root.get("version") == "2.0"
            items = root.findall("channel/item")
            got = [(i.findtext("link"), i.findtext("guid"), i.findtext("pubDate")) for i in items]
            assert all(i.findtext("title", "").startswith("Page ") for i in items)
        else:
            assert root.tag == "{http://www.w3.org/2005/Atom}feed" and root.findtext("atom:id", namespaces=RSS_NS) == url
            entries = root.findall("atom:entry", RSS_NS)
            got = [(e.find("atom:link", RSS_NS).get("href"), e.findtext("atom:id", namespaces=RSS_NS),
                    e.findtext("atom:updated", namespaces=RSS_NS)) for e in entries]
            assert all(e.findtext("atom:title", namespaces=RSS_NS).startswith("Page ") for e in entries)
        date = http_date if kind == "rss" else w3c_datetime
        assert got == [(p, f"{p}#version-{k}", date(when)) for when, p, k in want]


def test_feed_pages_link_their_feed_and_hosts_without_feeds_do_not():
    web = hot_web(records=make_records(hosts=6), feed_share=0.5)
    with_feed = [h for h in web.hosts() if web.feed_kind(h)]
    without = [h for h in web.hosts() if not web.feed_kind(h)]
    assert len(with_feed) == len(without) == 3
    for host in web.hosts():
        page = web.pages(host)[0]
        doc = lxml.html.fromstring(web.answer(page, {}, EPOCH + 500)[2])
        links = doc.xpath('//head/link[@rel="alternate"]')
        if host in with_feed:
            kind = web.feed_kind(host)
            assert [(l.get("type"), l.get("href")) for l in links] == [(f"application/{kind}+xml", web.feed_url(host))]
        else:
            assert links == []
            assert web.answer(f"http://{host}/feed.xml", {}, EPOCH) is None
            assert web.answer(f"http://{host}/feed.atom", {}, EPOCH) is None


def test_a_feed_answers_304_until_its_host_changes():
    web = hot_web(feed_share=1.0)
    host = web.hosts()[0]
    t = EPOCH + 300
    _, headers, _, _ = web.answer(web.feed_url(host), {}, t)
    etag = dict(headers)["ETag"]
    newest = expected_changes(web, host, t, 1)[0][0]
    assert dict(headers)["Last-Modified"] == http_date(newest)
    assert web.answer(web.feed_url(host), {"If-None-Match": etag}, t)[0] == 304
    following = min(web.change_time(p, web.version(p, t) + 1) for p in web.pages(host))
    assert web.answer(web.feed_url(host), {"If-None-Match": etag}, following)[0] == 200


def test_sitemap_lists_every_page_with_its_last_change():
    mix = ChangeMix(hot_share=0.4, never_share=0.3, hot_interval=(60, 120), cold_interval=(600, 3600))
    web = changing_web(relevant_mix=mix, other_mix=mix)
    host = "h1.test"
    t = EPOCH + 2000
    status, _, body, version = web.answer(f"http://{host}/sitemap.xml", {}, t)
    assert (status, version) == (200, None)
    root = lxml.etree.fromstring(body)
    assert root.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}urlset"
    entries = {u.findtext("s:loc", namespaces=SITEMAP_NS): u for u in root.findall("s:url", SITEMAP_NS)}
    assert set(entries) == set(web.pages(host)) and len(entries) == 25
    freqs = set()
    for page, entry in entries.items():
        assert entry.findtext("s:lastmod", namespaces=SITEMAP_NS) == w3c_datetime(web.change_time(page, web.version(page, t)))
        freq = entry.findtext("s:changefreq", namespaces=SITEMAP_NS)
        rate = web.rate(page)
        assert freq == ("never" if rate == 0 else "always" if 1 / rate <= 120 else "hourly")
        freqs.add(freq)
        assert entry.findtext("s:priority", namespaces=SITEMAP_NS) == "0.8"
    assert freqs == {"never", "always", "hourly"}
    assert web.answer("http://nowhere.test/sitemap.xml", {}, t) is None


def test_a_host_with_more_pages_than_a_sitemap_holds_gets_an_index(monkeypatch):
    monkeypatch.setattr(changing, "SITEMAP_LIMIT", 10)
    web = hot_web()
    root = lxml.etree.fromstring(web.answer("http://h0.test/sitemap.xml", {}, EPOCH)[2])
    assert root.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}sitemapindex"
    parts = [loc.text for loc in root.iterfind("s:sitemap/s:loc", SITEMAP_NS)]
    assert parts == [f"http://h0.test/sitemap-{i}.xml" for i in (1, 2, 3)]
    listed = []
    for part in parts:
        urlset = lxml.etree.fromstring(web.answer(part, {}, EPOCH)[2])
        listed += [loc.text for loc in urlset.iterfind("s:url/s:loc", SITEMAP_NS)]
    assert listed == web.pages("h0.test")
    assert web.answer("http://h0.test/sitemap-4.xml", {}, EPOCH) is None  # past the last part
    assert web.answer("http://h1.test/sitemap-0.xml", {}, EPOCH) is None


def test_robots_txt_announces_the_sitemap():
    web = hot_web()
    original = "User-agent: *\nDisallow: /private\n"
    text = web.robots_txt("h0.test", original)
    assert text.startswith(original) and text.splitlines()[-1] == "Sitemap: http://h0.test/sitemap.xml"
    assert web.robots_txt("h0.test", text) == text  # announced once
    assert web.robots_txt("h0.test", "User-agent: *") .endswith("User-agent: *\n\nSitemap: http://h0.test/sitemap.xml\n")
    made = web.robots_txt("h2.test", None)
    assert "Sitemap: http://h2.test/sitemap.xml" in made and "Disallow:\n" in made
    assert web.robots_txt("nowhere.test", original) == original
    assert web.robots_txt("nowhere.test", None) is None


# --- freshness_report ----------------------------------------------------------------------------

def rec(url, t, status=200, version=None, method="GET", t_end=None):
    record = {"t_start": t, "t_end": t if t_end is None else t_end, "method": method, "url": url, "status": status}
    if version is not None:
        record["version"] = version
    return record


def test_freshness_report_is_exact_on_a_hand_made_log():
    """Page A: fetched at the start (v0), stale from c1 until re-fetched at c1+5 (v1), a 304 at
    c2-1 confirms v1, stale from c2 to the end. Page B never changes, fetched half-way. Page C is
    only asked about (never fetched): not tracked."""
    hot = [url for url in make_records() if url.startswith("http://h0.test/p")]
    web = changing_web(relevant=hot, relevant_mix=ALL_HOT, other_mix=NEVER)
    a = next(p for p in hot if web.change_time(p, 1) > EPOCH + 5 and web.change_time(p, 2) - web.change_time(p, 1) > 6)
    b, c = "http://h1.test/p2.html", "http://h2.test/p3.html"
    c1, c2, c3 = (web.change_time(a, k) for k in (1, 2, 3))
    assert web.rate(b) == 0
    start, end = EPOCH, c3 + 0.5
    log = [
        rec(a, c1 + 5, version=1),  # out of order on purpose: the report sorts by time
        rec(a, EPOCH, version=0),
        rec(a, c2 - 1, status=304, version=1),
        rec(b, (start + end) / 2, status=304, version=0),  # a 304 before any 200: no copy yet
        rec("http://H1.TEST/p2.html", (start + end) / 2 + 1, version=0),  # another spelling
        rec(b, end - 1, method="HEAD", version=0),  # HEAD 200: no copy, a request
        rec("http://h0.test/feed.xml", c1, version=None),
        rec("http://h0.test/logo.png", c1),
        rec(c, c1, status=404),
    ]
    report = freshness_report(log, web, [a, b, c, "http://h0.test/logo.png"], start, end)

    a_tracked = end - EPOCH
    a_fresh = (c1 - EPOCH) + (c2 - (c1 + 5))
    a_age = 5 ** 2 / 2 + (end - c2) ** 2 / 2
    b_tracked = end - ((start + end) / 2 + 1)
    pages = report["per_page"]
    assert pages[a]["freshness"] == pytest.approx(a_fresh / a_tracked)
    assert pages[a]["age"] == pytest.approx(a_age / a_tracked)
    assert pages[a]["changes"] == 3
    assert pages[b] == pytest.approx({"tracked_seconds": b_tracked, "freshness": 1.0, "age": 0.0, "fetches": 1,
                                      "not_modified": 1, "requests": 3, "changes": 0})
    assert c not in pages
    assert report["pages"] == 2 and report["pages_asked"] == 3
    assert report["tracked_seconds"] == pytest.approx(a_tracked + b_tracked)
    assert report["freshness"] == pytest.approx((a_fresh + b_tracked) / (a_tracked + b_tracked))
    assert report["age"] == pytest.approx(a_age / (a_tracked + b_tracked))
    assert (report["requests"], report["fetches"], report["not_modified"]) == (7, 3, 2)
    assert report["not_modified_share"] == pytest.approx(2 / 7)


def test_freshness_report_window_starts_with_the_copy_held_then():
    web = hot_web()
    a = next(p for p in all_pages(web) if web.change_time(p, 1) > EPOCH + 10)
    c1, c2 = web.change_time(a, 1), web.change_time(a, 2)
    log = [rec(a, EPOCH, version=0)]  # before the window: sets the copy, counts no request
    report = freshness_report(log, web, [a], c1 - 10, c2)
    assert report["freshness"] == pytest.approx(10 / (c2 - c1 + 10))
    assert report["age"] == pytest.approx((c2 - c1) ** 2 / 2 / (c2 - c1 + 10))
    assert report["requests"] == 0 and report["not_modified_share"] == 0.0
    empty = freshness_report([], web, [a], EPOCH, EPOCH + 10)
    assert (empty["pages"], empty["freshness"], empty["age"]) == (0, None, None)
    with pytest.raises(ValueError):
        freshness_report([], web, [a], EPOCH, EPOCH)


def test_freshness_report_takes_the_version_from_the_web_when_the_log_has_none():
    """A copy of version 2 taken one second after change 2 and held until half a second after
    change 3: fresh for all but the last half second."""
    web = hot_web()
    a = next(p for p in all_pages(web) if web.change_time(p, 3) - web.change_time(p, 2) > 2)
    c2, c3 = web.change_time(a, 2), web.change_time(a, 3)
    log = [{"t_start": c2 + 1, "t_end": None, "method": "GET", "url": a, "status": 200}, {"junk": 1}, "not a record"]
    report = freshness_report(log, web, [a], c2, c3 + 0.5)
    assert report["tracked_seconds"] == pytest.approx(c3 - c2 - 0.5)
    assert report["freshness"] == pytest.approx((c3 - c2 - 1) / (c3 - c2 - 0.5))
    assert report["age"] == pytest.approx(0.5 ** 2 / 2 / (c3 - c2 - 0.5))


def test_freshness_report_matches_sampling():
    """The exact integrals against freshness and age sampled every second on a random log."""
    import random

    web = changing_web(other_mix=ChangeMix(hot_share=0.5, never_share=0.2, hot_interval=(30, 60), cold_interval=(200, 400)))
    rng = random.Random(7)
    pages = all_pages(web)[:12]
    start, end = EPOCH + 50, EPOCH + 1550
    log = []
    for page in pages:
        for t in sorted(rng.uniform(EPOCH, end) for _ in range(rng.randint(1, 6))):
            v = web.version(page, t)
            if log and log[-1]["url"] == page and log[-1]["version"] == v and rng.random() < 0.5:
                log.append(rec(page, t, status=304, version=v))
            else:
                log.append(rec(page, t, version=v))
    report = freshness_report(log, web, pages, start, end)
    fresh = age = seconds = 0.0
    for page in pages:
        copies = sorted((r["t_end"], r["version"]) for r in log if r["url"] == page)
        for step in range(int(start), int(end)):
            t = step + 0.5
            held = [v for when, v in copies if when <= t]
            if not held:
                continue
            seconds += 1
            if held[-1] == web.version(page, t):
                fresh += 1
            else:
                age += t - web.change_time(page, held[-1] + 1)
    assert report["tracked_seconds"] == pytest.approx(seconds, abs=len(pages))
    assert report["freshness"] == pytest.approx(fresh / seconds, abs=0.01)
    assert report["age"] == pytest.approx(age / seconds, rel=0.01, abs=0.5)
    assert 0 < report["freshness"] < 1


# --- through a real ReplayProxy -----------------------------------------------------------------

@pytest.fixture
def live():
    """A proxy over a web that started an hour ago, its pages changing every ten minutes; one
    page at version >= 1 that will not change in the next two minutes."""
    now = time.time()
    mix = ChangeMix(hot_share=1.0, never_share=0.0, hot_interval=(600, 600))
    records = make_records(hosts=2)
    web = RecordedWeb.from_records(records)
    changes = ChangingWeb(web, seed=5, epoch=now - 3600, relevant_mix=mix, other_mix=mix, feed_share=1.0)
    stable = next(p for p in all_pages(changes)
                  if changes.version(p, now) >= 1 and changes.change_time(p, changes.version(p, now) + 1) > now + 120)
    with ReplayProxy(web, robots={"h1.test": "User-agent: *\nDisallow: /x\n"}, changes=changes) as proxy:
        yield proxy, changes, stable


def request(proxy, method, url, headers=None, conn=None):
    own = conn is None
    conn = conn or http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request(method, url, headers=headers or {})
    resp = conn.getresponse()
    answer = resp.status, resp.headers, resp.read()
    if own:
        conn.close()
    return answer


def test_a_conditional_get_through_the_proxy_gets_304_and_the_log_has_versions(live):
    proxy, changes, page = live
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    status, headers, body = request(proxy, "GET", page, conn=conn)
    version = changes.version(page)
    assert status == 200 and headers["ETag"] == changes.etag(page, version)
    assert b'class="page-update"' in body and headers["Content-Length"] == str(len(body))
    status, headers304, body = request(proxy, "GET", page, {"If-None-Match": headers["ETag"]}, conn=conn)
    assert (status, body) == (304, b"") and headers304["ETag"] == headers["ETag"]
    assert headers304["Content-Length"] is None
    status, _, _ = request(proxy, "GET", page, {"If-Modified-Since": headers["Last-Modified"]}, conn=conn)
    assert status == 304
    assert request(proxy, "GET", page, conn=conn)[0] == 200  # the connection is still in step after 304s
    conn.close()
    assert proxy.wait_idle(timeout=10)
    log = proxy.log
    assert [(r["status"], r["version"]) for r in log] == [(200, version), (304, version), (304, version), (200, version)]
    report = freshness_report(log, changes, [page], log[0]["t_start"], time.time() + 1)
    assert report["freshness"] == 1.0 and report["not_modified"] == 2 and report["fetches"] == 2


def test_the_proxy_serves_feeds_sitemaps_and_robots_with_sitemap_lines(live):
    proxy, changes, _ = live
    for host in changes.hosts():
        status, headers, body = request(proxy, "GET", changes.feed_url(host))
        assert status == 200 and headers["Content-Type"].startswith(f"application/{changes.feed_kind(host)}+xml")
        lxml.etree.fromstring(body)
        status, headers, body = request(proxy, "GET", f"http://{host}/sitemap.xml")
        assert status == 200 and len(lxml.etree.fromstring(body)) == 25
    recorded = request(proxy, "GET", "http://h0.test/robots.txt")[2].decode()
    assert recorded == "User-agent: *\nDisallow: /private\n\nSitemap: http://h0.test/sitemap.xml\n"
    mapped = request(proxy, "GET", "http://h1.test/robots.txt")[2].decode()
    assert mapped.startswith("User-agent: *\nDisallow: /x\n") and mapped.endswith("Sitemap: http://h1.test/sitemap.xml\n")
    assert request(proxy, "GET", "http://other.test/robots.txt")[0] == 404
    assert request(proxy, "GET", "http://h0.test/logo.png")[2] == b"\x89PNG"
    assert request(proxy, "GET", "http://h0.test/nothing")[0] == 404
    assert proxy.wait_idle(timeout=10)
    assert all("version" not in r for r in proxy.log)


def test_odd_conditional_headers_never_break_the_proxy(live):
    proxy, changes, page = live
    for headers in ({"If-Modified-Since": "the day before yesterday"}, {"If-None-Match": '",,W/"'},
                    {"If-Modified-Since": "Mon, 99 Foo 99999 99:99:99 GMT"}, {"If-None-Match": ""}):
        status, _, body = request(proxy, "GET", page, headers)
        assert status == 200 and body
    assert request(proxy, "HEAD", page, {"If-None-Match": changes.etag(page, changes.version(page))})[0] == 304


# --- the webs focuscrawl measures on ---------------------------------------------------------------

def test_over_the_demo_web_every_labelled_page_changes_and_keeps_its_topic():
    from focuscrawl.demo import generate_web

    demo = generate_web(seed=0)
    relevant = demo.relevant_urls() - set(demo.documents)  # the HTML pages: a PDF is served as it is
    changes = ChangingWeb(RecordedWeb.from_records(demo.records), relevant, seed=1, epoch=EPOCH)
    assert all(url in changes for url in demo.labels if url not in demo.documents)
    assert all(changes.is_relevant(url) for url in relevant)
    hot = sum(1 for url in relevant if 0 < 1 / max(changes.rate(url), 1e-9) <= 120) / len(relevant)
    assert 0.1 < hot < 0.3
    for url in sorted(relevant)[:20]:
        k = changes.version(url, EPOCH + 3600)
        status, _, body, version = changes.answer(url, {}, EPOCH + 3600)
        assert (status, version) == (200, k)
        if k:
            update = body[body.index(b'class="page-update"'):]
            update = update[update.index(b": ") + 2:update.index(b".</p>")]
            assert set(update.split()) <= set(page_words(demo.records[url][2]))


@pytest.mark.webkb
def test_over_webkb_pages_without_closing_tags_still_change():
    if not (WEBKB / "webkb.warc.gz").is_file():
        pytest.skip("../shared/webkb is absent")
    web = RecordedWeb.from_warcs([WEBKB / "webkb.warc.gz"])
    courses = [line.split("\t")[0] for line in (WEBKB / "labels.tsv").read_text().splitlines()[1:]
               if line.split("\t")[1] == "course"]
    changes = ChangingWeb(web, courses, epoch=EPOCH, relevant_mix=ChangeMix(never_share=0.0))
    assert len(changes.hosts()) > 4 and sum(len(changes.pages(h)) for h in changes.hosts()) > 8000
    unclosed = 0
    for url in courses[:300]:
        page = changes.page_url(url)
        assert page is not None
        recorded = web.lookup(page).body
        unclosed += b"</body" not in recorded.lower()
        body = changes.body(page, 1)
        assert b'class="page-update"' in body and len(body) > len(recorded)
    assert unclosed > 10
    for host in ("www.cs.wisc.edu", "www.cs.cornell.edu"):
        lxml.etree.fromstring(changes.answer(f"http://{host}/sitemap.xml", {}, EPOCH + 60)[2])
