"""Fuzzing charset decoding (focuscrawl/parsing/charset.py): whatever the bytes and whatever the
server or the page says they are (garbage names, codecs that are no charset, lying BOMs and
``<meta>`` tags), ``decode_body`` returns text and the name of a codec that decodes it."""

from __future__ import annotations

import codecs
import encodings.aliases
import warnings

from hypothesis import example, given
from hypothesis import strategies as st
from w3lib.encoding import read_bom

from focuscrawl.parsing.charset import NOT_CHARSETS, decode_body
from tests.fuzzing import within

#: Every codec name Python knows (text or not: base64, zlib, rot13, punycode, unicode-escape...),
#: the web's labels, and garbage.
_CODECS = sorted(set(encodings.aliases.aliases) | set(encodings.aliases.aliases.values()))
charset_name = st.one_of(
    st.sampled_from(_CODECS),
    st.sampled_from(["utf-8", "UTF8", "x-user-defined", "replacement", "utf-7", "mbcs", "undefined",
                     "unicode-escape", "raw_unicode_escape", "punycode", "idna", "base64", "zlib", "uu", "hex",
                     "rot13", "utf-16", "utf-32", "utf-8-sig", "cp65001", "iso-2022-jp", "hz", "\"utf-8\"",
                     "'latin1'", " utf-8 ", "utf-8;", "", "\x00", "\udc80", "é", "a" * 300]),
    st.text(max_size=20),
)
content_type = st.one_of(
    st.none(),
    st.builds(lambda mime, sep, name: f"{mime}{sep}{name}",
              st.sampled_from(["text/html", "application/xhtml+xml", "", "text/plain", "TEXT/HTML"]),
              st.sampled_from(["; charset=", ";charset=", "; CHARSET=\"", "; charset='", "; foo=bar; charset=",
                               ";;;charset=="]),
              charset_name),
    st.text(max_size=40),
)
_BOMS = [b"", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, codecs.BOM_UTF32_LE,
         codecs.BOM_UTF32_BE, b"\xef\xbb", b"\xff\xfe\x00"]
_META = [b'<meta charset="%s">', b"<meta charset=%s>", b"<META CHARSET='%s'>", b"<meta charset=\"%s",
         b'<meta http-equiv="Content-Type" content="text/html; charset=%s">', b"<?xml version='1.0' encoding='%s'?>"]


@st.composite
def html_bodies(draw) -> bytes:
    """Bytes with a BOM, a ``<meta>`` charset or an XML declaration in front, or none."""
    bom = draw(st.sampled_from(_BOMS))
    meta = b""
    if draw(st.booleans()):
        name = draw(charset_name).encode("utf-8", "surrogatepass")
        meta = draw(st.sampled_from(_META)) % name
    text = draw(st.text(max_size=200))
    codec = draw(st.sampled_from(["utf-8", "cp1251", "shift_jis", "utf-16-le", "latin-1", "gb18030"]))
    body = text.encode(codec, "replace")
    return bom + meta + body + draw(st.binary(max_size=200))


def _check(text, encoding, body):
    """Text, and the name of the codec that gives exactly that text from the body (a BOM aside):
    the store records the name."""
    assert isinstance(text, str) and isinstance(encoding, str)
    _, bom = read_bom(body)
    assert text == body[len(bom or b""):].decode(encoding, errors="replace")


@given(st.one_of(st.binary(max_size=4_000), html_bodies()), st.one_of(st.none(), charset_name), content_type)
@example(b'<meta charset="unicode-escape">\\*', None, None)  # DeprecationWarning: invalid escape sequence
@example(b"\\N{LATIN SMALL LETTER A}", "unicode_escape", None)  # the page's text read as Python escapes
@example(b"abc", "base64", "text/html; charset=zlib")
def test_any_bytes_decode_to_text(body, declared, content_type):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a page's bytes must not make Python warn (nor, later, raise)
        text, encoding = decode_body(body, declared, content_type)
    _check(text, encoding, body)
    assert encoding not in NOT_CHARSETS


def test_a_large_body_decodes_in_bounded_time():
    """Detection reads a bounded sample; decoding is linear (5 MB of mixed bytes, every codec path)."""
    chunk = "Привет, мир. こんにちは。 ".encode("cp1251", "replace") + bytes(range(256))
    body = chunk * (5 * 1024 * 1024 // len(chunk))
    for declared in (None, "utf-8", "shift_jis", "utf-16"):
        with within(10, f"decoding 5 MB declared {declared}"):
            text, encoding = decode_body(body, declared, "text/html")
        _check(text, encoding, body)
