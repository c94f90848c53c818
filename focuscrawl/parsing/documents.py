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

import ctypes
import io
import logging
import re
import struct
import time
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import lxml.etree

from focuscrawl.urls import absolute_http_url

logger = logging.getLogger(__name__)


def _pdfium():
    """pypdfium2 and its raw bindings, loaded at the first PDF (a native library: a crawl that
    meets none does not load it)."""
    import pypdfium2
    import pypdfium2.raw

    return pypdfium2, pypdfium2.raw


def _docx():
    """python-docx, loaded at the first docx (a tenth of a second of imports)."""
    import docx

    return docx

#: The most of a body read when the caller sets no limit (``max_bytes`` 0, DOWNLOAD_MAXSIZE's
#: "no limit").
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
#: Zip packages: members, declared uncompressed bytes in all, and bytes of one XML member. A Word
#: document with pictures has tens of members; python-docx holds every member in memory.
MAX_ZIP_MEMBERS = 2000
MAX_UNCOMPRESSED_BYTES = 64 * 1024 * 1024
MAX_XML_BYTES = 16 * 1024 * 1024
#: Wall time spent extracting one document before stopping with what was read.
MAX_SECONDS = 5.0
#: Links kept from one document (a PDF catalogue can hold tens of thousands).
MAX_LINKS = 1000
#: A URL longer than this (in a PDF action or its text) is no link worth following.
MAX_URL_CHARS = 4096
#: A title is cut at this many characters.
MAX_TITLE_CHARS = 300
#: How many of a body's first bytes document_kind needs.
SNIFF_BYTES = 4096

PDF_TYPE = "application/pdf"
DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
ODT_TYPE = "application/vnd.oasis.opendocument.text"
#: Media types that name a document kind, with the aliases servers still send.
DOCUMENT_TYPES = {
    PDF_TYPE: "pdf", "application/x-pdf": "pdf", "application/acrobat": "pdf",
    DOCX_TYPE: "docx",
    ODT_TYPE: "odt",
}
#: Media types that say nothing of what a body is: the bytes, then the URL's extension, decide.
GENERIC_TYPES = frozenset({
    "", "application/octet-stream", "binary/octet-stream", "application/download",
    "application/x-download", "application/force-download", "application/zip",
    "application/x-zip-compressed", "application/unknown",
})
EXTENSIONS = {".pdf": "pdf", ".docx": "docx", ".odt": "odt"}
#: The content type of a docx main part, as ``[Content_Types].xml`` declares it.
DOCX_MAIN_TYPE = b"application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
R_ID = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id"
MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
EXTENDED_PROPERTIES = "{http://schemas.openxmlformats.org/officeDocument/2006/extended-properties}"
TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"
META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
DRAW = "{urn:oasis:names:tc:opendocument:xmlns:drawing:1.0}"
DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
HYPERLINK_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink"

#: A field code that makes a hyperlink: ``HYPERLINK "http://..." \o "tip"``.
_FIELD_HYPERLINK = re.compile(r'HYPERLINK\s+"([^"]+)"|HYPERLINK\s+(\S+)')
#: Control characters (tab and newline kept) and the non-characters some PDFs map glyphs to.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffe\uffff]")
_BLANK_LINES = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")


class DocumentError(ValueError):
    """A body that cannot be read as a document: not one, broken, encrypted, or past a bound.
    The message says which, in a few words."""


@dataclass
class ParsedDocument:
    kind: str  # "pdf" | "docx" | "odt"
    title: str = ""
    text: str = ""  # paragraphs on their own lines, pages (PDF) apart by a blank line
    links: list[str] = field(default_factory=list)  # absolute http(s), fragment removed, in order, once each
    pages: int = 0  # a PDF's pages; for docx and odt what their metadata says, 0 when it says nothing
    truncated: bool = False  # stopped at max_chars or max_seconds: the text (and links) are a prefix


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
    bounds = _Bounds(max_chars, max_seconds, clock)
    if kind == "pdf":
        return _read_pdf(body, url, max_pages, bounds)
    return (_read_docx if kind == "docx" else _read_odt)(body, url, bounds)


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


