"""A recorded web whose pages change while a crawler works on it, to measure freshness on.

Every HTML page a ``RecordedWeb`` answers with 200 becomes a Poisson process of changes with
its own rate (Cho & Garcia-Molina's model of page change): a share of pages hot (a change every
minute or two), most cold (tens of minutes), some never changing, with the relevant pages' mix
set apart from the others'. Version ``k`` of a page is the recorded body with a dated paragraph
inserted, made of the page's own words so that its topic does not flip; it carries a strong
``ETag`` and the ``Last-Modified`` of its change, and conditional requests are answered 304 as
RFC 9110 says. Each host also gets a sitemap (with ``lastmod`` and ``changefreq``), a
``Sitemap:`` line in its robots.txt, and on most hosts a feed (RSS 2.0 or Atom) of its latest
changes, linked from the head of its pages.

Nothing per version is stored. A page's rate and its change times are drawn from a hash of
``(seed, url)``: the ``i``-th interval between changes is a function of ``(seed, url, i)``, so
any change time can be computed on demand, forwards or backwards from a small per-page cursor.
Times are seconds since the Unix epoch; intervals are whole seconds (an exponential draw
rounded up), so two versions never share the one-second resolution of an HTTP date and
``If-Modified-Since`` names a version exactly.
"""

from __future__ import annotations

import hashlib
import heapq
import html
import math
import random
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable
from urllib.parse import urlsplit

from focuscrawl.replay.feed_xml import atom, changefreq, rss, sitemap_index, sitemap_priority, urlset
from focuscrawl.replay.recorded import RecordedResponse, RecordedWeb, host_of
from focuscrawl.replay.validators import not_modified, strong_etag, validators, w3c_datetime

#: Byte-order marks of bodies an inserted ASCII paragraph would corrupt (UTF-16, UTF-32).
_WIDE_BOMS = (b"\xff\xfe", b"\xfe\xff")
#: The mean age of a never-changing page's only version when the web starts (seconds).
STATIC_AGE_MEAN = 30 * 86400.0
#: A per-page cursor (last version computed, its offset) is kept for at most this many pages.
CURSOR_LIMIT = 1 << 17
#: The sitemap protocol's limit of URLs in one sitemap file.
SITEMAP_LIMIT = 50_000
#: Words in the paragraph a change inserts.
UPDATE_WORDS = 12

RSS = "rss"
ATOM = "atom"
FEED_PATHS = {RSS: "/feed.xml", ATOM: "/feed.atom"}
FEED_TYPES = {RSS: "application/rss+xml", ATOM: "application/atom+xml"}
SITEMAP_PATH = "/sitemap.xml"
_SITEMAP_PART = re.compile(r"/sitemap-([1-9][0-9]{0,6})\.xml\Z")


@dataclass(frozen=True)
class ChangeMix:
    """How the pages of one kind change.

    A page is hot with probability ``hot_share``, never changes with probability
    ``never_share``, and is cold otherwise. A hot (cold) page's mean interval between changes is
    drawn log-uniformly from ``hot_interval`` (``cold_interval``), in seconds.
    """

    hot_share: float = 0.1
    never_share: float = 0.2
    hot_interval: tuple[float, float] = (60.0, 120.0)
    cold_interval: tuple[float, float] = (600.0, 3600.0)

    def __post_init__(self):
        if not (0 <= self.hot_share <= 1 and 0 <= self.never_share <= 1
                and self.hot_share + self.never_share <= 1):
            raise ValueError("ChangeMix: hot_share and never_share must be in [0, 1] and sum to at most 1")
        for name in ("hot_interval", "cold_interval"):
            low, high = getattr(self, name)
            if not (0 < low <= high < math.inf):
                raise ValueError(f"ChangeMix: {name} must be (low, high) seconds with 0 < low <= high")

    def faster(self, scale: float) -> ChangeMix:
        """The same mix on a clock ``scale`` times faster (a simulated clock: a benchmark of
        minutes shows what hours of crawling would)."""
        if not scale > 0:
            raise ValueError("ChangeMix: the time scale must be positive")
        return ChangeMix(hot_share=self.hot_share, never_share=self.never_share,
                         hot_interval=(self.hot_interval[0] / scale, self.hot_interval[1] / scale),
                         cold_interval=(self.cold_interval[0] / scale, self.cold_interval[1] / scale))

    def rate(self, class_draw: float, interval_draw: float) -> float:
        """Changes per second for a page given two uniform draws in [0, 1)."""
        if class_draw < self.hot_share:
            low, high = self.hot_interval
        elif class_draw < self.hot_share + self.never_share:
            return 0.0
        else:
            low, high = self.cold_interval
        return 1.0 / (low * (high / low) ** interval_draw)


