"""The replay proxy with real clients on 127.0.0.1: urllib, http.client, raw sockets, Scrapy."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import socket
import subprocess
import sys
import textwrap
import threading
import urllib.error
import urllib.request

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.replay.recorded import RecordError

HTML = b"<html><head><title>Home</title></head><body><a href='/a'>a</a></body></html>"
RECORDS = {
    "http://site.test/": (200, [("Content-Type", "text/html; charset=utf-8"), ("X-Kept", "yes")], HTML),
    "http://site.test/a?y=2&x=1": (200, [("Content-Type", "text/plain"), ("Content-Length", "999"),
                                         ("Transfer-Encoding", "chunked")], b"page a"),
    "http://site.test/old": (301, [("Location", "http://site.test/"), ("Content-Type", "text/html")], b"moved"),
    "http://rec.test/robots.txt": (200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /rec\n"),
}
ROBOTS = {"site.test": "User-agent: *\nDisallow: /private\n"}


@pytest.fixture
def proxy(tmp_path):
    web = RecordedWeb.from_records(RECORDS)
    with ReplayProxy(web, robots=ROBOTS, log_path=str(tmp_path / "log.jsonl")) as p:
        yield p


def settled(proxy):
    """The log once every answer the clients got has been logged."""
    assert proxy.wait_idle(timeout=10)
    return proxy.log


def opener(proxy):
    return urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy.url}))


def get(proxy, url):
    """(status, headers, body) through the proxy; HTTP errors are answers too."""
    try:
        with opener(proxy).open(url, timeout=10) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def raw(proxy, data: bytes, shut: bool = True) -> bytes:
    """Send raw bytes on one connection and read until the server closes it."""
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(data)
        if shut:
            sock.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def test_recorded_200_keeps_headers_and_fixes_framing(proxy):
    status, headers, body = get(proxy, "http://site.test/")
    assert (status, body) == (200, HTML)
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert headers["X-Kept"] == "yes"
    status, headers, body = get(proxy, "http://site.test/a?y=2&x=1")
    assert (status, body) == (200, b"page a")
    assert headers["Content-Length"] == "6"
    assert "Transfer-Encoding" not in headers


def test_lookup_tolerates_canonical_differences(proxy):
    assert get(proxy, "http://SITE.test:80/a?x=1&y=2")[2] == b"page a"


def test_recorded_301_is_followed(proxy):
    with opener(proxy).open("http://site.test/old", timeout=10) as resp:
        assert resp.geturl() == "http://site.test/"
        assert resp.read() == HTML
    statuses = [(r["path"], r["status"]) for r in settled(proxy)]
    assert statuses == [("/old", 301), ("/", 200)]


def test_unknown_url_is_404(proxy):
    status, _, body = get(proxy, "http://site.test/never-recorded")
    assert status == 404 and b"404" in body
    assert get(proxy, "http://other.test/")[0] == 404


def test_robots_from_warc_then_dict_then_404(proxy):
    assert get(proxy, "http://rec.test/robots.txt")[2] == b"User-agent: *\nDisallow: /rec\n"
    status, headers, body = get(proxy, "http://site.test/robots.txt")
    assert (status, body.decode()) == (200, ROBOTS["site.test"])
    assert headers["Content-Type"].startswith("text/plain")
    assert get(proxy, "http://nobody.test/robots.txt")[0] == 404


def test_head_has_length_but_no_body(proxy):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("HEAD", "http://site.test/")
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.getheader("Content-Length") == str(len(HTML))
    assert resp.read() == b""
    conn.request("GET", "http://site.test/")  # the connection is still usable: nothing stray was sent
    assert conn.getresponse().read() == HTML
    conn.close()
    assert [(r["method"], r["bytes"]) for r in settled(proxy)] == [("HEAD", 0), ("GET", len(HTML))]


def test_keep_alive_serves_several_requests_on_one_connection(proxy):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    for path in ["/", "/a?y=2&x=1", "/missing", "/"]:
        conn.request("GET", "http://site.test" + path)
        conn.getresponse().read()
    conn.close()
    log = settled(proxy)
    assert len(log) == 4
    assert len({r["conn"] for r in log}) == 1


def test_origin_form_with_host_header(proxy):
    conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
    conn.request("GET", "/", headers={"Host": "site.test"})
    assert conn.getresponse().read() == HTML
    conn.close()
    assert settled(proxy)[0]["url"] == "http://site.test/"


def test_many_concurrent_connections(tmp_path):
    web = RecordedWeb.from_records(RECORDS)
    results: list[int] = []
    lock = threading.Lock()
    with ReplayProxy(web, latency_ms=50) as p:
        barrier = threading.Barrier(25)

        def client():
            conn = http.client.HTTPConnection("127.0.0.1", p.port, timeout=20)
            conn.connect()
            barrier.wait(timeout=20)  # every connection is open before any request is sent
            for _ in range(3):
                conn.request("GET", "http://site.test/")
                resp = conn.getresponse()
                with lock:
                    results.append(resp.status if resp.read() == HTML else -1)
            conn.close()

        threads = [threading.Thread(target=client) for _ in range(25)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        log = settled(p)
    assert results == [200] * 75
    assert len(log) == 75 and len({r["conn"] for r in log}) == 25
    # with 50 ms latency and all 25 connections open, answers overlapped in time
    starts = sorted(r["t_start"] for r in log)
    ends = sorted(r["t_end"] for r in log)
    assert starts[24] < ends[0]


@pytest.mark.parametrize("garbage", [
    b"HELLO\r\n\r\n",
    b"GET /only-two-parts\r\n\r\n",
    b"GET / SPDY/3\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS hello sent in clear
    b"GET http://site.test/ HTTP/1.1\r\nno colon here\r\n\r\n",
])
def test_malformed_requests_get_400_and_the_server_lives(proxy, garbage):
    answer = raw(proxy, garbage)
    assert answer.startswith(b"HTTP/1.1 400 ")
    assert get(proxy, "http://site.test/")[0] == 200


def test_oversized_head_gets_431(proxy):
    answer = raw(proxy, b"GET http://site.test/ HTTP/1.1\r\nX-Big: " + b"x" * 200_000 + b"\r\n\r\n", shut=False)
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert get(proxy, "http://site.test/")[0] == 200


def test_connect_is_refused_politely(proxy):
    answer = raw(proxy, b"CONNECT site.test:443 HTTP/1.1\r\nHost: site.test:443\r\n\r\n", shut=False)
    assert answer.startswith(b"HTTP/1.1 501 ")


def test_client_disconnect_mid_request_is_not_an_answer(proxy):
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"GET http://site.test/ HTTP/1.1\r\nHost: site")
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10) as sock:
        sock.sendall(b"GET http://site.test/ HTTP/1.1\r\n\r\n")  # and leaves before the answer
    assert get(proxy, "http://site.test/a?y=2&x=1")[0] == 200
    assert [r["path"] for r in settled(proxy)][-1] == "/a"
    assert all(r["path"] != "" for r in settled(proxy))


def test_log_file_has_one_json_line_per_answer_with_times(proxy, tmp_path):
    for url in ["http://site.test/", "http://site.test/missing", "http://site.test/robots.txt"]:
        get(proxy, url)
    proxy.stop()
    lines = (tmp_path / "log.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert records == proxy.log
    assert [r["status"] for r in records] == [200, 404, 200]
    for rec in records:
        assert set(rec) == {"t_start", "t_end", "method", "url", "host", "path", "status", "bytes", "conn"}
        assert rec["t_start"] <= rec["t_end"]
        assert rec["host"] == "site.test"
    assert records[0]["bytes"] == len(HTML)


def test_latency_delays_each_answer():
    web = RecordedWeb.from_records(RECORDS)
    with ReplayProxy(web, latency_ms=200) as p:
        get(p, "http://site.test/")
        rec = settled(p)[0]
    assert rec["t_end"] - rec["t_start"] >= 0.2


def test_port_in_use_raises_and_stop_is_idempotent():
    web = RecordedWeb.from_records(RECORDS)
    with ReplayProxy(web) as first:
        with pytest.raises(OSError):
            ReplayProxy(web, port=first.port).start()
    first.stop()


def _warc(path, records):
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for url, status, headers, body in records:
            http_headers = StatusAndHeaders(status, headers, protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                          http_headers=http_headers))


def test_from_warcs_decodes_bodies_and_keeps_redirects(tmp_path):
    zipped = gzip.compress(b"<html>zipped page</html>")
    _warc(tmp_path / "w.warc.gz", [
        ("http://w.test/", "200 OK", [("Content-Type", "text/html"), ("Content-Encoding", "gzip"),
                                      ("Content-Length", str(len(zipped)))], zipped),
        ("http://w.test/dir", "301 Moved Permanently", [("Location", "/dir/"), ("Content-Length", "0")], b""),
        ("http://w.test/robots.txt", "200 OK", [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"),
    ])
    web = RecordedWeb.from_warcs([tmp_path / "w.warc.gz"])
    page = web.lookup("http://w.test/")
    assert page.body == b"<html>zipped page</html>"
    assert page.header("Content-Encoding") is None and page.content_type == "text/html"
    assert web.lookup("http://w.test/dir").location == "http://w.test/dir/"
    assert web.lookup("http://w.test/robots.txt").body == b"User-agent: *\nAllow: /\n"
    with ReplayProxy(web) as p:
        status, headers, body = get(p, "http://w.test/")
        assert (status, body) == (200, b"<html>zipped page</html>")
        assert "Content-Encoding" not in headers


def test_from_warcs_rejects_missing_and_non_warc_files(tmp_path):
    with pytest.raises(RecordError, match="not found"):
        RecordedWeb.from_warcs([tmp_path / "nope.warc.gz"])
    (tmp_path / "junk.warc").write_bytes(b"this is not a warc\n" * 10)
    with pytest.raises(RecordError, match="not a readable WARC"):
        RecordedWeb.from_warcs([tmp_path / "junk.warc"])


SCRAPY_CLIENT = textwrap.dedent("""
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class Client(scrapy.Spider):
        name = "client"
        start_urls = ["http://site.test/", "http://site.test/old", "http://site.test/nothing"]
        custom_settings = {"ROBOTSTXT_OBEY": True, "HTTPERROR_ALLOW_ALL": True, "LOG_LEVEL": "ERROR",
                           "CONCURRENT_REQUESTS": 4, "DOWNLOAD_TIMEOUT": 20, "RETRY_ENABLED": False,
                           "CLOSESPIDER_TIMEOUT": 60}
        got = []

        def parse(self, response):
            Client.got.append([response.url, response.status, len(response.body)])

    process = CrawlerProcess()
    process.crawl(Client)
    process.start()
    print(json.dumps(sorted(Client.got)))
""")


@pytest.mark.slow
def test_scrapy_crawls_through_the_proxy(proxy, tmp_path):
    script = tmp_path / "client.py"
    script.write_text(SCRAPY_CLIENT)
    env = {"PATH": "/usr/bin:/bin", "http_proxy": proxy.url, "HOME": str(tmp_path)}
    result = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    assert ["http://site.test/", 200, len(HTML)] in got
    assert any(url == "http://site.test/nothing" and status == 404 for url, status, _ in got)
    paths = [r["path"] for r in settled(proxy)]
    assert paths.count("/robots.txt") == 1 and "/old" in paths and "/nothing" in paths
