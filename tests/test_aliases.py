"""URL aliases learned per host (focuscrawl/frontier/aliases.py), then on a real crawl."""

from __future__ import annotations

import json

import pytest

from focuscrawl.frontier.aliases import HostAliases

H = "http://h.test"


def test_nothing_is_respelled_before_the_evidence_agrees():
    aliases = HostAliases(min_evidence=2)
    aliases.redirected(f"{H}/a", f"{H}/a/")
    assert not aliases.active
    assert aliases.canonical(f"{H}/b") == f"{H}/b"


def test_the_slash_rule_after_two_redirects_to_the_slashed_path():
    aliases = HostAliases(min_evidence=2)
    aliases.redirected(f"{H}/a", f"{H}/a/")
    aliases.redirected(f"{H}/people/b", f"{H}/people/b/")
    assert aliases.canonical(f"{H}/c") == f"{H}/c/"
    assert aliases.canonical(f"{H}/c/d") == f"{H}/c/d/"
    # a file, a query, a path with its slash, another host: as they are
    for url in (f"{H}/c/paper.ps", f"{H}/search?q=x", f"{H}/c/", "http://other.test/c"):
        assert aliases.canonical(url) == url
    assert aliases.rules()["slash"] == ["h.test"]


def test_a_host_that_serves_paths_without_a_slash_gets_no_slash_rule():
    aliases = HostAliases(min_evidence=2)
    aliases.redirected(f"{H}/a", f"{H}/a/")
    aliases.redirected(f"{H}/b", f"{H}/b/")
    for n in range(6):  # answered directly, not redirected: pages of their own
        aliases.fetched(f"{H}/wiki/Page{n}", f"digest{n}")
    assert aliases.canonical(f"{H}/c") == f"{H}/c"


def test_the_index_rule_from_the_same_page_at_dir_and_dir_index():
    aliases = HostAliases(min_evidence=2)
    aliases.fetched(f"{H}/x/", "d1")
    aliases.fetched(f"{H}/x/index.html", "d1")
    aliases.fetched(f"{H}/y/Index.html", "d2")
    aliases.fetched(f"{H}/y/", "d2")
    aliases.fetched(f"{H}/z/", "d3")
    aliases.fetched(f"{H}/z/index.html", "another page")  # not the same page: no vote
    assert aliases.canonical(f"{H}/w/index.html") == f"{H}/w/"
    assert aliases.canonical(f"{H}/w/default.htm") == f"{H}/w/default.htm"  # not learned for this host
    assert aliases.canonical("http://other.test/w/index.html") == "http://other.test/w/index.html"
    assert aliases.rules()["index"] == {"h.test": ["index.html"]}


def test_the_index_rule_from_redirects():
    aliases = HostAliases(min_evidence=2)
    aliases.redirected(f"{H}/a/index.htm", f"{H}/a/")
    aliases.redirected(f"{H}/b/index.htm", f"{H}/b/")
    assert aliases.canonical(f"{H}/c/index.htm") == f"{H}/c/"


def test_www_and_bare_names_of_one_host():
    aliases = HostAliases(min_evidence=2)
    aliases.fetched("http://www.h.test/p1", "d1")
    aliases.fetched("http://h.test/p1", "d1")
    aliases.fetched("http://www.h.test/p2.html", "d2")
    aliases.fetched("http://h.test/p2.html", "d2")
    assert aliases.canonical("http://h.test/p3.html") == "http://www.h.test/p3.html"  # the name that answered first
    assert aliases.canonical("http://www.h.test/p3.html") == "http://www.h.test/p3.html"
    redirects = HostAliases(min_evidence=2)
    redirects.redirected("http://www.k.test/a.html", "http://k.test/a.html")
    redirects.redirected("http://www.k.test/b.html", "http://k.test/b.html")
    assert redirects.canonical("http://www.k.test/c.html") == "http://k.test/c.html"
    assert redirects.rules()["www"] == {"k.test": "k.test"}


def test_evidence_is_bounded_and_hostile_urls_are_left_alone():
    aliases = HostAliases(min_evidence=2, max_pages=100)
    for n in range(1000):
        aliases.fetched(f"http://h{n}.test/d{n}/", f"digest{n}")
    assert len(aliases._dirs) <= 100 and len(aliases._pages) <= 100
    for url in ("", "not a url", "http://[::1", "ftp://h.test/a", "http:///x"):
        aliases.redirected(url, url + "/")
        aliases.fetched(url, "d")
        assert aliases.canonical(url) == url


