"""RSS (0.9x, 1.0, 2.0) and Atom feed bytes to the entries they list, for recrawl by freshness.

feedparser reads the feed: the parser (BSD) that knows the many dialects and the many broken real
feeds (an expat parse first, an SGML-like loose parse when that fails), and turns each dialect's
dates into UTC. It is slow (about 1.5 s of CPU a MB of well-formed feed, 3.5 s a MB of broken
feed, where lxml parses the MB in 10 ms), hence a low byte cap. What a feed from an untrusted
host needs is done around it:

* feedparser is given a stream, never the bytes themselves: it tries ``bytes`` as a file name
  first (a body reading ``/etc/passwd`` would be read from disk) and fetches a ``str`` that looks
  like a URL;
* nothing is fetched: the strict parse is xml.sax on expat with external entities off
  (``feature_external_ges``: no external entity, external DTD or parameter entity is read), and
  the loose parse reads no DTD;
* nothing is expanded, and feedparser's slow regular expressions get short input: the body is
  decoded here (``decode_body``: BOM, XML declaration, UTF-8, detection) and feedparser is given
  it as UTF-8 under a fresh XML declaration, from the first element on. So no DOCTYPE reaches it:
  its own clean-up drops entity declarations only at the start of a line, after which expat
  (2.4 or later) stops a billion laughs only after 4 s of CPU and 50 MB. A feed using HTML's
  named entities (``&nbsp;``, which RSS 0.91 took from Netscape's DTD) fails the strict parse
  and is read by the loose one, which knows them. Nor does a long first line: feedparser's
  search for the declared encoding takes cubic time in it (10 KB: 3 s). The texts of author
  elements are cut short (no author is kept): feedparser's search for an e-mail address in
  them takes quadratic time (kurtmckee/feedparser#562; 10 KB: 1 s);
* the body is cut at ``max_bytes`` before parsing (a feed lists its newest entries first, so the
  cut keeps them) and at most ``max_entries`` entries are kept, each with a link a Request can be
  made of (relative links resolved against the feed's URL);
* anything feedparser raises on a hostile body is a FeedError, like a body that is no feed.
"""

from __future__ import annotations

import calendar
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import feedparser
from w3lib.encoding import read_bom
from w3lib.html import remove_tags, remove_tags_with_content, replace_entities

from focuscrawl.parsing.charset import decode_body
from focuscrawl.urls import absolute_http_url

#: The most of a body read (also the cap when ``max_bytes`` is 0, DOWNLOAD_MAXSIZE's "no limit"):
#: hundreds of entries, the newest, in at most about a second of feedparser's time.
MAX_FEED_BYTES = 256 * 1024
#: A title or summary is cut at about this many characters (at a word boundary): words for the
#: link model, not the article.
MAX_TITLE_CHARS = 300
MAX_SUMMARY_CHARS = 500
#: How much of a body ``looks_like_feed`` reads for the root element (past the XML declaration,
#: comments, processing instructions and a DOCTYPE).
SNIFF_BYTES = 2048

#: Media types that name a feed.
FEED_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})
#: Media types a feed is served as besides its own: generic XML, and, mislabelled, what the
#: WHATWG sniffing standard sniffs for feeds (text/html) or what a server sends when it knows nothing.
SNIFFED_TYPES = frozenset({
    "application/xml", "text/xml", "application/rdf+xml", "text/html", "text/plain",
    "application/octet-stream", "",
})
#: RSS 1.0 and 0.90 are RDF documents: an ``rdf:RDF`` root is a feed when one of these is declared.
RSS_RDF_NAMESPACES = ("purl.org/rss/1.0", "netscape.com/rdf/simple/0.9")
#: What feedparser is given before the body's first element.
XML_DECLARATION = '<?xml version="1.0" encoding="utf-8"?>\n'
#: The text of an author element is cut to this: feedparser's e-mail search costs its square.
MAX_AUTHOR_CHARS = 200
#: Elements whose text is never summary text (feedparser is asked not to sanitise: we keep text only).
NO_TEXT_TAGS = ("script", "style")

