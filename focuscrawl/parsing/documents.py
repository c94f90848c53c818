"""PDF, Word (.docx) and OpenDocument text (.odt) bodies to a title, text and links.

Which library reads what, and why (figures measured on this project's 2-core machine, with a
benchmark running beside it, best of three):

* **PDF: pypdfium2** (Apache-2.0 / BSD-3, a build of Google's PDFium, the reader in Chrome).
  A 53-page, 452 KB pdfTeX manual, all text and link annotations: 118 ms against 1,479 ms with
  pypdf (12x); 44 generated pages: 63 ms against 338 ms. The text is the same to a few
  characters. PDFium also reads more of a damaged file: of 300 PDFs with 10 bytes cut out at a
  random place it read 87%, pypdf 53%. On 1,500 PDFs with 1-20 random edits each (a real manual
  and a generated file), PDFium raised only its own error, never crashed, and took at most
  0.12 s on one; pypdf (BSD-3, pure Python, so it cannot crash the process) took up to 1.05 s,
  raised NotImplementedError and AttributeError besides its own errors, and has a history of
  infinite loops and quadratic cases on crafted files (CVE-2023-36464, CVE-2023-36810). PDFium
  is fuzzed without pause by OSS-Fuzz, as Chrome opens hostile PDFs, but it is native code: a
  bug in it could still take the process down, which only a child process with resource limits
  would contain (see the bounds below).
* **docx: python-docx** (MIT). It resolves the package the way Word does (the main part named by
  ``_rels/.rels`` and ``[Content_Types].xml``, not assumed to be ``word/document.xml``), reads the
  hyperlink relationships and the core properties, and parses with lxml without entities or
  network. Loading is 10x slower than lxml on ``word/document.xml`` alone (3,000 paragraphs and
  300 links, 57 KB: 254 ms against 24 ms), a price worth a correct reading of every package.
  The text is read from its element tree here, in one walk, with tables and text boxes.
* **odt: lxml on content.xml and meta.xml**, not odfpy (Apache-2.0 / GPL / LGPL): the same
  3,000 paragraphs read 5.7x faster (20 ms against 115 ms, 2.4 MB of Python memory against
  5.7 MB), and odfpy loads every member of the package, pictures included, into memory
  before anything can be checked; the XML of an ODF text is simple enough to walk directly.

Bounds, so that no body costs more than a few seconds or some tens of MB:

* the body is refused past ``max_bytes`` before anything parses it;
* a zip package (docx, odt) is refused on its central directory, read before any member: past
  MAX_ZIP_MEMBERS members, MAX_UNCOMPRESSED_BYTES declared uncompressed (a zip bomb), an XML
  member past MAX_XML_BYTES, an encrypted member. Then each member is inflated in small steps,
  nothing kept, and refused if it grows past its declared size: zipfile's ``read()`` inflates a
  member whole before cutting it to that size (a 118 KB docx lying so made it hold 199 MB);
  XML is parsed without entities, DTDs, network or libxml2's huge-tree mode;
* a PDF is refused past ``max_pages`` pages (counted before any page is read) and when it needs
  a password ("encrypted"; one encrypted with an empty user password, which every viewer opens
  without asking, is read). Text stops at ``max_chars`` characters, and extraction stops after
  ``max_seconds`` of wall time between two pages or two stretches of XML: what was read is kept
  and ``truncated`` says so. A single page that takes long is not interrupted (PDFium runs in
  C): a hard bound needs the caller to run this in a child process;
* anything a library raises on a hostile body becomes a DocumentError.

pypdfium2 is not thread-safe: call read_document from one thread (Scrapy's callbacks are), or
serialise the calls.
"""

from __future__ import annotations

import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from urllib.parse import urlsplit

from focuscrawl.parsing.document_text import (DOCUMENT_TYPES, DOCX_MAIN_TYPE, DOCX_TYPE, EXTENSIONS, GENERIC_TYPES,
                                               MAX_DOCUMENT_BYTES, MAX_SECONDS, MAX_UNCOMPRESSED_BYTES, ODT_TYPE, PDF_TYPE,
                                               SNIFF_BYTES, Bounds, DocumentError, ParsedDocument)
from focuscrawl.parsing.office import read_docx, read_odt
from focuscrawl.parsing.pdf import read_pdf