def test_a_page_fetched_under_another_spelling_before_the_rule_was_learned():
    aliases = HostAliases(min_evidence=2)
    aliases.fetched(f"{H}/early/index.html", "d0")  # before any rule
    assert not aliases.fetched_as_another(f"{H}/early/")
    for n in (1, 2):
        aliases.fetched(f"{H}/x{n}/", f"d{n}")
        aliases.fetched(f"{H}/x{n}/index.html", f"d{n}")
    assert aliases.fetched_as_another(f"{H}/early/")
    assert not aliases.fetched_as_another(f"{H}/late/")
    www = HostAliases(min_evidence=2)
    for n in (1, 2):
        www.fetched(f"http://www.k.test/{n}.html", f"d{n}")
        www.fetched(f"http://k.test/{n}.html", f"d{n}")
    www.fetched("http://k.test/3.html", "d3")
    assert www.fetched_as_another("http://www.k.test/3.html")


def test_a_failed_respelling_turns_its_rule_off_for_the_host():
    aliases = HostAliases(min_evidence=2)
    for n in range(4):
        aliases.redirected(f"{H}/d{n}", f"{H}/d{n}/")
    assert aliases.canonical(f"{H}/tool") == f"{H}/tool/"
    aliases.mistaken(f"{H}/tool", f"{H}/tool/")
    assert aliases.canonical(f"{H}/tool") == f"{H}/tool"
    for n in range(2):
        aliases.fetched(f"{H}/x{n}/", f"d{n}")
        aliases.fetched(f"{H}/x{n}/index.html", f"d{n}")
    aliases.mistaken(f"{H}/y/index.html", f"{H}/y/")
    assert aliases.canonical(f"{H}/z/index.html") == f"{H}/z/index.html"


def test_a_checkpointed_learner_is_adopted_whole():
    learned = HostAliases(min_evidence=2)
    learned.redirected(f"{H}/a", f"{H}/a/")
    learned.redirected(f"{H}/b", f"{H}/b/")
    fresh = HostAliases()
    fresh.adopt(learned)
    assert fresh.canonical(f"{H}/c") == f"{H}/c/"


# --- sharing with the other workers of a crawl --------------------------------------------------


def _learned_everything() -> HostAliases:
    a = HostAliases(min_evidence=2)
    a.redirected(f"{H}/a", f"{H}/a/")
    a.redirected(f"{H}/b", f"{H}/b/")
    a.redirected(f"{H}/c/index.html", f"{H}/c/")
    a.redirected(f"{H}/d/index.html", f"{H}/d/")
    a.redirected("http://www.k.test/a.html", "http://k.test/a.html")
    a.redirected("http://www.k.test/b.html", "http://k.test/b.html")
    return a


def test_a_worker_gives_out_its_rules_once_and_another_takes_them_up():
    a = _learned_everything()
    view = a.shared_view()
    assert view == {"slash:h.test": "1", "index:h.test": "index.html", "www:k.test": "k.test"}
    assert a.shared_view() == {}  # nothing changed since
    b = HostAliases(min_evidence=2)
    b.take_shared(view)
    assert b.canonical(f"{H}/x") == f"{H}/x/"
    assert b.canonical(f"{H}/x/index.html") == f"{H}/x/"
    assert b.canonical("http://www.k.test/z.html") == "http://k.test/z.html"
    assert b.shared_view() == {}  # others' rules are not given out again as its own
    other = HostAliases(min_evidence=2)
    other.take_shared({"index:h.test": "paper.pdf", "www:k.test": "elsewhere.test"})  # no such rules
    assert other.canonical(f"{H}/x/paper.pdf") == f"{H}/x/paper.pdf"
    assert other.canonical("http://www.k.test/z.html") == "http://www.k.test/z.html"
    b.take_shared({"slash:h.test": "", "index:h.test": "", "www:k.test": ""})  # withdrawn
    assert b.canonical(f"{H}/x") == f"{H}/x" and not b.rules()["index"] and not b.rules()["www"]


def test_a_rule_that_stops_holding_is_withdrawn():
    a = _learned_everything()
    a.shared_view()
    for _ in range(2):
        a.mistaken(f"{H}/e", f"{H}/e/")
    assert a.shared_view() == {"slash:h.test": ""}


def test_own_evidence_wins_over_another_workers_rule():
    b = HostAliases(min_evidence=2)
    b.fetched(f"{H}/plain", "d1")  # this host answered a path without a slash directly
    b.take_shared({"slash:h.test": "1", "www:k.test": "k.test", "nonsense:x": "1"})
    assert b.canonical(f"{H}/x") == f"{H}/x"
    assert b.canonical("http://www.k.test/z.html") == "http://k.test/z.html"
    b.mistaken("http://www.k.test/z.html", "http://k.test/z.html")  # the adopted rule failed here
    assert b.canonical("http://www.k.test/z.html") == "http://www.k.test/z.html"
    c = HostAliases(min_evidence=2)
    c.take_shared({"slash:h.test": "1"})
    c.redirected(f"{H}/a", f"{H}/a/")  # evidence that agrees keeps the rule
    assert c.canonical(f"{H}/x") == f"{H}/x/"


def test_a_crawl_not_shared_tracks_nothing_for_sharing():
    a = _learned_everything()
    assert not a._touched and not a._published


