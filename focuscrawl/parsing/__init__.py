"""Bytes to text (charset that survives lying headers) and HTML to title, main text, links."""

from focuscrawl.parsing.charset import decode_body
from focuscrawl.parsing.html import Link, ParsedPage, parse_html

__all__ = ["decode_body", "parse_html", "ParsedPage", "Link"]
