"""RSS and Atom feeds (focuscrawl/parsing/feeds.py): entries with absolute links, titles, summary
text and UTC dates from RSS 2.0, RSS 1.0 (RDF) and Atom; broken feeds recovered; anything that is
no feed a FeedError and never another exception; nothing fetched, read from disk or expanded
(XXE, billion laughs); bounded size and time; recognising a feed from its type and first bytes."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from focuscrawl.parsing import Feed, FeedError, looks_like_feed, read_feed
from focuscrawl.parsing.feeds import MAX_FEED_BYTES, MAX_SUMMARY_CHARS, MAX_TITLE_CHARS
from tests.fuzzing import any_url, requestable, trap_server, within

FEED_URL = "http://lab.test/feeds/news.xml"
MAX_ENTRIES = 100
MAX_BYTES = 1024 * 1024


def utc(*args) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def _read(body: bytes, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> Feed | None:
    try:
        return read_feed(body, FEED_URL, max_entries, max_bytes)
    except FeedError:
        return None


def _check(feed: Feed | None, max_entries: int = MAX_ENTRIES) -> None:
    """What the spider relies on in any Feed read_feed gives."""
    if feed is None:
        return
    assert isinstance(feed.version, str) and isinstance(feed.title, str)
    assert len(feed.title) <= MAX_TITLE_CHARS
    assert feed.updated is None or isinstance(feed.updated, float)
    assert len(feed.entries) <= max_entries
    assert len({entry.url for entry in feed.entries}) == len(feed.entries)
    for entry in feed.entries:
        assert requestable(entry.url), entry.url  # the spider makes a Request of each
        assert "#" not in entry.url
        assert len(entry.title) <= MAX_TITLE_CHARS and len(entry.summary) <= MAX_SUMMARY_CHARS
        assert entry.updated is None or isinstance(entry.updated, float)


# --- the three dialects ---------------------------------------------------------------------

RSS20 = b"""<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0">
<channel>
  <title>Lab News</title>
  <link>http://lab.test/</link>
  <description>What the lab does</description>
  <lastBuildDate>Tue, 10 Jun 2025 09:41:01 GMT</lastBuildDate>
  <item>
    <title>A new paper on focused crawling</title>
    <link>http://lab.test/news/paper.html#top</link>
    <description>&lt;p&gt;We &lt;b&gt;published&lt;/b&gt; a paper&amp;nbsp;on crawling.&lt;/p&gt;&lt;script&gt;var x = 1;&lt;/script&gt;</description>
    <pubDate>Mon, 09 Jun 2025 14:00:00 +0200</pubDate>
    <guid>http://lab.test/news/paper.html</guid>
  </item>
  <item>
    <title>Relative to the site</title>
    <link>/news/seminar.html</link>
  </item>
  <item>
    <title>Relative to the feed</title>
    <link>item.html</link>
  </item>
  <item>
    <title>Only a permalink guid</title>
    <guid isPermaLink="true">http://lab.test/news/guid.html</guid>
  </item>
  <item>
    <title>A guid that is no link, and no link</title>
    <guid isPermaLink="false">tag:lab.test,2025:42</guid>
  </item>
  <item>
    <title>A script link</title>
    <link>javascript:alert(1)</link>
  </item>
  <item>
    <title>The paper again</title>
    <link>http://lab.test/news/paper.html</link>
  </item>
