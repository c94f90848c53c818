"""A recorded web: the responses of a WARC (or of a dict), looked up by URL.

The replay proxy answers from it and the link graph is built from it, so both agree on which
URLs exist. Lookup tolerates the differences a crawler's canonicalisation introduces (query
order, percent-encoding, host case, default port, fragment) but not a different path: a
trailing-slash variant is a different URL, which is what the recorded 301s are for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping
from urllib.parse import urljoin, urlsplit

from focuscrawl.urls import url_key

logger = logging.getLogger(__name__)

#: Headers that describe the framing of the original transfer, not the stored body.
FRAMING_HEADERS = {"content-length", "transfer-encoding", "content-encoding", "connection", "keep-alive"}
REDIRECT_STATUSES = {301, 302, 303, 307, 308}


class RecordError(ValueError):
    """A WARC or record set that cannot be read (missing file, not a WARC)."""


def host_of(url: str) -> str:
    """The host of a URL as a recorded web keys it: the netloc of its ``url_key`` (lower-case,
    no default port)."""
    return urlsplit(url_key(url)).netloc


@dataclass(frozen=True)
class RecordedResponse:
    """One stored response; ``body`` is the decoded entity (no transfer or content coding)."""

    url: str
    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes

    def header(self, name: str, default: str | None = None) -> str | None:
        lname = name.lower()
        for key, value in self.headers:
            if key.lower() == lname:
                return value
        return default

    @property
    def content_type(self) -> str:
        return self.header("Content-Type", "") or ""

    @property
    def location(self) -> str | None:
        """The absolute redirect target of a 3xx response, else None."""
        loc = self.header("Location")
        if self.status in REDIRECT_STATUSES and loc:
            return urljoin(self.url, loc.strip())
        return None

    @property
    def is_html(self) -> bool:
        ctype = self.content_type.lower()
        return not ctype or "html" in ctype


def _clean_headers(headers: Iterable[tuple[str, str]], keep_content_encoding: bool) -> tuple:
    out = []
    for name, value in headers:
        lname = name.lower()
        if lname == "content-encoding" and keep_content_encoding:
            out.append((name, value))
        elif lname not in FRAMING_HEADERS:
            out.append((name, value))
    return tuple(out)


def _looks_like_warc(path: Path) -> bool:
    """A WARC starts with ``WARC/`` (inside gzip for .warc.gz); warcio alone accepts junk."""
    import zlib

    with path.open("rb") as fh:
        head = fh.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 16)
        except zlib.error:
            return False
    return head.lstrip()[:5] == b"WARC/"


class RecordedWeb:
    """Recorded responses by exact URL, with a canonical-key index for tolerant lookup."""

    def __init__(self, responses: Iterable[RecordedResponse] = ()):
        self._exact: dict[str, RecordedResponse] = {}
        self._by_key: dict[str, RecordedResponse] = {}
        for resp in responses:
            self.add(resp)

    def add(self, resp: RecordedResponse) -> None:
        """Add a response; the first one recorded for a URL (or a key) wins."""
        if resp.url in self._exact:
            return
        self._exact[resp.url] = resp
        self._by_key.setdefault(url_key(resp.url), resp)

    # --- constructors ------------------------------------------------------------------------

    @classmethod
    def from_records(cls, records: Mapping[str, tuple]) -> "RecordedWeb":
        """Build from ``{url: (status, [(name, value), ...], body_bytes)}``.

        The body is sent as given, so a Content-Encoding header is kept; Content-Length and
        Transfer-Encoding are dropped (the proxy frames the body itself).
        """
        web = cls()
        for url, record in records.items():
            try:
                status, headers, body = record
                web.add(RecordedResponse(
                    url=str(url), status=int(status),
                    headers=_clean_headers(((str(k), str(v)) for k, v in headers), True),
                    body=bytes(body),
                ))
            except (TypeError, ValueError) as exc:
                raise RecordError(f"bad record for {url!r}: expected (status, headers, body): {exc}")
        return web

    @classmethod
    def from_warcs(cls, paths: Iterable[str | Path]) -> "RecordedWeb":
        """Read the ``response`` records of WARC files (gzipped or not) with warcio.

        Bodies are decoded (chunked and gzip/deflate undone by warcio's content stream), so the
        framing headers of the original transfer are dropped; status, other headers and
        Location are kept. Records warcio cannot read are skipped with a warning.
        """
        from warcio.archiveiterator import ArchiveIterator
        from warcio.exceptions import ArchiveLoadFailed

        web = cls()
        for path in paths:
            path = Path(path)
            if not path.is_file():
                raise RecordError(f"WARC file not found: {path}")
            if not _looks_like_warc(path):
                raise RecordError(f"{path} is not a readable WARC file (no WARC/ header)")
            try:
                with path.open("rb") as fh:
                    for record in ArchiveIterator(fh):
                        if record.rec_type != "response" or record.http_headers is None:
                            continue
                        url = record.rec_headers.get_header("WARC-Target-URI")
                        if not url:
                            continue
                        try:
                            status = int(record.http_headers.get_statuscode())
                            body = record.content_stream().read()
                        except Exception as exc:  # a broken record must not lose the whole WARC
                            logger.warning("skipping unreadable WARC record for %s: %s", url, exc)
                            continue
                        web.add(RecordedResponse(
                            url=url.strip(), status=status,
                            headers=_clean_headers(record.http_headers.headers, False), body=body,
                        ))
            except ArchiveLoadFailed as exc:
                raise RecordError(f"{path} is not a readable WARC file: {exc}".splitlines()[0])
        return web

    # --- lookup ------------------------------------------------------------------------------

    def lookup(self, url: str) -> RecordedResponse | None:
        """The response recorded for ``url``: exact URL first, then the canonical key."""
        resp = self._exact.get(url)
        if resp is None:
            resp = self._by_key.get(url_key(url))
        return resp

    def __contains__(self, url: str) -> bool:
        return self.lookup(url) is not None

    def __len__(self) -> int:
        return len(self._exact)

    def __iter__(self):
        return iter(self._exact.values())

    def hosts(self) -> set[str]:
        return {host_of(url) for url in self._exact}
