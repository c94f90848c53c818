"""What the fuzz tests (``tests/test_fuzz_*.py``) share: hypothesis profiles and hostile inputs.

Profiles (``HYPOTHESIS_PROFILE``, default ``ci``):

- ``ci``: few examples a property, derandomized (the same inputs every run, so CI cannot flake),
  no deadline (a shared 2-core runner is slow at random moments), no example database;
- ``soak``: a long randomised run that keeps its failures in ``.hypothesis/`` so a rerun replays
  them (about 10 minutes on two cores; ``--timeout=0``: one property alone outlasts pytest-timeout):
  ``HYPOTHESIS_PROFILE=soak python -m pytest -q tests/test_fuzz_*.py --timeout=0 --hypothesis-show-statistics``.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import urlsplit

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from scrapy import Request

_SLOW_INPUTS_ARE_THE_POINT = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example]

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True, database=None,
                          print_blob=True, suppress_health_check=_SLOW_INPUTS_ARE_THE_POINT)
settings.register_profile("soak", max_examples=5_000, deadline=None, print_blob=True,
                          suppress_health_check=_SLOW_INPUTS_ARE_THE_POINT)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@contextmanager
def within(seconds: float, what: str):
    """Fail when the block takes longer than ``seconds`` (a wall-clock bound, generous for CI)."""
    start = time.perf_counter()
    yield
    took = time.perf_counter() - start
    assert took < seconds, f"{what} took {took:.2f}s (bound {seconds}s)"


@contextmanager
def trap_server(answer: bytes | dict[str, bytes]):
    """An HTTP server on 127.0.0.1 that answers every GET with ``answer`` (or ``answer[path]``,
    else its ``""`` entry) and records the paths asked: a parser that must fetch nothing (no
    external DTD, entity or URL given as a body) is checked against it. Yields (base URL, paths)."""
    hits: list[str] = []
    answers = answer if isinstance(answer, dict) else {"": answer}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the name http.server calls
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(answers.get(self.path, answers.get("", b"")))

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", hits
    finally:
        server.shutdown()
        server.server_close()


def requestable(url: str) -> bool:
    """Scrapy makes an http(s) Request with a host of ``url``: the spider makes one of every link
    and sitemap URL, and one it refuses raises out of the callback."""
    try:
        parts = urlsplit(Request(url).url)
    except (ValueError, UnicodeError):
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


# --- URLs ----------------------------------------------------------------------------------------
#: A character from the alphabets URLs meet: ASCII, Latin, Cyrillic, CJK, and the odd ones
#: (surrogates, controls, the ideographic full stop some IDNA mappings turn into a dot).
_ODD_CHARS = st.sampled_from(list("\x00\t\n\r \x7f\u00ad\u200b\u3002\uff0e\ufeff\udc80\ud800%#?/@:[]\\;=&+."))
url_char = st.one_of(st.characters(codec="utf-8"), _ODD_CHARS, st.characters(min_codepoint=0xD800,
                                                                              max_codepoint=0xDFFF))
_label = st.one_of(
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True),
    st.text(st.characters(categories=["L", "N"]), min_size=1, max_size=12),  # IDNA / unicode
    st.sampled_from(["xn--", "xn--80ak6aa92e", "-a", "a-", "a" * 64, "", "%41", "%zz", "EXAMPLE", "münchen"]),
)
_dns_host = st.builds(lambda labels, dot: ".".join(labels) + dot,
                      st.lists(_label, min_size=1, max_size=5), st.sampled_from(["", "", ".", ".."]))
_ipv6 = st.one_of(
    st.ip_addresses(v=6).map(lambda a: f"[{a}]"),
    st.ip_addresses(v=6).map(lambda a: f"[{ipaddress.IPv6Address(a).exploded.upper()}]"),
    st.sampled_from(["[::1]", "[::ffff:1.2.3.4]", "[fe80::1%25eth0]", "[v1.x]", "[zz]", "[::1", "::1]",
                     "[]", "[[::1]]", "[::1]x"]),
)
_host = st.one_of(_dns_host, st.ip_addresses(v=4).map(str), _ipv6,
                  st.text(url_char, max_size=10), st.just(""))
_port = st.one_of(st.none(), st.integers(min_value=-5, max_value=200_000).map(str),
                  st.sampled_from(["", "80", "443", "0080", "65535", "65536", "x", "８０", "1_0"]))
_userinfo = st.one_of(st.none(), st.sampled_from(["user", "user:pw", "u%40x:p", ":", "@", "a@b"]),
                      st.text(url_char, max_size=8))
_segment = st.one_of(st.text(url_char, max_size=10), st.sampled_from(
    [".", "..", "", "%", "%2", "%zz", "%2F", "%2e%2E", ";jsessionid=ABC", ";sid=1", "a.html", "%E2%82%AC", "€"]))
_param = st.tuples(
    st.one_of(st.text(url_char, max_size=6), st.sampled_from(["utm_source", "UTM_Medium", "sid", "utm%5Fx", "a", "b"])),
    st.text(url_char, max_size=6))


def _authority(draw) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "HtTpS", "ftp", "javascript", "data", "mailto",
                                   "", "h t", "1http"]))
    slashes = draw(st.sampled_from(["://", "://", ":", ":///", ":\\\\", "//", ""]))
    user = draw(_userinfo)
    port = draw(_port)
    return (f"{scheme}{slashes}{user + '@' if user is not None else ''}{draw(_host)}"
            f"{':' + port if port is not None else ''}")


def _tail(draw) -> str:
    """What follows the authority: path, query, fragment."""
    tail = ("/" if draw(st.booleans()) else "") + "/".join(draw(st.lists(_segment, max_size=6)))
    query = "&".join(f"{k}={v}" if draw(st.booleans()) else k for k, v in draw(st.lists(_param, max_size=5)))
    if query or draw(st.booleans()):
        tail += "?" + query
    fragment = draw(st.one_of(st.none(), st.text(url_char, max_size=6)))
    if fragment is not None:
        tail += "#" + fragment
    if draw(st.integers(0, 20)) == 20:  # now and then, a very long URL (not what shrinking keeps)
        tail += "/" + "a" * draw(st.integers(1_000, 100_000))
    return tail


@st.composite
def urls(draw) -> str:
    """A URL shaped like one, with every part free to be hostile: schemes, IPv6 literals,
    IDNA/unicode hosts, percent-escapes, ports out of range, userinfo, odd dots, huge lengths."""
    url = _authority(draw) + _tail(draw)
    return draw(st.sampled_from(["", " ", "\t"])) + url + draw(st.sampled_from(["", " ", "\n"]))


@st.composite
def same_host_urls(draw) -> tuple[str, str]:
    """Two URLs with one authority (scheme, userinfo, host, port) and two paths."""
    authority = _authority(draw)
    return authority + "/" + _tail(draw), authority + "/" + _tail(draw)


any_url = st.one_of(urls(), st.text(url_char, max_size=60))