# --- bounds --------------------------------------------------------------------------------------

class _Bounds:
    """The text kept so far, cut at ``max_chars``, and the wall time left."""

    def __init__(self, max_chars: int, max_seconds: float, clock: Callable[[], float]):
        self.max_chars = max(0, max_chars)
        self.deadline = clock() + max_seconds
        self.clock = clock
        self.parts: list[str] = []
        self.chars = 0
        self.truncated = False

    def add(self, text: str) -> bool:
        """Keep ``text``; False once the text is full (the caller stops)."""
        room = self.max_chars - self.chars
        if len(text) > room:
            text = text[:room]
            self.truncated = True
        self.parts.append(text)
        self.chars += len(text)
        return not self.truncated

    def out_of_time(self) -> bool:
        if self.clock() > self.deadline:
            self.truncated = True
        return self.truncated

    def text(self) -> str:
        return _tidy("".join(self.parts))


def _tidy(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in _CONTROL.sub("", text).split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:MAX_TITLE_CHARS].strip()


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return _one_line(line)
    return ""


class _Links:
    """Absolute http(s) URLs in the order met, once each, at most MAX_LINKS."""

    def __init__(self, base: str):
        self.base = base
        self.urls: list[str] = []
        self.seen: set[str] = set()

    def add(self, href: str | None) -> None:
        href = (href or "").strip()
        if not href or len(href) > MAX_URL_CHARS or len(self.urls) >= MAX_LINKS:
            return
        url = absolute_http_url(self.base, href)
        if url and url not in self.seen:
            self.seen.add(url)
            self.urls.append(url)


# --- PDF -----------------------------------------------------------------------------------------

#: PDFium's load errors (FPDF_GetLastError) in words.
_PDFIUM_ERRORS = {1: "unknown error", 2: "cannot be opened", 3: "not a PDF or corrupted", 6: "page not found"}


def _read_pdf(body: bytes, url: str, max_pages: int, bounds: _Bounds) -> ParsedDocument:
    pdfium, pdfium_c = _pdfium()
    try:
        pdf = pdfium.PdfDocument(body)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code in (pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY):
            raise DocumentError("encrypted: a password is needed" if code == pdfium_c.FPDF_ERR_PASSWORD
                                else "encrypted with an unsupported security handler") from None
        raise DocumentError(f"broken PDF: {_PDFIUM_ERRORS.get(code, exc)}") from None
    except Exception as exc:  # noqa: BLE001 - ctypes and pypdfium2's checks raise other kinds
        raise DocumentError(f"broken PDF: {type(exc).__name__}") from None
    try:
        pages = len(pdf)
        if pages > max_pages:
            raise DocumentError(f"too many pages: {pages:,} (max {max_pages:,})")
        if pages == 0:
            raise DocumentError("broken PDF: no pages")
        title = _one_line(_pdf_metadata(pdf, "Title"))
        links = _Links(url)
        read = 0
        for index in range(pages):
            if bounds.out_of_time():
                break
            try:
                page_text = _pdf_page(pdf, index, links)
            except Exception as exc:  # noqa: BLE001 - one unreadable page costs that page only
                logger.debug("PDF %s: page %d skipped: %s", url, index + 1, exc)
                continue
            read += 1
            if not bounds.add(page_text + "\n\n"):
                break
        if not read:
            raise DocumentError("too slow: no page read in time" if bounds.truncated
                                else "broken PDF: no page readable")
        text = bounds.text()
        return ParsedDocument("pdf", title or _first_line(text), text, links.urls, pages, bounds.truncated)
    except DocumentError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever PDFium's wrapper raises mid-document
        raise DocumentError(f"broken PDF: {type(exc).__name__}") from None
    finally:
        pdf.close()


