"""Sitemap bytes (XML, or gzip of it) to the URLs they list, for the spider's ``parse_sitemap``.

Scrapy's ``Sitemap`` reads the XML: lxml in recover mode with entities never resolved and no
network, so neither an external entity (XXE) nor a billion laughs gets expanded. Around it, what
a sitemap from an untrusted host needs: gunzip with a size cap (a gzip bomb stops there), at most
``max_urls`` entries, and only URLs a Request can be made of (relative ones resolved against the
sitemap's own URL): one ``<loc>`` Scrapy refuses would otherwise raise out of the callback and
lose every other URL of the sitemap.

Each URL comes with what the sitemap says of its freshness (``SitemapEntry``): ``lastmod`` in
epoch seconds, ``changefreq``, ``priority``, each None when absent or unreadable, as a sitemap's
freshness hints are as often wrong as right and never worth losing its URLs over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from focuscrawl.urls import absolute_http_url

#: The sitemap protocol's limit on an uncompressed sitemap; the cap when DOWNLOAD_MAXSIZE is 0
#: (Scrapy's "no limit"), which would let a 10 MB gzip bomb inflate to 10 GB.
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b\x08"
#: The protocol's words for how often a page changes.
CHANGEFREQS = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
#: W3C datetime's reduced forms, a year (``2004``) or a year and month (``2004-12``), which
#: ``datetime.fromisoformat`` refuses: read as their first day.
_YEAR_OR_MONTH = re.compile(r"[0-9]{4}(-[0-9]{2})?")


class SitemapError(ValueError):
    """A body that is no sitemap to read: a broken or oversized archive, not XML."""


@dataclass
class SitemapEntry:
    url: str  # absolute http(s), fragment removed
    lastmod: float | None = None  # epoch seconds
    changefreq: str | None = None  # one of CHANGEFREQS
    priority: float | None = None  # in [0, 1]


@dataclass
class SitemapLinks:
    kind: str  # the root element: "urlset", "sitemapindex" (other names: read as a urlset)
    urls: list[str] = field(default_factory=list)
    entries: list[SitemapEntry] = field(default_factory=list)  # entries[i].url == urls[i]


def read_sitemap(body: bytes, url: str, max_urls: int, max_bytes: int = 0) -> SitemapLinks:
    """The first ``max_urls`` followable URLs of the sitemap ``body`` fetched from ``url``.
    ``max_bytes`` caps the uncompressed size (DOWNLOAD_MAXSIZE; 0 or more than the protocol's
    50 MiB: 50 MiB). Raises SitemapError when there is nothing to read."""
    cap = min(max_bytes, MAX_SITEMAP_BYTES) if max_bytes > 0 else MAX_SITEMAP_BYTES
    body = bytes(body or b"")
    if body[:3] == GZIP_MAGIC:
        try:
            body = gunzip(body, max_size=cap)
        except Exception as exc:  # noqa: BLE001 - zlib, gzip and size errors alike: a broken archive
            raise SitemapError(f"cannot gunzip: {exc}") from None
    if len(body) > cap:
        raise SitemapError(f"{len(body)} bytes, over the cap of {cap}")
    try:
        sitemap = Sitemap(body)
    except Exception as exc:  # noqa: BLE001 - lxml raises several kinds on what is not XML
        raise SitemapError(f"not XML: {exc}") from None
    links = SitemapLinks(sitemap.type)
    try:
        for entry in sitemap:
            if len(links.urls) >= max_urls:
                break
            loc = (entry.get("loc") or "").strip()
            absolute = absolute_http_url(url, loc) if loc else None  # "" would resolve to the sitemap
            if absolute:
                links.urls.append(absolute)
                links.entries.append(_entry(absolute, entry))
    except Exception:  # noqa: BLE001 - XML broken past recovery midway: keep the URLs before it
        pass
    return links


def _entry(absolute: str, fields: dict) -> SitemapEntry:
    """A ``<url>`` (or an index's ``<sitemap>``) as Scrapy's Sitemap gives it: its child
    elements' stripped texts by local name."""
    return SitemapEntry(
        url=absolute,
        lastmod=parse_lastmod(fields.get("lastmod")),
        changefreq=_changefreq(fields.get("changefreq")),
        priority=_priority(fields.get("priority")),
    )


def parse_lastmod(text: str | None) -> float | None:
    """A W3C datetime (the sitemap protocol's format) in epoch seconds; None when unreadable.

    ``datetime.fromisoformat`` (3.11) reads the full date, date and minutes, seconds and
    fractions, with ``Z`` or an offset; the year and year-month forms it refuses are read as
    their first day. A time with no offset (which W3C does not allow, and sitemaps write) is
    taken as UTC, as is a date alone. It also accepts ISO forms W3C lacks (``20040101``, week
    dates), which are as readable. An RFC 822 date (``Tue, 10 Jun 2025 09:41:01 GMT``, which
    a few sitemaps write) is not W3C's format: None.
    """
    text = (text or "").strip()
    if not text:
        return None
    if _YEAR_OR_MONTH.fullmatch(text):
        text += "-01" if len(text) == 7 else "-01-01"
    try:
        when = datetime.fromisoformat(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        return when.timestamp()
    except (ValueError, OverflowError):  # garbage, a 31 February, a year 1 minus an offset
        return None


def _changefreq(text: str | None) -> str | None:
    word = (text or "").strip().lower()
    return word if word in CHANGEFREQS else None


def _priority(text: str | None) -> float | None:
    try:
        value = float((text or "").strip())
    except ValueError:
        return None
    return value if 0.0 <= value <= 1.0 else None  # NaN fails both comparisons
