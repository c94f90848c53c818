"""Admission: whether a URL may enter the frontier, and if not, why (pure: no Scrapy)."""

import pytest

from focuscrawl.config import FocusConfig
from focuscrawl.frontier.admission import DUPLICATES, SEEN, Admission
from focuscrawl.politeness import DelayPolicy, ExclusionList, RobotsRules
from focuscrawl.politeness.gate import HostGate
from focuscrawl.urls import canonicalize

ROBOTS = b"User-agent: *\nDisallow: /private\n"


def admission(robots=None, exclusion=None, **config) -> Admission:
    return Admission(FocusConfig(**config), robots, exclusion)


def admit(a: Admission, url: str, **kwargs) -> str | None:
    return a.admit(url, canonicalize(url), **kwargs)


def parsed(body: bytes = ROBOTS) -> RobotsRules:
    rules = RobotsRules()
    rules.record_response(200, body, now=0.0, cache_seconds=100, error_retry_seconds=10)
    return rules


def test_a_new_url_is_admitted_seen_and_counted_for_its_host():
    a = admission()
    assert admit(a, "http://a.test/page.html") is None
    assert canonicalize("http://a.test/page.html") in a.seen
    assert a.host_admitted == {"a.test": 1}


def test_a_url_seen_as_it_is_is_refused_silently_other_spellings_and_redirects_are_duplicates():
    a = admission()
    assert admit(a, "http://a.test/q?x=1&y=2") is None
    assert admit(a, "http://a.test/q?x=1&y=2") == SEEN == "seen"  # the scheduler does not report it
    assert admit(a, "http://a.test/q?y=2&x=1") == "canonical_duplicate"  # another spelling: reported
    assert admit(a, "http://a.test/q?x=1&y=2", redirect_times=1) == "redirect_target_seen"
    assert DUPLICATES == {"seen", "canonical_duplicate", "redirect_target_seen"}
    assert admit(a, "http://a.test/q?x=1&y=2", dont_filter=True) is None  # not checked against the seen set
    assert len(a.seen) == 1 and a.host_admitted == {"a.test": 2}


@pytest.mark.parametrize(("url", "kwargs", "reason"), [
    ("http://a.test/moved", {"redirect_times": 4}, "too_many_redirects"),
    ("http://a.test/deep", {"depth": 31}, "too_deep"),
    ("http://a.test/" + "x" * 1100, {}, "url_too_long"),
    ("http://a.test/a/a/a/a/x", {}, "repeated_segments"),
    ("http://a.test/slides.ppt", {}, "denied_extension"),
    ("http://a.test/letter.doc", {}, "denied_extension"),  # the documents read are pdf, docx and odt
    ("ftp://a.test/file", {}, "scheme"),
])
def test_trap_rules_and_redirects_refuse(url, kwargs, reason):
    """The defaults: FOCUS_MAX_REDIRECTS 3, FOCUS_MAX_DEPTH 30, FOCUS_MAX_URL_LENGTH 1024,
    FOCUS_MAX_REPEATED_SEGMENTS 3, FOCUS_DENY_EXTENSIONS Scrapy's list less the documents read."""
    a = admission()
    assert admit(a, url, **kwargs) == reason
    assert a.host_admitted == {}
    assert admit(a, url) == SEEN  # refused, but seen: it is not judged twice


def test_limits_just_inside_are_admitted():
    a = admission()
    assert admit(a, "http://a.test/moved", redirect_times=3) is None
    assert admit(a, "http://a.test/deep", depth=30) is None
    assert admit(a, "http://a.test/a/a/a/x") is None


def test_a_sitemap_is_not_refused_for_its_extension():
    a = admission(deny_extensions=("gz", "xml"))
    assert admit(a, "http://a.test/sitemap.xml.gz", sitemap=True) is None
    assert admit(a, "http://a.test/sitemap2.xml.gz") == "denied_extension"
    assert admit(a, "http://a.test/other.xml") == "denied_extension"


