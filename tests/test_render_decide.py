"""The rendering decisions, driven directly: what makes a page an application shell, and what
makes a host need a browser (focuscrawl.parsing.appshell, focuscrawl.rendering.decide)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings, strategies as st

from focuscrawl.parsing import parse_html
from focuscrawl.parsing.appshell import AppSignals
from focuscrawl.rendering.browser.guard import ResourceCache
from focuscrawl.rendering.chromium import proxy_script
from focuscrawl.rendering.decide import RenderHosts, gained, shell_reason
from focuscrawl.safety import NetworkPolicy

PROSE = " ".join(["the telescope saw a faint galaxy beyond the nebula"] * 20)


def signals(html: str) -> tuple[int, int, AppSignals]:
    page = parse_html(html.encode(), "http://h.test/")
    return (len(page.text.split()), len(page.links), page.app)


@pytest.mark.parametrize("html, why", [
    ('<div id="root"></div><script src="/main.js"></script>', "empty #root"),
    ('<div id="__next"><div class="spinner">Loading...</div></div><script src="/a.js"></script>', "empty #__next"),
    ('<body><noscript>Please enable JavaScript to view this site.</noscript><div id="main"></div>'
     '<script src="/a.js"></script></body>', "<noscript> asks for JavaScript"),
    ('<div class="page"></div><script id="__NEXT_DATA__" type="application/json">{"props": {}}</script>'
     '<script src="/a.js"></script>', "data blob __NEXT_DATA__"),
    ('<div></div><script>window.__INITIAL_STATE__ = {"a": 1}</script>', "data blob window.__INITIAL_STATE__"),
    ('<p>Hello</p><script src="/a.js"></script><script src="/b.js"></script><script src="/c.js"></script>',
     "3 scripts"),
])
def test_shells_are_told_apart_by_their_signals(html, why):
    reason = shell_reason(*signals(html))
    assert reason is not None and why in reason


@pytest.mark.parametrize("html", [
    f"<html><body><h1>Galaxies</h1><p>{PROSE}</p></body></html>",  # no script: nothing to render
    f'<div id="root"><p>{PROSE}</p></div><script src="/a.js"></script>',  # server-rendered into #root
    f'<p>{PROSE}</p><noscript>Enable JavaScript for comments.</noscript><script src="/c.js"></script>'
    + "".join(f'<a href="/p{i}">part {i}</a>' for i in range(8)),  # an article that asks only for comments
    '<div id="root"></div>',  # an empty mount point with no script: no browser builds anything
    "<ul>" + "".join(f'<li><a href="/p{i}">page {i}</a></li>' for i in range(10)) + "</ul>"
    + '<script src="/a.js"></script>' * 4,  # a list of links with scripts: readable as it is
])
def test_pages_with_their_words_or_links_are_read_as_they_are(html):
    assert shell_reason(*signals(html)) is None


def test_a_json_ld_island_is_not_an_app_state():
    words, links, app = signals('<script type="application/ld+json">{"@type": "Article"}</script><p>x</p>')
    assert app.data_blob == "" and app.scripts == 1


def test_a_render_gains_links_or_a_good_deal_of_text():
    assert gained(0, 0, 40, 3)
    assert gained(5, 1, 200, 1)
    assert not gained(200, 10, 210, 11)  # the same page, a few words more
    assert not gained(5, 0, 40, 0)


def test_a_host_is_marked_after_renders_that_gained_and_probed_now_and_then():
    hosts = RenderHosts(mark_after=2, unmark_after=3, probe_every=4)
    assert hosts.route("h") is None
    assert hosts.rendered("h", 0, 0, 300, 12)
    assert hosts.route("h") is None  # one render is an anecdote
    hosts.rendered("h", 0, 0, 300, 12)
    routes = [hosts.route("h") for _ in range(8)]
    assert all(r and "2 of 2 renders" in r for i, r in enumerate(routes) if (i + 1) % 4)
    assert [r for i, r in enumerate(routes) if (i + 1) % 4 == 0] == [None, None]  # the probes: fetched plainly
    assert hosts.route("other") is None


def test_a_marked_host_is_unmarked_when_its_pages_stop_needing_a_browser():
    hosts = RenderHosts(mark_after=2, unmark_after=2)
    for _ in range(2):
        hosts.rendered("h", 0, 0, 300, 12)
    assert hosts.needs_rendering("h")
    hosts.plain_page("h", shell=False)  # a probe that was an ordinary page
    assert hosts.needs_rendering("h")
    hosts.rendered("h", 300, 12, 305, 12)  # a render that added nothing
    assert not hosts.needs_rendering("h") and hosts.route("h") is None
    assert "2 of 3 renders" in hosts.explain("h")


def test_a_host_whose_renders_rarely_gain_is_never_marked():
    hosts = RenderHosts(mark_after=2)
    for _ in range(3):
        hosts.rendered("h", 100, 5, 100, 5)
    hosts.rendered("h", 0, 0, 300, 12)
    hosts.rendered("h", 0, 0, 300, 12)
    assert not hosts.needs_rendering("h")  # 2 gains of 5 renders: less than half


def test_host_records_are_bounded_and_survive_a_resume():
    hosts = RenderHosts(max_hosts=3)
    for name in "abcd":
        hosts.rendered(name, 0, 0, 300, 12)
        hosts.rendered(name, 0, 0, 300, 12)
    assert list(hosts.hosts) == ["b", "c", "d"]
    again = pickle.loads(pickle.dumps(hosts))
    assert again.needs_rendering("d") and again.route("d") == hosts.route("d") and again.stats() == hosts.stats()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("hg"), st.booleans(), st.integers(0, 50), st.integers(0, 50)), max_size=60))
def test_host_records_take_any_sequence_of_evidence(events):
    hosts = RenderHosts(mark_after=2, unmark_after=2, probe_every=3)
    for host, plain, words, links in events:
        if plain:
            hosts.plain_page(host, shell=words < 10)
        else:
            hosts.rendered(host, 0, 0, words * 10, links)
        route = hosts.route(host)
        assert route is None or hosts.needs_rendering(host)


def test_the_resource_cache_is_bounded_and_skips_what_must_not_be_stored():
    cache = ResourceCache(max_entries=2, max_bytes=10)
    cache.put("a", 200, {}, b"1234")
    cache.put("b", 200, {"cache-control": "no-store"}, b"1")
    cache.put("c", 404, {}, b"1")
    cache.put("d", 200, {}, b"12345678")
    assert cache.get("a") is None and cache.get("b") is None and cache.get("c") is None  # a: pushed out by size
    assert cache.get("d")[2] == b"12345678" and cache.bytes == 8


def test_the_browser_proxy_configuration():
    script = proxy_script("http://127.0.0.1:8888")
    assert 'return "PROXY 127.0.0.1:8888"' in script and "accounts.google.com" in script and "dnsResolve" not in script
    direct = proxy_script(None, NetworkPolicy())
    assert 'return "DIRECT"' in direct and 'isInNet(ip, "169.254.0.0", "255.255.0.0")' in direct
    assert "dnsResolve" not in proxy_script(None, NetworkPolicy(allow_all=True))


def test_a_resumed_crawl_adopts_what_its_hosts_showed():
    before = RenderHosts()
    before.rendered("h", 0, 0, 300, 12)
    before.rendered("h", 0, 0, 300, 12)
    after = RenderHosts()
    after.adopt(pickle.loads(pickle.dumps(before)))
    assert after.needs_rendering("h") and after.stats() == before.stats()


def test_a_render_in_flight_is_checkpointed_without_its_backends_live_parts():
    from scrapy import Request

    from focuscrawl.config import FocusConfig
    from focuscrawl.meta import RENDER
    from focuscrawl.politeness.robots import RobotsRules
    from focuscrawl.rendering.requests import RenderMeta, is_render, storable
    from focuscrawl.scheduling.rendering import RobotsCheck

    rules = RobotsRules()
    rules.record_response(200, b"User-agent: *\nDisallow: /x/\n", 0.0, 100.0, 10.0)
    request = Request("http://h.test/a", meta={RENDER: "app shell"})
    RenderMeta(FocusConfig()).apply(request.meta, allows=RobotsCheck(rules, "focuscrawl"))
    request.meta["playwright_page_init_callback"] = lambda page, req: None  # what the handler adds
    assert is_render(request.meta) and not request.meta["focus_render_allows"]("http://h.test/x/1")
    kept = storable(request)
    assert not is_render(kept.meta) and kept.meta[RENDER] == "app shell"
    pickle.dumps(kept.to_dict())
    assert storable(Request("http://h.test/b")).meta == {}


def test_an_allowed_network_inside_a_private_range_leaves_the_rest_refused():
    from ipaddress import ip_network

    script = proxy_script(None, NetworkPolicy(allowed=(ip_network("127.0.0.2/32"),)))
    allowed_at = script.index('isInNet(ip, "127.0.0.2", "255.255.255.255")')
    refused_at = script.index('isInNet(ip, "127.0.0.0", "255.0.0.0")')
    assert allowed_at < refused_at  # 127.0.0.2 goes out, the rest of loopback does not


def _marked(host: str = "app.test") -> RenderHosts:
    hosts = RenderHosts(mark_after=2, unmark_after=3)
    for _ in range(2):
        hosts.rendered(host, 5, 0, 400, 20)
    return hosts


def test_a_workers_marks_are_given_out_once_and_taken_up_by_another():
    a = _marked()
    view = a.shared_view()
    assert view == {"app.test": "1"}
    assert a.shared_view() == {}
    b = RenderHosts()
    b.take_shared(view)
    assert b.needs_rendering("app.test") and b.route("app.test")
    assert b.shared_view() == {}  # another worker's mark is not given out again
    b.take_shared({"app.test": ""})
    assert not b.needs_rendering("app.test")


def test_an_unmarked_host_is_withdrawn_and_own_evidence_wins():
    a = _marked()
    a.shared_view()
    for _ in range(3):
        a.plain_page("app.test", shell=False)
    assert a.shared_view() == {"app.test": ""}
    b = RenderHosts()
    b.rendered("app.test", 300, 30, 310, 30)  # its own render gained nothing
    b.take_shared({"app.test": "1"})
    assert not b.needs_rendering("app.test")
    c = RenderHosts(unmark_after=3)
    c.take_shared({"app.test": "1"})
    for _ in range(3):  # probes of the adopted mark that are no shells unmark it here
        c.plain_page("app.test", shell=False)
    c.take_shared({"app.test": "1"})
    assert not c.needs_rendering("app.test")


def test_sharing_survives_a_checkpoint():
    a = _marked()
    a.shared_view()
    again = pickle.loads(pickle.dumps(a))
    assert again.needs_rendering("app.test")