</channel>
</rss>"""

RSS10 = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
         xmlns="http://purl.org/rss/1.0/" xmlns:dc="http://purl.org/dc/elements/1.1/">
  <channel rdf:about="http://lab.test/">
    <title>Lab RDF</title>
    <link>http://lab.test/</link>
    <description>RSS 1.0 of the lab</description>
    <dc:date>2025-06-10T09:00:00+02:00</dc:date>
    <items><rdf:Seq>
      <rdf:li rdf:resource="http://lab.test/a"/><rdf:li rdf:resource="http://lab.test/b"/>
    </rdf:Seq></items>
  </channel>
  <item rdf:about="http://lab.test/a">
    <title>Alpha</title>
    <link>http://lab.test/a</link>
    <description>The first letter.</description>
    <dc:date>2025-06-08T10:00:00Z</dc:date>
  </item>
  <item rdf:about="http://lab.test/b">
    <title>Beta</title>
    <link>http://lab.test/b</link>
  </item>
</rdf:RDF>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="http://lab.test/blog/">
  <title type="html">Lab &lt;b&gt;Blog&lt;/b&gt;</title>
  <updated>2025-06-10T18:30:02Z</updated>
  <id>urn:uuid:60a76c80-d399-11d9-b91C-0003939e0af6</id>
  <entry>
    <title>Updated after it was published</title>
    <link rel="edit" href="http://lab.test/edit/1"/>
    <link rel="alternate" type="text/html" href="entries/1"/>
    <id>urn:uuid:1225c695-cfb8-4ebb-aaaa-80da344efa6a</id>
    <published>2025-06-01T00:00:00Z</published>
    <updated>2025-06-10T18:30:02+01:00</updated>
    <summary>A short summary.</summary>
  </entry>
  <entry>
    <title>Content, no summary</title>
    <link href="http://lab.test/blog/entries/2"/>
    <id>urn:uuid:2</id>
    <published>2025-06-02T12:00:00-05:00</published>
    <content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>Content <em>words</em> here.</p></div></content>
  </entry>
  <entry>
    <title>Unreadable date</title>
    <link href="/entries/3"/>
    <id>urn:uuid:3</id>
    <updated>the day before yesterday</updated>
  </entry>
</feed>"""


