"""Charset detection that survives lying headers, and HTML to title / main text / links."""

from __future__ import annotations

import random

import pytest

from focuscrawl.parsing import Link, ParsedPage, decode_body, parse_html
from focuscrawl.parsing.html import MAX_BODY_BYTES

RUSSIAN = (
    "Московский государственный университет приглашает студентов на курс лекций по "
    "теории вычислений. Занятия проходят каждый вторник в главном здании."
)
JAPANESE = (
    "東京大学の情報科学科では、計算機の理論と応用についての講義を行っています。"
    "学生の皆さんは毎週火曜日に本館の教室に集まってください。"
)
FRENCH = (
    "Les élèves de l'université étudient l'informatique à Paris. Année scolaire, été, "
    "hôpital, où se trouve la bibliothèque, déjà, garçon, français, théorème."
)
GERMAN = (
    "Die Universität in München hat viele Studenten aus Österreich. Übungen finden am "
    "Dienstag statt, die Größe der Hörsäle ist schön, fünf Äpfel, Straße."
)
LATIN1_HEADER = "text/html; charset=ISO-8859-1"


def page(text: str, head: str = "") -> str:
    return f"<html><head>{head}<title>Page</title></head><body><p>{text}</p></body></html>"


# --- charset ---------------------------------------------------------------------------------

@pytest.mark.parametrize("content_type", [LATIN1_HEADER, "text/html; charset=windows-1252", "text/html", None])
def test_russian_windows_1251_served_as_latin1_decodes_to_russian(content_type):
    body = page(RUSSIAN).encode("cp1251")
    text, encoding = decode_body(body, content_type=content_type)
    assert RUSSIAN in text
    assert encoding == "cp1251"


def test_japanese_shift_jis_served_as_latin1_decodes_to_japanese():
    body = page(JAPANESE).encode("shift_jis")
    text, encoding = decode_body(body, content_type=LATIN1_HEADER)
    assert JAPANESE in text
    assert encoding in ("shift_jis", "cp932")


def test_declared_encoding_argument_is_checked_like_a_header():
    body = page(RUSSIAN).encode("cp1251")
    text, _ = decode_body(body, declared_encoding="iso-8859-1")
    assert RUSSIAN in text


@pytest.mark.parametrize("sentence", [FRENCH, GERMAN])
@pytest.mark.parametrize("content_type", [LATIN1_HEADER, None])
def test_genuine_latin1_stays_latin1(sentence, content_type):
    body = page(sentence).encode("latin-1")
    text, encoding = decode_body(body, content_type=content_type)
    assert sentence in text
    assert encoding == "cp1252"


def test_utf8_served_as_latin1_is_recognised():
    body = page(RUSSIAN + " " + FRENCH).encode("utf-8")
    text, encoding = decode_body(body, content_type=LATIN1_HEADER)
    assert RUSSIAN in text and FRENCH in text
    assert encoding == "utf-8"


def test_utf8_bom_wins_over_everything():
    body = b"\xef\xbb\xbf" + page(FRENCH, '<meta charset="windows-1251">').encode("utf-8")
    text, encoding = decode_body(body, content_type="text/html; charset=shift_jis")
    assert encoding == "utf-8"
    assert FRENCH in text
    assert not text.startswith("\ufeff")


def test_meta_charset_overrides_header():
    body = page(RUSSIAN, '<meta charset="windows-1251">').encode("cp1251")
    text, encoding = decode_body(body, content_type="text/html; charset=utf-8")
    assert encoding == "cp1251"
    assert RUSSIAN in text


def test_http_equiv_content_type_overrides_header():
    head = '<meta http-equiv="Content-Type" content="text/html; charset=Shift_JIS">'
    body = page(JAPANESE, head).encode("shift_jis")
    text, encoding = decode_body(body, content_type="text/html; charset=utf-8")
    assert JAPANESE in text
    assert encoding in ("shift_jis", "cp932")


def test_meta_utf16_in_an_ascii_readable_page_means_utf8():
    body = page(FRENCH, '<meta charset="utf-16">').encode("utf-8")
    text, encoding = decode_body(body)
    assert (FRENCH in text, encoding) == (True, "utf-8")


