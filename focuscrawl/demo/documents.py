"""Small real PDF and Word documents for the tests and the demo web: a title, paragraphs of
extractable text and links with anchor text.

Both generators are deterministic (no timestamps, no random ids, fixed zip member dates), so
the demo web, and a WARC recorded from it, are the same bytes on every run.

The PDF is written by hand: a fixture generator, not a parser, and a few hundred lines of
layout library would buy nothing here. It uses the standard Helvetica font (one of the 14 fonts
every reader has, so nothing is embedded) in WinAnsiEncoding, wraps lines with Helvetica's
own character widths, breaks pages, and gives every link a ``/Link`` annotation with a
``/URI`` action over its visible anchor text. Offsets in the cross-reference table are
counted from the bytes written, so pypdf and PDFium open it without a repair warning.

The Word document is built with python-docx; its hyperlinks, for which python-docx has no
public API, are made the documented way: an external relationship of type hyperlink and a
``w:hyperlink`` element that names it.
"""

from __future__ import annotations

import io
import zlib
import zipfile
from collections.abc import Sequence

from w3lib.url import safe_url_string

#: US Letter, in points.
PAGE_WIDTH, PAGE_HEIGHT = 612, 792
MARGIN = 72
BODY_SIZE, BODY_LEADING = 11, 14
TITLE_SIZE, TITLE_LEADING = 18, 22
#: Space between paragraphs, in points.
PARAGRAPH_GAP = 8
#: The colour of anchor text (RGB, 0-1): link blue, so a reader of the demo sees what to click.
LINK_RGB = (0.02, 0.24, 0.71)
#: Zip member date of every docx member: the earliest a zip can hold, the same on every run.
ZIP_DATE = (1980, 1, 1, 0, 0, 0)

#: Helvetica's advance widths (thousandths of the font size) for the printable ASCII characters
#: 32-126, from Adobe's Helvetica.afm, in WinAnsiEncoding (39 is quotesingle, 96 grave).
_HELVETICA_ASCII = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,  # space-/
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,  # 0-?
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,  # @-O
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,  # P-_
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,  # `-o
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,  # p-~
)
#: Width used for the characters above 126 (accented letters are mostly this wide).
_DEFAULT_WIDTH = 556

Link = tuple[str, str]  # (anchor text, absolute URL)


# --- PDF ---------------------------------------------------------------------------------------

def pdf_document(title: str, paragraphs: Sequence[str], links: Sequence[Link] = ()) -> bytes:
    """A PDF of ``title`` (also its ``/Info /Title``), then ``paragraphs``, then one line per
    link showing its anchor text under a ``/Link`` annotation to its URL. As many Letter pages
    as the text needs. Characters WinAnsi lacks are shown as ``?``."""
    layout = _Layout()
    for line in _wrap(title, TITLE_SIZE):
        layout.line(line, TITLE_SIZE, TITLE_LEADING)
    layout.gap(PARAGRAPH_GAP)
    for paragraph in paragraphs:
        for line in _wrap(paragraph, BODY_SIZE):
            layout.line(line, BODY_SIZE, BODY_LEADING)
        layout.gap(PARAGRAPH_GAP)
    for anchor, url in links:
        for line in _wrap(anchor or url, BODY_SIZE):
            layout.line(line, BODY_SIZE, BODY_LEADING, url=url)
    return _write_pdf(title, layout.finish())


class _Page:
    def __init__(self) -> None:
        self.ops: list[bytes] = []
        self.annotations: list[bytes] = []


class _Layout:
    """Lines placed top to bottom, a new page when the next line would cross the bottom margin."""

    def __init__(self) -> None:
        self.pages: list[_Page] = [_Page()]
        self.y = PAGE_HEIGHT - MARGIN

    def gap(self, points: float) -> None:
        self.y -= points

    def line(self, text: str, size: int, leading: int, url: str | None = None) -> None:
        if self.y - leading < MARGIN and self.pages[-1].ops:
            self.pages.append(_Page())
            self.y = PAGE_HEIGHT - MARGIN
        self.y -= leading
        page, y = self.pages[-1], self.y
        colour = b"%.2f %.2f %.2f rg " % LINK_RGB if url else b""
        page.ops.append(
            b"BT " + colour + b"/F1 %d Tf 1 0 0 1 %d %.2f Tm " % (size, MARGIN, y)
            + _pdf_string(text) + b" Tj ET"
        )
        if url:
            right = MARGIN + _width(text, size)
            page.annotations.append(
                b"<< /Type /Annot /Subtype /Link /Rect [%d %.2f %.2f %.2f] /Border [0 0 0] "
                b"/A << /S /URI /URI %s >> >>"
                % (MARGIN, y - 2, right, y + size, _pdf_string(safe_url_string(url), ascii_only=True))
            )

    def finish(self) -> list[_Page]:
        return self.pages


def _width(text: str, size: int) -> float:
    return sum(
        _HELVETICA_ASCII[ord(c) - 32] if 32 <= ord(c) <= 126 else _DEFAULT_WIDTH for c in text
    ) * size / 1000