# --- a real crawl: a host that redirects /dir to /dir/ and serves /dir/index.html as /dir/ ---------

DIRS = 8
TOOLS = 6
HTML = [("Content-Type", "text/html; charset=utf-8")]


def _page(title: str, links: list[str], words: str) -> bytes:
    anchors = " ".join(f'<a href="{href}">{href.strip("/")} notes</a>' for href in links)
    return (f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{words}</p>"
            f"<p>{anchors}</p></body></html>").encode()


def _alias_web():
    from focuscrawl.replay import RecordedWeb

    records = {}
    home_links = [f"/people/p{n}" for n in range(DIRS)] + [f"/groups/g{n}/index.html" for n in range(DIRS)]
    # another host redirects two directories but serves its other extension-less paths as they are:
    # a slash would make them 404
    home_links += ["http://b.test/"]
    b_links = ["/d0", "/d1"] + [f"/tools/t{n}" for n in range(TOOLS)]
    records["http://b.test/"] = (200, HTML, _page("B", b_links, "the tools host"))
    for n in range(2):
        records[f"http://b.test/d{n}"] = (301, [("Location", f"http://b.test/d{n}/")], b"")
        records[f"http://b.test/d{n}/"] = (200, HTML, _page(f"B dir {n}", [], f"directory {n} holds " * 20))
    for n in range(TOOLS):
        records[f"http://b.test/tools/t{n}"] = (200, HTML, _page(f"Tool {n}", [], f"tool {n} computes " * 20))
    records["http://a.test/"] = (200, HTML, _page("Home", home_links, "the department home page"))
    for n in range(DIRS):
        records[f"http://a.test/people/p{n}"] = (301, [("Location", f"http://a.test/people/p{n}/")], b"")
        records[f"http://a.test/people/p{n}/"] = (200, HTML, _page(f"Person {n}", [], f"person {n} writes " * 20))
        group = _page(f"Group {n}", [], f"group {n} studies " * 20)
        records[f"http://a.test/groups/g{n}/"] = (200, HTML, group)
        records[f"http://a.test/groups/g{n}/index.html"] = (200, HTML, group)
    # the group directories are linked too, from a second page, so both spellings are found
    records["http://a.test/groups/"] = (200, HTML, _page("Groups", [f"/groups/g{n}/" for n in range(DIRS)], "groups"))
    records["http://a.test/"] = (200, HTML, _page("Home", ["/groups/", *home_links], "the department home page"))
    return RecordedWeb.from_records(records)


def _crawl(tmp_path, demo_model, aliases_on: bool) -> list[dict]:
    from focuscrawl.replay import ReplayProxy

    from .conftest import run_scrapy

    log = tmp_path / f"server-{aliases_on}.jsonl"
    with ReplayProxy(_alias_web(), log_path=str(log)) as proxy:
        result = run_scrapy(["crawl", "focused", "-a", "seeds=http://a.test/", "-a", f"model={demo_model}",
                             "-s", "DOWNLOAD_DELAY=0", "-s", "FOCUS_PATIENCE=0", "-s", f"FOCUS_URL_ALIASES={aliases_on}",
                             "-s", f"FOCUS_STORE={tmp_path / f'crawl-{aliases_on}.db'}"],
                            cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=120)
        proxy.wait_idle(timeout=5.0)
    assert result.returncode == 0, result.stderr[-2000:]
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.mark.e2e
def test_a_crawl_learns_the_hosts_spellings_and_spends_no_request_on_them(tmp_path, demo_model):
    def paths(records, status=None, host="a.test"):
        return [r["path"] for r in records
                if r.get("path") and r.get("host") == host and (status is None or r["status"] == status)]

    plain = _crawl(tmp_path, demo_model, aliases_on=False)
    learned = _crawl(tmp_path, demo_model, aliases_on=True)
    # every page is fetched either way
    for records in (plain, learned):
        fetched = set(paths(records, 200))
        assert {f"/people/p{n}/" for n in range(DIRS)} <= fetched
        assert all(f"/groups/g{n}/" in fetched or f"/groups/g{n}/index.html" in fetched for n in range(DIRS))
        assert {f"/tools/t{n}" for n in range(TOOLS)} <= set(paths(records, 200, "b.test"))  # nothing lost
    assert len(paths(plain, 301)) == DIRS
    # b.test: its two redirects may teach the slash rule before its tools answer as they are; a failed
    # re-spelling then turns the rule off there (the tools are fetched as linked)
    assert len(paths(learned, 404, "b.test")) <= 1
    assert len(paths(learned, 301)) <= 3  # two redirects teach the rule; the rest are fetched with the slash
    # each group page once in either spelling, but for the pairs that taught the rule
    groups = [[p for p in paths(records, 200) if p.startswith("/groups/g")] for records in (plain, learned)]
    assert len(groups[0]) == 2 * DIRS and len(groups[1]) <= DIRS + 3
    assert len(paths(learned)) < len(paths(plain))