def test_a_strong_header_is_trusted():
    body = page(RUSSIAN).encode("koi8-r")
    text, encoding = decode_body(body, content_type="text/html; charset=KOI8-R")
    assert (RUSSIAN in text, encoding) == (True, "koi8-r")


@pytest.mark.parametrize("content_type", [None, LATIN1_HEADER, "text/html; charset=utf-8",
                                          "text/html; charset=no-such-charset", "garbage;;;="])
def test_garbage_bytes_never_raise(content_type):
    rng = random.Random(7)
    for size in (0, 1, 17, 4096):
        body = bytes(rng.randrange(256) for _ in range(size))
        text, encoding = decode_body(body, content_type=content_type)
        assert isinstance(text, str) and encoding
    text, _ = decode_body(b"\xff\xfe\x00", content_type=content_type)  # a UTF-16 BOM, odd length
    assert isinstance(text, str)


def test_a_few_stray_bytes_do_not_switch_the_charset():
    text, encoding = decode_body(page("Caf\xe9 cr\xe8me").encode("latin-1"), content_type=LATIN1_HEADER)
    assert "Café crème" in text and encoding == "cp1252"


# --- HTML ------------------------------------------------------------------------------------

def test_parse_returns_the_pinned_types():
    parsed = parse_html(b"<title>T</title><p>Hello <a href='/x'>there</a></p>", "http://a.example/")
    assert isinstance(parsed, ParsedPage)
    assert all(isinstance(link, Link) for link in parsed.links)
    assert parsed.title == "T"
    assert parsed.base_url == "http://a.example/"


def test_broken_html_still_gives_title_text_and_links():
    body = (b"<HTML><HEAD><TITLE>  Broken\n Page </TITLE><BODY><H2><A HREF=\"one.html\">First"
            b"</H2></A><P>Unclosed paragraph <B>bold <I>italic<P>Second para <TABLE><TR><TD>cell"
            b"<A HREF=two.html>Two</a> text &amp; entities &eacute;t&eacute; </TD> <<<>>> </div></span>")
    parsed = parse_html(body, "http://a.example/dir/page.html")
    assert parsed.title == "Broken Page"
    assert "Unclosed paragraph bold italic" in parsed.text
    assert "text & entities été" in parsed.text
    assert [link.url for link in parsed.links] == [
        "http://a.example/dir/one.html", "http://a.example/dir/two.html"]


@pytest.mark.parametrize("body", [b"", b"   \n ", b"<!-- only a comment -->", b"\x00\x00\x00",
                                  b"<html></html>", b"<<<<>>>>", bytes(range(256))])
def test_empty_or_garbage_bodies_give_an_empty_page(body):
    parsed = parse_html(body, "http://a.example/")
    assert isinstance(parsed, ParsedPage)
    assert parsed.links == []
    assert not parsed.noindex and not parsed.nofollow


def test_deeply_nested_unclosed_tags_do_not_overflow():
    body = b"<div>" * 5000 + b"deep words <a href='/deep'>deep link</a>" + b"<span>" * 5000
    parsed = parse_html(body, "http://a.example/")
    assert "deep words" in parsed.text
    assert [link.url for link in parsed.links] == ["http://a.example/deep"]


