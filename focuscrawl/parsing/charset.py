"""Bytes to text with a charset that survives lying HTTP headers.

Order of trust: a byte-order mark, then the page's own ``<meta charset>`` (or http-equiv), then
the HTTP header. Servers of every era send ``ISO-8859-1`` (or nothing) by default whatever the
page really is, so when the charset we would use is such a single-byte default and the body has
non-ASCII bytes, we check whether UTF-8 or a charset detected by charset-normalizer explains the
bytes clearly better (a Russian windows-1251 or a Japanese Shift_JIS page served as Latin-1).
Genuine Latin-1 pages stay Latin-1 (decoded as windows-1252, as browsers do). Never raises.
"""

from __future__ import annotations

import codecs

from charset_normalizer import from_bytes
from w3lib.encoding import (
    html_body_declared_encoding,
    http_content_type_encoding,
    read_bom,
    resolve_encoding,
)

#: What a missing or default-looking declaration decodes as (the web's de-facto Latin-1).
DEFAULT_ENCODING = "cp1252"
#: Declarations that servers and editors emit by default; they prove nothing about the bytes.
WEAK_ENCODINGS = frozenset({"cp1252", "latin_1", "iso8859_1", "ascii"})
#: Detection looks at this much of the body: enough to see the text, bounded in time.
DETECT_SAMPLE_BYTES = 256 * 1024
#: A detected charset replaces the default only when the default looks this much messier...
CHAOS_MARGIN = 0.1
#: ...and only with this much evidence: a few stray bytes fit any charset.
MIN_NON_ASCII_BYTES = 12
#: Python codecs a page may name but no page is written in: escape decoders (they read a page's
#: backslashes as escapes, and warn on each they do not know), IDNA, UTF-7 (no browser decodes
#: it), "undefined" (raises on any byte) and the bytes-to-bytes ones (base64, zlib...).
NOT_CHARSETS = frozenset({
    "unicode-escape", "raw-unicode-escape", "punycode", "idna", "utf-7", "undefined",
    "base64", "bz2", "hex", "quopri", "rot-13", "uu", "zlib",
})


def decode_body(
    body: bytes, declared_encoding: str | None = None, content_type: str | None = None
) -> tuple[str, str]:
    """Return ``(text, encoding_used)`` for an HTML body; bad bytes become U+FFFD.

    ``declared_encoding`` is a charset the caller already knows from the transport (it wins
    over ``content_type``'s ``charset=``); the page's own ``<meta>`` outranks both.
    """
    body = bytes(body or b"")
    bom_encoding, bom = read_bom(body)
    if bom_encoding:
        return _decode(body[len(bom):], bom_encoding)

    encoding = _known(html_body_declared_encoding(body))
    if encoding and encoding.startswith(("utf_16", "utf_32", "utf-16", "utf-32")):
        encoding = "utf-8"  # a <meta> readable as ASCII cannot be UTF-16 (as the HTML spec says)
    if encoding is None:
        encoding = _known(declared_encoding) or _known(
            http_content_type_encoding(content_type) if content_type else None
        )
    if encoding is None or encoding in WEAK_ENCODINGS:
        encoding = _sniff(body, encoding or DEFAULT_ENCODING)
    return _decode(body, encoding)


def _known(name: str | None) -> str | None:
    """The Python codec name for a declared charset, or None when unknown or absent."""
    if not name:
        return None
    resolved = resolve_encoding(name.strip().strip("\"'"))
    if not resolved:
        return None
    try:
        name = codecs.lookup(resolved).name
    except LookupError:
        return None
    return None if name in NOT_CHARSETS else name


def _sniff(body: bytes, fallback: str) -> str:
    """Pick the charset for a body whose declaration is a weak default (or absent)."""
    if body.isascii():
        return DEFAULT_ENCODING if fallback in WEAK_ENCODINGS else fallback
    sample = body[:DETECT_SAMPLE_BYTES]
    if _is_utf8(sample):
        return "utf-8"
    if len(sample) - sum(1 for byte in sample if byte < 0x80) < MIN_NON_ASCII_BYTES:
        return fallback if fallback not in WEAK_ENCODINGS else DEFAULT_ENCODING
    try:
        best = from_bytes(sample).best()
        if best is None:
            return DEFAULT_ENCODING
        detected = _known(best.encoding)
        if detected is None or detected in WEAK_ENCODINGS:
            return DEFAULT_ENCODING
        # The default stays unless it is clearly messier than the detected charset: a French
        # page is "cp1257" or "cp1250" to a detector about as often as it is cp1252.
        as_default = from_bytes(sample, cp_isolation=[DEFAULT_ENCODING]).best()
        if as_default is not None and as_default.chaos <= best.chaos + CHAOS_MARGIN:
            return DEFAULT_ENCODING
        return detected
    except Exception:  # a detector failure must never lose the page
        return DEFAULT_ENCODING


def _is_utf8(sample: bytes) -> bool:
    """True when the sample is valid UTF-8 (allowing a multi-byte character cut at the end)."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
        return True
    except UnicodeDecodeError:
        return False


def _decode(body: bytes, encoding: str) -> tuple[str, str]:
    try:
        return body.decode(encoding, errors="replace"), encoding
    except (LookupError, ValueError):
        return body.decode(DEFAULT_ENCODING, errors="replace"), DEFAULT_ENCODING
