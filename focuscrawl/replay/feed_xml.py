"""The XML documents the changing web (``replay.changing``) serves: RSS and Atom feeds of a host's
latest changes, sitemaps with their lastmod, changefreq and priority, and sitemap indexes."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

from focuscrawl.replay.validators import http_date, w3c_datetime

SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
ATOM_NS = "http://www.w3.org/2005/Atom"
_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
#: ``changefreq`` names and the interval each stands for. The protocol has nothing finer than
#: hourly, so "always" stands here for "every minute or so" (our hot pages).
_CHANGEFREQS = (("always", 60.0), ("hourly", 3600.0), ("daily", 86400.0), ("weekly", 604800.0),
                ("monthly", 2629800.0), ("yearly", 31557600.0))


def _xml_text(text: str) -> str:
    return _XML_ILLEGAL.sub("", text)


def _xml(root: ET.Element) -> bytes:
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _sub(parent: ET.Element, tag: str, text: str | None = None, **attrs) -> ET.Element:
    element = ET.SubElement(parent, tag, {k: _xml_text(v) for k, v in attrs.items()})
    if text is not None:
        element.text = _xml_text(text)
    return element


def changefreq(rate: float) -> str:
    """The sitemap ``changefreq`` nearest (on a log scale) to a page's mean interval."""
    if rate <= 0:
        return "never"
    interval = 1.0 / rate
    return min(_CHANGEFREQS, key=lambda item: abs(math.log(interval / item[1])))[0]


def sitemap_priority(url: str) -> str:
    """A site owner's priority from the page's depth (home 1.0, 0.2 less a level, at least 0.1):
    never from relevance, which the crawler is there to find out."""
    depth = len([s for s in urlsplit(url).path.split("/") if s])
    return f"{max(0.1, 1.0 - 0.2 * depth):.1f}"


def urlset(entries) -> bytes:
    """A sitemap of ``entries``: (loc, lastmod, changefreq, priority) each."""
    root = ET.Element("urlset", xmlns=SITEMAP_NS)
    for loc, lastmod, freq, priority in entries:
        entry = _sub(root, "url")
        _sub(entry, "loc", loc)
        _sub(entry, "lastmod", lastmod)
        _sub(entry, "changefreq", freq)
        _sub(entry, "priority", priority)
    return _xml(root)


def sitemap_index(locations) -> bytes:
    """A sitemap index of the sitemaps at ``locations``."""
    root = ET.Element("sitemapindex", xmlns=SITEMAP_NS)
    for loc in locations:
        _sub(_sub(root, "sitemap"), "loc", loc)
    return _xml(root)


def rss(host: str, origin: str, feed_url: str, items, updated: float) -> bytes:
    root = ET.Element("rss", version="2.0")
    channel = _sub(root, "channel")
    _sub(channel, "title", f"Changes on {host}")
    _sub(channel, "link", origin + "/")
    _sub(channel, "description", f"The latest changed pages of {host}")
    _sub(channel, "lastBuildDate", http_date(updated))
    for when, page, k, title, summary in items:
        item = _sub(channel, "item")
        _sub(item, "title", title)
        _sub(item, "link", page)
        _sub(item, "description", summary)
        _sub(item, "pubDate", http_date(when))
        _sub(item, "guid", f"{page}#version-{k}", isPermaLink="false")
    return _xml(root)


def atom(host: str, origin: str, feed_url: str, items, updated: float) -> bytes:
    root = ET.Element("feed", xmlns=ATOM_NS)
    _sub(root, "title", f"Changes on {host}")
    _sub(root, "id", feed_url)
    _sub(root, "updated", w3c_datetime(updated))
    _sub(root, "link", rel="self", href=feed_url)
    _sub(root, "link", rel="alternate", href=origin + "/")
    _sub(_sub(root, "author"), "name", host)
    for when, page, k, title, summary in items:
        entry = _sub(root, "entry")
        _sub(entry, "title", title)
        _sub(entry, "link", rel="alternate", href=page)
        _sub(entry, "id", f"{page}#version-{k}")
        _sub(entry, "updated", w3c_datetime(when))
        _sub(entry, "summary", summary)
    return _xml(root)


__all__ = ["ATOM_NS", "SITEMAP_NS", "atom", "changefreq", "rss", "sitemap_index", "sitemap_priority", "urlset"]