def test_huge_body_is_capped():
    chunk = b"<p>word " * 1000 + b"<a href='/x'>x</a></p>"
    body = chunk * (2 * MAX_BODY_BYTES // len(chunk))
    parsed = parse_html(body, "http://a.example/")
    assert 0 < len(parsed.text) < MAX_BODY_BYTES


def test_base_href_and_link_resolution():
    body = b"""<html><head><base href="http://cdn.example/root/"></head><body>
      <a href="page.html#section">relative</a>
      <a href="/abs">absolute path</a>
      <a href="https://other.example/x?q=1#frag">other host</a>
      <a href="javascript:void(0)">js</a> <a href="mailto:me@example.org">mail</a>
      <a href="ftp://files.example/f">ftp</a> <a href="http://[broken">broken</a>
      <a href="#top">only a fragment</a> <a>no href</a>
      <a href=" page.html ">duplicate with spaces</a>
    </body></html>"""
    parsed = parse_html(body, "http://site.example/a/b.html")
    assert parsed.base_url == "http://cdn.example/root/"
    assert [link.url for link in parsed.links] == [
        "http://cdn.example/root/page.html",
        "http://cdn.example/abs",
        "https://other.example/x?q=1",
        "http://cdn.example/root/",
    ]
    assert parsed.links[0].anchor == "relative"


def test_link_anchor_context_and_nofollow():
    words_before = " ".join(f"b{i}" for i in range(15))
    words_after = " ".join(f"a{i}" for i in range(15))
    body = (f"<p>{words_before} <a href='/t' rel='external NoFollow'>the anchor</a> {words_after}</p>"
            "<p><a href='/img'><img src='i.gif' alt='Picture of a cat'></a>"
            "<a href='/plain' rel='noopener'>plain</a></p>"
            "<map><area href='/area' alt='Area text'></map>"
            "<frameset><frame src='/frame'></frameset><iframe src='/iframe' title='Embedded'></iframe>")
    parsed = parse_html(body.encode(), "http://a.example/")
    by_url = {link.url: link for link in parsed.links}
    target = by_url["http://a.example/t"]
    assert target.anchor == "the anchor"
    assert target.nofollow is True
    assert target.context.split() == [f"b{i}" for i in range(5, 15)] + [f"a{i}" for i in range(10)]
    assert by_url["http://a.example/img"].anchor == "Picture of a cat"
    assert by_url["http://a.example/plain"].nofollow is False
    assert by_url["http://a.example/area"].anchor == "Area text"
    assert "http://a.example/iframe" in by_url
    assert by_url["http://a.example/iframe"].anchor == "Embedded"
    assert not parsed.nofollow


@pytest.mark.parametrize("content,noindex,nofollow", [
    ("noindex,nofollow", True, True),
    ("NOINDEX", True, False),
    ("index, nofollow", False, True),
    ("none", True, True),
    ("all", False, False),
])
def test_meta_robots(content, noindex, nofollow):
    body = f'<html><head><meta name="Robots" content="{content}"></head><body>x</body></html>'
    parsed = parse_html(body.encode(), "http://a.example/")
    assert (parsed.noindex, parsed.nofollow) == (noindex, nofollow)


def test_meta_for_other_robots_is_ignored():
    body = b'<meta name="googlebot" content="noindex,nofollow"><p>x</p>'
    parsed = parse_html(body, "http://a.example/")
    assert (parsed.noindex, parsed.nofollow) == (False, False)


def test_webkb_wa_markers_do_not_break_parsing():
    body = (b"<HTML>\n<HEAD>\n<TITLE>\nCS415 Home Page\n</TITLE>\n</HEAD>\n<BODY>\n<H2>"
            + b"<!WA0>" * 20 + b"<A\nHREF=\"http://cs.cornell.edu/CS414.html\">\nCS414: Systems</H2></A>"
            b"<P>Selections that display this symbol " + b"<!WA1>" * 20
            + b"<img\nsrc=\"icon.gif\"> are links. Lecture notes and homework.<!WA12>\n</BODY>")
    parsed = parse_html(body, "http://cs.cornell.edu/Info/CS415.html")
    assert parsed.title == "CS415 Home Page"
    assert "WA" not in parsed.text
    assert "Selections that display this symbol are links. Lecture notes and homework." in parsed.text
    assert [(link.url, link.anchor) for link in parsed.links] == [
        ("http://cs.cornell.edu/CS414.html", "CS414: Systems")]


def test_boilerplate_is_left_out_of_the_main_text_but_its_links_are_kept():
    body = b"""<html><head><title>Article</title>
      <script>var tracking = "scriptwords";</script><style>.x{color:red}</style></head><body>
      <header><a href="/">Home</a> Site masthead words</header>
      <nav><a href="/news">News</a> <a href="/sport">Sport</a></nav>
      <div class="main-menu"><a href="/m1">Menu one</a></div>
      <div id="content"><h1>Focused crawling</h1>
        <p>A focused crawler looks for pages about one topic and follows the links that are
        most likely to lead to more of them, which saves bandwidth for everybody.</p>
        <ul><li><a href="/a">Alpha</a></li><li><a href="/b">Beta</a></li><li><a href="/c">Gamma</a></li></ul>
      </div>
      <aside>Related stories sidebar words</aside>
      <form><input name="q"> Search this site formwords</form>
      <noscript>Enable JavaScript noscriptwords</noscript>
      <footer>Copyright footer words</footer></body></html>"""
    parsed = parse_html(body, "http://news.example/story")
    assert parsed.text.startswith("Focused crawling A focused crawler looks for pages")
    for junk in ("scriptwords", "color:red", "masthead", "News", "Menu one", "Alpha", "sidebar",
                 "formwords", "noscriptwords", "Copyright"):
        assert junk not in parsed.text, junk
    urls = {link.url for link in parsed.links}
    assert {"http://news.example/news", "http://news.example/m1", "http://news.example/a"} <= urls


def test_a_page_inside_one_form_keeps_its_text():
    body = (b"<html><body><form action='/x'><h1>Welcome</h1><p>" + b"content words " * 50
            + b"</p></form><footer>foot</footer></body></html>")
    parsed = parse_html(body, "http://a.example/")
    assert parsed.text.startswith("Welcome content words")
    assert "foot" not in parsed.text


def test_charset_is_detected_end_to_end():
    body = page(RUSSIAN + ' <a href="/ru">Ссылка</a>').encode("cp1251")
    parsed = parse_html(body, "http://ru.example/", content_type=LATIN1_HEADER)
    assert parsed.encoding == "cp1251"
    assert RUSSIAN in parsed.text
    assert parsed.links[0].anchor == "Ссылка"


def test_a_link_inside_a_sentence_keeps_its_words_in_the_text():
    body = (b"<p>Read <font color=red><a href='/s'>the course syllabus</a></font> before class.</p>"
            b"<ul><li><a href='/notes'>Lecture notes</a> for week one</li></ul>")
    parsed = parse_html(body, "http://a.example/")
    assert parsed.text == "Read the course syllabus before class. Lecture notes for week one"


# --- lenient markup: what 1996 browsers forgave ------------------------------------------------

def test_an_unclosed_comment_ends_at_the_next_tag_end():
    body = (b"<html><head><title>Home</title></head><body>\n"
            b"<!-- text=\"#ffffff\" link=\"#ffffff\">\n<h3>Welcome</h3>\n"
            b"<a href='/one.html'>One</a> and <a href='/two.html'>Two</a>\n"
            b"<!--A HREF=\"/old.html\">Old<!--/A> words after\n</body></html>")
    parsed = parse_html(body, "http://a.example/")
    assert [link.url for link in parsed.links] == ["http://a.example/one.html",
                                                   "http://a.example/two.html"]
    assert parsed.links[1].anchor == "Two"
    assert parsed.text == "Welcome One and Two Old words after"


def test_an_unclosed_comment_before_a_closed_one_does_not_swallow_the_page():
    body = (b"<!-- Changed 1996 -->\n<!-- img src=\"title.jpg\">\n<h2>News</h2>"
            b"<a href='/hw4.html'>Homework 4</a> is on-line.<!-- hhmts end -->")
    parsed = parse_html(body, "http://a.example/")
    assert [link.url for link in parsed.links] == ["http://a.example/hw4.html"]
    assert parsed.text == "News Homework 4 is on-line."


def test_a_closed_comment_still_hides_the_links_inside_it():
    body = (b"<ul><li><a href='/a'>A</a>\n<!--\n<li><a href='/old'>Old</a>\n-->\n"
            b"<!-- <a href='/older'>Older</a> --><!----><!--><li><a href='/b'>B</a></ul>"
            b"<script>var s = '<!--'; </script><a href='/c'>C</a>")
    parsed = parse_html(body, "http://a.example/")
    assert [link.url for link in parsed.links] == [
        "http://a.example/a", "http://a.example/b", "http://a.example/c"]
    assert "Old" not in parsed.text


def test_an_unclosed_href_quote_does_not_eat_the_next_link():
    body = (b"<p>See [<a href=\"kalra92.html>Kalra92</a>] and [<a href=\"platt81.html\">Platt81</a>]"
            b" <img src=\"x.gif\" alt=\"a > b\"> <a href='/q' title='x > y'>Q</a></p>")
    parsed = parse_html(body, "http://a.example/d/")
    assert [(link.url, link.anchor) for link in parsed.links] == [
        ("http://a.example/d/kalra92.html", "Kalra92"),
        ("http://a.example/d/platt81.html", "Platt81"),
        ("http://a.example/q", "Q"),
    ]


def test_wa_markers_inside_links_and_comments_are_ignored():
    body = (b"<td><!WA0><!WA0><a href=\"/x.html\"><!WA1><img alt=\"o\" src=\"o.gif\">X page</a>"
            b"<!-- note <!WA2> --><!wa13><!WA3><A HREF=\"/y.html\">Y</A><!WA4>-<!WA5></td>")
    parsed = parse_html(body, "http://a.example/")
    assert [(link.url, link.anchor) for link in parsed.links] == [
        ("http://a.example/x.html", "X page"), ("http://a.example/y.html", "Y")]
    assert "WA" not in parsed.text


def test_links_after_the_end_of_the_document_and_in_noframes_are_kept():
    body = (b"<html><head><title>T</title></head><frameset rows=\"*,180\"><frame src=\"top.html\">"
            b"<frameset cols=\"*,*\"><frame src=\"left.html\">\n<noframes><body>Index: "
            b"<a href=\"/people.html\">People</a></noframes></frameset>"
            b"</body></html>\n<a\nhref=\"/after.html\">After the end</a>")
    parsed = parse_html(body, "http://a.example/")
    by_url = {link.url: link for link in parsed.links}
    assert list(by_url) == ["http://a.example/top.html", "http://a.example/left.html",
                            "http://a.example/people.html", "http://a.example/after.html"]
    assert by_url["http://a.example/after.html"].anchor == "After the end"
    assert "<" not in parsed.text and "People" in parsed.text


# --- feed discovery ----------------------------------------------------------------------------

def test_feeds_announced_in_the_head_are_found_and_resolved():
    body = b"""<html><head><base href="http://cdn.example/root/"><title>Blog</title>
      <link rel="alternate" type="application/rss+xml" title="Posts" href="feed.xml">
      <link rel="Alternate Home" type="Application/Atom+XML; charset=utf-8" href=" /atom.xml#x ">
      <link rel="alternate" type="application/rss+xml" href="feed.xml">
      <link rel="alternate" hreflang="fr" type="text/html" href="/fr/">
      <link rel="alternate stylesheet" type="text/css" href="/dark.css">
      <link rel="stylesheet" type="application/rss+xml" href="/not-alternate.xml">
      <link rel="alternate" href="/no-type.xml">
      <link rel="alternate" type="application/rss+xml" href="javascript:void(0)">
      <link rel="alternate" type="application/rss+xml">
    </head><body><p>Posts</p></body></html>"""
    parsed = parse_html(body, "http://site.example/blog/")
    assert parsed.feeds == ["http://cdn.example/root/feed.xml", "http://cdn.example/atom.xml"]
    assert all(link.url not in parsed.feeds for link in parsed.links)


@pytest.mark.parametrize("stray", ["<img src='/pixel.gif'>", "<div>x</div>", "stray text"])
def test_feeds_after_body_content_in_the_head_are_found(stray):
    """Body content in the head makes libxml2 start the body there: the feed link after it ends
    up in the body, and is still found."""
    body = (f"<html><head><title>T</title>{stray}"
            "<link rel='alternate' type='application/atom+xml' href='/atom.xml'></head>"
            "<body><p>Text</p></body></html>").encode()
    assert parse_html(body, "http://a.example/").feeds == ["http://a.example/atom.xml"]


def test_feeds_are_capped():
    links = "".join(f"<link rel='alternate' type='application/rss+xml' href='/tag/{i}.xml'>" for i in range(50))
    parsed = parse_html(f"<html><head>{links}</head><body>x</body></html>".encode(), "http://a.example/")
    assert parsed.feeds == [f"http://a.example/tag/{i}.xml" for i in range(len(parsed.feeds))]
    assert 1 <= len(parsed.feeds) <= 4


@pytest.mark.parametrize("body", [b"", b"<p>No head</p>", bytes(range(256)),
                                  b"<link rel=alternate type=application/rss+xml href='http://[::1'>"])
def test_pages_without_feeds_have_none(body):
    assert parse_html(body, "http://a.example/").feeds == []
