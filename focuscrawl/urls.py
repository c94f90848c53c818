"""Canonical URLs, host keys and URL tokens: the identity of a URL everywhere in focuscrawl.

Three identities, from the finest to the coarsest, all built on w3lib's canonical form (sorted
query, percent-encoding normalised, fragment dropped, host lower-cased):

- ``w3lib_canonical``: w3lib's form alone, the identity Scrapy's request fingerprint gives a URL;
  labels files are matched under it;
- ``url_key``: that, with the scheme's default port dropped: what a recorded web (the replay,
  its link graph, the simulation) looks a URL up by;
- ``canonicalize``: the crawl's own identity (the seen set, the frontier, the learner), which adds
  what crawlers learn the hard way: session ids and tracking parameters do not make a new page.
"""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import SplitResult, parse_qsl, urldefrag, urlencode, urljoin, urlsplit, urlunsplit

from w3lib.url import canonicalize_url, safe_url_string

#: Query parameters that identify a visitor or a campaign, never a page.
VOLATILE_PARAMS = re.compile(
    r"^(utm_[a-z]+|gclid|fbclid|mc_eid|mc_cid|sid|sessionid|session_id|phpsessid|jsessionid|"
    r"aspsessionid[a-z]*|cfid|cftoken)$",
    re.IGNORECASE,
)
#: Session ids in the path, e.g. ``/page;jsessionid=ABC`` or ``/(S(abc))/page``.
PATH_SESSION = re.compile(r";(jsessionid|phpsessid|sid|sessionid)=[^/?#]*", re.IGNORECASE)
DEFAULT_PORTS = {"http": 80, "https": 443}
TOKEN_SPLIT = re.compile(r"[^a-z0-9]+")


def _split(url: str) -> SplitResult:
    """``urlsplit(url)``, or no parts at all for a URL it rejects (``http://[::1``, ``http://[zz]/``):
    the words and segments of a URL are read from sitemaps and pages, and must never raise."""
    try:
        return urlsplit(url)
    except ValueError:
        return SplitResult("", "", "", "", "")


def _w3lib_form(url: str) -> str | None:
    """w3lib's canonical form, fragment dropped; None when w3lib cannot parse the URL."""
    try:
        return canonicalize_url(url, keep_fragments=False)
    except Exception:  # noqa: BLE001 - w3lib raises several kinds on malformed URLs
        return None


def w3lib_canonical(url: str) -> str:
    """w3lib's canonical form of ``url`` (fragment dropped), or ``url`` itself when w3lib cannot
    parse it (a malformed URL stays its own key). Keeps what ``canonicalize`` drops (session ids,
    tracking parameters, an explicit default port): two URLs with the same form are one request
    to Scrapy's fingerprint. The key labels files are matched under."""
    form = _w3lib_form(url)
    return url if form is None else form


def url_key(url: str) -> str:
    """The key a recorded web looks ``url`` up by: ``w3lib_canonical`` of the stripped URL, with
    the scheme's default port dropped and an empty path made ``/`` (a malformed URL: itself,
    stripped). ``HTTP://Site.TEST:80/a?y=2&x=1#f`` -> ``http://site.test/a?x=1&y=2``. A
    trailing-slash variant is another key, as it is another URL to a server."""
    url = url.strip()
    form = _w3lib_form(url)
    if form is None:
        return url
    parts = urlsplit(form)
    if not parts.hostname:  # nothing a server answers: its own key (``http:0/.`` -> ``http:///0/.`` -> ...)
        return url
    netloc = parts.netloc.lower()
    if (parts.scheme == "http" and netloc.endswith(":80")) or (parts.scheme == "https" and netloc.endswith(":443")):
        netloc = netloc.rsplit(":", 1)[0]
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


#: URLs each of the per-URL caches below holds. The URLs asked for again soon are the links a
#: site repeats on its pages; a cache as big as a crawl's URLs only grows with it (at 65,536 URLs
#: the three took 10-12 MiB each besides the URLs they keep alive, and filled over the first ten
#: minutes of a soak). Over a soak crawl's 330,000 links in order, this size hits half the time
#: (0.69 at 65,536), ~15 us a link more: canonicalize costs 40-80 us a miss.
URL_CACHE = 16384

#: A URL that urlsplit and the URL standard split alike: http(s), a plain host, RFC 3986 characters.
#: A Request's URL (w3lib made it safe) nearly always is one, and skips w3lib's reading (~14 us).
_SPLITS_ALIKE = re.compile(r"https?://[A-Za-z0-9.-]+(:[0-9]*)?([/?#][A-Za-z0-9._~!$&'()*+,;=:@%/?#-]*)?\Z")


@lru_cache(maxsize=URL_CACHE)
def canonicalize(url: str) -> str:
    """The canonical form under which a URL is seen, deduplicated and counted."""
    url = PATH_SESSION.sub("", url).strip()  # stripped last: ``x ;sid=1`` is ``x``, not ``x `` then ``x``
    try:
        # split as the URL standard reads it (w3lib, as Scrapy's Request does): urlsplit alone sees a
        # path in ``http:\\host/a``, and the form built from that is not its own canonical form
        parts = urlsplit(url if _SPLITS_ALIKE.match(url) else safe_url_string(url))
    except (UnicodeEncodeError, ValueError):  # a lone surrogate, a bad IPv6 literal or port: its own key
        return url
    if not (parts.scheme and parts.hostname):
        # no scheme or no host: nothing a crawler fetches, its own key (a form built for it need not
        # be its own form: w3lib unquotes ``http%41:x`` into a scheme, ``http:////`` loses a slash)
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if ":" in host:  # an IPv6 literal: urlsplit gives it without the brackets a URL needs
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port in (None, DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    query = parts.query
    if query:
        pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not VOLATILE_PARAMS.match(k)]
        query = urlencode(pairs)
    path = parts.path or "/"
    form = _w3lib_form(urlunsplit((scheme, netloc, path, query, "")))
    return url if form is None else form