_NAME = re.compile(r"[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?")
_SPACE = re.compile(r"\s+")
_SPACES = re.compile(r"\s*")
#: What ends a DOCTYPE's external id part, or starts a literal in it.
_DOCTYPE_TOKEN = re.compile(r"""[>\["']""")
#: What ends a DOCTYPE's internal subset, or starts a literal or a comment in it.
_SUBSET_TOKEN = re.compile(r"""\]|"|'|<!--""")
_ELEMENT_START = re.compile(r"<[A-Za-z_]")
#: An author element's start tag, then its text (in a CDATA section or not; a section never
#: closed runs to the end), the first MAX_AUTHOR_CHARS characters of it in a group. The names
#: are those feedparser searches an e-mail address in, with any namespace prefix.
_AUTHOR_TEXT = re.compile(
    r"(<(?:[\w.-]+:)?(?:author|creator|publisher|contributor|managingeditor|webmaster|owner)\b[^<>]*>\s*)"
    rf"(?:<!\[CDATA\[((?:(?!]]>).){{0,{MAX_AUTHOR_CHARS}}})(?:(?!]]>).)*(?:]]>|\Z)"
    rf"|([^<]{{0,{MAX_AUTHOR_CHARS}}})[^<]*)",
    re.IGNORECASE | re.DOTALL,
)


class FeedError(ValueError):
    """A body that is no feed at all: not XML, or XML of something else."""


@dataclass
class FeedEntry:
    url: str  # absolute http(s), fragment removed
    title: str = ""
    summary: str = ""  # plain text, at most about MAX_SUMMARY_CHARS characters
    updated: float | None = None  # epoch seconds: when the entry was last updated, else published


@dataclass
class Feed:
    version: str  # feedparser's name for the dialect: "rss20", "rss10", "rss090", "atom10", ...
    title: str = ""
    updated: float | None = None  # epoch seconds: the feed's own updated (or published) time
    entries: list[FeedEntry] = field(default_factory=list)  # in feed order, one per URL


def read_feed(body: bytes, url: str, max_entries: int, max_bytes: int) -> Feed:
    """The first ``max_entries`` entries with a followable link of the feed ``body`` fetched
    from ``url``, read from at most its first ``max_bytes`` bytes (DOWNLOAD_MAXSIZE; 0 or more
    than MAX_FEED_BYTES: MAX_FEED_BYTES).

    Raises FeedError when the body is no feed at all (no feed dialect recognised and no entry),
    and nothing else. A feed that is broken but recoverable gives what could be read.
    """
    cap = min(max_bytes, MAX_FEED_BYTES) if max_bytes > 0 else MAX_FEED_BYTES
    data = bytes(body or b"")[:cap]
    if not data.strip():
        raise FeedError("empty body")
    prepared = _prepared(data)
    try:
        parsed = feedparser.parse(
            io.BytesIO(prepared),  # a stream: bytes would be tried as a file name first
            # The feed's URL is the base of its relative links.
            response_headers={"content-location": url, "content-type": "application/xml; charset=utf-8"},
            sanitize_html=False,  # only the text of titles and summaries is kept
            resolve_relative_uris=False,  # inside HTML content, which is not kept
        )
    except Exception as exc:  # noqa: BLE001 - feedparser and the parsers under it raise many kinds
        raise FeedError(f"unreadable: {type(exc).__name__}: {exc}") from None
    version = parsed.get("version") or ""
    if not version and not parsed.entries:
        reason = parsed.get("bozo_exception")
        raise FeedError(f"not a feed: {reason}" if reason else "not a feed")
    meta = parsed.feed
    return Feed(
        version=version,
        title=_text(meta, "title", MAX_TITLE_CHARS),
        updated=_epoch(meta),
        entries=_entries(parsed.entries, url, max_entries),
    )


