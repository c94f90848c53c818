from focuscrawl.urls import canonicalize, extension, host_key, path_prefix, robots_url, url_tokens


def test_canonical_form_drops_what_does_not_name_a_page():
    assert canonicalize("HTTP://Example.COM:80/a/b;jsessionid=123?b=2&a=1&utm_source=x#frag") == \
        "http://example.com/a/b?a=1&b=2"
    assert canonicalize("https://example.com:443") == "https://example.com/"
    assert canonicalize("http://x.test/p?sid=9&id=4") == "http://x.test/p?id=4"
    # a search parameter is part of the page, not a session
    assert canonicalize("http://x.test/?s=comets") == "http://x.test/?s=comets"


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
