"""Word (.docx) and OpenDocument text (.odt) bodies to a title, text and links: zip packages opened
within bounds, then python-docx and lxml (why, and the bounds: ``parsing.documents``)."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib

import lxml.etree

from focuscrawl.parsing.document_text import (DC_TITLE, DRAW, EXTENDED_PROPERTIES, HYPERLINK_REL, MAX_UNCOMPRESSED_BYTES,
                                               MAX_XML_BYTES, MAX_ZIP_MEMBERS, MC_FALLBACK, META, ODT_TYPE, OFFICE, R_ID,
                                               TEXT, W, XLINK_HREF, Bounds, DocumentError, Links, ParsedDocument,
                                               first_line, one_line)

_FIELD_HYPERLINK = re.compile(r'HYPERLINK\s+"([^"]+)"|HYPERLINK\s+(\S+)')


def _docx():
    """python-docx, loaded at the first docx (a tenth of a second of imports)."""
    import docx

    return docx


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


def _walk_clock(bounds: Bounds, counter: list[int]) -> bool:
    """Every 512 elements, whether time is up."""
    counter[0] += 1
    return counter[0] % 512 == 0 and bounds.out_of_time()


# --- docx ----------------------------------------------------------------------------------------

def read_docx(body: bytes, url: str, bounds: Bounds) -> ParsedDocument:
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
        core_title = one_line(document.core_properties.title)
    except Exception as exc:  # noqa: BLE001 - python-docx raises KeyError, ValueError, lxml errors...
        message = str(exc)
        if "content type is" in message:  # a macro-enabled document or a template: python-docx reads none
            raise DocumentError(f"not a Word document: {message.rpartition('content type is ')[2][:100]}") from None
        raise DocumentError(f"broken docx: {type(exc).__name__}: {message}"[:200]) from None
    links = Links(url)
    heading = _docx_walk(body_element, rels, styles, links, bounds)
    for target in rels.values():  # hyperlinks in shapes and other places the walk does not read
        links.add(target)
    text = bounds.text()
    return ParsedDocument(
        "docx", core_title or heading or first_line(text), text, links.urls, pages, bounds.truncated,
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


def _docx_walk(body, rels: dict[str, str], styles: dict[str, str], links: Links, bounds: Bounds) -> str:
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
                heading = one_line(line)
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


def read_odt(body: bytes, url: str, bounds: Bounds) -> ParsedDocument:
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
    links = Links(url)
    heading = _odt_walk(root, links, bounds)
    text = bounds.text()
    title = one_line(meta.findtext(f".//{DC_TITLE}")) if meta is not None else ""
    stats = meta.find(f".//{META}document-statistic") if meta is not None else None
    pages = _count(stats.get(f"{META}page-count")) if stats is not None else 0
    return ParsedDocument("odt", title or heading or first_line(text), text, links.urls, pages, bounds.truncated)


def _odt_walk(root, links: Links, bounds: Bounds) -> str:
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
                heading = one_line(line)
            if lines:
                lines[-1].append(el.tail or "")
            if not bounds.add(line + "\n"):
                break
        elif lines:
            lines[-1].append(el.tail or "")
    return heading