#: Relevant pages: more of them hot, few static (what a freshness policy should find and keep).
RELEVANT_MIX = ChangeMix(hot_share=0.2, never_share=0.1)
#: The other pages: mostly cold, a third never changing.
OTHER_MIX = ChangeMix(hot_share=0.05, never_share=0.3)


# --- deterministic draws -----------------------------------------------------------------------

def _hash_int(*parts) -> int:
    data = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def _unit(*parts) -> float:
    """A uniform draw in (0, 1] that is a function of ``parts``."""
    return (_hash_int(*parts) + 1) / 2.0 ** 64


def _whole_seconds(mean: float, draw: float) -> int:
    """An exponential interval of mean ``mean`` from a uniform ``draw``, rounded up to seconds."""
    return max(1, math.ceil(-math.log(draw) * mean))


# --- editing a page's HTML ---------------------------------------------------------------------

_SCRIPT_OR_STYLE = re.compile(rb"<(script|style)\b.*?</\1\s*>", re.I | re.S)
_TAG = re.compile(rb"<[^>]*>")
_ENTITY = re.compile(rb"&#?\w+;")
_WORD = re.compile(rb"[A-Za-z]{3,}")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.I | re.S)


def page_words(body: bytes) -> list[bytes]:
    """The ASCII words of a page's text (markup, scripts, styles and entities removed): what a
    change is written with, and safe to insert in any ASCII-compatible charset."""
    text = _ENTITY.sub(b" ", _TAG.sub(b" ", _SCRIPT_OR_STYLE.sub(b" ", body)))
    return [w.lower() for w in _WORD.findall(text)]


def _editable(body: bytes) -> bool:
    return not body.startswith(_WIDE_BOMS) and b"\x00" not in body[:1024]


def _insert_in_head(body: bytes, markup: bytes) -> bytes:
    """``markup`` at the end of the head (before ``</head>``, or the body, or after ``<html>``)."""
    lower = body.lower()
    at = lower.find(b"</head")
    if at < 0:
        at = lower.find(b"<body")
    if at < 0:
        match = re.search(rb"<html\b[^>]*>", lower)
        at = match.end() if match else 0
    return body[:at] + markup + body[at:]


def _insert_at_end(body: bytes, markup: bytes) -> bytes:
    """``markup`` before the last ``</body>`` (or ``</html>``, or at the very end)."""
    lower = body.lower()
    at = lower.rfind(b"</body")
    if at < 0:
        at = lower.rfind(b"</html")
    if at < 0:
        at = len(body)
    return body[:at] + markup + body[at:]


def _changes(resp: RecordedResponse | None) -> bool:
    """Whether a recorded response is a page that changes: an HTML page answered 200."""
    return resp is not None and resp.status == 200 and resp.is_html


def _html_title(resp: RecordedResponse) -> str:
    """A recorded page's title, on one line ("" when it has none)."""
    match = _TITLE.search(_decode(resp.body, resp.content_type))
    return " ".join(html.unescape(match.group(1)).split()) if match else ""


Answer = tuple[int, list[tuple[str, str]], bytes, int | None]


