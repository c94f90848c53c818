import random
from urllib.parse import urlsplit

import pytest

from focuscrawl import urls
from focuscrawl.urls import (canonicalize, extension, host_key, path_prefix, robots_url, url_key, url_tokens,
                             w3lib_canonical)


def test_canonical_form_drops_what_does_not_name_a_page():
    assert canonicalize("HTTP://Example.COM:80/a/b;jsessionid=123?b=2&a=1&utm_source=x#frag") == \
        "http://example.com/a/b?a=1&b=2"
    assert canonicalize("https://example.com:443") == "https://example.com/"
    assert canonicalize("http://x.test/p?sid=9&id=4") == "http://x.test/p?id=4"
    # a search parameter is part of the page, not a session
    assert canonicalize("http://x.test/?s=comets") == "http://x.test/?s=comets"


def test_url_key_is_what_a_canonicalising_crawler_dedups_on():
    assert url_key("HTTP://Site.TEST:80/a?y=2&x=1#frag") == "http://site.test/a?x=1&y=2"
    assert url_key(" https://site.test:443") == "https://site.test/"
    assert url_key("http://site.test:8080/a") == "http://site.test:8080/a"
    assert url_key("http://site.test/dir") != url_key("http://site.test/dir/")
    # unlike the crawl's canonical form, it keeps sessions and tracking parameters
    assert url_key("http://site.test/p?sid=9") == "http://site.test/p?sid=9" != canonicalize("http://site.test/p?sid=9")


def test_w3lib_canonical_is_scrapys_identity_and_keeps_a_malformed_url():
    assert w3lib_canonical("HTTP://Site.TEST/a?y=2&x=1#frag") == "http://site.test/a?x=1&y=2"
    assert w3lib_canonical("http://site.test:80/a") == "http://site.test:80/a"  # the port stays
    assert url_key("http://site.test:80/a") == "http://site.test/a"
    malformed = "http://[::1/a"  # w3lib cannot parse it: its own key
    assert w3lib_canonical(malformed) == malformed
    assert url_key(f" {malformed} ") == malformed


def test_permutations_of_one_query_are_one_url():
    assert canonicalize("http://x.test/p?b=2&a=1") == canonicalize("http://x.test/p?a=1&b=2&utm_medium=mail")


def test_host_key_keeps_non_default_ports():
    assert host_key("http://127.0.0.1:8001/a") == "127.0.0.1:8001"
    assert host_key("http://Example.com:80/a") == "example.com"
    assert robots_url("http://a.test:81/x/y?z") == "http://a.test:81/robots.txt"


def test_tokens_prefix_extension():
    assert url_tokens("http://x.test/science/astronomy-news.html?id=3") == ["science", "astronomy", "news", "html", "id"]
    assert path_prefix("http://x.test/science/astro/a.html") == "x.test/science"
    assert path_prefix("http://x.test/a.html") == "x.test/"
    assert extension("http://x.test/a/file.PDF") == "pdf"
    assert extension("http://x.test/a/") == ""


def test_host_and_path_read_without_urlsplit_are_urlsplits():
    """Host keys and path prefixes of canonical URLs are read by a regular expression (re-scoring
    asks for 20,000 at a time, past the caches); for every URL they equal what urlsplit gives."""
    def reference_host(url):
        try:
            parts = urlsplit(url)
            host, port = (parts.hostname or "").rstrip("."), parts.port
        except ValueError:
            return ""
        return host if port is None or port == urls.DEFAULT_PORTS.get(parts.scheme.lower()) else f"{host}:{port}"

    odd = ["http://a.test/x/y.html", "https://a.test", "http://a.test?q=1", "http://a.test#f", "http://A.test/",
           "HTTP://a.test/", "http://a.test:8080/x", "http://a.test:80/x", "http://u@a.test/", "http://[::1]/x",
           "http://a.test./x", "http://a.test/x\ty", "http://a.test\\x", " http://a.test/", "http://a.test/x y/",
           "http:///x", "ftp://a.test/x", "http://a..test//x//y/", "http://a.test/\u00e9t\u00e9/"]
    rng = random.Random(7)
    chars = "abz09.-_:@[]/?#%\t\n :;=&~A"
    for _ in range(20_000):
        url = (rng.choice(["http://", "https://", "HTTPS://", "http:/", ""])
               + "".join(rng.choice("abz09.-" if rng.random() < 0.8 else chars) for _ in range(rng.randint(0, 10)))
               + rng.choice(["", "/", "?", "#", ":8080", "/a/b.html", ":443/x"])
               + "".join(rng.choice(chars) for _ in range(rng.randint(0, 16))))
        odd.append(url)
    for url in odd:
        host_key.cache_clear()
        assert host_key(url) == reference_host(url), url
        try:
            expected = [s for s in urlsplit(url).path.split("/") if s]
        except ValueError:
            continue
        assert urls.path_segments(url) == expected, url


def test_a_pages_parts_are_in_its_directory_on_its_host():
    course = "http://cs.test/~ann/cs537/index.html"
    assert urls.is_part_of("http://cs.test/~ann/cs537/hw1.html", course)
    assert urls.is_part_of("http://cs.test/~ann/cs537/notes/week2.html", course)
    assert not urls.is_part_of(course, course)  # itself
    assert not urls.is_part_of("http://cs.test/~ann/cv.html", course)  # beside its directory
    assert not urls.is_part_of("http://www.cs.test/~ann/cs537/hw1.html", course)  # another host
    # a page at the top of its host has no parts: everything there would be one
    assert not urls.is_part_of("http://cs.test/people/", "http://cs.test/index.html")
    assert urls.is_part_of("http://cs.test/courses/cs101.html", "http://cs.test/courses/")
    assert not urls.is_part_of("http://[broken/x", course)


@pytest.mark.parametrize(("url", "canonical"), [
    ("http://[::1]/y", "http://[::1]/y"),
    ("http://[::1]:8080/x", "http://[::1]:8080/x"),
    ("http://[2001:DB8::1]:80/a", "http://[2001:db8::1]/a"),
])
def test_an_ipv6_literal_keeps_its_brackets(url, canonical):
    """urlsplit gives an IPv6 host without its brackets; put back, the URL stays a URL (it raised
    out of the scheduler's enqueue before)."""
    assert canonicalize(url) == canonical
    assert canonicalize(canonical) == canonical
