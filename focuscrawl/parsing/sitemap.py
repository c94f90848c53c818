"""Sitemap bytes (XML, or gzip of it) to the URLs they list, for the spider's ``parse_sitemap``.

Scrapy's ``Sitemap`` reads the XML: lxml in recover mode with entities never resolved and no
network, so neither an external entity (XXE) nor a billion laughs gets expanded. Around it, what
a sitemap from an untrusted host needs: gunzip with a size cap (a gzip bomb stops there), at most
``max_urls`` entries, and only URLs a Request can be made of (relative ones resolved against the
sitemap's own URL): one ``<loc>`` Scrapy refuses would otherwise raise out of the callback and
lose every other URL of the sitemap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from focuscrawl.urls import absolute_http_url

#: The sitemap protocol's limit on an uncompressed sitemap; the cap when DOWNLOAD_MAXSIZE is 0
#: (Scrapy's "no limit"), which would let a 10 MB gzip bomb inflate to 10 GB.
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
GZIP_MAGIC = b"\x1f\x8b\x08"


class SitemapError(ValueError):
    """A body that is no sitemap to read: a broken or oversized archive, not XML."""


@dataclass
class SitemapLinks:
    kind: str  # the root element: "urlset", "sitemapindex" (other names: read as a urlset)
    urls: list[str] = field(default_factory=list)


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
    except Exception:  # noqa: BLE001 - XML broken past recovery midway: keep the URLs before it
        pass
    return links