def test_rss20_gives_entries_with_absolute_links_text_and_dates():
    feed = read_feed(RSS20, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    _check(feed)
    assert feed.version == "rss20"
    assert feed.title == "Lab News"
    assert feed.updated == utc(2025, 6, 10, 9, 41, 1)
    assert [entry.url for entry in feed.entries] == [
        "http://lab.test/news/paper.html",  # fragment removed; the same link later is not repeated
        "http://lab.test/news/seminar.html",
        "http://lab.test/feeds/item.html",  # relative to the feed's URL
        "http://lab.test/news/guid.html",
    ]
    paper = feed.entries[0]
    assert paper.title == "A new paper on focused crawling"
    assert paper.summary == "We published a paper on crawling."  # tags, script and &nbsp; gone
    assert paper.updated == utc(2025, 6, 9, 12, 0, 0)  # +0200 read as UTC


def test_rss10_rdf_gives_entries_and_dublin_core_dates():
    feed = read_feed(RSS10, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    _check(feed)
    assert feed.version == "rss10"
    assert feed.title == "Lab RDF"
    assert feed.updated == utc(2025, 6, 10, 7, 0, 0)
    assert [(entry.url, entry.title, entry.summary) for entry in feed.entries] == [
        ("http://lab.test/a", "Alpha", "The first letter."), ("http://lab.test/b", "Beta", "")]
    assert feed.entries[0].updated == utc(2025, 6, 8, 10, 0, 0)
    assert feed.entries[1].updated is None


def test_atom_gives_alternate_links_against_xml_base_and_updated_before_published():
    feed = read_feed(ATOM, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    _check(feed)
    assert feed.version == "atom10"
    assert feed.title == "Lab Blog"
    assert feed.updated == utc(2025, 6, 10, 18, 30, 2)
    first, second, third = feed.entries
    assert first.url == "http://lab.test/blog/entries/1"  # the alternate link, not the edit link
    assert first.updated == utc(2025, 6, 10, 17, 30, 2)  # updated wins over published
    assert first.summary == "A short summary."
    assert second.url == "http://lab.test/blog/entries/2"
    assert second.updated == utc(2025, 6, 2, 17, 0, 0)  # published, when never updated
    assert second.summary == "Content words here."  # the content, when there is no summary
    assert third.url == "http://lab.test/entries/3"
    assert third.updated is None


def test_rss_091_and_092_are_read():
    for version in (b"0.91", b"0.92"):
        body = (b'<?xml version="1.0"?><rss version="' + version + b'"><channel><title>Old</title>'
                b"<item><title>One</title><link>http://lab.test/1</link></item></channel></rss>")
        feed = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)
        assert feed.version.startswith("rss09") and [e.url for e in feed.entries] == ["http://lab.test/1"]


def test_a_feed_with_no_entries_is_an_empty_feed_not_an_error():
    body = b'<?xml version="1.0"?><rss version="2.0"><channel><title>Quiet</title></channel></rss>'
    feed = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    assert feed.version == "rss20" and feed.title == "Quiet" and feed.entries == []
    assert feed.updated is None


def test_long_titles_and_summaries_are_cut_at_a_word():
    words = " ".join(f"word{i}" for i in range(2_000))
    body = (f'<rss version="2.0"><channel><item><title>{words}</title><link>http://lab.test/1</link>'
            f"<description>{words}</description></item></channel></rss>").encode()
    entry = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES).entries[0]
    assert 0 < len(entry.title) <= MAX_TITLE_CHARS and 0 < len(entry.summary) <= MAX_SUMMARY_CHARS
    assert entry.summary.split()[-1] in words.split()  # no word cut in half


# --- broken feeds and what is no feed ------------------------------------------------------------

def test_broken_xml_is_recovered():
    """A bare ``&``, an unclosed ``<br>`` and a feed torn in the middle of an item: the expat
    parse fails and feedparser's loose parse reads what is there."""
    body = (b'<?xml version="1.0" encoding="utf-8"?><rss version="2.0"><channel><title>Fish & chips</title>'
            b"<item><title>One & two</title><link>http://lab.test/1</link>"
            b"<description>Text <br> more</description><pubDate>Mon, 09 Jun 2025 14:00:00 GMT</pubDate></item>"
            b"<item><title>Two</title><link>http://lab.test/2</link></item>"
            b"<item><title>Torn</title><link>http://lab.te")
    feed = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    _check(feed)
    assert feed.version == "rss20"
    assert [entry.url for entry in feed.entries][:2] == ["http://lab.test/1", "http://lab.test/2"]
    assert feed.entries[0].title == "One & two"
    assert feed.entries[0].updated == utc(2025, 6, 9, 14, 0, 0)


def test_a_feed_in_another_charset_is_decoded():
    body = ('<?xml version="1.0" encoding="windows-1251"?><rss version="2.0"><channel>'
            "<item><title>Новости лаборатории</title><link>http://lab.test/ru</link></item>"
            "</channel></rss>").encode("windows-1251")
    assert read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES).entries[0].title == "Новости лаборатории"


def test_utf8_with_no_declaration_is_read_as_utf8():
    body = ('<rss version="2.0"><channel><item><title>Café été</title><link>http://lab.test/fr</link>'
            "</item></channel></rss>").encode()
    assert read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES).entries[0].title == "Café été"


@pytest.mark.parametrize("body", [
    b"",
    b"   \n",
    b"<!DOCTYPE html><html><head><title>A page</title></head><body><p>Not a feed</p></body></html>",
    (b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
     b"<url><loc>http://lab.test/</loc></url></urlset>"),
    b'{"version": "https://jsonfeed.org/version/1.1", "items": []}',
    bytes(range(256)),
    b"\x1f\x8b\x08\x00garbage",
])
def test_a_body_that_is_no_feed_is_a_feed_error(body):
    with pytest.raises(FeedError):
        read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)


def test_a_feed_error_is_a_value_error():
    assert issubclass(FeedError, ValueError)


# --- caps ---------------------------------------------------------------------------------