def test_the_exclusion_list_refuses(tmp_path):
    path = tmp_path / "exclude.txt"
    path.write_text("quiet.test\n.farm.test\nre:/cgi-bin/\n")
    config = FocusConfig(exclude_file=str(path))
    a = Admission(config, {}, ExclusionList(str(path), config.exclude_check_seconds))  # as LocalBackend builds it
    assert admit(a, "http://quiet.test/a") == "excluded"
    assert admit(a, "http://x.farm.test/") == "excluded"
    assert admit(a, "http://ok.test/cgi-bin/q") == "excluded"
    assert admit(a, "http://ok.test/page") is None
    assert a.excluded("http://quiet.test/b") == "excluded" and a.excluded("http://ok.test/b") is None
    assert admission().excluded("http://quiet.test/b") is None  # no list: nothing excluded


def test_urls_outside_the_allowed_domains_are_out_of_scope():
    a = admission(allowed_domains=(".Example.test",))
    assert admit(a, "http://example.test/") is None
    assert admit(a, "http://www.example.test/a") is None
    assert admit(a, "http://example.test:8080/b") is None
    assert admit(a, "http://notexample.test/") == "out_of_scope"
    assert admit(a, "http://example.test.evil/") == "out_of_scope"
    assert admission().out_of_scope(canonicalize("http://anything.test/")) is None  # no list: all in scope


def test_the_host_budget_counts_only_admitted_urls():
    a = admission(host_budget=2)
    assert admit(a, "http://a.test/1") is None
    assert admit(a, "http://a.test/deep", depth=99) == "too_deep"  # refused: not counted
    assert admit(a, "http://a.test/1") == SEEN  # a duplicate: not counted
    assert admit(a, "http://a.test/slides.ppt") == "denied_extension"
    assert a.host_admitted == {"a.test": 1}
    assert admit(a, "http://a.test/2") is None
    assert admit(a, "http://a.test/3") == "host_budget"
    assert admit(a, "http://a.test/4") == "host_budget"
    assert admit(a, "http://b.test/1") is None  # per host
    assert a.host_admitted == {"a.test": 2, "b.test": 1}


def test_known_robots_rules_refuse_unknown_ones_do_not():
    fetching, unreachable = RobotsRules(), RobotsRules()
    fetching.start_fetch()
    unreachable.record_unreachable(0.0, 10)
    robots = {"a.test": parsed(), "b.test": fetching, "c.test": unreachable}
    a = admission(robots)
    assert admit(a, "http://a.test/private/x") == "robots"
    assert admit(a, "http://a.test/public") is None
    # not parsed (yet): the host gate checks again when the URL leaves the frontier
    for host in ("b.test", "c.test", "d.test"):
        assert admit(a, f"http://{host}/private/x") is None
    assert a.host_admitted == {"a.test": 1, "b.test": 1, "c.test": 1, "d.test": 1}
    # not obeyed: not checked
    assert admit(admission(robots, obey_robots=False), "http://a.test/private/x") is None


def test_robots_rules_are_the_host_gates_as_it_learns_them():
    """The scheduler shares the gate's rules with admission: a robots.txt fetched later counts."""
    gate = HostGate(DelayPolicy(), agent="focuscrawl")
    a = Admission(FocusConfig(), gate.robots)
    assert admit(a, "http://a.test/private/1") is None
    gate.robots_response("a.test", 200, ROBOTS, now=0.0)
    assert admit(a, "http://a.test/private/2") == "robots"
    assert admit(a, "http://a.test/open") is None


def test_the_robots_agent_is_the_configured_one():
    robots = {"a.test": parsed(b"User-agent: otherbot\nDisallow: /\n")}
    assert admit(admission(robots), "http://a.test/x") is None
    assert admit(admission(robots, robots_agent="otherbot"), "http://a.test/x") == "robots"
