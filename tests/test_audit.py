"""The server-side politeness audit, on hand-made logs whose answers are known."""

import email.utils
import json

import pytest

from focuscrawl.politeness import audit
from focuscrawl.politeness.audit import Violation

T = 1_795_000_000.0  # an epoch second; all times below are offsets from it
A, B = "127.0.0.1:8001", "127.0.0.1:8002"


def rec(host, start, end, path="/", status=200, **extra):
    r = {"t_start": T + start, "t_end": T + end, "method": "GET", "url": f"http://{host}{path}",
         "host": host, "path": path, "status": status, "bytes": 100, "conn": 1}
    r.update(extra)
    return r


# --- load_log ------------------------------------------------------------------------------------

def test_load_log_reads_json_lines_and_forgives_only_a_torn_last_line(tmp_path):
    records = [rec(A, 0, 1), rec(B, 2, 3, "/x", retry_after="2")]
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + '\n\n{"t_start": 17', "utf-8")
    assert audit.load_log(path) == records
    path.write_text(json.dumps(records[0]) + "\n{torn\n" + json.dumps(records[1]) + "\n", "utf-8")
    with pytest.raises(json.JSONDecodeError):
        audit.load_log(path)


# --- gaps ----------------------------------------------------------------------------------------

def test_min_gaps_end_to_start_and_start_to_start():
    log = [rec(A, 4, 4.2), rec(A, 0, 1), rec(A, 1.5, 2), rec(B, 0, 5)]  # unsorted on purpose
    assert audit.min_gaps(log) == {A: pytest.approx(0.5)}  # B has one request: no gap
    assert audit.min_gaps(log, measure="start") == {A: pytest.approx(1.5)}
    assert audit.min_start_gaps(log) == {A: pytest.approx(1.5)}
    with pytest.raises(ValueError):
        audit.min_gaps(log, measure="middle")


def test_min_gaps_by_other_keys():
    log = [rec(A, 0, 1, conn=1), rec(B, 1.2, 2, conn=1), rec(A, 3, 4, conn=2)]
    assert audit.min_gaps(log, per="conn") == {1: pytest.approx(0.2)}
    assert audit.min_gaps(log, per=lambda r: "all") == {"all": pytest.approx(0.2)}


def test_an_overlapping_request_is_a_negative_gap_from_the_latest_end():
    # the third request starts after the second ended but before the first did
    log = [rec(A, 0, 2), rec(A, 1, 1.5), rec(A, 1.8, 3)]
    assert audit.min_gaps(log) == {A: pytest.approx(-1.0)}
    found = audit.gap_violations(log, 0.0 + 0.5)
    assert [round(v.observed, 3) for v in found] == [-1.0, -0.2]


def test_gap_violations_honour_tolerance_and_per_host_requirements():
    log = [rec(A, 0, 1), rec(A, 1.96, 2.5), rec(A, 3.44, 4),  # gaps 0.96 and 0.94
           rec(B, 0, 1), rec(B, 1.1, 2)]                      # gap 0.1, but B not required
    found = audit.gap_violations(log, {A: 1.0})
    assert found == [Violation("gap", A, f"http://{A}/", T + 3.44, 1.0, pytest.approx(0.94),
                               found[0].detail)]
    assert "0.940s" in found[0].detail and "1s required" in found[0].detail
    assert len(audit.gap_violations(log, 1.0)) == 2  # one number: every host
    assert audit.gap_violations(log, {A: 1.0}, tolerance=0.1) == []
    assert audit.gap_violations(log, {A: 0}) == []


# --- concurrency ---------------------------------------------------------------------------------

def test_max_concurrency_counts_overlaps_not_touching_intervals():
    log = [rec(A, 0, 1), rec(A, 1, 2), rec(A, 2, 3),         # back to back: 1
           rec(B, 0, 10), rec(B, 1, 5), rec(B, 2, 3), rec(B, 6, 7)]  # nested: 3
    assert audit.max_concurrency(log) == {A: 1, B: 3}
    found = audit.concurrency_violations(log, limit=1)
    assert [(v.host, v.t - T, v.observed) for v in found] == [
        (B, 1, 2.0), (B, 2, 3.0), (B, 6, 2.0)]
    assert [v.t - T for v in audit.concurrency_violations(log, limit=2)] == [2]


