"""The HTTP shape of a demo web record: ``(status, headers, body)``, as ``RecordedWeb`` takes it."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import format_datetime

Record = tuple[int, list[tuple[str, str]], bytes]

#: The date every response claims to be served on: fixed, so a seed gives byte-identical pages.
SERVED_AT = datetime(2026, 3, 14, 12, 0, 0, tzinfo=timezone.utc)
REASON_PHRASES = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}


def response(status: int, ctype: str, body: bytes, extra: list[tuple[str, str]] | None = None) -> Record:
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body))),
               ("Date", format_datetime(SERVED_AT, usegmt=True)), ("Server", "focuscrawl-demo/1.0")]
    return status, headers + list(extra or []), body


def header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name.lower():
            return value
    return None


def is_html(headers: list[tuple[str, str]]) -> bool:
    return "html" in (header(headers, "Content-Type") or "").lower()