def read_document(
    body: bytes,
    url: str,
    content_type: str | None,
    *,
    max_bytes: int,
    max_pages: int = 200,
    max_chars: int = 2_000_000,
    max_seconds: float = MAX_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> ParsedDocument:
    """The title, text and links of the PDF, docx or odt ``body`` fetched from ``url``.

    ``max_bytes`` bounds the body (0: MAX_DOCUMENT_BYTES), ``max_pages`` a PDF's pages,
    ``max_chars`` the text kept, ``max_seconds`` (on ``clock``) the time spent extracting.

    Raises DocumentError, and nothing else, when the body is no document of these kinds, is
    broken, encrypted, a zip bomb, or past ``max_bytes`` or ``max_pages``.
    """
    body = bytes(body or b"")
    cap = max_bytes if max_bytes > 0 else MAX_DOCUMENT_BYTES
    if len(body) > cap:
        raise DocumentError(f"too big: {len(body):,} bytes (max {cap:,})")
    if not body:
        raise DocumentError("empty body")
    kind = document_kind(content_type, url, body[:SNIFF_BYTES])
    if kind is None:
        raise DocumentError("not a document (PDF, docx or odt)")
    bounds = Bounds(max_chars, max_seconds, clock)
    if kind == "pdf":
        return read_pdf(body, url, max_pages, bounds)
    return (read_docx if kind == "docx" else read_odt)(body, url, bounds)


# --- which kind ----------------------------------------------------------------------------------

def document_kind(content_type: str | None, url: str, body_prefix: bytes) -> str | None:
    """"pdf", "docx", "odt", or None when the response is none of them.

    The content type decides first, unless the body's first bytes (``body_prefix``, SNIFF_BYTES
    are enough) are plainly another document kind: a server's label can be wrong, ``%PDF-``
    cannot. A type that names something else (text/html) is believed unless the body starts as
    a document does; a missing or generic one (application/octet-stream) leaves it to the bytes,
    then to the URL's extension.
    """
    media_type = (content_type or "").split(";", 1)[0].strip().lower()
    # A PDF header after some junk is looked for only where the type allows a document: a page
    # about PDFs may quote "%PDF-" near its top.
    lenient = media_type in DOCUMENT_TYPES or media_type in GENERIC_TYPES
    sniffed = _sniff(bytes(body_prefix or b"")[:SNIFF_BYTES], lenient)
    if sniffed:
        return sniffed
    if media_type in DOCUMENT_TYPES:
        return DOCUMENT_TYPES[media_type]
    if media_type in GENERIC_TYPES:
        path = _split_path(url).lower()
        for extension, kind in EXTENSIONS.items():
            if path.endswith(extension):
                return kind
    return None


def _split_path(url: str) -> str:
    try:
        return urlsplit(url or "").path
    except ValueError:
        return ""


def _sniff(prefix: bytes, lenient: bool) -> str | None:
    """The kind the first bytes show: ``%PDF-`` at the start (``lenient``: within the first
    1,024 bytes, where Acrobat looks for it), or a zip whose first members show an ODF text (its
    stored ``mimetype`` member) or a docx (its ``[Content_Types].xml`` declaring a Word main
    part, or a ``word/document.xml`` member)."""
    if prefix.startswith(b"%PDF-") or (lenient and b"%PDF-" in prefix[:1024]):
        return "pdf"
    if not prefix.startswith(b"PK\x03\x04"):
        return None
    for name, method, data in _local_members(prefix):
        if name == b"mimetype" and method == zipfile.ZIP_STORED:
            rest = data[len(ODT_TYPE):len(ODT_TYPE) + 1]
            return "odt" if data.startswith(ODT_TYPE.encode()) and rest != b"-" else None
        if name == b"[Content_Types].xml":
            if DOCX_MAIN_TYPE in _inflate_prefix(method, data):
                return "docx"
        elif name == b"word/document.xml":
            return "docx"
    return None


def _local_members(prefix: bytes, most: int = 16):
    """(name, compression method, the member's bytes present in ``prefix``) of the zip's first
    local file headers, as far as ``prefix`` holds them."""
    pos = 0
    for _ in range(most):
        if prefix[pos:pos + 4] != b"PK\x03\x04" or len(prefix) < pos + 30:
            return
        flags, method = struct.unpack_from("<HH", prefix, pos + 6)
        size, = struct.unpack_from("<I", prefix, pos + 18)
        name_len, extra_len = struct.unpack_from("<HH", prefix, pos + 26)
        start = pos + 30 + name_len + extra_len
        yield prefix[pos + 30:pos + 30 + name_len], method, prefix[start:start + size]
        if flags & 0x08:  # sizes follow the data: where the next header starts is unknown
            return
        pos = start + size


def _inflate_prefix(method: int, data: bytes) -> bytes:
    if method == zipfile.ZIP_STORED:
        return data
    if method != zipfile.ZIP_DEFLATED:
        return b""
    try:  # raw deflate; the first 64 KB hold the declaration of the main part
        return zlib.decompressobj(-15).decompress(data, 64 * 1024)
    except zlib.error:  # a torn or hostile stream is simply not recognised
        return b""


__all__ = ["DOCUMENT_TYPES", "DOCX_TYPE", "DocumentError", "MAX_UNCOMPRESSED_BYTES", "ODT_TYPE", "PDF_TYPE",
           "ParsedDocument", "document_kind", "read_document"]
