"""HTML to a title, a main text with boilerplate removed, links with their words, meta robots,
the feeds the page announces, and what says it is an application shell (``appshell``).

One lxml parse and one iterative walk (no recursion, so deep broken nesting cannot overflow).
Links come from the whole page, navigation included; the main text leaves out what is
navigation, page furniture or a block made almost only of links, so the topic model sees what
the page is about. Broken HTML, garbage bytes and empty bodies give a (possibly empty)
ParsedPage, never an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.etree
import lxml.html
from w3lib.html import strip_html5_whitespace

from focuscrawl import BOT_NAME
from focuscrawl.parsing.appshell import NONE as NO_APP_SIGNALS, AppSignals, app_signals
from focuscrawl.parsing.charset import decode_body
from focuscrawl.urls import absolute_http_url

#: Text work stops here: a page past a few MB is not worth more CPU than this.
MAX_BODY_BYTES = 2 * 1024 * 1024
#: Words of context kept on each side of a link.
CONTEXT_WORDS = 10
#: Feeds kept per page: a site announces one or two (posts, comments); more is a tag cloud of feeds.
MAX_FEEDS = 4
#: ``<link rel="alternate" type=...>`` types that announce an RSS or Atom feed.
FEED_LINK_TYPES = frozenset({"application/rss+xml", "application/atom+xml"})

#: Elements whose text is never page text (code, styling, widgets, fallbacks).
NO_TEXT_TAGS = frozenset({
    "script", "style", "noscript", "template", "svg", "math", "select", "option", "button",
    "textarea", "iframe", "object", "embed", "canvas", "head", "title", "map",
})
#: Page furniture: dropped from the main text unless it holds most of the page.
FURNITURE_TAGS = frozenset({"nav", "header", "footer", "aside", "form", "menu"})
#: class/id words that name furniture.
FURNITURE_WORDS = frozenset({
    "nav", "navbar", "navigation", "menu", "menubar", "submenu", "footer", "header", "masthead",
    "sidebar", "breadcrumb", "breadcrumbs", "cookie", "cookies", "banner", "social", "share",
    "sharing", "advert", "advertisement", "ads", "sponsor", "sponsored", "skip", "toolbar",
})
#: Blocks that may be judged on their link density.
BLOCK_TAGS = frozenset({
    "div", "ul", "ol", "dl", "table", "tr", "td", "th", "p", "section", "center", "li",
    "blockquote", "dd", "dt",
})
#: A block is link furniture when it has this many links (one link is judged with its parent)...
MIN_MENU_LINKS = 3
#: ...links make at least this share of its words...
LINK_DENSITY = 0.75
#: ...and its links are short (menu items, not sentences).
MAX_WORDS_PER_LINK = 4
#: Furniture holding more than this share of the page's words stays (a page inside one <form>).
MAX_FURNITURE_SHARE = 0.5

_WA_MARKER = re.compile(r"<!WA\d*>", re.IGNORECASE)
_FLATTEN = re.compile(  # [^<>]: a '<' with no '>' after it is scanned once, not once per '<'
    rb"</?(?!(?:a|area|base|meta|title|head|body|html|script|style|noscript|frame|iframe|img)\b)"
    rb"[a-zA-Z][^<>]*>"
)
_SPLIT = re.compile(r"[^a-z0-9]+")
#: Where lenient repair looks: a comment opening, or raw-text elements it must step over.
_COMMENT_OR_RAW = re.compile(r"<!--|<(script|style|xmp|plaintext)\b", re.IGNORECASE)
_RAW_END = {
    name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in ("script", "style", "xmp", "plaintext")
}
#: A quoted attribute value that runs into a ``>`` before its closing quote (``href="a.html>``).
_OPEN_QUOTE = re.compile(r"""(?<=[\w.:-])(\s*=\s*)(["'])([^"'<>]*)>""")
#: What any match of ``_OPEN_QUOTE`` holds: searched for first, as it starts with a literal (found
#: in a few microseconds, where ``_OPEN_QUOTE``, a look-behind first, tries every position of the page)
_OPEN_QUOTE_TAIL = re.compile(r"""=\s*["'][^"'<>]*>""")
#: Tags that make libxml2 hide what follows: content after ``</body>`` / ``</html>`` is dropped,
#: ``<noframes>`` content is kept as raw text, not markup.
_HIDING_TAGS = re.compile(r"</?noframes\b[^<>]*>|</(?:body|html)\s*>", re.IGNORECASE)  # [^<>]: as _FLATTEN


@dataclass
class Link:
    url: str  # absolute, fragment removed, not canonicalised
    anchor: str = ""
    context: str = ""  # up to CONTEXT_WORDS words before and after the anchor (anchor excluded)
    nofollow: bool = False  # rel="nofollow" on this link (the page-level flag is on ParsedPage)


@dataclass
class ParsedPage:
    title: str = ""
    text: str = ""
    links: list[Link] = field(default_factory=list)
    encoding: str = ""
    noindex: bool = False
    nofollow: bool = False
    base_url: str = ""
    feeds: list[str] = field(default_factory=list)  # absolute URLs of the RSS/Atom feeds announced
    app: AppSignals = NO_APP_SIGNALS  # what says the page is an application shell (rendering decides)


def parse_html(
    body: bytes, url: str, declared_encoding: str | None = None, content_type: str | None = None
) -> ParsedPage:
    """Parse an HTML body fetched from ``url``; never raises on bad input."""
    body = bytes(body or b"")[:MAX_BODY_BYTES]
    text, encoding = decode_body(body, declared_encoding, content_type)
    page = ParsedPage(encoding=encoding, base_url=url)
    root = _parse(text)
    if root is None:
        return page
    page.base_url = _base_url(root, url)
    page.noindex, page.nofollow = _meta_robots(root)
    page.title = _title(root)
    page.feeds = _feed_links(root, page.base_url)
    page.app = app_signals(root)
    page.text, page.links = _walk(root, page.base_url)
    return page


def _parse(text: str):
    """The lxml document root, or None when there is nothing to parse."""
    data = _lenient(_WA_MARKER.sub("", text.replace("\x00", " "))).encode("utf-8", "replace")
    if not data.strip():
        return None
    parser = lxml.html.HTMLParser(
        encoding="utf-8", remove_comments=True, remove_pis=True, no_network=True, huge_tree=True
    )
    try:
        root = lxml.html.document_fromstring(data, parser=parser)
        if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in parser.error_log):
            # libxml2 stops at 2048 nested elements and drops the rest of the page: keep the
            # words and links by parsing again without the structure that nests.
            root = lxml.html.document_fromstring(_FLATTEN.sub(b" ", data), parser=parser)
        return root
    except (lxml.etree.ParserError, ValueError, TypeError):
        return None


def _lenient(text: str) -> str:
    """Repair the markup the way browsers of the 1990s read it, before libxml2 sees it.

    * Comments are removed here. An ``<!--`` with no ``-->`` after it, or with another ``<!--``
      before its ``-->`` (comments do not nest), is unterminated: it ends at the next ``>``, as
      in Mosaic and Netscape, instead of swallowing the rest of the page.
    * A quoted attribute value whose closing quote comes only after the next tag
      (``<a href="a.html>A</a> <a href="b.html">``) is closed at its first ``>``.
    * ``</body>``, ``</html>`` and ``<noframes>`` tags are dropped, so links after the end of
      the document or in the no-frames body are kept.

    Script and style content is left as it is.
    """
    if "<!--" in text:
        text = _repair_comments(text)
    if _OPEN_QUOTE_TAIL.search(text):
        ahead = _Ahead(text)
        text = _OPEN_QUOTE.sub(lambda m: _close_quote(m, ahead), text)
    return _HIDING_TAGS.sub(" ", text)


class _Ahead:
    """``text.find(sub, start)`` for starts that only grow: an answer is kept until the start
    passes it ("none" for good), so a page of thousands of ``<!-- >`` or ``x="y>`` with nothing to
    close them is scanned once, not once per opening (480 KB of ``<!-- >``: 33 s before)."""

    def __init__(self, text: str):
        self.text = text
        self.found: dict[str, int] = {}

    def find(self, sub: str, start: int) -> int:
        pos = self.found.get(sub)
        if pos is None or 0 <= pos < start:
            pos = self.found[sub] = self.text.find(sub, start)
        return pos


def _repair_comments(text: str) -> str:
    out: list[str] = []
    pos = 0
    n = len(text)
    ahead = _Ahead(text)
    while pos < n:
        m = _COMMENT_OR_RAW.search(text, pos)
        if m is None:
            break
        start = m.start()
        if m.group(1):  # a raw-text element: copy it through its end tag
            end = _RAW_END[m.group(1).lower()].search(text, m.end())
            stop = end.end() if end else n
            out.append(text[pos:stop])
            pos = stop
            continue
        out.append(text[pos:start])
        close = ahead.find("-->", start + 2)  # from +2: "<!-->" and "<!--->" are empty comments
        reopen = ahead.find("<!--", start + 4)
        if close >= 0 and (reopen < 0 or close < reopen):
            pos = close + 3
        else:  # unterminated: ends at the next '>'
            gt = ahead.find(">", start + 4)
            pos = gt + 1 if gt >= 0 else n
    out.append(text[pos:])
    return "".join(out)


def _close_quote(m: re.Match, ahead: _Ahead) -> str:
    """``_OPEN_QUOTE``: close the quote at ``>`` when its closing quote comes only after a ``<``."""
    after = m.end()
    quote = ahead.find(m.group(2), after)
    lt = ahead.find("<", after)
    if quote >= 0 and (lt < 0 or quote < lt):
        return m.group(0)  # a '>' inside a well-closed value (alt="a > b")
    return f"{m.group(1)}{m.group(2)}{m.group(3)}{m.group(2)}>"


def _words(text: str | None) -> list[str]:
    return text.split() if text else []


def _base_url(root, url: str) -> str:
    for base in root.iter("base"):
        href = strip_html5_whitespace(base.get("href") or "")
        if href:
            absolute = absolute_http_url(url, href)
            if absolute:
                return absolute
    return url


def _meta_robots(root) -> tuple[bool, bool]:
    noindex = nofollow = False
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() not in ("robots", BOT_NAME):
            continue
        tokens = {t.strip() for t in (meta.get("content") or "").lower().split(",")}
        noindex |= bool(tokens & {"noindex", "none"})
        nofollow |= bool(tokens & {"nofollow", "none"})
    return noindex, nofollow


def _feed_links(root, base_url: str) -> list[str]:
    """The feeds the page announces: ``<link rel="alternate"
    type="application/rss+xml|application/atom+xml" href=...>`` (``rel`` is a list of words),
    resolved against the base URL, the first MAX_FEEDS. Every ``<link>`` is looked at, not only
    the head's children: body content met in the head (a stray ``<img>``, ``<div>`` or text)
    makes libxml2 open the body there, with the rest of the head in it. lxml's tag-filtered
    iteration runs in C: 8 ms for 60,000 elements, under 1% of parsing that page."""
    feeds: list[str] = []
    for link in root.iter("link"):
        if "alternate" not in (link.get("rel") or "").lower().split():
            continue
        media_type = (link.get("type") or "").split(";", 1)[0].strip().lower()
        href = strip_html5_whitespace(link.get("href") or "")
        if media_type not in FEED_LINK_TYPES or not href:
            continue
        url = absolute_http_url(base_url, href)
        if url and url not in feeds:
            feeds.append(url)
            if len(feeds) >= MAX_FEEDS:
                break
    return feeds


def _title(root) -> str:
    title = root.find("head/title")
    if title is None:
        title = _first_title_outside_svg(root)
    return " ".join(_words(title.text_content())) if title is not None else ""


def _first_title_outside_svg(root):
    """One walk over the svg and title elements (asking each title for its ancestors cost depth x
    titles: 90 s for 20,000 titles 2,000 elements deep)."""
    svg_depth = 0
    for event, el in lxml.etree.iterwalk(root, events=("start", "end"), tag=("svg", "title")):
        if el.tag == "svg":
            svg_depth += 1 if event == "start" else -1
        elif event == "start" and not svg_depth:
            return el
    return None


def _furniture_by_name(el) -> bool:
    names = f"{el.get('class') or ''} {el.get('id') or ''} {el.get('role') or ''}".lower()
    return bool(names.strip()) and bool(FURNITURE_WORDS.intersection(_SPLIT.split(names)))


def _word_counts(root) -> dict:
    """Per element: (visible words, words inside links, links) of its whole subtree."""
    counts: dict = {}
    for _, el in lxml.etree.iterwalk(root, events=("end",)):
        tag = el.tag  # a property, computed at every read: read once
        if not isinstance(tag, str) or tag in NO_TEXT_TAGS:
            counts[el] = (0, 0, 0)
            continue
        words, link_words, links = len(_words(el.text)), 0, 0
        for child in el:
            w, lw, n = counts.get(child, (0, 0, 0))
            words += w + len(_words(child.tail))
            link_words += lw
            links += n
        if tag == "a":
            link_words, links = words, links + 1
        counts[el] = (words, link_words, links)
    return counts


def _boilerplate(root) -> set:
    """Elements to leave out of the main text: page furniture and link-dense menu blocks."""
    counts = _word_counts(root)
    total = counts.get(root, (0, 0, 0))[0]
    dropped = set()
    for el, (words, link_words, links) in counts.items():
        if not words or words > MAX_FURNITURE_SHARE * total:
            continue
        if el.tag in FURNITURE_TAGS or _furniture_by_name(el):
            dropped.add(el)
        elif (
            el.tag in BLOCK_TAGS
            and links >= MIN_MENU_LINKS
            and link_words >= LINK_DENSITY * words
            and link_words <= MAX_WORDS_PER_LINK * links
        ):
            dropped.add(el)
    return dropped


def _walk(root, base_url: str) -> tuple[str, list[Link]]:
    """One pass: the main text (boilerplate left out) and every link with its words."""
    dropped = _boilerplate(root)
    all_words: list[str] = []  # every visible word, for link context
    main_words: list[str] = []  # the main text
    links: list[tuple[Link, int, int]] = []  # link, first and last word index of its anchor
    seen: set[str] = set()
    hidden = 0  # depth inside NO_TEXT_TAGS
    skipped = 0  # depth inside boilerplate
    open_links: list[tuple[Link, int] | None] = []

    def add(text: str | None) -> None:
        words = _words(text)
        if words and not hidden:
            all_words.extend(words)
            if not skipped:
                main_words.extend(words)

    resolved: dict[str, str | None] = {}  # href -> URL: menus repeat links, urljoin costs ~10 us

    def start_link(el, attr: str) -> tuple[Link, int] | None:
        href = strip_html5_whitespace(el.get(attr) or "")
        if href not in resolved:
            resolved[href] = absolute_http_url(base_url, href) if href else None
        url = resolved[href]
        if not url or url in seen:
            return None
        seen.add(url)
        rel = (el.get("rel") or "").lower().split()
        link = Link(url=url, nofollow="nofollow" in rel)
        if el.tag == "area":
            link.anchor = " ".join(_words(el.get("alt")))
        elif el.tag in ("frame", "iframe"):
            link.anchor = " ".join(_words(el.get("title") or el.get("name")))
        return link, len(all_words)

    for event, el in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            tag = ""
        if event == "start":
            if el in dropped:
                skipped += 1
            if tag in NO_TEXT_TAGS:
                hidden += 1
            if tag in ("a", "area"):
                open_links.append(start_link(el, "href"))
            elif tag in ("frame", "iframe"):
                open_links.append(start_link(el, "src"))
            add(el.text)
        else:
            if tag in ("a", "area", "frame", "iframe") and open_links:
                opened = open_links.pop()
                if opened is not None:
                    link, first = opened
                    if tag == "a":
                        link.anchor = " ".join(all_words[first:]) or _img_alt(el)
                    links.append((link, first, len(all_words)))
            if tag in NO_TEXT_TAGS:
                hidden -= 1
            if el in dropped:
                skipped -= 1
            add(el.tail)

    out = []
    for link, first, last in links:
        before = all_words[max(0, first - CONTEXT_WORDS):first]
        after = all_words[last:last + CONTEXT_WORDS]
        link.context = " ".join(before + after)
        out.append(link)
    return " ".join(main_words), out


def _img_alt(el) -> str:
    for img in el.iter("img"):
        alt = " ".join(_words(img.get("alt")))
        if alt:
            return alt
    return ""
