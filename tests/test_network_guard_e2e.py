"""No fetch into private networks, end to end: real ``scrapy crawl focused`` runs against the SSRF
probe web (bench/ssrf_probe.py), judged by the secret server's own log, the crawl's request log,
its stats and its store.

The probe's site is served on 127.0.0.2 (the one address these crawls allow, with
FOCUS_ALLOWED_NETWORKS) and links, redirects and lists sitemaps pointing at the secret server on
127.0.0.1, spelled every way (2130706433, 0x7f.1, 127.1, [::ffff:127.0.0.1], localhost...). Only
loopback targets here, so that a broken guard sends nothing off this machine; the other ranges
are checked at admission by tests/test_network_guard.py, and through the replay proxy below
(which answers from its records, never from the network).
"""

from __future__ import annotations

import json
import re
import socket

import pytest

from focuscrawl.replay import RecordedWeb, ReplayProxy
from focuscrawl.store import CrawlStore

from .conftest import load_bench, run_scrapy

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

probe = load_bench("ssrf_probe")

#: targets the crawl can reach once loopback is allowed (Scrapy's default resolver is IPv4 only,
#: so [::1] and [::ffff:127.0.0.1] fail to resolve rather than connect)
REACHABLE_WHEN_ALLOWED = {"literal", "decimal", "hex", "octal", "short", "name", "redirect-literal", "redirect-name",
                          "sitemap.xml", "from-sitemap", "robots-redirect"}


def _bindable(address: str) -> bool:
    try:
        with socket.socket() as sock:
            sock.bind((address, 0))
        return True
    except OSError:
        return False


if not all(_bindable(a) for a in (probe.SITE_ADDRESS, probe.MIRROR_ADDRESS)):
    pytest.skip("this system routes only 127.0.0.1 to loopback", allow_module_level=True)


def stats(log_text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"'(focus/[^']+)': (\d+)", log_text)}


def stored_urls(path) -> list[str]:
    store = CrawlStore(str(path), create=False)
    try:
        return [page["url"] for page in store.iter_pages()]
    finally:
        store.close()


@pytest.fixture(scope="module")
def crawls(demo_model, tmp_path_factory):
    """The probe web crawled three times: defaults, loopback allowed, Scrapy's stock resolver."""
    out = tmp_path_factory.mktemp("ssrf")
    runs = {}
    with probe.ProbeWeb(probe.targets(include_outside=False)) as web:
        for name, settings in (("defaults", ()), ("allowed", ("FOCUS_ALLOWED_NETWORKS=127.0.0.0/8",)),
                               ("stock", (f"TWISTED_DNS_RESOLVER={probe.STOCK_RESOLVER}",))):
            web.secret_log.clear()
            run = probe.run(web, demo_model, out / name, *settings, timeout=150)
            assert run["returncode"] == 0, (out / name / "crawl.log").read_text()[-3000:]
            run["secret"] = web.secret_paths()
            run["out"] = out / name
            runs[name] = run
        runs["web"] = web
    return runs


def test_by_default_nothing_private_is_fetched(crawls):
    run = crawls["defaults"]
    assert run["secret"] == set()  # the secret server's own log: not one request
    for slug, seen in run["targets"].items():
        assert seen["reason"] == "private_network/" + ("unspecified" if slug == "unspecified" else "loopback"), slug
        assert not seen["fetched"], slug
    assert all(probe.SITE_ADDRESS in url or probe.MIRROR_ADDRESS in url for url in stored_urls(run["out"] / "crawl.db"))


def test_each_line_refuses_what_it_can_see(crawls):
    by = {slug: seen["refused_by"] for slug, seen in crawls["defaults"]["targets"].items()}
    # addresses in URLs, in any spelling, and every redirect hop and sitemap entry: at admission
    for slug in ("literal", "decimal", "hex", "octal", "short", "ipv6", "mapped", "mapped-hex", "unspecified",
                 "redirect-literal", "from-sitemap"):
        assert by[slug] == "admission", slug
    # names: by the resolver, on the address connected to; robots.txt redirects: on their own
    for slug in ("name", "redirect-name", "sitemap.xml"):
        assert by[slug] == "resolver", slug
    assert by["robots-redirect"] == "robots redirect"


def test_refusals_are_counted_and_in_the_request_log(crawls):
    run = crawls["defaults"]
    counted = run["stats"]
    assert counted["focus/refused/private_network/loopback"] >= len(crawls["web"].targets)
    assert counted["focus/refused/private_network/unspecified"] == 1
    assert counted["focus/network_guard/resolver"] >= 3
    assert counted["focus/network_guard/robots_redirect"] == 1
    records = [json.loads(line) for line in (run["out"] / "requests.jsonl").read_text().splitlines()]
    dropped = {r["url"] for r in records if str(r.get("dropped", "")).startswith("private_network/")}
    web = crawls["web"]
    for target in web.targets:
        if target.via != "robots redirect":
            assert any(url.endswith(target.path) for url in dropped), target.slug
    # nothing reached the network for a target: no record with a status or an error
    assert not [r for r in records if "/t/" in r.get("url", "") and not r.get("dropped")]