def _big_feed(entries: int) -> bytes:
    items = "".join(f"<item><title>Entry {i}</title><link>http://lab.test/{i}</link>"
                    f"<description>Words of entry {i} about crawling the web.</description>"
                    f"<pubDate>Mon, 09 Jun 2025 14:00:00 GMT</pubDate></item>" for i in range(entries))
    return f'<?xml version="1.0"?><rss version="2.0"><channel><title>Big</title>{items}</channel></rss>'.encode()


def test_max_entries_caps_the_entries_kept():
    feed = read_feed(_big_feed(50), FEED_URL, 7, MAX_BYTES)
    assert [entry.url for entry in feed.entries] == [f"http://lab.test/{i}" for i in range(7)]


def test_a_body_past_max_bytes_is_read_up_to_the_cap():
    """The first entries (the newest, in nearly every feed) of a body cut at the cap."""
    body = _big_feed(100_000)
    assert len(body) > 10 * 1024 * 1024
    with within(10, "a 10 MB feed cut at 100 KB"):
        feed = read_feed(body, FEED_URL, MAX_ENTRIES, 100_000)
    _check(feed)
    assert 100 <= len(feed.entries) <= MAX_ENTRIES
    assert feed.entries[0].url == "http://lab.test/0"


@pytest.mark.parametrize("max_bytes", [0, 1 << 40])
def test_no_limit_or_a_huge_limit_means_the_default_cap(max_bytes):
    """DOWNLOAD_MAXSIZE 0 is Scrapy's "no limit", and its default is 1 GiB: neither may make
    feedparser read gigabytes."""
    body = _big_feed(100_000)
    with within(30, "a 10 MB feed at the default cap"):
        feed = read_feed(body, FEED_URL, 10**6, max_bytes)
    assert len(body) > 4 * MAX_FEED_BYTES
    assert 0 < body.find(f"<link>{feed.entries[-1].url}</link>".encode()) < MAX_FEED_BYTES