def _pdf_metadata(pdf, key: str) -> str:
    try:
        return pdf.get_metadata_value(key) or ""
    except Exception:  # noqa: BLE001 - a broken /Info dictionary means no title, not no document
        return ""


def _pdf_page(pdf, index: int, links: _Links) -> str:
    """One page's text; its URI link annotations, then the web addresses PDFium finds written in
    its text, go to ``links``."""
    page = pdf[index]
    try:
        _pdf_uri_links(pdf, page, links)
        textpage = page.get_textpage()
        try:
            text = textpage.get_text_bounded()
            _pdf_text_links(textpage, links)
        finally:
            textpage.close()
    finally:
        page.close()
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _pdf_uri_links(pdf, page, links: _Links) -> None:
    """The URI actions of the page's ``/Link`` annotations (internal destinations and other
    actions are no web links)."""
    pdfium_c = _pdfium()[1]
    position = ctypes.c_int(0)
    link = pdfium_c.FPDF_LINK()
    while len(links.urls) < MAX_LINKS and pdfium_c.FPDFLink_Enumerate(
            page.raw, ctypes.byref(position), ctypes.byref(link)):
        action = pdfium_c.FPDFLink_GetAction(link)
        if not action or pdfium_c.FPDFAction_GetType(action) != pdfium_c.PDFACTION_URI:
            continue
        size = pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, None, 0)  # with its NUL
        if not 1 < size <= MAX_URL_CHARS + 1:
            continue
        buffer = ctypes.create_string_buffer(size)
        pdfium_c.FPDFAction_GetURIPath(pdf.raw, action, buffer, size)
        raw = buffer.raw[:size - 1]
        try:
            links.add(raw.decode("utf-8"))
        except UnicodeDecodeError:  # the specification says 7-bit ASCII; some write Latin-1
            links.add(raw.decode("latin-1"))


def _pdf_text_links(textpage, links: _Links) -> None:
    """Web addresses written in the page's text (PDFium's own detection)."""
    pdfium_c = _pdfium()[1]
    web_links = pdfium_c.FPDFLink_LoadWebLinks(textpage.raw)
    if not web_links:
        return
    try:
        for index in range(pdfium_c.FPDFLink_CountWebLinks(web_links)):
            if len(links.urls) >= MAX_LINKS:
                break
            size = pdfium_c.FPDFLink_GetURL(web_links, index, None, 0)  # UTF-16 units, with the NUL
            if not 1 < size <= MAX_URL_CHARS + 1:
                continue
            buffer = (ctypes.c_ushort * size)()
            pdfium_c.FPDFLink_GetURL(web_links, index, buffer, size)
            links.add(bytes(buffer).decode("utf-16-le", "replace").rstrip("\x00"))
    finally:
        pdfium_c.FPDFLink_CloseWebLinks(web_links)


# --- zip packages ------------------------------------------------------------------------------

def _open_zip(body: bytes) -> zipfile.ZipFile:
    """The package, once its central directory shows it within bounds (see the module's
    docstring). The member count is read from the end record before zipfile builds an object
    per member."""
    members = _zip_member_count(body)
    if members > MAX_ZIP_MEMBERS:
        raise DocumentError(f"zip bomb: {members:,} members (max {MAX_ZIP_MEMBERS:,})")
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
        infos = archive.infolist()
    except Exception as exc:  # noqa: BLE001 - BadZipFile, but also ValueError, OSError, struct.error
        raise DocumentError(f"broken zip: {exc}"[:200]) from None
    total = 0
    for info in infos:
        total += info.file_size
        if info.flag_bits & 0x1:
            raise DocumentError("encrypted")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise DocumentError(f"broken zip: compression method {info.compress_type} (only stored and deflated)")
        if info.filename.endswith((".xml", ".rels")) and info.file_size > MAX_XML_BYTES:
            raise DocumentError(f"XML too big: {info.filename[:80]} is {info.file_size:,} bytes "
                                f"(max {MAX_XML_BYTES:,})")
    if total > MAX_UNCOMPRESSED_BYTES:
        raise DocumentError(f"zip bomb: {total:,} bytes uncompressed (max {MAX_UNCOMPRESSED_BYTES:,})")
    for info in infos:
        _check_inflated_size(body, info)
    return archive


