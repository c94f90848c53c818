"""Fuzzing URL identity (focuscrawl/urls.py): every link of every page goes through it, so no
string may make it raise (an exception in ``FocusScheduler.enqueue_request`` is an unhandled
error per link), each identity must be a fixed point (the seen set and a recorded web key on
it), and one host must be one politeness unit."""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import example, given
from scrapy import Request

from focuscrawl import urls
from tests.fuzzing import any_url, same_host_urls

TOTAL = (urls.canonicalize, urls.w3lib_canonical, urls.url_key, urls.host_key, urls.path_segments,
         urls.url_tokens, urls.extension, urls.path_prefix, urls.host_and_prefix)


@given(any_url)
@example("http://[zz]/")  # urlsplit accepts it, ipaddress does not: path_segments raised ValueError
@example("http://[::1")  # an unclosed IPv6 literal: url_tokens (a sitemap's <loc>) raised ValueError
@example("http://a.test/\udc80")  # a lone surrogate: canonicalize raised UnicodeEncodeError
@example("http://a.test/?\udc80=1")  # ...from urlencode
def test_url_functions_never_raise(url):
    for function in TOTAL:
        function(url)
    assert isinstance(urls.canonicalize(url), str)
    assert urls.is_part_of(url, url) in (True, False)
    assert urls.absolute_http_url("http://site.test/", url) is None or _requested_host(
        urls.absolute_http_url("http://site.test/", url)) is not None


@given(any_url)
@example("http:\\\\a.test/a")  # urlsplit saw a path where w3lib sees a host: http://///a.test/a, then http:///a.test/a
@example("http%41:0")  # w3lib unquoted a scheme out of a path: httpA:0, then httpa:0
@example("http://////")  # no host: http:////, then http:///
@example("x ;sid=1")  # the session id hid a trailing space (a URL with no host is its own key)
@example("http:0/.")  # url_key: http:///0/. then http:///0/
def test_canonical_forms_are_fixed_points(url):
    once = urls.canonicalize(url)
    assert urls.canonicalize(once) == once
    assert urls.host_key(urls.canonicalize(once)) == urls.host_key(once)
    key = urls.url_key(url)
    assert urls.url_key(key) == key
    if _requested_host(url) is not None:  # w3lib's own form is not one for http%41:0 (httpA:0, httpa:0)
        form = urls.w3lib_canonical(url)
        assert urls.w3lib_canonical(form) == form


@given(same_host_urls())
def test_one_host_is_one_politeness_unit(pair):
    """Two URLs of one host (and port) have one host key, whatever their paths and queries:
    the frontier, the gate and the robots.txt rules are all keyed by it. (Only URLs a Request can
    be made of reach the scheduler: Scrapy refuses a lone surrogate or a port out of range.)"""
    hosts = [_requested_host(url) for url in pair]
    if hosts[0] is not None and hosts[0] == hosts[1]:
        first, second = (urls.canonicalize(url) for url in pair)
        assert urls.host_key(first) == urls.host_key(second)


def _requested_host(url: str) -> tuple | None:
    """(host, port) of the Request Scrapy makes of ``url``; None when it makes none."""
    try:
        parts = urlsplit(Request(url).url)
        return (parts.hostname, parts.port) if parts.hostname else None
    except (ValueError, UnicodeError):
        return None