def test_with_loopback_allowed_the_same_targets_are_fetched(crawls):
    run = crawls["allowed"]
    fetched = {slug for slug, seen in run["targets"].items() if seen["fetched"]}
    assert REACHABLE_WHEN_ALLOWED <= fetched
    assert "unspecified" not in fetched  # 0.0.0.0 is not in 127.0.0.0/8: still refused
    assert run["targets"]["unspecified"]["reason"] == "private_network/unspecified"


def test_without_the_guarded_resolver_the_peer_check_drops_what_came_back(crawls):
    """The last line: with Scrapy's stock resolver a name is connected to, but the response from a
    refused address is dropped: counted, logged, never stored."""
    run = crawls["stock"]
    assert "/t/name" in run["secret"]  # the request went out: why the resolver is the line that counts
    assert run["targets"]["name"]["refused_by"] == "peer"
    assert run["stats"]["focus/network_guard/peer"] >= 3
    assert not [url for url in stored_urls(run["out"] / "crawl.db") if "/t/" in url]
    assert "names are not judged before connecting" in (run["out"] / "crawl.log").read_text()


def test_a_name_resolving_to_loopback_is_refused_with_no_setting_at_all(demo_model, tmp_path):
    with probe.ProbeWeb([]) as web:
        port = web.secret.server_address[1]
        result = run_scrapy(["crawl", "focused", "-a", f"seeds=http://localhost:{port}/t/name",
                             "-a", f"model={demo_model}", "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}"],
                            cwd=tmp_path, timeout=120)
        secret = web.secret_paths()
    assert result.returncode == 0, result.stderr[-3000:]
    assert secret == set()
    counted = stats(result.stderr)
    assert counted["focus/network_guard/resolver"] >= 2  # its robots.txt, then the page
    assert counted["focus/refused/private_network/loopback"] >= 2
    assert stored_urls(tmp_path / "crawl.db") == []


# --- through a proxy ------------------------------------------------------------------------------
SITE = "http://site.test"
HOSTILE = ["http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/admin", "http://127.0.0.1:6379/",
           "http://[::1]/", "http://[::ffff:169.254.169.254]/latest/", "http://2130706433/",
           "http://100.100.100.200/latest/meta-data/", "http://192.168.1.1/"]


def _page(title, links=()):
    anchors = "".join(f'<a href="{u}">{u}</a> ' for u in links)
    body = f"<html><title>{title}</title><body><p>Comets and planets. {title}</p>{anchors}</body></html>".encode()
    return (200, [("Content-Type", "text/html")], body)


PROXY_RECORDS = {
    f"{SITE}/": _page("Home", [*HOSTILE, f"{SITE}/moved", "http://intranet.test/", "http://robots-moved.test/"]),
    f"{SITE}/moved": (302, [("Location", "http://169.254.169.254/latest/user-data")], b""),
    "http://intranet.test/": _page("A name: the proxy resolves it"),
    "http://robots-moved.test/robots.txt": (301, [("Location", "http://10.0.0.1/robots.txt")], b""),
    "http://robots-moved.test/": _page("Robots moved"),
    **{url: _page("secret") for url in HOSTILE},
    "http://169.254.169.254/latest/user-data": _page("secret"),
    "http://10.0.0.1/robots.txt": (200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"),
}


def test_through_a_proxy_addresses_in_urls_are_refused_and_the_proxy_is_not(demo_model, tmp_path):
    """The replay proxy (127.0.0.1, as ``scrapy replay`` and ``scrapy evaluate`` crawl) resolves
    names itself: the resolver must not refuse the proxy, and only addresses written in URLs (links,
    redirect hops, where a robots.txt redirects) are checked."""
    with ReplayProxy(RecordedWeb.from_records(PROXY_RECORDS)) as proxy:
        result = run_scrapy(["crawl", "focused", "-a", f"seeds={SITE}/", "-a", f"model={demo_model}",
                             "-s", f"FOCUS_STORE={tmp_path / 'crawl.db'}", "-s", "DOWNLOAD_DELAY=0.05"],
                            cwd=tmp_path, env={"http_proxy": proxy.url}, timeout=120)
        asked = {record["url"] for record in proxy.log}
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{SITE}/" in asked and "http://intranet.test/" in asked  # through the proxy, names are its business
    leaked = [url for url in asked if not url.startswith(("http://site.test/", "http://intranet.test/",
                                                          "http://robots-moved.test/"))]
    assert leaked == []
    counted = stats(result.stderr)
    assert counted["focus/refused/private_network/link_local"] == 3  # two links and the redirect hop
    assert counted["focus/network_guard/robots_redirect"] == 1
    assert "http://robots-moved.test/" in stored_urls(tmp_path / "crawl.db")  # its robots.txt: unavailable


def test_a_seed_the_crawl_may_not_reach_is_one_clear_error(demo_model, tmp_path):
    result = run_scrapy(["crawl", "focused", "-a", "seeds=http://a.test/,http://127.0.0.1:8000/",
                         "-a", f"model={demo_model}", "-s", "LOG_LEVEL=ERROR"], cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr
    assert "private_network/loopback" in errors[0] and "FOCUS_ALLOWED_NETWORKS=127.0.0.1" in errors[0]