def _check_inflated_size(body: bytes, info: zipfile.ZipInfo) -> None:
    """Refuse a deflated member that inflates past its declared size. zipfile cuts a member's
    data at that size, but ``read()`` inflates all its compressed bytes at once before cutting:
    a member declared 10 bytes whose 100 KB inflate to 100 MB costs 100 MB (deflate reaches
    1:1032). Inflated here in 64 KB steps, nothing kept; at most MAX_UNCOMPRESSED_BYTES in all,
    a few ms for a usual document."""
    start = info.header_offset
    if body[start:start + 4] != b"PK\x03\x04" or len(body) < start + 30:
        raise DocumentError("broken zip: a member's local header is missing")
    if info.compress_type != zipfile.ZIP_DEFLATED:
        return  # stored: zipfile reads at most its declared compressed size
    name_len, extra_len = struct.unpack_from("<HH", body, start + 26)
    data_start = start + 30 + name_len + extra_len
    pending = memoryview(body)[data_start:data_start + info.compress_size]
    inflater = zlib.decompressobj(-15)
    produced = 0
    try:
        while not inflater.eof:
            out = inflater.decompress(pending, 64 * 1024)
            produced += len(out)
            if produced > info.file_size:
                raise DocumentError(f"zip bomb: {info.filename[:80]} inflates past its declared "
                                    f"{info.file_size:,} bytes")
            pending = inflater.unconsumed_tail
            if not out and not pending:
                break
    except zlib.error:
        raise DocumentError(f"broken zip: {info.filename[:80]} does not inflate") from None


def _zip_member_count(body: bytes) -> int:
    """The member count the zip's end of central directory record declares (its zip64 record
    when there is one), 0 when no end record is found (zipfile then says the zip is broken)."""
    end = body.rfind(b"PK\x05\x06", max(0, len(body) - 22 - 0xFFFF))
    if end < 0 or len(body) < end + 22:
        return 0
    count, = struct.unpack_from("<H", body, end + 10)
    locator = end - 20
    if locator >= 0 and body[locator:locator + 4] == b"PK\x06\x07":
        record, = struct.unpack_from("<Q", body, locator + 8)
        if record + 40 <= len(body) and body[record:record + 4] == b"PK\x06\x06":
            count = max(count, struct.unpack_from("<Q", body, record + 32)[0])
        elif count == 0xFFFF:
            raise DocumentError("broken zip: zip64 end record missing")
    return count


def _xml(data: bytes):
    """An XML part's root: no entities resolved, no DTD loaded, no network, libxml2's default
    limits on depth and text size."""
    parser = lxml.etree.XMLParser(
        resolve_entities=False, load_dtd=False, no_network=True, huge_tree=False,
        remove_comments=True, remove_pis=True,
    )
    return lxml.etree.fromstring(data, parser=parser)


def _zip_xml(archive: zipfile.ZipFile, name: str):
    """The root of the package member ``name``, None when it is missing or unreadable (metadata:
    a document without it still has text)."""
    try:
        return _xml(archive.read(name))
    except Exception:  # noqa: BLE001 - KeyError, BadZipFile, XMLSyntaxError...
        return None


def _walk_clock(bounds: _Bounds, counter: list[int]) -> bool:
    """Every 512 elements, whether time is up."""
    counter[0] += 1
    return counter[0] % 512 == 0 and bounds.out_of_time()


# --- docx ----------------------------------------------------------------------------------------