@pytest.mark.parametrize("torn", [False, True])
def test_a_feed_at_the_cap_is_read_in_bounded_time(torn):
    """Whole, feedparser's expat parse reads it; torn by the cap, its loose parse (slower)."""
    body = _big_feed(MAX_FEED_BYTES // 200)
    if torn:
        body = body[:len(body) - 100]
    assert MAX_FEED_BYTES // 2 < len(body) <= MAX_FEED_BYTES
    with within(10, f"a {len(body):,} byte feed"):
        feed = read_feed(body, FEED_URL, 10_000, MAX_FEED_BYTES)
    assert len(feed.entries) >= MAX_FEED_BYTES // 200 - 1


# --- nothing fetched, read or expanded ------------------------------------------------------------

def test_a_body_naming_a_file_is_not_read_from_disk(tmp_path):
    """feedparser tries bytes as a file name first: read_feed never gives it bytes."""
    path = tmp_path / "local.xml"
    path.write_bytes(RSS20)
    with pytest.raises(FeedError):
        read_feed(str(path).encode(), FEED_URL, MAX_ENTRIES, MAX_BYTES)


def test_billion_laughs_is_never_expanded():
    """On one line (feedparser's own DOCTYPE clean-up reads line starts only, so expat sees the
    declarations and stops the expansion) and one declaration a line (feedparser drops them)."""
    declarations = ['<!ENTITY lol0 "lol">'] + [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    for separator in ("", "\n"):
        body = (f'<?xml version="1.0"?><!DOCTYPE rss [{separator.join(declarations)}]>'
                f'<rss version="2.0"><channel><title>&lol9;</title>'
                f"<item><title>&lol9;</title><link>http://lab.test/&lol9;</link><description>&lol9;</description>"
                f"</item><item><title>ok</title><link>http://lab.test/ok</link></item></channel></rss>").encode()
        for encoded in (body, body.decode().encode("utf-16")):
            with within(2, "a billion laughs"):
                feed = _read(encoded)
            _check(feed)
            if feed is not None:
                assert len(feed.title) < 100
                assert all(len(e.url) < 200 and len(e.title) < 100 and len(e.summary) < 100 for e in feed.entries)


def test_quadratic_blowup_is_never_expanded():
    """One entity of 100 KB referenced 10,000 times: a GB if expanded."""
    body = (f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY big "{"x" * 100_000}">]>'
            f'<rss version="2.0"><channel><item><title>{"&big;" * 10_000}</title>'
            f"<link>http://lab.test/1</link></item></channel></rss>").encode()
    with within(5, "a quadratic blowup"):
        _check(_read(body))


def test_external_entities_are_never_read(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET")
    dtd = tmp_path / "evil.dtd"
    dtd.write_text('<!ENTITY fromdtd "TOPSECRET">')
    body = (f'<?xml version="1.0"?><!DOCTYPE rss SYSTEM "{dtd.as_uri()}" '
            f'[<!ENTITY xxe SYSTEM "{secret.as_uri()}">]>'
            f'<rss version="2.0"><channel><title>&xxe;</title>'
            f"<item><title>&xxe;&fromdtd;</title><link>http://lab.test/&xxe;</link><description>&fromdtd;"
            f"</description></item><item><title>ok</title><link>http://lab.test/ok</link></item></channel></rss>").encode()
    feed = _read(body)
    _check(feed)
    assert feed is not None and "http://lab.test/ok" in [entry.url for entry in feed.entries]
    assert "TOPSECRET" not in repr(feed)


def test_nothing_is_fetched_over_the_network():
    """Neither an external DTD, an external entity, a parameter entity, nor a body that is a URL."""
    with trap_server({"/feed.xml": RSS20, "": b'<!ENTITY fromdtd "TOPSECRET">'}) as (base, hits):
        body = (f'<?xml version="1.0"?><!DOCTYPE rss SYSTEM "{base}/evil.dtd" '
                f'[<!ENTITY xxe SYSTEM "{base}/secret"> <!ENTITY % pe SYSTEM "{base}/pe.dtd"> %pe;]>'
                f'<rss version="2.0"><channel><item><title>&xxe;&fromdtd;</title>'
                f"<link>http://lab.test/1</link></item></channel></rss>").encode()
        feed = _read(body)
        _check(feed)
        assert "TOPSECRET" not in repr(feed)
        with pytest.raises(FeedError):
            read_feed(f"{base}/feed.xml".encode(), FEED_URL, MAX_ENTRIES, MAX_BYTES)
    assert hits == []


# --- feedparser's slow spots get short input -------------------------------------------------------

@pytest.mark.parametrize("element", ["author", "dc:creator", "managingEditor", "webMaster", "itunes:author",
                                     "dc:publisher", "itunes:owner", "AUTHOR"])
@pytest.mark.parametrize("text", ["a" * 200_000, "a@" + "a." * 100_000, "<![CDATA[" + "a." * 100_000 + "]]>",
                                  "<![CDATA[" + "a" * 200_000])
def test_a_huge_author_costs_nothing(element, text):
    """feedparser searches an author's text for an e-mail address in quadratic time
    (kurtmckee/feedparser#562): 200 KB would take minutes."""
    body = ('<?xml version="1.0"?><rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" '
            'xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel>'
            f"<item><title>One</title><link>http://lab.test/1</link><{element}>{text}</{element}></item>"
            "<item><title>Two</title><link>http://lab.test/2</link></item></channel></rss>").encode()
    with within(3, f"a {len(text):,} character {element}"):
        feed = _read(body, max_bytes=MAX_FEED_BYTES)
    _check(feed)
    assert feed is not None and feed.entries[0].url == "http://lab.test/1"


@pytest.mark.parametrize("body", [
    b"<?" + b"encoding='" * 20_000,  # feedparser's encoding search: cubic in the first line
    b"<?xml version='1.0' " + b"encoding='x' " * 15_000 + b"?><rss version='2.0'></rss>",
    b"<?" + b"'" * 200_000,
    b"<!--" + b"\n<!ENTITY x " * 20_000 + b"--><rss version='2.0'><channel></channel></rss>",  # its DOCTYPE clean-up
    b"<!DOCTYPE rss [" + b"\n<!ENTITY x 'y'" * 20_000 + b"]><rss version='2.0'><channel></channel></rss>",
    b"<rss version='2.0'><channel><item><link>http://lab.test/1</link><pubDate>" + b"Mon, 0" * 30_000
    + b"</pubDate></item></channel></rss>",
])
def test_hostile_prologs_and_dates_cost_little(body):
    with within(3, f"{body[:30]!r}..."):
        _check(_read(body, max_bytes=MAX_FEED_BYTES))


def test_junk_before_the_feed_is_stepped_over():
    """A PHP warning printed before the feed, then its XML declaration."""
    body = (b"<br />\n<b>Warning</b>: Cannot modify header information in <b>/var/www/feed.php</b>\n"
            b'<?xml version="1.0" encoding="UTF-8"?><rss version="2.0"><channel><title>T</title>'
            b"<item><title>One</title><link>http://lab.test/1</link></item></channel></rss>")
    feed = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    assert [entry.url for entry in feed.entries] == ["http://lab.test/1"]


def test_a_utf16_feed_with_a_byte_order_mark_is_read():
    body = ('<?xml version="1.0" encoding="utf-16"?><rss version="2.0"><channel>'
            "<item><title>Über</title><link>http://lab.test/u</link></item></channel></rss>").encode("utf-16")
    assert read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES).entries[0].title == "Über"


def test_a_utf16_feed_without_a_byte_order_mark_is_read():
    body = ('<?xml version="1.0" encoding="utf-16"?><rss version="2.0"><channel>'
            "<item><title>Über</title><link>http://lab.test/u</link></item></channel></rss>").encode("utf-16-be")
    assert read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES).entries[0].title == "Über"