def _entries(raw_entries: list, url: str, max_entries: int) -> list[FeedEntry]:
    entries: list[FeedEntry] = []
    seen: set[str] = set()
    for raw in raw_entries:
        if len(entries) >= max_entries:
            break
        link = _entry_link(raw, url)
        if not link or link in seen:
            continue
        seen.add(link)
        entries.append(FeedEntry(
            url=link,
            title=_text(raw, "title", MAX_TITLE_CHARS),
            summary=_summary(raw),
            updated=_epoch(raw),
        ))
    return entries


def _entry_link(raw: dict, url: str) -> str | None:
    """The entry's page: its link (RSS ``<link>``, Atom's alternate link, or an RSS ``<guid>``
    that is a permalink: feedparser picks), resolved against the feed's URL."""
    link = dict.get(raw, "link")
    if not isinstance(link, str) or not link.strip():
        return None
    return absolute_http_url(url, link.strip())


def _epoch(raw: dict) -> float | None:
    """Updated, else published, in epoch seconds. feedparser gives both as UTC struct_times
    whatever the dialect's format (RFC 822, W3C, and their broken variants), None when unreadable.
    ``dict.get``: FeedParserDict maps a missing ``updated_parsed`` to ``published_parsed`` with
    a DeprecationWarning."""
    for key in ("updated_parsed", "published_parsed"):
        when = dict.get(raw, key)
        if when is not None:
            try:
                return float(calendar.timegm(when))
            except (TypeError, ValueError, OverflowError):
                continue
    return None


def _summary(raw: dict) -> str:
    """The entry's summary as text, or the start of its content when it has none. Read as HTML
    whatever its type says: an RSS description is HTML, and feedparser copies an Atom entry's
    content into a missing summary without saying it is (X)HTML."""
    summary = _plain(dict.get(raw, "summary"), "text/html", MAX_SUMMARY_CHARS)
    if summary:
        return summary
    for content in dict.get(raw, "content") or []:
        text = _plain(content.get("value"), "text/html", MAX_SUMMARY_CHARS)
        if text:
            return text
    return ""


def _text(raw: dict, key: str, max_chars: int) -> str:
    detail = dict.get(raw, f"{key}_detail") or {}
    return _plain(dict.get(raw, key), detail.get("type"), max_chars)


def _plain(value, media_type: str | None, max_chars: int) -> str:
    """``value`` as plain text on one line, tags removed when it is HTML, cut at a word boundary."""
    if not isinstance(value, str) or not value:
        return ""
    # Cut before the work: a 1 MB content:encoded should not cost a 1 MB strip for 500 characters.
    # Markup makes up much of HTML, so some margin is kept for it.
    value = value[:max_chars * 20]
    if media_type and ("html" in media_type or "xml" in media_type):
        value = replace_entities(remove_tags(remove_tags_with_content(value, NO_TEXT_TAGS)))
    text = _SPACE.sub(" ", value).strip()
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars + 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut[:max_chars]).rstrip()


def _prepared(data: bytes) -> bytes:
    """The body as feedparser is given it: decoded here, from its first element on (no DOCTYPE,
    comment or processing instruction before it), author texts cut, as UTF-8 under a fresh XML
    declaration. Raises FeedError when it has no element."""
    text, _ = decode_body(data, _bomless_utf16(data), content_type="application/xml")
    start = _first_element(text)
    if start is None:
        raise FeedError("no element")
    return (XML_DECLARATION + _AUTHOR_TEXT.sub(_cut_author_text, text[start:])).encode("utf-8", "replace")


def _bomless_utf16(data: bytes) -> str | None:
    """The UTF-16 of a body that starts ``<?`` in it with no byte order mark (the XML
    specification's appendix F), which no declaration inside it can name readably."""
    if data.startswith(b"<\x00?\x00"):
        return "utf-16-le"
    if data.startswith(b"\x00<\x00?"):
        return "utf-16-be"
    return None


def _first_element(text: str) -> int | None:
    """Where the first element starts: past the prolog (the XML declaration, processing
    instructions, comments, DOCTYPE), else at the first thing that looks like a start tag (a
    PHP warning printed before the feed)."""
    for kind, start, _ in _prolog(text):
        if kind == "element":
            return start
    found = _ELEMENT_START.search(text)
    return found.start() if found else None


