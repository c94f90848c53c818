"""PDF, docx and odt documents (focuscrawl/parsing/documents.py) and their generator
(focuscrawl/demo/documents.py): text, titles and absolute links from each kind; the kind told
by content type, magic bytes and extension; broken, truncated, encrypted, oversized, too long
and zip-bomb bodies refused with a DocumentError that says why; arbitrary and mutated bodies
never raising anything else, in bounded time."""

from __future__ import annotations

import io
import logging
import struct
import time
import tracemalloc
import zipfile
from xml.sax.saxutils import escape, quoteattr

import docx
import pypdf
import pypdfium2
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from focuscrawl.demo.documents import docx_document, pdf_document
from focuscrawl.parsing.documents import (
    DOCX_TYPE,
    MAX_UNCOMPRESSED_BYTES,
    ODT_TYPE,
    DocumentError,
    ParsedDocument,
    document_kind,
    read_document,
)

URL = "http://astro.test/papers/rings.pdf"
MAX_BYTES = 10 * 1024 * 1024
LINKS = [
    ("The Cassini mission", "http://astro.test/cassini.html"),
    ("Relative (resolved)", "https://astro.test/papers/moons.html"),
    ("Mail the author", "mailto:author@astro.test"),  # no web link: dropped
    ("The Cassini mission again", "http://astro.test/cassini.html#top"),  # a duplicate once defragmented
]
WANTED_LINKS = ["http://astro.test/cassini.html", "https://astro.test/papers/moons.html"]
PARAGRAPHS = [
    "Saturn's rings (mostly water ice) span 282,000 km \\ but are only 10 m thick; café au lait.",
    "A long paragraph about the Cassini Division " + " ".join(f"word{i}" for i in range(300)) + " the end.",
]


def read(body: bytes, content_type: str | None = None, url: str = URL, **bounds) -> ParsedDocument:
    bounds.setdefault("max_bytes", MAX_BYTES)
    return read_document(body, url, content_type, **bounds)


def words(text: str) -> str:
    return " ".join(text.split())


# --- building an odt (no generator: built here with zipfile and XML) ----------------------------