def test_html_entities_of_an_rss091_feed_are_read():
    """Its DOCTYPE (Netscape's DTD, which declared them) is removed: the loose parse knows them."""
    body = (b'<?xml version="1.0" encoding="ISO-8859-1"?>\n<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD'
            b' RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">\n<rss version="0.91"><channel>'
            b"<title>Caf\xe9&nbsp;news</title><item><title>Fish&nbsp;&amp;&nbsp;chips &eacute;t&eacute;</title>"
            b"<link>http://lab.test/f</link></item></channel></rss>")
    feed = read_feed(body, FEED_URL, MAX_ENTRIES, MAX_BYTES)
    assert feed.title == "Café news"
    assert feed.entries[0].title == "Fish & chips été"


# --- fuzzing --------------------------------------------------------------------------------

_text = st.one_of(st.text(max_size=40), st.sampled_from(["&amp;", "&", "<", "<![CDATA[x]]>", "&lol;", "&#0;",
                                                         "&#xD800;", "<b>bold", "</channel>", "]]>"]))
_date = st.one_of(st.text(max_size=30), st.sampled_from([
    "Mon, 09 Jun 2025 14:00:00 +0200", "2025-06-10T18:30:02Z", "Mon, 31 Feb 2025 25:61:61 +9999",
    "0000-00-00", "9999-12-31T23:59:59-23:59", "Tue, 10 Jun 99999 09:41:01 GMT", "-1", ""]))