class ChangingWeb:
    """A ``RecordedWeb`` whose HTML pages change as Poisson processes from ``epoch`` on.

    Args:
        web: the recorded web; its 200 HTML pages change, every other response stays as recorded.
        relevant: URLs whose pages follow ``relevant_mix`` (any spelling the web looks up).
        seed: every rate, change time, body edit and host feed is a function of it.
        relevant_mix, other_mix: how relevant and other pages change (``ChangeMix``, seconds).
        epoch: when the web starts changing (epoch seconds; default ``clock()`` now). Version 0
            of a page is the recorded one, last changed before ``epoch``.
        clock: the time ``t`` defaults to where a method takes one.
        feed_share: the share of hosts that publish a feed (alternately RSS 2.0 and Atom).
        feed_items: the changes a feed lists.

    Example::

        demo = generate_web()
        changes = ChangingWeb(RecordedWeb.from_records(demo.records), demo.relevant_urls(), seed=1)
        changes.version(demo.seeds[0])          # 0 until the home page's first change
        ReplayProxy(RecordedWeb.from_records(demo.records), changes=changes)
    """

    def __init__(self, web: RecordedWeb, relevant: Iterable[str] = (), *, seed: int = 0,
                 relevant_mix: ChangeMix = RELEVANT_MIX, other_mix: ChangeMix = OTHER_MIX,
                 epoch: float | None = None, clock: Callable[[], float] = time.time,
                 feed_share: float = 0.75, feed_items: int = 20):
        if not 0 <= feed_share <= 1:
            raise ValueError("feed_share must be in [0, 1]")
        if feed_items < 1:
            raise ValueError("feed_items must be at least 1")
        self.web = web
        self.seed = seed
        self.relevant_mix = relevant_mix
        self.other_mix = other_mix
        self.clock = clock
        self.epoch = float(clock() if epoch is None else epoch)
        self.feed_items = int(feed_items)
        self._relevant = {page for page in map(self.page_url, relevant) if page is not None}
        self._pages: dict[str, list[str]] = {}  # host -> its changing pages' recorded URLs
        self._origins: dict[str, str] = {}  # host -> scheme://netloc its pages are served at
        hosts_by_origin: dict[str, str] = {}  # host_of costs ~0.1 ms: once an origin, not a page
        for resp in web:
            if _changes(resp):
                parts = urlsplit(resp.url)
                origin = f"{parts.scheme}://{parts.netloc}"
                if not parts.netloc:
                    host = host_of(resp.url)
                elif (host := hosts_by_origin.get(origin)) is None:
                    host = hosts_by_origin[origin] = host_of(origin + "/")
                self._pages.setdefault(host, []).append(resp.url)
                self._origins.setdefault(host, origin)
        self._feeds = self._assign_feeds(feed_share)
        self._cursor: dict[str, tuple[int, int]] = {}

    # --- which pages change ------------------------------------------------------------------

    def page_url(self, url: str) -> str | None:
        """The recorded URL of the changing page ``url`` names (any spelling the recorded web
        looks up), None when ``url`` is not a changing page."""
        try:
            resp = self.web.lookup(url)
        except Exception:  # a URL too odd to canonicalise is no page
            return None
        return resp.url if _changes(resp) else None

    def __contains__(self, url: str) -> bool:
        return self.page_url(url) is not None

    def _page(self, url: str) -> str:
        page = self.page_url(url)
        if page is None:
            raise KeyError(f"not a changing page: {url}")
        return page

    def hosts(self) -> list[str]:
        """Hosts with changing pages (each has a sitemap)."""
        return list(self._pages)

    def pages(self, host: str) -> list[str]:
        """The recorded URLs of a host's changing pages."""
        return list(self._pages.get(host, ()))

    def is_relevant(self, url: str) -> bool:
        return self.page_url(url) in self._relevant

    # --- the change process ------------------------------------------------------------------

    def rate(self, url: str) -> float:
        """Changes per second of a page (0.0: never changes). Raises KeyError for a URL that is
        not a changing page."""
        return self._rate(self._page(url))

    def _rate(self, page: str) -> float:
        mix = self.relevant_mix if page in self._relevant else self.other_mix
        # draws in (0, 1] folded into [0, 1), as ChangeMix.rate takes them
        return mix.rate(_unit(self.seed, "class", page) % 1.0, _unit(self.seed, "interval", page) % 1.0)

    def _gap(self, page: str, rate: float, i: int) -> int:
        """Whole seconds between change ``i - 1`` and change ``i`` (``i >= 1``)."""
        return _whole_seconds(1.0 / rate, _unit(self.seed, "gap", page, i))

    def _offset(self, page: str, rate: float, k: int) -> int:
        """Seconds from ``epoch`` to change ``k >= 1``, walked from the page's cursor."""
        ck, coff = self._cursor.get(page, (0, 0))
        if k < ck and k < ck - k:  # nearer the start than the cursor
            ck, coff = 0, 0
        while ck < k:
            ck += 1
            coff += self._gap(page, rate, ck)
        while ck > k:
            coff -= self._gap(page, rate, ck)
            ck -= 1
        self._remember(page, ck, coff)
        return coff

    def _remember(self, page: str, k: int, offset: int) -> None:
        if len(self._cursor) >= CURSOR_LIMIT and page not in self._cursor:
            self._cursor.clear()  # bounded memory; a cursor is only a shortcut
        self._cursor[page] = (k, offset)

    def change_time(self, url: str, k: int) -> float:
        """When version ``k`` appeared (epoch seconds): change ``k >= 1`` after ``epoch``;
        version 0 (the recorded page) before ``epoch``; ``math.inf`` for a change that never
        happens. Raises KeyError for a URL that is not a changing page."""
        return self._change_time(self._page(url), k)

    def _change_time(self, page: str, k: int) -> float:
        if k < 0:
            raise ValueError("a version is at least 0")
        rate = self._rate(page)
        if k == 0:
            mean = 1.0 / rate if rate > 0 else STATIC_AGE_MEAN
            return self.epoch - _whole_seconds(mean, _unit(self.seed, "before", page))
        if rate == 0:
            return math.inf
        return self.epoch + self._offset(page, rate, k)

    def version(self, url: str, t: float | None = None) -> int:
        """How many changes the page has had by ``t`` (default now): the version served at
        ``t``. Raises KeyError for a URL that is not a changing page."""
        return self._version(self._page(url), self.clock() if t is None else t)

    def _version(self, page: str, t: float) -> int:
        if math.isnan(t) or t == math.inf:
            raise ValueError("t must be a finite time")
        rate = self._rate(page)
        if rate == 0 or t < self.epoch:
            return 0
        k, offset = self._cursor.get(page, (0, 0))
        while k > 0 and self.epoch + offset > t:
            offset -= self._gap(page, rate, k)
            k -= 1
        while True:
            following = offset + self._gap(page, rate, k + 1)
            if self.epoch + following > t:
                break
            k, offset = k + 1, following
        self._remember(page, k, offset)
        return k

    def etag(self, url: str, k: int) -> str:
        """The strong entity tag of version ``k`` of a page."""
        return strong_etag(self.seed, self._page(url), k)

    # --- answering requests --------------------------------------------------------------------

    def answer(self, url: str, request_headers=None, t: float | None = None,
               recorded: RecordedResponse | None = None, method: str = "GET") -> Answer | None:
        """The answer to a request for ``url`` at time ``t`` (default now), as
        ``(status, headers, body, version)``; ``version`` is the page version served (or
        confirmed by a 304), None for a feed or sitemap. ``recorded`` is the web's response for
        ``url`` when the caller has looked it up already.

        None when ``url`` is neither a changing page nor a feed or sitemap this web makes up:
        the caller answers it as recorded (or 404). Conditional headers are read for GET and
        HEAD only; an unparsable one is ignored.
        """
        t = self.clock() if t is None else t
        if recorded is None:
            try:
                recorded = self.web.lookup(url)
            except Exception:
                recorded = None
        if _changes(recorded):
            return self._answer_page(recorded, request_headers, t, method)
        document = self._document(url, t)
        if document is None:
            return None
        ctype, body, etag, last_modified = document
        if method in ("GET", "HEAD") and not_modified(request_headers, etag, last_modified):
            return 304, validators(etag, last_modified), b"", None
        return 200, [("Content-Type", ctype), *validators(etag, last_modified)], body, None

    def _answer_page(self, resp: RecordedResponse, request_headers, t: float, method: str) -> Answer:
        page = resp.url
        k = self._version(page, t)
        etag = strong_etag(self.seed, page, k)
        last_modified = self._change_time(page, k)
        versioned = validators(etag, last_modified)
        if method in ("GET", "HEAD") and not_modified(request_headers, etag, last_modified):
            return 304, versioned, b"", k
        kept = [(n, v) for n, v in resp.headers if n.lower() not in ("etag", "last-modified")]
        return 200, kept + versioned, self.body(page, k, resp), k

    def body(self, url: str, k: int, recorded: RecordedResponse | None = None) -> bytes:
        """Version ``k`` of a page: the recorded body with its host's feed linked from the head
        and, from version 1 on, a dated paragraph of the page's own words before ``</body>``.
        Raises ValueError for a version the page never reaches (it never changes)."""
        resp = recorded if recorded is not None else self.web.lookup(self._page(url))
        page = resp.url
        if self._change_time(page, k) == math.inf:
            raise ValueError(f"{page} never reaches version {k}")
        body = resp.body
        if not _editable(body):
            return body
        feed = self._feeds.get(host_of(page))
        if feed is not None:
            body = _insert_in_head(body, self._feed_link(host_of(page), feed))
        if k > 0:
            body = _insert_at_end(body, self._update_paragraph(page, k, resp.body))
        return body

    def _feed_link(self, host: str, kind: str) -> bytes:
        href = html.escape(self.feed_url(host) or "", quote=True)
        markup = f'<link rel="alternate" type="{FEED_TYPES[kind]}" title="Changes on {html.escape(host)}" href="{href}">'
        return markup.encode("ascii", "xmlcharrefreplace")

    def _update_paragraph(self, page: str, k: int, recorded_body: bytes) -> bytes:
        """The change of version ``k``: its date and words drawn from the page itself."""
        words = page_words(recorded_body)
        chosen = random.Random(_hash_int(self.seed, "update", page, k)).sample(words, min(UPDATE_WORDS, len(words)))
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(math.floor(self._change_time(page, k))))
        text = b" ".join(chosen)
        return b'<p class="page-update">Updated ' + stamp.encode("ascii") + b": " + text + b".</p>\n"

    # --- feeds, sitemaps, robots.txt ---------------------------------------------------------------

    def _assign_feeds(self, share: float) -> dict[str, str]:
        """Which hosts publish a feed, and in which format: hosts ranked by a draw, the first
        ``share`` of them alternately RSS and Atom (so both formats appear)."""
        ranked = sorted(self._pages, key=lambda host: _hash_int(self.seed, "feed", host))
        count = round(share * len(ranked))
        return {host: (RSS if i % 2 == 0 else ATOM) for i, host in enumerate(ranked[:count])}

    def feed_kind(self, host: str) -> str | None:
        """``"rss"``, ``"atom"`` or None (the host has no feed)."""
        return self._feeds.get(host)

    def feed_url(self, host: str) -> str | None:
        kind = self._feeds.get(host)
        return None if kind is None else self._origins[host] + FEED_PATHS[kind]

    def sitemap_url(self, host: str) -> str | None:
        return self._origins[host] + SITEMAP_PATH if host in self._origins else None

    def robots_txt(self, host: str, original: str | None) -> str | None:
        """A host's robots.txt with its sitemap announced (``original``: the text it would
        serve, None when it has none); ``original`` itself for a host without changing pages."""
        sitemap = self.sitemap_url(host)
        if sitemap is None:
            return original
        line = f"Sitemap: {sitemap}"
        if original is None:
            return f"User-agent: *\nDisallow:\n\n{line}\n"
        if line in original.splitlines():
            return original
        return original + ("" if original.endswith("\n") or not original else "\n") + f"\n{line}\n"

    def recent_changes(self, host: str, t: float | None = None, limit: int | None = None) -> list[tuple[float, str, int]]:
        """A host's latest changes by ``t``, newest first, as ``(time, url, version)``; version 0
        (the last change before ``epoch``) counts too."""
        t = self.clock() if t is None else t
        limit = self.feed_items if limit is None else limit
        heap = []
        for page in self._pages.get(host, ()):
            k = self._version(page, t)
            heap.append((-self._change_time(page, k), page, k))
        heapq.heapify(heap)
        out = []
        while heap and len(out) < limit:
            negative_time, page, k = heapq.heappop(heap)
            out.append((-negative_time, page, k))
            if k > 0:
                heapq.heappush(heap, (-self._change_time(page, k - 1), page, k - 1))
        return out

    def _document(self, url: str, t: float) -> tuple[str, bytes, str, float] | None:
        """``(content type, body, ETag, Last-Modified)`` of a feed or sitemap, else None."""
        try:
            host, path = host_of(url), urlsplit(url).path
        except ValueError:
            return None
        if host not in self._pages:
            return None
        kind = self._feeds.get(host)
        if kind is not None and path == FEED_PATHS[kind]:
            return self._feed(host, kind, t)
        if path == SITEMAP_PATH:
            return self._sitemap(host, 0, t)
        part = _SITEMAP_PART.match(path)
        if part and self._sitemap_parts(host) > 1 and int(part.group(1)) <= self._sitemap_parts(host):
            return self._sitemap(host, int(part.group(1)), t)
        return None

    def _feed(self, host: str, kind: str, t: float) -> tuple[str, bytes, str, float]:
        changes = self.recent_changes(host, t)
        items = [(when, page, k, self._title(page), self._summary(page, k)) for when, page, k in changes]
        updated = changes[0][0] if changes else self.epoch
        origin, feed_url = self._origins[host], self.feed_url(host)
        write = rss if kind == RSS else atom
        body = write(host, origin, feed_url, items, updated)
        etag = strong_etag(self.seed, "feed", host, *((page, k) for _, page, k in changes))
        return FEED_TYPES[kind] + "; charset=utf-8", body, etag, updated

    def _title(self, page: str) -> str:
        return _html_title(self.web.lookup(page)) or page

    def _summary(self, page: str, k: int) -> str:
        if k == 0:
            return "Last changed before the web started."
        paragraph = self._update_paragraph(page, k, self.web.lookup(page).body)
        return _TAG.sub(b"", paragraph).decode("ascii").strip()

    def _sitemap_parts(self, host: str) -> int:
        """How many sitemaps a host's pages fill (more than one: ``/sitemap.xml`` indexes them)."""
        return math.ceil(len(self._pages.get(host, ())) / SITEMAP_LIMIT)

    def _sitemap(self, host: str, part: int, t: float) -> tuple[str, bytes, str, float]:
        pages = self._pages[host]
        if part == 0 and self._sitemap_parts(host) > 1:
            return self._sitemap_index(host, t)
        if part > 0:
            pages = pages[(part - 1) * SITEMAP_LIMIT: part * SITEMAP_LIMIT]
        versions, entries, latest = [], [], -math.inf
        for page in pages:
            k = self._version(page, t)
            when = self._change_time(page, k)
            latest = max(latest, when)
            versions.append(k)
            entries.append((page, w3c_datetime(when), changefreq(self._rate(page)), sitemap_priority(page)))
        etag = strong_etag(self.seed, "sitemap", host, part, *versions)
        return "application/xml; charset=utf-8", urlset(entries), etag, latest if pages else self.epoch

    def _sitemap_index(self, host: str, t: float) -> tuple[str, bytes, str, float]:
        """More pages than one sitemap may list: an index of parts (their pages' dates are in
        the parts)."""
        body = sitemap_index(f"{self._origins[host]}/sitemap-{part}.xml" for part in range(1, self._sitemap_parts(host) + 1))
        latest = max(self._change_time(p, self._version(p, t)) for p in self._pages[host])
        return "application/xml; charset=utf-8", body, strong_etag(self.seed, "index", host, latest), latest


def _decode(body: bytes, content_type: str) -> str:
    """Text for a title: the charset the header declares when it is one Python knows, else
    UTF-8 if the bytes are, else windows-1252 (what browsers assume for old pages)."""
    match = re.search(r"charset=[\"']?([\w.:-]+)", content_type or "", re.I)
    if match:
        try:
            return body.decode(match.group(1), errors="replace")
        except LookupError:
            pass
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("cp1252", errors="replace")