def _read_docx(body: bytes, url: str, bounds: _Bounds) -> ParsedDocument:
    docx = _docx()
    with _open_zip(body) as archive:
        pages = _docx_pages(archive)
    try:
        document = docx.Document(io.BytesIO(body))
        rels = {
            rel_id: rel.target_ref
            for rel_id, rel in document.part.rels.items()
            if rel.is_external and rel.reltype == HYPERLINK_REL
        }
        body_element = document.element.body
        styles = _docx_style_names(document)
        core_title = _one_line(document.core_properties.title)
    except Exception as exc:  # noqa: BLE001 - python-docx raises KeyError, ValueError, lxml errors...
        message = str(exc)
        if "content type is" in message:  # a macro-enabled document or a template: python-docx reads none
            raise DocumentError(f"not a Word document: {message.rpartition('content type is ')[2][:100]}") from None
        raise DocumentError(f"broken docx: {type(exc).__name__}: {message}"[:200]) from None
    links = _Links(url)
    heading = _docx_walk(body_element, rels, styles, links, bounds)
    for target in rels.values():  # hyperlinks in shapes and other places the walk does not read
        links.add(target)
    text = bounds.text()
    return ParsedDocument(
        "docx", core_title or heading or _first_line(text), text, links.urls, pages, bounds.truncated,
    )


def _docx_style_names(document) -> dict[str, str]:
    """Paragraph style id -> its name, lower case ("heading 1", "title"): ids are localised
    (``berschrift1``), names are not."""
    names: dict[str, str] = {}
    for style in document.styles.element.iter(f"{W}style"):
        name = style.find(f"{W}name")
        style_id = style.get(f"{W}styleId")
        if style_id and name is not None:
            names[style_id] = (name.get(f"{W}val") or "").lower()
    return names