# --- robots.txt ----------------------------------------------------------------------------------

ROBOTS = ("\ufeffUser-agent: focuscrawl\nDisallow: /private\n\n"
          "User-agent: otherbot\nDisallow: /public\n\nUser-agent: *\nDisallow: /\n")


def test_disallowed_hits_use_the_hosts_robots_txt():
    log = [rec(A, 0, 0.1, "/robots.txt"), rec(A, 1, 1.1, "/public/1"),
           rec(A, 2, 2.1, "/private/2"), rec(A, 3, 3.1, "/privateer?x=1"),
           rec(B, 4, 4.1, "/private/3")]  # B has no robots.txt given: not checked
    found = audit.disallowed_hits(log, {A: ROBOTS})
    assert [v.url for v in found] == [f"http://{A}/private/2", f"http://{A}/privateer?x=1"]
    assert all(v.kind == "disallowed" for v in found)
    assert [v.url for v in audit.disallowed_hits(log, {A: ROBOTS}, user_agent="otherbot")] == [
        f"http://{A}/public/1"]
    # "Disallow: /" for everyone else; robots.txt itself is still not a violation
    assert len(audit.disallowed_hits(log, {A: ROBOTS}, user_agent="nobody")) == 3


def test_disallowed_hits_rebuild_a_missing_url_from_host_and_path():
    r = rec(A, 0, 1, "/private/x")
    del r["url"]
    assert [v.url for v in audit.disallowed_hits([r], {A: ROBOTS})] == [f"http://{A}/private/x"]


def test_robots_not_first():
    log = [rec(A, 0, 0.5, "/"), rec(A, 0.2, 1, "/robots.txt"), rec(A, 0.9, 1.2, "/x"),
           rec(A, 1, 1.5, "/y"), rec(B, 0, 1, "/")]
    found = audit.robots_not_first(log)
    assert [(v.host, v.url.rsplit("/", 1)[1]) for v in found] == [(A, ""), (A, "x"), (B, "")]
    assert "never fetched" in found[-1].detail


def test_crawl_delays_and_required_delays():
    robots = {A: "User-agent: *\nCrawl-delay: 3\n", B: "User-agent: *\nDisallow:\n"}
    assert audit.crawl_delays(robots) == {A: 3.0}
    assert audit.required_delays([A, B], 1.0, robots) == {A: 3.0, B: 1.0}
    assert audit.required_delays([A, B], {B: 0.5}, robots, max_crawl_delay=2) == {A: 2.0, B: 0.5}
    assert audit.required_delays([A, B], None, None) == {}


# --- Retry-After ---------------------------------------------------------------------------------

def test_retry_after_seconds_reads_numbers_and_http_dates():
    assert audit.retry_after_seconds("2") == 2.0
    assert audit.retry_after_seconds(" 3 ") == 3.0
    assert audit.retry_after_seconds(1.5) == 1.5
    assert audit.retry_after_seconds("-4") == 0.0
    assert audit.retry_after_seconds(None) is None
    assert audit.retry_after_seconds("soon") is None
    date = email.utils.formatdate(T + 10, usegmt=True)
    assert audit.retry_after_seconds(date, now=T + 4) == pytest.approx(6.0)
    assert audit.retry_after_seconds(date) is None  # a date needs the response time


def test_retry_after_violations():
    log = [rec(A, 0, 0.1, "/busy", 429, retry_after="2"),
           rec(A, 0.05, 0.3, "/inflight"),          # already sent: could not have known
           rec(A, 1.0, 1.1, "/too-soon"),           # 0.9 s after: violation
           rec(A, 2.08, 2.2, "/ok"),                # 1.98 s after: within tolerance
           rec(B, 0.5, 0.6, "/other-host"),         # another host: unaffected
           rec(B, 3, 3.1, "/down", 503, retry_after=email.utils.formatdate(T + 6.1, usegmt=True)),
           rec(B, 4, 4.1, "/too-soon-2"),
           rec(B, 5, 5.1, "/no-header", 429)]       # no Retry-After: nothing to check
    found = audit.retry_after_violations(log)
    assert [(v.host, v.url.rsplit("/", 1)[1]) for v in found] == [
        (A, "too-soon"), (B, "too-soon-2"), (B, "no-header")]
    assert found[0].expected == 2.0 and found[0].observed == pytest.approx(0.9)
    assert found[1].expected == pytest.approx(3.0, abs=1)  # HTTP dates have whole seconds
    assert audit.retry_after_violations(log, statuses=(503,))[0].url.endswith("/too-soon-2")