def _cut_author_text(match: re.Match) -> str:
    start_tag, cdata, text = match.groups()
    return f"{start_tag}<![CDATA[{cdata}]]>" if cdata is not None else f"{start_tag}{text}"


# --- recognising a feed ----------------------------------------------------------------------

def looks_like_feed(content_type: str, body_head: bytes) -> bool:
    """Whether a response is a feed: served as one (``application/rss+xml``,
    ``application/atom+xml``), or served as XML, HTML, text or nothing with a feed's root element
    (``rss``, Atom's ``feed``, an RSS 1.0 / 0.90 ``rdf:RDF``) in ``body_head``, its first bytes."""
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    if media_type in FEED_TYPES:
        return True
    if media_type not in SNIFFED_TYPES:
        return False
    head = _head_text(bytes(body_head or b"")[:SNIFF_BYTES])
    root = _root_element(head)
    if root is None:
        return False
    local = root.rpartition(":")[2]
    if local in ("rss", "feed"):
        return True
    return local == "RDF" and any(ns in head for ns in RSS_RDF_NAMESPACES)


def _head_text(head: bytes) -> str:
    """The first bytes as text good enough to find tag names in: decoded by their byte order mark
    or as UTF-16 when they start so, else as Latin-1, which keeps the markup of every
    ASCII-compatible charset."""
    encoding, bom = read_bom(head)
    if encoding:
        return head[len(bom):].decode(encoding, "replace")
    return head.decode(_bomless_utf16(head) or "latin-1", "replace")


def _root_element(text: str) -> str | None:
    """The name of the first element of an XML document's start, None when something else
    comes first (text, a torn declaration) or the text ends before it."""
    for kind, start, end in _prolog(text):
        if kind == "element":
            return text[start + 1:end]
    return None


def _prolog(text: str) -> Iterator[tuple[str, int, int]]:
    """The items of an XML document's start, in order: ``(kind, start, end)`` for each
    processing instruction or XML declaration ("pi"), comment ("comment") and DOCTYPE
    ("doctype"), white space stepped over, then ("element", start, end of its name) for the first
    element. It stops at anything else (text, a ``<`` and no name); an item never closed ends
    with the text."""
    pos, end = 0, len(text)
    while True:
        pos = _SPACES.match(text, pos).end()
        if pos >= end:
            return
        if text.startswith("<?", pos):
            kind, stop = "pi", _past(text, "?>", pos + 2)
        elif text.startswith("<!--", pos):
            kind, stop = "comment", _past(text, "-->", pos + 4)
        elif text.startswith("<!", pos):
            kind, stop = "doctype", _past_doctype(text, pos + 2)
        elif text.startswith("<", pos) and (name := _NAME.match(text, pos + 1)):
            yield "element", pos, name.end()
            return
        else:
            return
        yield kind, pos, stop
        pos = stop


def _past(text: str, closer: str, start: int) -> int:
    found = text.find(closer, start)
    return len(text) if found < 0 else found + len(closer)


def _past_doctype(text: str, start: int) -> int:
    """Past the ``>`` that ends a DOCTYPE begun before ``start``. Literals (``"..."``, ``'...'``)
    are stepped over whole, and so is the internal subset (``[...]``) with the literals and
    comments in it, as all of them may hold a ``]`` or a ``>``."""
    pos = start
    while (token := _DOCTYPE_TOKEN.search(text, pos)) is not None:
        if token.group() == ">":
            return token.end()
        if token.group() != "[":
            pos = _past(text, token.group(), token.end())
            continue
        pos = token.end()
        while (token := _SUBSET_TOKEN.search(text, pos)) is not None and token.group() != "]":
            pos = _past(text, "-->" if token.group() == "<!--" else token.group(), token.end())
        return len(text) if token is None else _past(text, ">", token.end())
    return len(text)