def _docx_walk(body, rels: dict[str, str], styles: dict[str, str], links: _Links, bounds: _Bounds) -> str:
    """One walk over the document body in order: paragraph text (tables and text boxes
    included; the fallback copy of a drawing, deleted text and field codes left out) into
    ``bounds``, hyperlinks into ``links``; returns the first heading's text."""
    heading = ""
    open_paragraphs: list[tuple[list[str], list[str], list[str]]] = []  # (text, field codes, style)
    fallback = 0  # depth inside mc:Fallback, a copy of content already read in mc:Choice
    counter = [0]
    for event, el in lxml.etree.iterwalk(body, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if tag == MC_FALLBACK:
            fallback += 1 if event == "start" else -1
            continue
        if fallback:
            continue
        if tag == f"{W}p":
            if event == "start":
                open_paragraphs.append(([], [], [""]))
                continue
            if not open_paragraphs:
                continue
            parts, field_codes, (style,) = open_paragraphs.pop()
            line = "".join(parts)
            for match in _FIELD_HYPERLINK.finditer("".join(field_codes)):
                links.add(match.group(1) or match.group(2))
            if not heading and line.strip() and (style == "title" or style.startswith("heading")):
                heading = _one_line(line)
            if not bounds.add(line + "\n"):
                break
            continue
        if event != "start" or not open_paragraphs:
            continue
        if _walk_clock(bounds, counter):
            break
        paragraph, field_codes, style = open_paragraphs[-1]
        if tag == f"{W}t":
            paragraph.append(el.text or "")
        elif tag == f"{W}tab" and el.getparent().tag != f"{W}tabs":  # not a tab stop's definition
            paragraph.append("\t")
        elif tag in (f"{W}br", f"{W}cr"):
            paragraph.append("\n")
        elif tag == f"{W}hyperlink":
            links.add(rels.get(el.get(R_ID) or ""))
        elif tag == f"{W}instrText":
            field_codes.append(el.text or "")
        elif tag == f"{W}fldSimple":
            field_codes.append(el.get(f"{W}instr") or "")
        elif tag == f"{W}pStyle":
            style[0] = styles.get(el.get(f"{W}val") or "", "")
    return heading


def _docx_pages(archive: zipfile.ZipFile) -> int:
    """The page count Word saved in ``docProps/app.xml``, 0 when there is none."""
    root = _zip_xml(archive, "docProps/app.xml")
    pages = root.find(f"{EXTENDED_PROPERTIES}Pages") if root is not None else None
    return _count(pages.text if pages is not None else None)


def _count(value: str | None) -> int:
    try:
        return max(0, int((value or "").strip()))
    except ValueError:
        return 0


# --- odt -----------------------------------------------------------------------------------------

#: Elements whose text is no document text: comments, the record of tracked changes (deleted
#: text), a footnote's citation mark.
_ODT_SKIP = frozenset({f"{OFFICE}annotation", f"{TEXT}tracked-changes", f"{TEXT}note-citation"})
_ODT_PARAGRAPHS = frozenset({f"{TEXT}p", f"{TEXT}h"})


def _read_odt(body: bytes, url: str, bounds: _Bounds) -> ParsedDocument:
    with _open_zip(body) as archive:
        try:
            names = set(archive.namelist())
            if "mimetype" in names:
                mimetype = archive.read("mimetype")[:200].decode("ascii", "replace").strip()
                if mimetype != ODT_TYPE:
                    raise DocumentError(f"not an OpenDocument text: {mimetype[:80]}")
            if "content.xml" not in names:
                raise DocumentError("broken odt: no content.xml")
            root = _xml(archive.read("content.xml"))
        except DocumentError:
            raise
        except Exception as exc:  # noqa: BLE001 - BadZipFile, XMLSyntaxError, NotImplementedError...
            raise DocumentError(f"broken odt: {type(exc).__name__}: {exc}"[:200]) from None
        meta = _zip_xml(archive, "meta.xml")
    links = _Links(url)
    heading = _odt_walk(root, links, bounds)
    text = bounds.text()
    title = _one_line(meta.findtext(f".//{DC_TITLE}")) if meta is not None else ""
    stats = meta.find(f".//{META}document-statistic") if meta is not None else None
    pages = _count(stats.get(f"{META}page-count")) if stats is not None else 0
    return ParsedDocument("odt", title or heading or _first_line(text), text, links.urls, pages, bounds.truncated)


def _odt_walk(root, links: _Links, bounds: _Bounds) -> str:
    """One walk in document order: the text of paragraphs and headings (with their spans,
    spaces ``text:s``, tabs and line breaks) into ``bounds``, ``text:a`` / ``draw:a`` links into
    ``links``; returns the first heading's text. A paragraph inside another (a footnote's body)
    is a line of its own."""
    heading = ""
    lines: list[list[str]] = []  # the open paragraphs, innermost last
    skipped = 0
    counter = [0]
    for event, el in lxml.etree.iterwalk(root, events=("start", "end")):
        tag = el.tag
        if not isinstance(tag, str):
            continue
        if tag in _ODT_SKIP:
            skipped += 1 if event == "start" else -1
            if event == "end" and not skipped and lines:
                lines[-1].append(el.tail or "")
            continue
        if skipped:
            continue
        if event == "start":
            if _walk_clock(bounds, counter):
                break
            if tag in (f"{TEXT}a", f"{DRAW}a"):
                links.add(el.get(XLINK_HREF))
            if tag in _ODT_PARAGRAPHS:
                lines.append([el.text or ""])
            elif lines:
                if tag == f"{TEXT}s":
                    lines[-1].append(" " * min(_count(el.get(f"{TEXT}c")) or 1, 100))
                elif tag == f"{TEXT}tab":
                    lines[-1].append("\t")
                elif tag == f"{TEXT}line-break":
                    lines[-1].append("\n")
                lines[-1].append(el.text or "")
            continue
        # end
        if tag in _ODT_PARAGRAPHS and lines:
            line = "".join(lines.pop())
            if not heading and tag == f"{TEXT}h" and line.strip():
                heading = _one_line(line)
            if lines:
                lines[-1].append(el.tail or "")
            if not bounds.add(line + "\n"):
                break
        elif lines:
            lines[-1].append(el.tail or "")
    return heading
