"""The hostile test web itself: each trap and misbehaviour is really there, seen by real clients."""

import http.client
import re
import select
import socket
import time
import zlib
from urllib.parse import urljoin, urlsplit

import charset_normalizer
import lxml.html
import pytest

from focuscrawl.politeness import audit
from tests.webs.hostile import (
    ARTICLE_PATHS, BIG_BODY_BYTES, BIG_PATHS, BROKEN_SENTENCE, CALENDAR_START, CHARSET_PAGES,
    DISALLOWED_PATHS, DUPLICATE_GROUPS, EXCLUDED_HOST, GZIP_BOMB, GZIP_BOMB_INFLATED_BYTES,
    GZIP_BOMB_PATH, HOST_NAMES, REDIRECT_CHAIN_END, REDIRECT_CHAIN_LENGTH, REDIRECT_LOOP,
    RESET_PATHS, RETRY_AFTER_SECONDS, ROBOTS_ALLOWED_PATHS, ROBOTS_CRAWL_DELAY, ROBOTS_TXT,
    SESSION_ITEMS, STORY_TEXT, TRAPS, TRICKLE_MAX_SECONDS, TRICKLE_PATH, HostileWeb,
)

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 10


@pytest.fixture(scope="module")
def web():
    with HostileWeb(trickle_seconds=5, lifetime=120) as w:
        yield w


