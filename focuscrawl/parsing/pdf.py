"""PDF bodies to a title, text and links, with pypdfium2 (why, and the bounds: ``parsing.documents``).
pypdfium2 is not thread-safe: one thread reads PDFs at a time."""

from __future__ import annotations

import ctypes
import logging

from focuscrawl.parsing.document_text import (MAX_LINKS, MAX_URL_CHARS, Bounds, DocumentError, Links, ParsedDocument,
                                               first_line, one_line)

logger = logging.getLogger(__name__)


def _pdfium():
    """pypdfium2 and its raw bindings, loaded at the first PDF (a native library: a crawl that
    meets none does not load it)."""
    import pypdfium2
    import pypdfium2.raw

    return pypdfium2, pypdfium2.raw


#: PDFium's load errors (FPDF_GetLastError) in words.
_PDFIUM_ERRORS = {1: "unknown error", 2: "cannot be opened", 3: "not a PDF or corrupted", 6: "page not found"}


def read_pdf(body: bytes, url: str, max_pages: int, bounds: Bounds) -> ParsedDocument:
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
        title = one_line(_pdf_metadata(pdf, "Title"))
        links = Links(url)
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
        return ParsedDocument("pdf", title or first_line(text), text, links.urls, pages, bounds.truncated)
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


def _pdf_page(pdf, index: int, links: Links) -> str:
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


def _pdf_uri_links(pdf, page, links: Links) -> None:
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


def _pdf_text_links(textpage, links: Links) -> None:
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