@st.composite
def feeds(draw) -> bytes:
    """An RSS 2.0, RSS 1.0 or Atom feed whose entries hold anything, now and then torn."""
    kind = draw(st.sampled_from(["rss", "rdf", "atom"]))
    entries = []
    for link, title, date in draw(st.lists(st.tuples(any_url, _text, _date), max_size=15)):
        if kind == "atom":
            entries.append(f'<entry><title>{title}</title><link href="{link}"/><updated>{date}</updated>'
                           f"<summary type='html'>{title}</summary></entry>")
        else:
            entries.append(f"<item><title>{title}</title><link>{link}</link><pubDate>{date}</pubDate>"
                           f"<description>{title}</description></item>")
    body = "".join(entries)
    xml = {
        "rss": f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{body}</channel></rss>',
        "rdf": ('<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" '
                f'xmlns="http://purl.org/rss/1.0/"><channel><title>t</title></channel>{body}</rdf:RDF>'),
        "atom": f'<?xml version="1.0"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>{body}</feed>',
    }[kind]
    if draw(st.booleans()):
        xml = xml[:draw(st.integers(0, len(xml)))]  # torn
    return xml.encode(draw(st.sampled_from(["utf-8", "utf-16"])), "surrogatepass")


@given(st.one_of(st.binary(max_size=3_000), feeds()), st.integers(min_value=0, max_value=20))
@example(RSS20, 2)
@example(b"<rss><channel><item><link>http://[::1</link></item></channel></rss>", 5)
@example(b"<rss><channel><item><link>http://a.test:99999/</link></item></channel></rss>", 5)
@example(b"<feed><entry><link href='http://\\\\'/></entry></feed>", 5)
@example(b"<rss>" + b"<item>" * 5_000, 5)
def test_any_bytes_give_a_feed_or_a_feed_error(body, max_entries):
    with within(5, "one body"):
        feed = _read(body, max_entries)
    _check(feed, max_entries)


# --- recognising a feed ----------------------------------------------------------------------

@pytest.mark.parametrize("content_type", ["application/rss+xml", "application/atom+xml",
                                          "Application/RSS+XML; charset=utf-8"])
def test_a_feed_type_is_a_feed_whatever_its_start(content_type):
    assert looks_like_feed(content_type, b"")


@pytest.mark.parametrize("head", [
    RSS20[:200], RSS10[:300], ATOM[:120],
    b'\xef\xbb\xbf<?xml version="1.0"?>\n<!-- generator: x -->\n<?xml-stylesheet href="s.xsl"?>\n<rss version="2.0">',
    (b'<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" '
     b'"http://my.netscape.com/publish/formats/rss-0.91.dtd">\n<rss version="0.91">'),
    b'<?xml version="1.0"?><!DOCTYPE feed [<!ENTITY nbsp "&#160;"> <!ENTITY gt "&#62;">]><feed xmlns="x">',
    b"<atom:feed xmlns:atom='http://www.w3.org/2005/Atom'>",
    '<?xml version="1.0" encoding="utf-16"?><rss version="2.0">'.encode("utf-16"),
    '<?xml version="1.0" encoding="utf-16"?><feed>'.encode("utf-16-be"),
])
@pytest.mark.parametrize("content_type", ["application/xml", "text/xml; charset=utf-8", "text/html", ""])
def test_xml_served_with_a_feed_root_is_a_feed(head, content_type):
    assert looks_like_feed(content_type, head)


@pytest.mark.parametrize("head", [
    b"<!DOCTYPE html><html><head><title>rss feed</title></head>",
    b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">',
    b'<?xml version="1.0"?><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><foaf:Person>',
    b"Some text <rss>",
    b"<!-- never closed <rss>",
    b'<?xml version="1.0"?>',
    b"",
    bytes(range(256)),
    b"<" + b" " * 5_000 + b"rss>",
])
def test_xml_without_a_feed_root_is_no_feed(head):
    assert not looks_like_feed("application/xml", head)


@pytest.mark.parametrize("content_type", ["image/png", "application/json", "application/pdf"])
def test_other_types_are_never_sniffed(content_type):
    assert not looks_like_feed(content_type, RSS20)


@given(st.text(max_size=40), st.binary(max_size=3_000))
def test_looks_like_feed_never_raises(content_type, head):
    assert looks_like_feed(content_type, head) in (True, False)
