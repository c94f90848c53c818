"""Fuzzing robots.txt rules (focuscrawl/politeness/robots.py): whatever a host serves, with
whatever status, the rules never raise, answer every URL with a bool, ask for a finite delay,
and cost bounded time (a robots.txt is read once per host, then asked about every URL)."""

from __future__ import annotations

import math

from hypothesis import example, given
from hypothesis import strategies as st

from focuscrawl.politeness.robots import MAX_ROBOTS_BYTES, RobotsRules, RobotsState
from tests.fuzzing import any_url, url_char, within

AGENT = "focuscrawl"
_pattern = st.one_of(
    st.text(url_char, max_size=20),
    st.lists(st.sampled_from(["/", "*", "$", "a", "%2F", "%", "é", "?", "x=1", "**", "$$"]), max_size=12).map("".join),
)
_line = st.one_of(
    st.tuples(st.sampled_from(["User-agent", "user-AGENT", "Allow", "Disallow", "disallow", "Crawl-delay",
                               "Request-rate", "Sitemap", "Host", "Visit-time", "Noindex", "", "  Disallow "]),
              st.sampled_from([":", ": ", " : ", "", "::"]),
              st.one_of(_pattern, st.sampled_from(["*", AGENT, "focuscrawl/1.0", "nan", "inf", "-1", "1e400",
                                                   "1/0", "0/0", "5/1h", "١٢", "1_000", "0x10", "10", "0.5"]))
              ).map("".join),
    st.text(url_char, max_size=30),  # garbage
    st.just("# a comment"),
)
robots_text = st.builds(lambda lines, eol: eol.join(lines), st.lists(_line, max_size=25),
                        st.sampled_from(["\n", "\r\n", "\r", "\n\n"]))
robots_body = st.one_of(
    st.binary(max_size=2_000),
    st.builds(lambda text, bom, codec: bom + text.encode(codec, "surrogatepass" if "utf" in codec else "replace"),
              robots_text, st.sampled_from([b"", b"\xef\xbb\xbf", b"\xff\xfe"]),
              st.sampled_from(["utf-8", "utf-16", "utf-16-le", "latin-1"])),
)
statuses = st.one_of(st.sampled_from([200, 204, 206, 301, 304, 401, 403, 404, 429, 500, 503]),
                     st.integers(min_value=-1_000, max_value=1_000))


def _rules(status: int, body: bytes) -> RobotsRules:
    rules = RobotsRules()
    rules.record_response(status, body, now=0.0, cache_seconds=86_400, error_retry_seconds=60)
    return rules


@given(statuses, robots_body, any_url, st.sampled_from([AGENT, "*", "", "Mozilla/5.0 focuscrawl", "\udc80"]))
@example(200, b"User-agent: *\nDisallow: /a\n", "http://[::1", AGENT)  # Protego's urlparse raised ValueError
@example(200, b"User-agent: *\nDisallow: /a\n", "http://a.test/\udc80", AGENT)  # ...and UnicodeEncodeError
def test_any_robots_txt_gives_rules_that_answer(status, body, url, agent):
    rules = _rules(status, body)
    assert isinstance(rules.state, RobotsState)
    if 200 <= status < 300:
        assert rules.state in (RobotsState.PARSED, RobotsState.ALLOW_ALL)
    assert all(isinstance(sitemap, str) for sitemap in rules.sitemaps)
    assert rules.allows(url, agent) in (True, False)
    delay = rules.crawl_delay(agent)
    assert isinstance(delay, float) and math.isfinite(delay) and delay >= 0


@given(st.integers(min_value=0, max_value=40), st.sampled_from(["\n", "\r\n", "\r"]))
def test_a_rule_is_read_whole_or_not_at_all(shift, eol):
    """The size cap cuts at a line end, wherever the cap falls in a rule: ``Disallow: /private-area``
    is never read as ``Disallow: /private`` or ``Disallow: /``."""
    head = f"User-agent: *{eol}#"
    filler = "x" * (MAX_ROBOTS_BYTES - len(head) - len(eol) - shift)
    body = f"{head}{filler}{eol}Disallow: /private-area{eol}Allow: /{eol}".encode()
    rules = _rules(200, body)
    assert len(rules.text) <= MAX_ROBOTS_BYTES
    assert rules.allows("http://x.test/private-zone", AGENT)
    assert rules.allows("http://x.test/", AGENT)


def test_a_huge_robots_txt_costs_bounded_time():
    """10 MB of rules (DOWNLOAD_MAXSIZE): before the cap, 10 s to parse and 0.2 s per URL."""
    body = b"User-agent: *\n" + b"".join(b"Disallow: /p%d/*x*y$\nAllow: /q%d\n" % (i, i) for i in range(270_000))
    assert len(body) > 10 * 1024 * 1024
    with within(5, "parsing a 10 MB robots.txt"):
        rules = _rules(200, body)
    assert rules.state is RobotsState.PARSED
    with within(1, "asking about 20 URLs"):
        for i in range(20):
            rules.allows(f"http://x.test/z{i}", AGENT)
    assert not rules.allows("http://x.test/p1/zxzy", AGENT)  # the rules before the cap still hold