def _wrap(text: str, size: int) -> list[str]:
    """``text`` as lines that fit between the margins; a word wider than a line is cut."""
    room = PAGE_WIDTH - 2 * MARGIN
    lines: list[str] = []
    current = ""
    for word in text.split():
        while _width(word, size) > room:  # a URL or a long compound: cut where it overflows
            cut = 1
            while cut < len(word) and _width(word[:cut + 1], size) <= room:
                cut += 1
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:cut])
            word = word[cut:]
        candidate = f"{current} {word}" if current else word
        if _width(candidate, size) <= room:
            current = candidate
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def _pdf_string(text: str, ascii_only: bool = False) -> bytes:
    """A PDF literal string of ``text`` in WinAnsi (cp1252): ``\\``, ``(`` and ``)`` escaped,
    every byte outside printable ASCII written as an octal escape, control characters as spaces."""
    raw = text.encode("ascii" if ascii_only else "cp1252", "replace")
    out = bytearray(b"(")
    for byte in raw:
        if byte in b"\\()":
            out += b"\\" + bytes([byte])
        elif byte < 32:
            out += b" "
        elif byte > 126:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b")")


def _info_string(text: str) -> bytes:
    """A PDF text string for the document information dictionary: a literal for printable ASCII,
    UTF-16BE with its byte order mark (hex) for anything else, so any title survives."""
    if all(32 <= ord(c) <= 126 for c in text):
        return _pdf_string(text, ascii_only=True)
    return b"<FEFF" + text.encode("utf-16-be").hex().upper().encode("ascii") + b">"


def _write_pdf(title: str, pages: list[_Page]) -> bytes:
    """The file: catalog, page tree, font, info, then per page its page object, its content
    stream (Flate) and its annotations; a classic cross-reference table with offsets counted
    from the bytes written."""
    objects: list[bytes] = []  # object n is objects[n - 1]

    def reserve() -> int:
        objects.append(b"")
        return len(objects)

    catalog, tree, font, info = reserve(), reserve(), reserve(), reserve()
    kids: list[int] = []
    for page in pages:
        page_id, content_id = reserve(), reserve()
        annotation_ids = []
        for annotation in page.annotations:
            annotation_ids.append(reserve())
            objects[annotation_ids[-1] - 1] = annotation
        stream = zlib.compress(b"\n".join(page.ops), 9)
        objects[content_id - 1] = (
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream"
        )
        annots = b" /Annots [%s]" % b" ".join(b"%d 0 R" % a for a in annotation_ids) if annotation_ids else b""
        objects[page_id - 1] = (
            b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >> >> "
            b"/Contents %d 0 R%s >>" % (tree, PAGE_WIDTH, PAGE_HEIGHT, font, content_id, annots)
        )
        kids.append(page_id)
    objects[catalog - 1] = b"<< /Type /Catalog /Pages %d 0 R >>" % tree
    objects[tree - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (
        b" ".join(b"%d 0 R" % k for k in kids), len(kids))
    objects[font - 1] = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
    objects[info - 1] = b"<< /Title %s /Producer (focuscrawl demo) >>" % _info_string(title)

    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")  # the binary comment marks the file as binary
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)  # every entry exactly 20 bytes
    out.write(b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, catalog, info, xref))
    return out.getvalue()


# --- Word (docx) -------------------------------------------------------------------------------

def docx_document(title: str, paragraphs: Sequence[str], links: Sequence[Link] = ()) -> bytes:
    """A .docx with ``title`` as its core property and its first paragraph (style Title), then
    ``paragraphs``, then one paragraph per link holding a real external hyperlink."""
    import docx  # python-docx: imported here, so the demo's PDF needs nothing beyond w3lib

    document = docx.Document()
    document.core_properties.title = title
    document.add_heading(title, level=0)
    for text in paragraphs:
        document.add_paragraph(text)
    for anchor, url in links:
        _add_hyperlink(document.add_paragraph(), anchor or url, url)
    buffer = io.BytesIO()
    document.save(buffer)
    return _fixed_dates(buffer.getvalue())


def _add_hyperlink(paragraph, text: str, url: str) -> None:
    """A ``w:hyperlink`` run in ``paragraph`` pointing to an external relationship to ``url``
    (python-docx's documented oxml route: it reads hyperlinks but cannot add them)."""
    from docx.opc.constants import RELATIONSHIP_TYPE
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    rel_id = paragraph.part.relate_to(url, RELATIONSHIP_TYPE.HYPERLINK, is_external=True)
    hyperlink = OxmlElement("w:hyperlink")
    hyperlink.set(qn("r:id"), rel_id)
    run = OxmlElement("w:r")
    properties = OxmlElement("w:rPr")
    colour = OxmlElement("w:color")
    colour.set(qn("w:val"), "%02X%02X%02X" % tuple(round(c * 255) for c in LINK_RGB))
    underline = OxmlElement("w:u")
    underline.set(qn("w:val"), "single")
    properties.append(colour)
    properties.append(underline)
    run.append(properties)
    words = OxmlElement("w:t")
    words.text = text
    words.set(qn("xml:space"), "preserve")
    run.append(words)
    hyperlink.append(run)
    paragraph._p.append(hyperlink)


def _fixed_dates(data: bytes) -> bytes:
    """The same zip with every member dated ZIP_DATE (python-docx stamps members with the time
    of saving), members in the same order, so equal documents are equal bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            info = zipfile.ZipInfo(member.filename, date_time=ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            target.writestr(info, source.read(member.filename))
    return out.getvalue()