# --- exclusion -----------------------------------------------------------------------------------

def test_excluded_hits_after_a_time_and_by_hostname():
    log = [rec(A, 0, 1), rec(A, 5, 6, "/late"), rec(B, 7, 8), rec("example.org", 9, 10)]
    assert [v.url for v in audit.excluded_hits(log, [A], after=T + 5)] == [f"http://{A}/late"]
    assert len(audit.excluded_hits(log, [A])) == 2
    assert len(audit.excluded_hits(log, ["127.0.0.1"])) == 3  # no port: any port
    assert len(audit.excluded_hits(log, ["EXAMPLE.org"])) == 1
    assert audit.excluded_hits(log, ["127.0.0.1:9"]) == []


# --- the report ----------------------------------------------------------------------------------

def polite_log():
    return [rec(A, 0, 0.1, "/robots.txt"), rec(A, 3.1, 3.3, "/a"), rec(A, 6.3, 6.4, "/b"),
            rec(B, 0, 0.2, "/robots.txt"), rec(B, 1.2, 1.3, "/c", 429, retry_after="2"),
            rec(B, 3.3, 3.5, "/c")]


def test_report_on_a_polite_crawl_is_ok():
    robots = {A: "User-agent: *\nCrawl-delay: 3\nDisallow: /private\n", B: ""}
    report = audit.audit_report(polite_log(), robots=robots, delays=1.0,
                                excluded=["127.0.0.1:9"], excluded_after=T)
    assert report["ok"] is True
    assert report["requests"] == 6
    assert report["requests_per_host"] == {A: 3, B: 3}
    assert report["statuses_per_host"][B] == {"200": 2, "429": 1}
    assert report["required_gap"] == {A: 3.0, B: 1.0}
    assert report["min_gap"][A] == pytest.approx(3.0)
    assert report["max_concurrency"] == {A: 1, B: 1}
    assert set(report["violation_counts"].values()) == {0}
    json.dumps(report)  # JSON-able
    assert "OK" in audit.format_report(report)


def test_report_finds_one_of_each_violation():
    log = polite_log() + [
        rec(A, 6.5, 6.6, "/private/p"),            # disallowed, and only 0.1 s after /b
        rec(A, 6.55, 6.7, "/overlap"),             # open with /private/p; negative gap
        rec(B, 1.4, 1.45, "/eager"),               # 0.1 s after the 429 asked for 2 s
        rec("127.0.0.1:9", 20, 21, "/"),           # excluded, and robots.txt never fetched
    ]
    robots = {A: "User-agent: *\nCrawl-delay: 3\nDisallow: /private\n", B: "",
              "127.0.0.1:9": ""}
    report = audit.audit_report(log, robots=robots, delays=1.0,
                                excluded=["127.0.0.1:9"], excluded_after=T + 10)
    assert report["ok"] is False
    assert report["violation_counts"] == {"gap": 3, "concurrency": 1, "disallowed": 1,
                                          "robots_not_first": 1, "retry_after": 1,
                                          "excluded": 1}
    assert {v["url"].rsplit("/", 1)[1] for v in report["violations"]["gap"]} == {
        "p", "overlap", "eager"}
    assert report["max_concurrency"][A] == 2
    text = audit.format_report(report)
    assert "VIOLATIONS" in text and "retry_after: 1" in text and "/private/p" in text


def test_report_skips_checks_it_was_not_asked_for():
    log = [rec(A, 0, 1, "/private"), rec(A, 0.5, 2, "/x")]
    report = audit.audit_report(log, per_host_concurrency=None)
    assert report["ok"] is True and report["required_gap"] == {}
    assert audit.audit_report(log)["violation_counts"]["concurrency"] == 1
