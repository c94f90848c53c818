"""End to end against the hostile web (tests/webs/hostile.py): one real ``scrapy crawl focused``
over traps, redirect loops, a 50 MB body, a gzip bomb, a trickling server, resets, 500s and
429/503 with Retry-After, broken HTML, lying charsets, an odd robots.txt, duplicates and an
excluded host. It is judged from the servers' side (their own request log, through the politeness
audit), from the crawl's request log and stats, and from what the crawl store and export hold.

The reset host's home page resets a reused keep-alive connection (``reset_reused_home``), so a
reset the HTTP client may retry on its own happens in every crawl. Mid-crawl, once the robots.txt
host has served a few pages, the exclusion file is rewritten to add that host: the reload must
stop the crawler from contacting it again.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter

import pytest

from focuscrawl.politeness.audit import audit_report, excluded_hits, format_report
from focuscrawl.relevance import Example, train_topic_model
from focuscrawl.store import CrawlStore
from focuscrawl.urls import canonicalize

from .conftest import run_scrapy_measured
from .webs.hostile import (
    BIG_PATHS, BROKEN_PATHS, BROKEN_SENTENCE, CHARSET_PAGES, DUPLICATE_GROUPS, EXCLUDED_HOST,
    GZIP_BOMB_PATH, PARAM_VALUES, REDIRECT_CHAIN_END, REDIRECT_LOOP, RETRY_AFTER_SECONDS,
    ROBOTS_CRAWL_DELAY, ROBOTS_HOST, SESSION_ITEMS, TRAPS, HostileWeb, _prose,
)

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(170)]

BUDGET = 300
DELAY = 0.05
DOWNLOAD_TIMEOUT = 5
MAX_DEPTH = 30  # FOCUS_MAX_DEPTH (the default), passed explicitly so the bounds below follow it
MAX_REPEATED_SEGMENTS = 3  # FOCUS_MAX_REPEATED_SEGMENTS (the default)
MAX_REDIRECTS = 3  # FOCUS_MAX_REDIRECTS (the default)
BACKOFF_BASE = 1.0  # network-error back-off starts at 1 s (default 5) so the crawl ends sooner
EXCLUDE_CHECK_SECONDS = 0.5
#: the exclusion file gets this host added once it has served RELOAD_AFTER_PAGES pages
RELOAD_HOST = ROBOTS_HOST
RELOAD_AFTER_PAGES = 3
#: a request already released when the new list is read may still start a moment later
RELOAD_SLACK = 0.3
CRAWL_TIMEOUT = 120
MAX_RSS_BYTES = 1024 ** 3
AUDIT_TOLERANCE = 0.01  # seconds of clock/scheduling jitter the gap checks forgive
TOPIC = "rivers"


def _topic_model(path):
    """A tiny topic model: river prose (the hostile web's own vocabulary) against shop, calendar,
    error and navigation text, so that articles, stories and shop items are relevant."""
    positives = [Example(f"http://t/pos/{i}", "River report", _prose(5000 + i), TOPIC) for i in range(12)]
    negative_texts = [
        "Welcome to the shop. Add items to your basket and pay at the checkout with a credit card.",
        "No events this month. The calendar lists concerts, markets and club meetings by date.",
        "Internal server error. The server could not complete your request, please try again later.",
        "Too many requests. Slow down and come back after the time given in the header.",
        "Older material is further down. Browse the archive by year and month of publication.",
        "Sign in to your account to see private pages, drafts and your saved settings.",
        "Our catalogue of products: shoes, shirts and hats in every size, delivered tomorrow.",
        "Cookie policy: we use cookies to remember your preferences and measure traffic.",
        "Contact us by e-mail or telephone; our office is open on weekdays from nine to five.",
        "Download the software installer for your operating system and read the release notes.",
        "Privacy notice: how personal data is collected, stored and deleted on request.",
        "Sports results: the home team won the match by two goals after extra time.",
    ]
    negatives = [Example(f"http://t/neg/{i}", "Other", t, "other") for i, t in enumerate(negative_texts)]
    model, _report = train_topic_model(positives + negatives, [TOPIC], cv_folds=3)
    model.save(str(path))
    return path


def _exclusion_text(*netlocs: str) -> str:
    return "# asked not to be crawled\n" + "".join(f"{n}\n" for n in netlocs)


def _scrapy_stats(stderr: str) -> dict[str, int]:
    """The integer focus/* and other counters of Scrapy's end-of-crawl stats dump."""
    return {k: int(v) for k, v in re.findall(r"'([a-z_]+/[^']+|[a-z_]+)': (\d+)[,}]", stderr)}


@pytest.fixture(scope="module")
def crawl(tmp_path_factory):
    out = tmp_path_factory.mktemp("hostile")
    model = _topic_model(out / "model.joblib")
    with HostileWeb(trickle_seconds=20, lifetime=CRAWL_TIMEOUT + 30, log_path=out / "server.jsonl",
                    reset_reused_home=True) as web:
        exclude = out / "exclude.txt"
        exclude.write_text(_exclusion_text(web.excluded_host))
        reload = {}
        done = threading.Event()

        def rewrite_when_ready():
            """Add RELOAD_HOST to the exclusion file once it has served a few pages."""
            while not done.wait(0.05):
                served = [r for r in web.log if r["site"] == RELOAD_HOST and r["path"] != "/robots.txt"
                          and r["t_end"] is not None]
                if len(served) >= RELOAD_AFTER_PAGES:
                    exclude.write_text(_exclusion_text(web.excluded_host, web.hosts[RELOAD_HOST]))
                    reload["t"] = time.time()
                    return

        watcher = threading.Thread(target=rewrite_when_ready, daemon=True)
        started = time.time()
        watcher.start()
        try:
            result, maxrss_kib = run_scrapy_measured(
                ["crawl", "focused", "-a", f"seeds={web.seeds[0]}", "-a", f"model={model}",
                 "-O", str(out / "relevant.jsonl"),
                 "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
                 "-s", f"FOCUS_EXCLUDE_FILE={exclude}",
                 "-s", f"FOCUS_EXCLUDE_CHECK_SECONDS={EXCLUDE_CHECK_SECONDS}",
                 "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", f"DOWNLOAD_TIMEOUT={DOWNLOAD_TIMEOUT}",
                 "-s", f"FOCUS_BUDGET={BUDGET}", "-s", f"FOCUS_MAX_DEPTH={MAX_DEPTH}",
                 "-s", f"FOCUS_MAX_REPEATED_SEGMENTS={MAX_REPEATED_SEGMENTS}",
                 "-s", f"FOCUS_MAX_REDIRECTS={MAX_REDIRECTS}", "-s", f"FOCUS_BACKOFF_BASE={BACKOFF_BASE}",
                 "-s", "LOG_LEVEL=INFO",
                 "-s", "FOCUS_ALLOWED_NETWORKS=127.0.0.1"],  # the hostile web's hosts: loopback allowed explicitly
                cwd=out, timeout=CRAWL_TIMEOUT,
            )
        finally:
            done.set()
            watcher.join(timeout=5)
        elapsed = time.time() - started
        web.wait_idle(timeout=10)
        server, hosts, robots = web.log, dict(web.hosts), web.robots
    assert result.returncode == 0, result.stderr[-4000:]
    (out / "crawl.log").write_text(result.stderr)
    store = CrawlStore(str(out / "crawl.db"))
    try:
        pages = list(store.iter_pages())
    finally:
        store.close()
    request_log = [json.loads(line) for line in (out / "requests.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
    exported = [json.loads(line) for line in (out / "relevant.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()]
    return {
        "out": out, "result": result, "elapsed": elapsed, "server": server, "hosts": hosts,
        "site_of": {netloc: name for name, netloc in hosts.items()}, "robots": robots,
        "pages": pages, "request_log": request_log, "exported": exported,
        "stats": _scrapy_stats(result.stderr), "maxrss_kib": maxrss_kib, "reload_at": reload.get("t"),
    }


def page_requests(records, site=None, prefix="/"):
    """Server records other than robots.txt, optionally of one host and path prefix."""
    return [r for r in records if r["path"] != "/robots.txt"
            and (site is None or r["site"] == site) and r["path"].startswith(prefix)]


def stored_by_path(crawl, site):
    """{path (and query) of the first URL: stored page} for one host."""
    netloc = crawl["hosts"][site]
    out = {}
    for page in crawl["pages"]:
        if page["url"].startswith(f"http://{netloc}/"):
            out[page["url"][len(f"http://{netloc}"):]] = page
    return out


def dropped_on(crawl, site, prefix="/"):
    """Reasons the request log gives for refused requests to one host's paths under ``prefix``."""
    netloc = crawl["hosts"][site]
    return Counter(r["dropped"] for r in crawl["request_log"]
                   if r.get("dropped") and r["url"].startswith(f"http://{netloc}{prefix}"))


# --- the crawl survives -----------------------------------------------------------------------

def test_crawl_finishes_within_budget_without_traceback_in_bounded_memory(crawl):
    result, stats = crawl["result"], crawl["stats"]
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    # the crawl ran dry or spent its budget (a budget's end is named as Scrapy's own limits are)
    assert "'finish_reason': 'finished'" in result.stderr or "'finish_reason': 'focus_budget'" in result.stderr
    assert crawl["elapsed"] < CRAWL_TIMEOUT
    assert 0 < stats["focus/requests_released"] <= BUDGET
    assert len(page_requests(crawl["server"])) <= BUDGET + stats.get("retry/count", 0)
    # neither the 50 MB bodies nor the >1 GB gzip bomb were held in memory
    assert crawl["maxrss_kib"] * 1024 < MAX_RSS_BYTES, f"crawl max RSS {crawl['maxrss_kib'] / 1024:.0f} MiB"
    assert stats["memusage/max"] < MAX_RSS_BYTES
    big = stored_by_path(crawl, "big")
    for path in (*BIG_PATHS, GZIP_BOMB_PATH):
        assert page_requests(crawl["server"], "big", path), f"{path} was never requested"
        assert path in big and big[path]["status"] == 0 and not big[path]["text"], big.get(path)


# --- politeness, from the servers' side -------------------------------------------------------

def test_politeness_audited_from_the_server_side(crawl):
    records, hosts = crawl["server"], crawl["hosts"]
    report = audit_report(records, robots=crawl["robots"], delays=DELAY, excluded=[hosts[EXCLUDED_HOST]],
                          tolerance=AUDIT_TOLERANCE)
    assert report["violation_counts"] == {"gap": 0, "concurrency": 0, "disallowed": 0, "robots_not_first": 0,
                      "retry_after": 0, "excluded": 0}, format_report(report)
    assert all(n <= 1 for n in report["max_concurrency"].values()), report["max_concurrency"]
    # the audit checked what it should: every contacted host owed DOWNLOAD_DELAY, the robots host its
    # Crawl-delay, and it was contacted more than once
    robots_host = hosts[ROBOTS_HOST]
    assert report["required_gap"][robots_host] == ROBOTS_CRAWL_DELAY
    assert report["requests_per_host"][robots_host] >= 3
    assert report["min_gap"][robots_host] >= ROBOTS_CRAWL_DELAY - AUDIT_TOLERANCE
    assert hosts[EXCLUDED_HOST] not in report["requests_per_host"]  # not even its robots.txt
    assert any(r.get("dropped") == "excluded" and hosts[EXCLUDED_HOST] in r["url"] for r in crawl["request_log"])


def test_no_request_below_the_host_delay_after_a_connection_reset(crawl):
    netloc = crawl["hosts"]["reset"]
    reset = sorted((r for r in crawl["server"] if r["site"] == "reset"), key=lambda r: r["t_start"])
    first_reset = next(i for i, r in enumerate(reset) if r["status"] == 0)
    if reset[first_reset]["conn"] not in {r["conn"] for r in reset[:first_reset]}:
        pytest.skip("no reset on a reused keep-alive connection in this crawl: the case did not arise")
    report = audit_report([r for r in crawl["server"] if r["host"] == netloc], delays=DELAY,
                          tolerance=AUDIT_TOLERANCE)
    assert report["violation_counts"]["gap"] == 0, format_report(report)


def test_retry_after_respected(crawl):
    errors = sorted((r for r in crawl["server"] if r["site"] == "errors"), key=lambda r: r["t_start"])
    asked = [r for r in errors if r["status"] in (429, 503) and r.get("retry_after")]
    assert len(asked) >= 2, "no 429/503 with Retry-After was ever served"
    for r in asked:
        later = [o for o in errors if o["t_start"] >= r["t_end"]]
        if later:
            waited = later[0]["t_start"] - r["t_end"]
            assert waited >= RETRY_AFTER_SECONDS - AUDIT_TOLERANCE, (r["path"], waited)
    # the 429s were retried after the wait, and the page then fetched
    for path in ("/busy/1", "/busy/2"):
        statuses = [r["status"] for r in errors if r["path"] == path]
        assert statuses[:2] == [429, 200], (path, statuses)


def test_exclusion_list_reloaded_mid_crawl(crawl):
    reload_at = crawl["reload_at"]
    assert reload_at is not None, f"the {RELOAD_HOST} host never served {RELOAD_AFTER_PAGES} pages"
    netloc = crawl["hosts"][RELOAD_HOST]
    late = excluded_hits(crawl["server"], [netloc], after=reload_at + EXCLUDE_CHECK_SECONDS + RELOAD_SLACK)
    assert not late, [str(v) for v in late]
    # the reload really cut something off: pages the host still had were refused as excluded
    assert dropped_on(crawl, RELOAD_HOST)["excluded"] >= 1, dropped_on(crawl, RELOAD_HOST)
    assert "exclusion list" in crawl["result"].stderr and "loaded: 2 hosts" in crawl["result"].stderr


# --- traps ------------------------------------------------------------------------------------

def test_traps_are_cut_off_and_the_stats_name_the_rule(crawl):
    server, stats = crawl["server"], crawl["stats"]
    calendar = page_requests(server, *TRAPS["calendar"])
    # depth counts from the seed (calendar pages start at depth 1); both directions are bounded
    assert 0 < len(calendar) <= 2 * MAX_DEPTH, len(calendar)
    assert stats.get("focus/refused/too_deep", 0) >= 1
    assert dropped_on(crawl, *TRAPS["calendar"])["too_deep"] >= 1

    deep = page_requests(server, *TRAPS["deep"])
    assert 0 < len(deep) <= MAX_REPEATED_SEGMENTS, [r["path"] for r in deep]
    assert stats.get("focus/refused/repeated_segments", 0) >= 1
    assert dropped_on(crawl, *TRAPS["deep"])["repeated_segments"] >= 1

    # session ids and parameter permutations collapse to a few canonical URLs, each fetched once
    session = page_requests(server, "session")  # the shop's home, /shop;jsessionid=..., the items
    assert 0 < len(session) <= SESSION_ITEMS + 2, [r["path"] for r in session]
    params = page_requests(server, *TRAPS["params"])
    assert 0 < len(params) <= len(PARAM_VALUES) ** 2, [r["path"] for r in params]
    for trap in (session, params):
        canon = Counter(canonicalize(r["url"]) for r in trap if r["status"] == 200)
        assert max(canon.values()) == 1, canon
    assert stats.get("focus/dupes_filtered", 0) >= 1

    # redirects: at most MAX_REDIRECTS hops followed for a page, the loop broken
    loop = page_requests(server, *TRAPS["redirect_loop"])
    assert 0 < len(loop) <= 1 + MAX_REDIRECTS, [r["path"] for r in loop]
    chain = page_requests(server, *TRAPS["redirect_chain"])
    assert 0 < len(chain) <= 1 + MAX_REDIRECTS, [r["path"] for r in chain]
    assert not page_requests(server, "redirects", REDIRECT_CHAIN_END)
    assert stats.get("focus/refused/too_many_redirects", 0) >= 1
    assert dropped_on(crawl, *TRAPS["redirect_chain"])["too_many_redirects"] >= 1
    assert set(dropped_on(crawl, *TRAPS["redirect_loop"])) & {"redirect_target_seen", "too_many_redirects"}
    assert REDIRECT_LOOP[0] in {r["path"] for r in loop}


def test_request_log_names_the_rule_that_cut_every_trap(crawl):
    unexplained = [trap for trap, (site, prefix) in TRAPS.items() if not dropped_on(crawl, site, prefix)]
    assert not unexplained, unexplained


# --- content ----------------------------------------------------------------------------------

def test_mislabelled_charsets_and_broken_html_are_decoded(crawl):
    broken = stored_by_path(crawl, "broken")
    for path, (_encoding, sentence) in CHARSET_PAGES.items():
        assert path in broken, sorted(broken)
        assert sentence in broken[path]["text"], (path, broken[path]["encoding"], broken[path]["text"][:200])
    for path in BROKEN_PATHS:
        assert path in broken, sorted(broken)
        assert BROKEN_SENTENCE in broken[path]["text"], (path, broken[path]["text"][:200])


def test_no_page_answered_200_is_lost(crawl):
    """Every page a server answered 200 (all of them HTML here) is in the store, fetched whole or
    recorded as failed (the 50 MB bodies, the bomb, the trickle, a reset mid-body)."""
    stored = {canonicalize(p[k]) for p in crawl["pages"] for k in ("url", "final_url") if p[k]}
    answered = {canonicalize(r["url"]) for r in page_requests(crawl["server"]) if r["status"] == 200}
    assert answered
    missing = sorted(answered - stored)
    assert not missing, missing
    # the store holds no page the servers never answered with content (nothing invented, nothing twice)
    per_url = Counter(canonicalize(p["url"]) for p in crawl["pages"])
    assert max(per_url.values()) == 1, [u for u, n in per_url.items() if n > 1]


def test_near_duplicates_stored_but_exported_once(crawl):
    hub = stored_by_path(crawl, "hub")
    exported_urls = Counter(canonicalize(item["url"]) for item in crawl["exported"])
    base = f"http://{crawl['hosts']['hub']}"
    total = 0
    for group in DUPLICATE_GROUPS:
        assert all(path in hub for path in group), (group, sorted(hub))
        assert sum(bool(hub[path]["duplicate_of"]) for path in group) == len(group) - 1, \
            [(p, hub[p]["duplicate_of"]) for p in group]
        exported = sum(exported_urls[canonicalize(base + path)] for path in group)
        assert exported <= 1, group
        total += exported
    assert total >= 1, "no story was exported at all: the duplicate check proves nothing"
    hashes = Counter(item["content_hash"] for item in crawl["exported"])
    assert max(hashes.values()) == 1, hashes
