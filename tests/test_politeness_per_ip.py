"""FOCUS_POLITENESS_PER_IP: two host names served by one machine share one politeness budget.

Two real servers on 127.0.0.1 (two ports: two hosts for focuscrawl, one IP address) link to each
other; the audit merges their logs by IP and finds no overlap and no gap below the delay."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from focuscrawl.politeness.audit import audit_report

from .conftest import run_scrapy

pytestmark = pytest.mark.e2e

DELAY = 0.2
PAGES = 6


class _Site:
    def __init__(self, log: list, lock: threading.Lock):
        self.log, self.lock, self.other = log, lock, None
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                start = time.time()
                if self.path == "/robots.txt":
                    body, status, ctype = b"User-agent: *\nAllow: /\n", 200, "text/plain"
                else:
                    n = int(self.path.strip("/").split(".")[0] or 0)
                    links = "".join(f'<a href="/{i}.html">comet notes {i}</a> ' for i in range(PAGES))
                    links += "".join(f'<a href="{site.other}/{i}.html">telescope {i}</a> ' for i in range(PAGES))
                    body = (f"<html><title>Page {n}</title><body><p>Comets, planets and galaxies: night {n} "
                            f"at the observatory of {site.port}.</p>{links}</body></html>").encode()
                    status, ctype = 200, "text/html"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                with site.lock:
                    site.log.append({"t_start": start, "t_end": time.time(), "method": "GET",
                                     "url": f"http://127.0.0.1:{site.port}{self.path}",
                                     "host": f"127.0.0.1:{site.port}", "path": self.path, "status": status,
                                     "bytes": len(body), "conn": 0})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def crawl(demo_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("per_ip")
    log, lock = [], threading.Lock()
    a, b = _Site(log, lock), _Site(log, lock)
    a.other, b.other = f"http://localhost:{b.port}", f"http://127.0.0.1:{a.port}"
    try:
        result = run_scrapy(
            ["crawl", "focused", "-a", f"seeds=http://127.0.0.1:{a.port}/,http://localhost:{b.port}/",
             "-a", f"model={demo_model}", "-s", f"FOCUS_STORE={out / 'crawl.db'}",
             "-s", f"DOWNLOAD_DELAY={DELAY}", "-s", "FOCUS_POLITENESS_PER_IP=True", "-s", "FOCUS_PATIENCE=0",
             "-s", "FOCUS_ALLOWED_NETWORKS=127.0.0.1"],  # the test servers: loopback allowed explicitly
            cwd=out, timeout=120)
    finally:
        for site in (a, b):
            site.server.shutdown()
            site.server.server_close()
    assert result.returncode == 0, result.stderr[-3000:]
    return {"log": sorted(log, key=lambda r: r["t_start"]), "ports": (a.port, b.port)}


def test_both_hosts_were_crawled(crawl):
    ports = {r["host"] for r in crawl["log"]}
    assert ports == {f"127.0.0.1:{p}" for p in crawl["ports"]}
    assert len(crawl["log"]) >= 2 * PAGES


def test_one_ip_is_treated_as_one_host(crawl):
    merged = [dict(r, host="127.0.0.1") for r in crawl["log"]]
    report = audit_report(merged, delays=DELAY, tolerance=0.0)
    assert report["max_concurrency"]["127.0.0.1"] == 1
    assert report["violation_counts"]["gap"] == 0, report["violations"]["gap"][:3]
