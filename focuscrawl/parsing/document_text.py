"""What every document reader shares: the bounds and the kinds (see ``parsing.documents``), the
parsed document, its text kept within bounds, its links made absolute."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from focuscrawl.urls import absolute_http_url

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


class Bounds:
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
        return tidy("".join(self.parts))


def tidy(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in _CONTROL.sub("", text).split("\n"))
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:MAX_TITLE_CHARS].strip()


def first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return one_line(line)
    return ""


class Links:
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
