"""HTTP and W3C dates and conditional requests (ETag, Last-Modified, 304), as the changing web
(``replay.changing``) answers them."""

from __future__ import annotations

import hashlib
import math
import re
import time
from datetime import timezone
from email.utils import formatdate, parsedate_to_datetime
from typing import Mapping


def http_date(t: float) -> str:
    """An HTTP date (IMF-fixdate), which keeps whole seconds (``t`` rounded down)."""
    return formatdate(math.floor(t), usegmt=True)


def w3c_datetime(t: float) -> str:
    """A W3C datetime in UTC to the second, as sitemaps and Atom write them."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(math.floor(t)))


def parse_http_date(value: str) -> float | None:
    """Epoch seconds of an HTTP date, None when it is not one (such a header is ignored)."""
    try:
        parsed = parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.timestamp()
    except (OverflowError, ValueError, OSError):
        return None


def _header(headers, name: str) -> str | None:
    """A request header by case-insensitive name, from a mapping or (name, value) pairs."""
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    lname = name.lower()
    try:
        for key, value in pairs:
            if str(key).lower() == lname:
                return str(value)
    except (TypeError, ValueError):
        return None
    return None


_ETAG = re.compile(r'(?:W/)?"([^"]*)"')


def etag_matches(if_none_match: str, etag: str) -> bool:
    """Whether an If-None-Match value matches ``etag`` (RFC 9110 13.1.2: weak comparison, so a
    ``W/`` prefix does not matter; ``*`` matches any current representation)."""
    if if_none_match.strip() == "*":
        return True
    wanted = etag.removeprefix("W/").strip('"')
    return any(tag == wanted for tag in _ETAG.findall(if_none_match))


def not_modified(request_headers, etag: str, last_modified: float) -> bool:
    """Whether a GET or HEAD with these headers gets 304 (RFC 9110 13.2.2: If-None-Match, when
    present, decides and If-Modified-Since is ignored; an unparsable date is ignored)."""
    if_none_match = _header(request_headers, "If-None-Match")
    if if_none_match is not None:
        return etag_matches(if_none_match, etag)
    since = _header(request_headers, "If-Modified-Since")
    if since is None:
        return False
    since_t = parse_http_date(since)
    return since_t is not None and math.floor(last_modified) <= since_t


def validators(etag: str, last_modified: float) -> list[tuple[str, str]]:
    """The headers that say which version a response is."""
    return [("ETag", etag), ("Last-Modified", http_date(last_modified))]


def strong_etag(*parts) -> str:
    """A strong ETag that names ``parts`` (equal parts, equal tags)."""
    data = "\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass")
    return '"' + hashlib.blake2b(data, digest_size=10).hexdigest() + '"'
