"""Bytes to text (charset that survives lying headers), HTML to title, main text, links and the
feeds it announces, RSS/Atom feeds to their entries, PDF and office documents to text and links."""

from focuscrawl.parsing.charset import decode_body
from focuscrawl.parsing.documents import DocumentError, ParsedDocument, document_kind, read_document
from focuscrawl.parsing.feeds import Feed, FeedEntry, FeedError, looks_like_feed, read_feed
from focuscrawl.parsing.html import Link, ParsedPage, parse_html

__all__ = [
    "decode_body", "parse_html", "ParsedPage", "Link",
    "read_feed", "looks_like_feed", "Feed", "FeedEntry", "FeedError",
    "read_document", "document_kind", "ParsedDocument", "DocumentError",
]