#: The common shape of a canonical URL: lower-case http(s), a plain host name, no port or user, a
#: path without the characters urlsplit removes. ``_host_and_path`` reads host and path straight
#: from it; any other URL goes through urlsplit.
_PLAIN_URL = re.compile(r"https?://([a-z0-9.-]+)(/[^?#\t\r\n]*)?")


def _host_and_path(url: str) -> tuple[str, str] | None:
    """(host name, path) of a URL of the common shape, exactly as urlsplit gives them; None for
    any other URL. Background re-scoring asks for the host and path prefix of up to 20,000 queued
    URLs per learner update, far more than the caches hold: urlsplit on each cost ~6 us."""
    m = _PLAIN_URL.match(url)
    if m is None:
        return None
    end = m.end()
    if end < len(url) and url[end] not in "?#":
        return None
    return m.group(1), m.group(2) or ""


@lru_cache(maxsize=URL_CACHE)
def host_key(url: str) -> str:
    """The politeness unit: host name, with the port when it is not the scheme's default."""
    plain = _host_and_path(url)
    if plain is not None:
        return plain[0].rstrip(".")
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").rstrip(".")
        port = parts.port
    except ValueError:
        return ""
    if port is None or port == DEFAULT_PORTS.get(parts.scheme.lower()):
        return host
    return f"{host}:{port}"


def is_part_of(url: str, page: str) -> bool:
    """``url`` lies in the directory of ``page`` or below it, on the same host: one of the page's
    parts (a course's syllabus and homework, a section's articles). A page at the top of its host
    has no parts: everything on the host would be one."""
    try:
        target, source = urlsplit(url), urlsplit(page)
    except ValueError:
        return False
    directory = source.path[:source.path.rfind("/") + 1]
    return (directory not in ("", "/") and host_key(url) == host_key(page)
            and target.path.startswith(directory) and target.path != source.path)


_PLAIN_NETLOC = re.compile(r"[A-Za-z0-9.-]+(:[0-9]*)?\Z")


def absolute_http_url(base: str, href: str) -> str | None:
    """``href`` resolved against ``base``, fragment removed, when it is an http(s) URL Scrapy can
    make a request of; else None. A link Scrapy refuses (a port out of range, ``http://[::1]x/``)
    would raise out of the spider's callback and lose the rest of the page with it."""
    try:
        absolute = urldefrag(urljoin(base, href))[0]
        parts = urlsplit(absolute)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        absolute.encode("utf-8")  # raises UnicodeEncodeError for a lone surrogate
        if not _PLAIN_NETLOC.match(parts.netloc) and not urlsplit(safe_url_string(absolute)).hostname:
            # read as Scrapy's Request reads it (w3lib, the URL standard): ``http://\\`` has no host,
            # ``http://[::1]x/`` raises
            return None
    except (ValueError, UnicodeError):
        return None
    return absolute


def robots_url(url: str) -> str:
    """Where the robots.txt that governs ``url`` lives."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))


def path_segments(url: str) -> list[str]:
    return _segments(url, _host_and_path(url))


def _segments(url: str, plain: tuple[str, str] | None) -> list[str]:
    """The path segments of ``url``; ``plain`` is its ``_host_and_path`` (urlsplit when None)."""
    path = plain[1] if plain is not None else _split(url).path
    return [s for s in path.split("/") if s]


@lru_cache(maxsize=URL_CACHE)
def path_prefix(url: str, depth: int = 1) -> str:
    """``host/first-segment``: the unit whose yield the learner tracks below the host."""
    return host_and_prefix(url, depth)[1]


def host_and_prefix(url: str, depth: int = 1) -> tuple[str, str]:
    """``(host_key(url), path_prefix(url, depth))`` from one parse of the URL, not cached: background
    re-scoring asks for both for more queued URLs than the caches hold."""
    plain = _host_and_path(url)
    host = host_key(url) if plain is None else plain[0].rstrip(".")
    segs = _segments(url, plain)
    # a trailing file name is not a directory prefix
    if segs and "." in segs[-1]:
        segs = segs[:-1]
    return host, host + "/" + "/".join(segs[:depth])


def url_tokens(url: str) -> list[str]:
    """Words in a URL's host, path and query (``/science/astronomy-news.html`` ->
    science, astronomy, news, html)."""
    parts = _split(url.lower())
    tokens = TOKEN_SPLIT.split(parts.path + " " + parts.query)
    return [t for t in tokens if t and not t.isdigit() and len(t) < 40]


def extension(url: str) -> str:
    """The file extension of the URL's path, lower-case without the dot ('' when none)."""
    last = _split(url).path.rsplit("/", 1)[-1]
    if "." not in last:
        return ""
    return last.rsplit(".", 1)[-1].lower()