def odt_document(title: str | None, heading: str, paragraphs: list[str], links: list[tuple[str, str]],
                 mimetype: str = ODT_TYPE) -> bytes:
    """A minimal OpenDocument text: the ``mimetype`` member first and stored (as ODF requires),
    content.xml with a heading, paragraphs (spaces as ``text:s``, a span) and links, meta.xml with
    a ``dc:title`` when ``title`` is given."""
    body = f'<text:h text:outline-level="1">{escape(heading)}</text:h>'
    for paragraph in paragraphs:
        first, _, rest = paragraph.partition(" ")
        body += f'<text:p><text:span>{escape(first)}</text:span><text:s/>{escape(rest)}</text:p>'
    for anchor, href in links:
        link = f'<text:a xlink:type="simple" xlink:href={quoteattr(href)}>{escape(anchor)}</text:a>'
        body += f"<text:p>See {link}.</text:p>"
    body += ('<text:p>Comment<office:annotation><text:p>not document text</text:p></office:annotation>'
             ' after<text:tab/>tab</text:p>')
    content = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
        'xmlns:xlink="http://www.w3.org/1999/xlink" office:version="1.2">'
        f'<office:body><office:text>{body}</office:text></office:body></office:document-content>'
    )
    meta = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<office:document-meta xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
        'xmlns:dc="http://purl.org/dc/elements/1.1/" '
        'xmlns:meta="urn:oasis:names:tc:opendocument:xmlns:meta:1.0" office:version="1.2"><office:meta>'
        + (f"<dc:title>{escape(title)}</dc:title>" if title is not None else "")
        + '<meta:document-statistic meta:page-count="3"/></office:meta></office:document-meta>'
    )
    manifest = (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" '
        'manifest:version="1.2">'
        f'<manifest:file-entry manifest:full-path="/" manifest:media-type="{mimetype}"/>'
        '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
        '<manifest:file-entry manifest:full-path="meta.xml" manifest:media-type="text/xml"/>'
        '</manifest:manifest>'
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"), mimetype, compress_type=zipfile.ZIP_STORED)
        for name, data in (("content.xml", content), ("meta.xml", meta), ("META-INF/manifest.xml", manifest)):
            archive.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def rezip(data: bytes, extra: dict[str, bytes] | None = None, replace: dict[str, bytes] | None = None) -> bytes:
    """The zip ``data`` again, members replaced or added (the first member stays first)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            content = (replace or {}).get(info.filename, source.read(info.filename))
            target.writestr(info.filename, content, compress_type=info.compress_type)
        for name, content in (extra or {}).items():
            target.writestr(name, content, compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


# --- the generator ------------------------------------------------------------------------------

def test_generated_pdf_is_deterministic_and_opens_cleanly_in_pypdf_and_pdfium(caplog):
    pdf = pdf_document("Rings of Saturn (a guide)", PARAGRAPHS * 20, LINKS)
    assert pdf == pdf_document("Rings of Saturn (a guide)", PARAGRAPHS * 20, LINKS)
    with caplog.at_level(logging.WARNING):
        reader = pypdf.PdfReader(io.BytesIO(pdf), strict=True)  # strict: a wrong xref offset raises
        pages = len(reader.pages)
        assert reader.metadata.title == "Rings of Saturn (a guide)"
        assert all(page.extract_text() for page in reader.pages)
    assert not caplog.records, [r.getMessage() for r in caplog.records]
    assert pages > 1
    assert len(pypdfium2.PdfDocument(pdf)) == pages
    uris = [annotation.get_object()["/A"]["/URI"] for annotation in reader.pages[-1]["/Annots"]]
    assert uris == [url for _, url in LINKS]


def test_generated_docx_is_deterministic_with_real_external_hyperlinks():
    data = docx_document("Rings of Saturn", PARAGRAPHS, LINKS)
    assert data == docx_document("Rings of Saturn", PARAGRAPHS, LINKS)
    document = docx.Document(io.BytesIO(data))
    assert document.core_properties.title == "Rings of Saturn"
    hyperlinks = [link for paragraph in document.paragraphs for link in paragraph.hyperlinks]
    assert [link.address for link in hyperlinks] == [url for _, url in LINKS]
    assert [link.text for link in hyperlinks] == [anchor for anchor, _ in LINKS]


# --- reading each kind ------------------------------------------------------------------------

def test_pdf_text_title_and_links():
    pdf = pdf_document("Rings of Saturn", PARAGRAPHS + ["Catalogue at https://data.astro.test/rings today."], LINKS)
    document = read(pdf, "application/pdf")
    assert (document.kind, document.title, document.pages, document.truncated) == ("pdf", "Rings of Saturn", 1, False)
    text = words(document.text)
    for paragraph in PARAGRAPHS:  # escaped ( ) \, a Latin-1 letter, a paragraph wrapped over lines
        assert words(paragraph) in text
    assert "The Cassini mission" in text
    # link annotations first, then the addresses written in the text; mailto dropped, one each
    assert document.links == WANTED_LINKS + ["https://data.astro.test/rings"]


def test_pdf_relative_uri_is_resolved_against_the_document_url():
    document = read(pdf_document("T", ["x"], [("up", "../index.html")]))
    assert document.links == ["http://astro.test/index.html"]


def test_pdf_without_a_title_takes_its_first_line():
    assert read(pdf_document("", ["First line of the paper", "more"])).title == "First line of the paper"


def test_pdf_of_many_pages_is_read_to_the_end():
    pdf = pdf_document("Long", [f"Paragraph number {i} " * 30 for i in range(120)])
    document = read(pdf)
    assert document.pages == len(pypdfium2.PdfDocument(pdf)) > 5
    assert "Paragraph number 119" in document.text and not document.truncated


def test_docx_text_title_and_links():
    document = read(docx_document("Rings of Saturn", PARAGRAPHS, LINKS), DOCX_TYPE)
    assert (document.kind, document.title, document.truncated) == ("docx", "Rings of Saturn", False)
    for paragraph in PARAGRAPHS:
        assert paragraph in document.text.split("\n")
    assert "The Cassini mission" in document.text
    assert document.links == WANTED_LINKS


def test_docx_without_a_title_property_takes_its_first_heading_and_reads_tables():
    document = docx.Document()
    document.add_paragraph("Preface before any heading")
    document.add_heading("Jupiter's moons", level=1)
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Io", "Europa"
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = read(buffer.getvalue(), url="http://astro.test/moons.docx")
    assert parsed.title == "Jupiter's moons"
    assert parsed.text.split("\n") == ["Preface before any heading", "Jupiter's moons", "Io", "Europa"]


def test_odt_text_title_and_links():
    links = [("Cassini", "http://astro.test/cassini.html"), ("moons", "moons.html"), ("mail", "mailto:a@b.test")]
    odt = odt_document("Rings of Saturn", "Ring structure", ["Saturn's rings are ice.", "Second paragraph."], links)
    document = read(odt, ODT_TYPE)
    assert (document.kind, document.title, document.pages) == ("odt", "Rings of Saturn", 3)
    lines = document.text.split("\n")
    assert lines[:3] == ["Ring structure", "Saturn's rings are ice.", "Second paragraph."]
    assert "See Cassini." in lines
    assert "Comment after tab" in lines and "not document text" not in document.text  # comments left out
    assert document.links == ["http://astro.test/cassini.html", "http://astro.test/papers/moons.html"]


def test_odt_without_a_title_takes_its_first_heading():
    assert read(odt_document(None, "Ring structure", ["text"], []), ODT_TYPE).title == "Ring structure"


def test_odt_of_another_kind_is_refused():
    spreadsheet = odt_document("T", "H", ["x"], [], mimetype="application/vnd.oasis.opendocument.spreadsheet")
    with pytest.raises(DocumentError, match="not an OpenDocument text"):
        read(spreadsheet, ODT_TYPE)


# --- which kind ---------------------------------------------------------------------------------

PDF = pdf_document("Rings", ["Saturn"], LINKS[:1])
DOCX = docx_document("Rings", ["Saturn"], LINKS[:1])
ODT = odt_document("Rings", "Rings", ["Saturn"], [])


@pytest.mark.parametrize("content_type, kind", [
    ("application/pdf", "pdf"),
    ("Application/PDF; qs=0.9", "pdf"),
    ("application/x-pdf", "pdf"),
    (DOCX_TYPE, "docx"),
    (ODT_TYPE + "; charset=binary", "odt"),
    ("text/html", None),
    (None, None),
])
def test_kind_by_content_type(content_type, kind):
    assert document_kind(content_type, "http://astro.test/page", b"no magic here") == kind


@pytest.mark.parametrize("body, kind", [(PDF, "pdf"), (DOCX, "docx"), (ODT, "odt")])
@pytest.mark.parametrize("content_type", [None, "application/octet-stream", "text/plain", "text/html"])
def test_kind_by_magic_bytes_whatever_the_type(body, kind, content_type):
    assert document_kind(content_type, "http://astro.test/download?id=7", body[:4096]) == kind


def test_pdf_header_after_junk_counts_only_where_the_type_allows_a_document():
    junk_first = b"\r\n<!-- generated -->\r\n" + PDF
    assert document_kind(None, "http://astro.test/get", junk_first[:4096]) == "pdf"
    assert document_kind("application/pdf", "http://astro.test/get", junk_first[:4096]) == "pdf"
    assert read(junk_first).title == "Rings"
    page_about_pdf = b"<html><body><pre>%PDF-1.7\n1 0 obj</pre>"  # quotes a header: still a page
    assert document_kind("text/html", "http://astro.test/pdf-format.html", page_about_pdf) is None


def test_magic_bytes_overrule_a_wrong_document_type():
    assert document_kind("application/pdf", URL, DOCX[:4096]) == "docx"
    assert read(DOCX, "application/pdf").kind == "docx"


def test_docx_is_recognised_by_its_word_member_when_content_types_is_not_first():
    reordered = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(DOCX)) as source, zipfile.ZipFile(reordered, "w") as target:
        infos = sorted(source.infolist(), key=lambda info: info.filename != "word/document.xml")
        for info in infos:
            target.writestr(info.filename, source.read(info.filename), compress_type=zipfile.ZIP_DEFLATED)
    assert document_kind(None, "http://astro.test/x", reordered.getvalue()[:4096]) == "docx"
    assert read(reordered.getvalue(), url="http://astro.test/x").title == "Rings"


@pytest.mark.parametrize("url, content_type, kind", [
    ("http://astro.test/a/Paper.PDF", None, "pdf"),
    ("http://astro.test/a/paper.docx?download=1", "application/octet-stream", "docx"),
    ("http://astro.test/a/paper.odt", "application/zip", "odt"),
    ("http://astro.test/a/paper.pdf", "text/html", None),  # an HTML landing page at a .pdf URL
    ("http://astro.test/a/paper.html", None, None),
])
def test_kind_by_extension_only_when_the_type_says_nothing(url, content_type, kind):
    assert document_kind(content_type, url, b"") == kind


# --- refused bodies ------------------------------------------------------------------------------

def refused(body: bytes, content_type: str | None = None, **bounds) -> str:
    with pytest.raises(DocumentError) as raised:
        read(body, content_type, **bounds)
    return str(raised.value)


def test_broken_and_truncated_pdfs_are_refused():
    assert "broken PDF" in refused(b"%PDF-1.4\nthis is not a PDF at all\n%%EOF")
    assert "broken PDF" in refused(PDF[:len(PDF) // 2])
    assert "broken PDF" in refused(b"<html>sorry</html>", "application/pdf")


@pytest.mark.parametrize("algorithm", ["RC4-128", "AES-256"])
def test_encrypted_pdf_is_refused_and_one_without_a_user_password_is_read(algorithm):
    def encrypted(user_password: str) -> bytes:
        writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(PDF)))
        writer.encrypt(user_password=user_password, owner_password="owner", algorithm=algorithm)
        out = io.BytesIO()
        writer.write(out)
        return out.getvalue()

    assert refused(encrypted("secret")).startswith("encrypted")
    assert read(encrypted("")).links == ["http://astro.test/cassini.html"]  # every viewer opens it


def test_zip_bomb_is_refused_from_the_central_directory():
    bomb = rezip(DOCX, extra={"word/media/image1.png": b"\0" * (MAX_UNCOMPRESSED_BYTES + 1)})
    assert len(bomb) < 200_000
    started = time.perf_counter()
    assert refused(bomb, DOCX_TYPE).startswith("zip bomb")
    assert time.perf_counter() - started < 0.5  # refused without inflating anything


def test_member_inflating_past_its_declared_size_is_refused_without_inflating_it():
    """zipfile's read() would inflate the whole member (20 MB here) before cutting it to the
    10 bytes declared."""
    bomb = bytearray(rezip(DOCX, replace={"word/document.xml": b" " * (20 * 1024 * 1024)}))
    central = bomb.find(b"PK\x01\x02")
    while bomb[central + 46:central + 46 + 17] != b"word/document.xml":
        central = bomb.find(b"PK\x01\x02", central + 4)
    local = struct.unpack_from("<I", bomb, central + 42)[0]
    struct.pack_into("<I", bomb, central + 24, 10)  # uncompressed size, central directory
    struct.pack_into("<I", bomb, local + 22, 10)  # and local header
    tracemalloc.start()
    try:
        assert "inflates past its declared 10 bytes" in refused(bytes(bomb), DOCX_TYPE)
        assert tracemalloc.get_traced_memory()[1] < 5 * 1024 * 1024
    finally:
        tracemalloc.stop()


def test_zip_of_too_many_members_is_refused():
    many = rezip(DOCX, extra={f"customXml/item{i}.bin": b"" for i in range(2001)})
    assert "members" in refused(many, DOCX_TYPE)


def test_docx_with_an_encrypted_member_is_refused():
    data = bytearray(DOCX)
    central = data.find(b"PK\x01\x02")
    struct.pack_into("<H", data, central + 8, struct.unpack_from("<H", data, central + 8)[0] | 0x1)
    assert refused(bytes(data), DOCX_TYPE) == "encrypted"


def test_docx_with_broken_xml_is_refused():
    broken = rezip(DOCX, replace={"word/document.xml": b"<w:document><unclosed"})
    assert "broken docx" in refused(broken, DOCX_TYPE)


def test_xml_entities_are_never_expanded():
    laughs = ('<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;">'
              '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY e SYSTEM "file:///etc/passwd">]>'
              '<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
              'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"><office:body><office:text>'
              '<text:p>x &c; &e; y</text:p></office:text></office:body></office:document-content>')
    document = read(rezip(ODT, replace={"content.xml": laughs.encode()}), ODT_TYPE)
    assert "aaaa" not in document.text and "root:" not in document.text


def test_a_body_that_is_no_document_is_refused():
    assert refused(b"<html><body>Hello</body></html>", "text/html").startswith("not a document")
    assert refused(b"", "application/pdf") == "empty body"


def test_oversized_body_is_refused_before_parsing():
    assert refused(PDF, max_bytes=len(PDF) - 1).startswith("too big")
    assert read(PDF, max_bytes=len(PDF)).kind == "pdf"


def test_pdf_past_the_page_cap_is_refused():
    three_pages = pdf_document("Long", [f"Paragraph {i} " * 40 for i in range(40)])
    assert len(pypdfium2.PdfDocument(three_pages)) >= 3
    assert refused(three_pages, max_pages=2).startswith("too many pages")


# --- bounded work -------------------------------------------------------------------------------

@pytest.mark.parametrize("body", [pdf_document("T", PARAGRAPHS * 5), docx_document("T", PARAGRAPHS * 5),
                                  odt_document("T", "T", PARAGRAPHS * 5, [])])
def test_text_is_cut_at_max_chars(body):
    document = read(body, max_chars=500)
    assert document.truncated and len(document.text) <= 500
    assert document.text.startswith("T")


def test_pdf_extraction_stops_at_the_time_bound_and_keeps_what_it_read():
    pdf = pdf_document("Long", [f"Paragraph number {i} " * 30 for i in range(120)])
    ticks = iter(range(1_000_000))
    document = read(pdf, max_seconds=2.5, clock=lambda: float(next(ticks)))  # a second per look at the clock
    assert document.truncated
    assert "Paragraph number 0" in document.text and "Paragraph number 119" not in document.text


# --- never anything but DocumentError ------------------------------------------------------------

FUZZ = settings(max_examples=200, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
CONTENT_TYPES = st.sampled_from([None, "application/pdf", DOCX_TYPE, ODT_TYPE, "application/octet-stream"])
SEEDS = [pdf_document("Rings", PARAGRAPHS * 6, LINKS), docx_document("Rings", PARAGRAPHS, LINKS),
         odt_document("Rings", "Rings", PARAGRAPHS, LINKS[:2])]


def read_or_refuse(body: bytes, content_type: str | None) -> None:
    try:
        document = read(body, content_type, max_chars=100_000)
    except DocumentError as exc:
        assert str(exc)
        event(f"refused: {str(exc).split(':')[0]}")  # --hypothesis-show-statistics shows the mix
        return
    event(f"read: {document.kind}")
    assert document.kind in ("pdf", "docx", "odt")
    assert len(document.text) <= 100_000 and all(url.startswith("http") for url in document.links)


@FUZZ
@given(body=st.binary(max_size=4096), content_type=CONTENT_TYPES,
       magic=st.sampled_from([b"", b"%PDF-1.7\n", b"PK\x03\x04"]))
def test_arbitrary_bytes_give_a_document_or_a_document_error(body, content_type, magic):
    read_or_refuse(magic + body, content_type)


@st.composite
def mutated(draw):
    """A valid document with 1-8 bytes changed, runs cut out or copied, and maybe its end cut off
    (a download that stopped). Places are drawn uniformly (hypothesis's own integers favour the
    ends of a range, which would mostly break the first bytes)."""
    data = bytearray(draw(st.sampled_from(SEEDS)))
    rng = draw(st.randoms(use_true_random=False))
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(data))
        operation = rng.choice(["set", "cut", "copy"])
        if operation == "set":
            data[at] = rng.randrange(256)
        elif operation == "cut":
            del data[at:at + rng.randint(1, 200)]
        else:
            data[at:at] = data[rng.randrange(len(data)):][:rng.randint(1, 200)]
        if not data:
            break
    if data and rng.random() < 0.3:
        del data[rng.randint(1, len(data)):]
    return bytes(data)


@FUZZ
@given(body=mutated(), content_type=CONTENT_TYPES)
def test_mutated_documents_give_a_document_or_a_document_error(body, content_type):
    read_or_refuse(body, content_type)


@st.composite
def mutated_xml(draw):
    """A valid docx or odt whose main XML part is mutated (the zip stays sound, so the XML
    parser and the walk see the damage, not the zip's checksum)."""
    seed, member = draw(st.sampled_from([(SEEDS[1], "word/document.xml"), (SEEDS[2], "content.xml")]))
    with zipfile.ZipFile(io.BytesIO(seed)) as archive:
        xml = bytearray(archive.read(member))
    rng = draw(st.randoms(use_true_random=False))
    for _ in range(rng.randint(1, 10)):
        at = rng.randrange(len(xml))
        if rng.random() < 0.5:
            xml[at] = rng.choice(b"<>/&;\"'= x\0\xff")
        else:
            del xml[at:at + rng.randint(1, 50)]
        if not xml:
            break
    return rezip(seed, replace={member: bytes(xml)})


@FUZZ
@given(body=mutated_xml())
def test_documents_with_mutated_xml_give_a_document_or_a_document_error(body):
    read_or_refuse(body, None)