def fetch(netloc, path, conn=None):
    """(status, headers dict lower-cased, body) without following redirects or decoding."""
    own = conn is None
    if own:
        host, port = netloc.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        conn.request("GET", path, headers={"User-Agent": "focuscrawl-test"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        if own:
            conn.close()


def links(body, base):
    """Absolute hrefs of a page, in order."""
    return [urljoin(base, h) for h in re.findall(rb'href="([^"]+)"', body)
            for h in [h.decode().replace("&amp;", "&")]]


def paragraphs(body):
    return re.findall(rb"<p>(.*?)</p>", body)


# --- shape ---------------------------------------------------------------------------------------

def test_every_host_is_its_own_loopback_port(web):
    assert set(web.hosts) == set(HOST_NAMES)
    assert all(re.fullmatch(r"127\.0\.0\.1:\d+", n) for n in web.hosts.values())
    assert len(set(web.hosts.values())) == len(HOST_NAMES)
    assert web.seeds == [f"http://{web.hosts['hub']}/"]
    assert web.excluded_host == web.hosts[EXCLUDED_HOST]


def test_seed_links_into_every_host_and_trap(web):
    status, _, body = fetch(web.hosts["hub"], "/")
    assert status == 200
    found = links(body, web.seeds[0])
    hosts_linked = {urlsplit(u).netloc for u in found}
    assert hosts_linked == set(web.hosts.values())
    for path in ARTICLE_PATHS + tuple(p for g in DUPLICATE_GROUPS for p in g):
        assert web.url("hub", path) in found
    assert web.url("calendar", "/calendar/%d/%d" % CALENDAR_START) in found
    # every host's home page leads on into its trap or special pages
    for name in ("session", "deep", "params", "redirects", "big", "slow", "reset", "errors",
                 "broken", "robots", "excluded"):
        status, _, home = fetch(web.hosts[name], "/")
        assert status == 200 and links(home, web.url(name)), name


def test_every_host_serves_its_own_robots_txt(web):
    for name, netloc in web.hosts.items():
        status, headers, body = fetch(netloc, "/robots.txt")
        assert status == 200 and headers["content-type"].startswith("text/plain")
        assert body.decode("utf-8") == ROBOTS_TXT[name]
        assert web.robots[netloc] == ROBOTS_TXT[name]


def test_odd_robots_txt_means_what_the_constants_say(web):
    _, _, raw = fetch(web.hosts["robots"], "/robots.txt")
    assert raw.startswith(b"\xef\xbb\xbfUser-Agent: FocusCrawl")  # BOM glued to the group line
    text = raw.decode("utf-8")
    for oddity in ("DisAllow:", "CRAWL-DELAY", "# trailing comment", "X-Unknown-Directive",
                   "Noindex:", "\n\nDisAllow"):
        assert oddity in text
    rp = audit.parse_robots(text)
    base = web.url("robots")
    for path in DISALLOWED_PATHS["robots"]:
        assert not rp.can_fetch(base + path.lstrip("/"), "focuscrawl"), path
    for path in ROBOTS_ALLOWED_PATHS:
        assert rp.can_fetch(base + path.lstrip("/"), "focuscrawl"), path
    assert rp.crawl_delay("focuscrawl") == ROBOTS_CRAWL_DELAY
    # the BOM has teeth: a parser that keeps it loses focuscrawl's group and lets /drafts/ through
    naive = audit.Protego.parse(text)
    assert naive.can_fetch(base + "drafts/plan.html", "focuscrawl")
    hub_rp = audit.parse_robots(web.robots[web.hosts["hub"]])
    assert not hub_rp.can_fetch(web.url("hub", DISALLOWED_PATHS["hub"][0]), "focuscrawl")


def test_disallowed_pages_exist_and_are_linked(web):
    _, _, home = fetch(web.hosts["robots"], "/")
    found = links(home, web.url("robots"))
    for path in DISALLOWED_PATHS["robots"] + ROBOTS_ALLOWED_PATHS:
        assert web.url("robots", path) in found
        assert fetch(web.hosts["robots"], path)[0] == 200
    assert web.url("hub", DISALLOWED_PATHS["hub"][0]) in web.disallowed_urls()


# --- traps ---------------------------------------------------------------------------------------

def test_calendar_goes_on_forever_both_ways(web):
    netloc, prefix = web.hosts["calendar"], TRAPS["calendar"][1]
    seen, path = set(), "/calendar/%d/%d" % CALENDAR_START
    for _ in range(16):
        status, _, body = fetch(netloc, path)
        assert status == 200 and path.startswith(prefix) and path not in seen
        seen.add(path)
        prev_url, next_url = links(body, web.url("calendar", path))[:2]
        path = urlsplit(next_url).path
    assert "/calendar/2028/2" in seen  # crossed two year ends
    _, _, body = fetch(netloc, "/calendar/2026/1")
    assert urlsplit(links(body, web.url("calendar"))[0]).path == "/calendar/2025/12"


def test_session_ids_are_new_on_every_link(web):
    netloc = web.hosts["session"]
    _, _, first = fetch(netloc, "/shop")
    _, _, second = fetch(netloc, "/shop")
    a, b = set(links(first, web.url("session"))), set(links(second, web.url("session")))
    assert len(a) == len(b) == SESSION_ITEMS + 1 and not a & b
    assert any(";jsessionid=" in u for u in a) and any("?sid=" in u for u in a)
    item_urls = sorted(u for u in a | b if "/shop/item/1?" in u)
    assert len(item_urls) == 2
    bodies = [fetch(netloc, urlsplit(u).path + "?" + urlsplit(u).query)[2] for u in item_urls]
    assert paragraphs(bodies[0]) == paragraphs(bodies[1])  # one item, two URLs


def test_deep_paths_go_deeper_with_relative_links(web):
    url = web.url("deep", "/")
    for depth in range(1, 21):
        status, _, body = fetch(web.hosts["deep"], urlsplit(url).path)
        assert status == 200
        assert b'href="a/"' in body
        url = links(body, url)[0]
    assert urlsplit(url).path == "/a" * 20 + "/"
    assert urlsplit(url).path.startswith(TRAPS["deep"][1])


def test_query_permutations_serve_one_page(web):
    netloc = web.hosts["params"]
    variants = ["/products?a=1&b=2", "/products?b=2&a=1", "/products?a=1&b=2&utm_source=x",
                "/products?utm_source=y&b=2&a=1&utm_medium=email"]
    bodies = [fetch(netloc, v)[2] for v in variants]
    assert all(paragraphs(b) == paragraphs(bodies[0]) for b in bodies)
    assert paragraphs(fetch(netloc, "/products?a=2&b=2")[2]) != paragraphs(bodies[0])
    utm_1 = {u for u in links(bodies[0], web.url("params")) if "utm_source" in u}
    utm_2 = {u for u in links(bodies[1], web.url("params")) if "utm_source" in u}
    assert utm_1 and not utm_1 & utm_2  # fresh tracking parameters every time


def test_redirect_loop_and_chain(web):
    netloc = web.hosts["redirects"]
    status, headers, _ = fetch(netloc, REDIRECT_LOOP[0])
    assert status == 302 and urlsplit(headers["location"]).path == REDIRECT_LOOP[1]
    status, headers, _ = fetch(netloc, REDIRECT_LOOP[1])
    assert status == 301 and headers["location"] == REDIRECT_LOOP[0]
    path, hops = "/chain/0", 0
    for _ in range(REDIRECT_CHAIN_LENGTH + 5):
        status, headers, _ = fetch(netloc, path)
        if status != 302:
            break
        hops += 1
        path = urlsplit(urljoin(web.url("redirects", path), headers["location"])).path
    assert (status, hops, path) == (200, REDIRECT_CHAIN_LENGTH, REDIRECT_CHAIN_END)


# --- bodies that hurt ----------------------------------------------------------------------------

@pytest.mark.parametrize("path", BIG_PATHS)
def test_big_bodies_are_50mb_and_end(web, path):
    host, port = web.hosts["big"].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        declared = resp.getheader("Content-Length")
        assert declared == (str(BIG_BODY_BYTES) if path == BIG_PATHS[0] else None)
        total = 0
        while chunk := resp.read(1 << 20):
            total += len(chunk)
        assert total == BIG_BODY_BYTES
    finally:
        conn.close()


def test_big_body_client_can_walk_away(web):
    host, port = web.hosts["big"].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    conn.request("GET", BIG_PATHS[0])
    resp = conn.getresponse()
    assert len(resp.read(1 << 20)) == 1 << 20
    conn.close()
    assert web.wait_idle(timeout=10)
    rec = [r for r in web.log if r["path"] == BIG_PATHS[0]][-1]
    assert rec["status"] == 200 and rec["bytes"] < BIG_BODY_BYTES


def test_gzip_bomb_is_small_and_inflates_past_a_gigabyte(web):
    status, headers, body = fetch(web.hosts["big"], GZIP_BOMB_PATH)
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert body == GZIP_BOMB and len(body) < 4 * 1024 * 1024
    assert GZIP_BOMB_INFLATED_BYTES > 1_000_000_000
    assert int.from_bytes(body[-4:], "little") == GZIP_BOMB_INFLATED_BYTES % 2**32
    inflater, data, out = zlib.decompressobj(31), body, 0
    while out < 64 * 1024 * 1024:  # the first 64 MB: valid gzip, all zeros, far from the end
        piece = inflater.decompress(data, 8 * 1024 * 1024)
        assert piece and not piece.strip(b"\0")
        out, data = out + len(piece), inflater.unconsumed_tail
    assert not inflater.eof


def test_trickle_sends_a_byte_a_second_and_logs_when_the_client_leaves(web):
    host, port = web.hosts["slow"].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    conn.request("GET", TRICKLE_PATH)
    resp = conn.getresponse()
    assert resp.getheader("Content-Length") == str(web.trickle_seconds)
    first = resp.read(1)
    t_first = time.monotonic()
    second = resp.read(1)
    gap = time.monotonic() - t_first
    assert first + second == b"<h" and gap > 0.7  # one byte a second (with a tolerance)
    conn.close()
    closed_at = time.time()
    assert web.wait_idle(timeout=5)
    rec = [r for r in web.log if r["path"] == TRICKLE_PATH][-1]
    assert rec["bytes"] < web.trickle_seconds
    assert rec["t_end"] - closed_at < 0.6  # the server noticed the client left, not seconds later
    assert HostileWeb(trickle_seconds=10_000).trickle_seconds == TRICKLE_MAX_SECONDS


def test_reset_host_resets_but_serves_robots_txt(web):
    netloc = web.hosts["reset"]
    assert fetch(netloc, "/robots.txt")[0] == 200
    host, port = netloc.split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as sock:
        sock.sendall(f"GET {RESET_PATHS[0]} HTTP/1.1\r\nHost: {netloc}\r\n\r\n".encode())
        select.select([sock], [], [], TIMEOUT)
        with pytest.raises(ConnectionResetError):
            sock.recv(1024)
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        conn.request("GET", RESET_PATHS[1])
        resp = conn.getresponse()
        assert resp.status == 200
        with pytest.raises((ConnectionResetError, http.client.IncompleteRead)):
            resp.read()
    finally:
        conn.close()
    assert web.wait_idle(timeout=5)
    statuses = {r["path"]: r["status"] for r in web.log if r["site"] == "reset"}
    assert statuses[RESET_PATHS[0]] == 0 and statuses[RESET_PATHS[1]] == 200


def test_error_pages_and_retry_after(web):
    netloc = web.hosts["errors"]
    assert fetch(netloc, "/error/500")[0] == 500
    assert [fetch(netloc, "/flaky/1")[0] for _ in range(2)] == [500, 200]
    first, again = fetch(netloc, "/busy/1"), fetch(netloc, "/busy/1")
    assert first[0] == 429 and first[1]["retry-after"] == str(RETRY_AFTER_SECONDS)
    assert again[0] == 200
    status, headers, _ = fetch(netloc, "/unavailable")
    assert status == 503 and headers["retry-after"] == "2"
    assert web.wait_idle(timeout=5)
    recs = {r["path"]: r for r in web.log if r["site"] == "errors" and r.get("retry_after")}
    assert set(recs) == {"/busy/1", "/unavailable"}
    assert audit.retry_after_seconds(recs["/busy/1"]["retry_after"]) == RETRY_AFTER_SECONDS


def test_broken_html_is_broken_but_recoverable(web):
    netloc = web.hosts["broken"]
    _, _, one = fetch(netloc, "/broken/1")
    _, _, two = fetch(netloc, "/broken/2")
    _, headers3, three = fetch(netloc, "/broken/3")
    assert b"\x00" in one and b"\xff\xfe" in one and b"\x00" in two and b"\x00" in three
    with pytest.raises(UnicodeDecodeError):
        one.decode("utf-8")
    assert "content-type" not in headers3
    for body in (one, two, three):
        assert BROKEN_SENTENCE.encode() in body
    doc = lxml.html.document_fromstring(one.replace(b"\x00", b""))
    assert "/broken/2" in [a.get("href") for a in doc.iter("a")]


@pytest.mark.parametrize("path", sorted(CHARSET_PAGES))
def test_charset_pages_lie_in_their_header(web, path):
    encoding, sentence = CHARSET_PAGES[path]
    status, headers, body = fetch(web.hosts["broken"], path)
    assert status == 200 and headers["content-type"] == "text/html; charset=ISO-8859-1"
    assert b"charset" not in body.lower()
    assert sentence in body.decode(encoding)
    assert sentence not in body.decode("iso-8859-1")
    assert sentence in str(charset_normalizer.from_bytes(body).best())  # solvable from the bytes


def test_duplicate_stories_under_many_urls(web):
    for n, group in enumerate(DUPLICATE_GROUPS, start=1):
        story, printed, amp = (paragraphs(fetch(web.hosts["hub"], p)[2]) for p in group)
        assert story == amp == [STORY_TEXT[n].encode()]
        assert printed[0] == story[0] and len(printed) == 2


def test_excluded_host_is_a_normal_site(web):
    status, _, body = fetch(web.excluded_host, "/")
    assert status == 200
    assert all(fetch(web.excluded_host, urlsplit(u).path)[0] == 200
               for u in links(body, web.url(EXCLUDED_HOST)))


# --- the log -------------------------------------------------------------------------------------

def test_log_records_have_the_audit_format_and_connection_ids(web, tmp_path):
    host, port = web.hosts["excluded"].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    try:
        for _ in range(2):
            assert fetch(None, "/page/1", conn=conn)[0] == 200
    finally:
        conn.close()
    assert fetch(web.excluded_host, "/page/1")[0] == 200
    assert web.wait_idle(timeout=5)
    records = web.log
    keys = {"t_start", "t_end", "method", "url", "host", "path", "status", "bytes", "conn"}
    assert all(keys <= set(r) and r["t_end"] >= r["t_start"] for r in records)
    last3 = [r for r in records if r["path"] == "/page/1"][-3:]
    assert last3[0]["conn"] == last3[1]["conn"] != last3[2]["conn"]  # keep-alive, then new
    assert last3[0]["url"] == web.url("excluded", "/page/1") and last3[0]["bytes"] > 0
    assert last3[0]["user_agent"] == "focuscrawl-test"
    path = tmp_path / "log.jsonl"
    web.write_log(path)
    assert audit.load_log(path) == records


def test_log_feeds_the_audit(web):
    """An impolite burst on the robots host: the audit on the web's own log catches it."""
    netloc = web.hosts["robots"]
    logged = len(web.log)  # what this test sends, by position: a clock could put it before a mark
    fetch(netloc, "/robots.txt")
    # the server logs a response's end after its last byte is sent: a client as quick as this one can
    # start its next request first, which the audit would rightly call "before robots.txt was read"
    assert web.wait_idle(timeout=5)
    for path in ("/public/1.html", "/private/secret.html"):
        fetch(netloc, path)
    assert web.wait_idle(timeout=5)
    records = [r for r in web.log[logged:] if r["host"] == netloc]
    assert [r["path"] for r in records] == ["/robots.txt", "/public/1.html", "/private/secret.html"]
    report = audit.audit_report(records, robots=web.robots, delays=0.0)
    assert report["required_gap"] == {netloc: ROBOTS_CRAWL_DELAY}
    assert report["violation_counts"]["gap"] == 2  # nobody waited the Crawl-delay
    assert [v["url"] for v in report["violations"]["disallowed"]] == [
        web.url("robots", "/private/secret.html")]
    assert report["violation_counts"]["robots_not_first"] == 0 and not report["ok"]


# --- lifecycle -----------------------------------------------------------------------------------

def test_stop_ends_idle_and_trickling_connections():
    w = HostileWeb(trickle_seconds=30).start()
    host, port = w.hosts["slow"].split(":")
    idle = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    idle.request("GET", "/")
    idle.getresponse().read()  # now an idle keep-alive connection
    slow = http.client.HTTPConnection(host, int(port), timeout=TIMEOUT)
    slow.request("GET", TRICKLE_PATH)
    resp = slow.getresponse()
    resp.read(1)
    w.stop()
    w.stop()  # idempotent
    assert w.wait_idle(timeout=0)
    with pytest.raises((http.client.IncompleteRead, ConnectionError)):
        resp.read()  # the trickle was cut short
    for c in (idle, slow):
        c.close()
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=TIMEOUT).close()


def test_lifetime_stops_the_web_by_itself():
    w = HostileWeb(lifetime=0.2).start()
    host, port = w.hosts["hub"].split(":")
    assert w.wait_stopped(timeout=15)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=TIMEOUT).close()
