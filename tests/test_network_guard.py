"""No fetch into private networks: the address classifier, the policy, admission's refusals, and the
Scrapy side's parts (resolver, downloader middleware) driven directly. End to end:
tests/test_network_guard_e2e.py."""

from __future__ import annotations

from ipaddress import ip_address

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.resolver import dnscache
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError

from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.frontier.admission import DUPLICATES, Admission
from focuscrawl.meta import ROBOTS_FOR
from focuscrawl.network_guard import GuardedResolver, NetworkGuardMiddleware, NetworkRefused, proxy_host
from focuscrawl.safety import NetworkPolicy, address_kind, host_address, url_address
from focuscrawl.urls import canonicalize


# --- the classifier ------------------------------------------------------------------------------
@pytest.mark.parametrize(("address", "kind"), [
    ("127.0.0.1", "loopback"), ("127.255.255.254", "loopback"), ("::1", "loopback"),
    ("10.0.0.1", "private"), ("172.16.0.1", "private"), ("172.31.255.255", "private"), ("192.168.1.1", "private"),
    ("fc00::1", "private"), ("fd00:ec2::254", "private"), ("fec0::1", "private"), ("64:ff9b:1::a00:1", "private"),
    ("169.254.169.254", "link_local"), ("169.254.0.1", "link_local"), ("fe80::1", "link_local"),
    ("100.64.0.1", "carrier_grade_nat"), ("100.100.100.200", "carrier_grade_nat"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("0.1.2.3", "unspecified"), ("::", "unspecified"),
    ("255.255.255.255", "broadcast"),
    ("192.0.2.1", "documentation"), ("198.51.100.7", "documentation"), ("203.0.113.9", "documentation"),
    ("2001:db8::1", "documentation"), ("3fff::1", "documentation"),
    ("198.18.0.1", "benchmark"), ("198.19.255.255", "benchmark"), ("2001:2::1", "benchmark"),
    ("240.0.0.1", "reserved"), ("192.0.0.8", "reserved"), ("100::1", "reserved"), ("2001::1", "reserved"),
    ("5f00::1", "reserved"), ("::8.8.8.8", "reserved"),
    # IPv6 forms that carry an IPv4 address are judged by it
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:7f00:1", "loopback"), ("::127.0.0.1", "loopback"),
    ("::ffff:0:7f00:1", "loopback"), ("::ffff:169.254.169.254", "link_local"), ("::ffff:10.0.0.1", "private"),
    ("64:ff9b::10.0.0.1", "private"), ("64:ff9b::a9fe:a9fe", "link_local"), ("2002:7f00:1::1", "loopback"),
    ("2002:c0a8:101::1", "private"),
    # public
    ("8.8.8.8", None), ("1.1.1.1", None), ("172.32.0.1", None), ("100.128.0.1", None), ("169.255.0.1", None),
    ("2606:4700::1111", None), ("::ffff:8.8.8.8", None), ("64:ff9b::808:808", None), ("2002:808:808::1", None),
])
def test_address_kinds(address, kind):
    assert address_kind(ip_address(address)) == kind


@pytest.mark.parametrize(("host", "address"), [
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),  # one decimal number
    ("0x7f000001", "127.0.0.1"),  # one hexadecimal number
    ("017700000001", "127.0.0.1"),  # one octal number
    ("0x7f.1", "127.0.0.1"),  # two parts: the last fills three bytes
    ("0X7F.0.0.1", "127.0.0.1"),
    ("0177.0.0.01", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("127.0.0.1.", "127.0.0.1"),  # a trailing dot
    ("%31%32%37.0.0.1", "127.0.0.1"),  # percent-escaped
    ("\uff11\uff12\uff17.\uff10.\uff10.\uff11", "127.0.0.1"),  # full-width digits
    ("169.254.43518", "169.254.169.254"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("0", "0.0.0.0"),
    ("0x", "0.0.0.0"),
    ("1.2.3", "1.2.0.3"),
    ("::1", "::1"), ("[::1]", "::1"), ("::ffff:127.0.0.1", "::ffff:7f00:1"), ("fe80::1%25eth0", "fe80::1"),
    # names, and what neither browsers nor libc read as an address
    ("localhost", None), ("example.com", None), ("1.example", None), ("08", None), ("0x7g.1", None),
    ("256.1.1.1", None), ("1.256.1", None), ("4294967296", None), ("1..1", None), ("1.2.3.4.5", None),
    ("1e3", None), ("1_0", None), ("[not-v6]", None),
])
def test_host_spellings(host, address):
    got = host_address(host)
    assert (None if got is None else str(got)) == address


def test_a_urls_host_is_read_as_urlsplit_reads_it():
    assert str(url_address("http://user:pw@127.0.0.1:8080/x")) == "127.0.0.1"
    assert str(url_address("http://[::ffff:7f00:1]:80/")) == "::ffff:7f00:1"
    assert str(url_address("HTTP://0X7F.1/admin")) == "127.0.0.1"
    assert url_address("http://example.test/") is None
    assert url_address("http://[::1/") is None  # malformed: no host to read
    assert url_address("mailto:someone@example.test") is None


@pytest.mark.parametrize("url", [
    "http://127.0.0.1/", "http://127.0.0.1.:8080/x", "HTTP://0X7F.1/admin", "http://2130706433:80?q", "http://1.2.3#f",
    "http://a.0xa/", "http://3com.example/", "http://example.com.", "https://www.example.com:443/a/b?c=d",
    "http://user@10.0.0.1/", "http://u:p@example.com@127.1/", "http://[::1]:8080/", "http://%31%32%37.0.0.1/",
    "http://x.y.z.1/", "http://a.b.1e3/", "ftp://192.168.0.1/file", "http://-1.2.3.4/",
])
def test_the_fast_reading_of_a_host_agrees_with_urlsplit(url):
    from urllib.parse import urlsplit

    assert url_address(url) == host_address(urlsplit(url).hostname)


# --- the policy ----------------------------------------------------------------------------------
def test_the_policy_refuses_non_public_addresses_with_a_reason_naming_the_kind():
    policy = NetworkPolicy()
    assert policy.refusal(ip_address("127.0.0.1")) == "private_network/loopback"
    assert policy.refusal(ip_address("169.254.169.254")) == "private_network/link_local"
    assert policy.refusal(ip_address("8.8.8.8")) is None
    assert policy.url_refusal("http://[::ffff:10.1.2.3]/") == "private_network/private"
    assert policy.url_refusal("http://metadata.google.internal/") is None  # a name: judged once resolved
    assert policy.host_refusal("2130706433") == "private_network/loopback"


def test_allowed_networks_allow_only_themselves_and_what_carries_them():
    policy = NetworkPolicy.from_config(FocusConfig(allowed_networks=("10.0.0.0/8", "127.0.0.1/32")))
    assert policy.refusal(ip_address("10.9.8.7")) is None
    assert policy.refusal(ip_address("::ffff:10.9.8.7")) is None  # the same address, mapped
    assert policy.refusal(ip_address("127.0.0.1")) is None
    assert policy.refusal(ip_address("127.0.0.2")) == "private_network/loopback"
    assert policy.refusal(ip_address("192.168.0.1")) == "private_network/private"
    assert policy.refusal(ip_address("169.254.169.254")) == "private_network/link_local"
    everything = NetworkPolicy.from_config(FocusConfig(allow_private_networks=True))
    assert not everything.checks
    assert everything.url_refusal("http://169.254.169.254/latest/") is None


def test_the_settings_are_read_and_checked():
    config = FocusConfig.from_settings({"FOCUS_ALLOWED_NETWORKS": "10.0.0.0/8, 127.0.0.1,fd00::/8",
                                        "FOCUS_ALLOW_PRIVATE_NETWORKS": "false"})
    assert config.allowed_networks == ("10.0.0.0/8", "127.0.0.1/32", "fd00::/8")
    assert config.allow_private_networks is False
    assert FocusConfig().allow_private_networks is False and FocusConfig().allowed_networks == ()
    assert FocusConfig.from_settings({"FOCUS_ALLOWED_NETWORKS": ["192.168.1.7/24"]}).allowed_networks == (
        "192.168.1.0/24",)
    with pytest.raises(ConfigError, match="FOCUS_ALLOWED_NETWORKS"):
        FocusConfig.from_settings({"FOCUS_ALLOWED_NETWORKS": "intranet.example"})
    with pytest.raises(ConfigError, match="FOCUS_ALLOW_PRIVATE_NETWORKS"):
        FocusConfig.from_settings({"FOCUS_ALLOW_PRIVATE_NETWORKS": "sometimes"})


# --- admission ---------------------------------------------------------------------------------
def admit(a: Admission, url: str, **kwargs) -> str | None:
    return a.admit(url, canonicalize(url), **kwargs)


@pytest.mark.parametrize(("url", "reason"), [
    ("http://169.254.169.254/latest/meta-data/", "private_network/link_local"),
    ("http://127.0.0.1:6379/", "private_network/loopback"),
    ("http://10.0.0.1/admin", "private_network/private"),
    ("http://[::1]/", "private_network/loopback"),
    ("http://[::ffff:127.0.0.1]/", "private_network/loopback"),
    ("http://[::ffff:7f00:1]/", "private_network/loopback"),
    ("http://2130706433/", "private_network/loopback"),
    ("http://0x7f.1/", "private_network/loopback"),
    ("http://017700000001/", "private_network/loopback"),
    ("http://127.1/", "private_network/loopback"),
    ("https://user@192.168.0.1:8443/router", "private_network/private"),
    ("http://100.100.100.200/latest/meta-data/", "private_network/carrier_grade_nat"),
    ("http://[fd00:ec2::254]/latest/", "private_network/private"),
    ("http://0.0.0.0:8080/", "private_network/unspecified"),
])
def test_admission_refuses_a_host_that_is_a_non_public_address(url, reason):
    a = Admission(FocusConfig())
    assert admit(a, url) == reason
    assert a.host_admitted == {}
    assert admit(a, url) in DUPLICATES  # judged once: a page linking to it again is not counted again


def test_admission_judges_redirect_hops_and_sitemaps_alike():
    a = Admission(FocusConfig())
    assert admit(a, "http://127.0.0.1/after-redirect", redirect_times=1) == "private_network/loopback"
    assert admit(a, "http://169.254.169.254/sitemap.xml", sitemap=True) == "private_network/link_local"
    assert admit(a, "http://public.test/moved", redirect_times=1) is None


def test_admission_admits_public_addresses_names_and_allowed_networks():
    a = Admission(FocusConfig())
    for url in ("http://8.8.8.8/", "http://[2606:4700::1111]/", "http://localhost/", "http://intranet/"):
        assert admit(a, url) is None  # names are judged once resolved, by the resolver
    intranet = Admission(FocusConfig(allowed_networks=("10.0.0.0/8",)))
    assert admit(intranet, "http://10.1.2.3/wiki") is None
    assert admit(intranet, "http://192.168.1.1/") == "private_network/private"
    assert admit(Admission(FocusConfig(allow_private_networks=True)), "http://127.0.0.1/") is None


# --- the resolver ------------------------------------------------------------------------------
@pytest.fixture
def resolver():
    from twisted.internet import reactor

    made = GuardedResolver(reactor, cache_size=100, timeout=5.0, policy=NetworkPolicy(), proxies={"127.0.0.1"})
    names = ("evil.test", "fine.test", "proxy.test", "0x7f.1", "127.0.0.1")
    yield made
    for name in names:
        dnscache.pop(name, None)


def outcome(deferred):
    """A deferred that has fired (a cached or refused lookup): its result or its failure."""
    results = []
    deferred.addBoth(results.append)
    assert results, "the lookup did not fire at once"
    return results[0]


def test_the_resolver_refuses_a_name_by_the_address_it_resolves_to(resolver):
    dnscache["evil.test"] = "127.0.0.1"  # as a lookup would have cached it
    dnscache["fine.test"] = "93.184.216.34"
    failure = outcome(resolver.getHostByName("evil.test"))
    assert failure.check(DNSLookupError)
    assert resolver.refusal("EVIL.test") == ("private_network/loopback", "127.0.0.1")
    assert outcome(resolver.getHostByName("fine.test")) == "93.184.216.34"
    assert resolver.refusal("fine.test") is None
    dnscache["evil.test"] = "93.184.216.35"  # the name moved: its refusal is forgotten
    assert outcome(resolver.getHostByName("evil.test")) == "93.184.216.35"
    assert resolver.refusal("evil.test") is None


def test_the_resolver_judges_addresses_in_any_spelling_before_libc_reads_them(resolver):
    assert outcome(resolver.getHostByName("0x7f.1")).check(DNSLookupError)
    assert resolver.refusal("0x7f.1") == ("private_network/loopback", "127.0.0.1")


def test_the_resolver_never_refuses_a_proxy(resolver):
    dnscache["127.0.0.1"] = "127.0.0.1"
    assert outcome(resolver.getHostByName("127.0.0.1")) == "127.0.0.1"  # named by the environment
    dnscache["proxy.test"] = "10.0.0.8"
    assert outcome(resolver.getHostByName("proxy.test")).check(DNSLookupError)
    resolver.trust_proxy("http://user:pw@Proxy.test:3128")  # as the middleware does for meta['proxy']
    assert outcome(resolver.getHostByName("proxy.test")) == "10.0.0.8"
    assert proxy_host("127.0.0.1:8080") == "127.0.0.1" and proxy_host("http://[::1]:3128/") == "::1"


def test_the_resolver_stands_aside_when_private_networks_are_allowed():
    from twisted.internet import reactor

    dnscache["evil.test"] = "127.0.0.1"
    try:
        open_resolver = GuardedResolver(reactor, 100, 5.0, NetworkPolicy(allow_all=True))
        assert outcome(open_resolver.getHostByName("evil.test")) == "127.0.0.1"
    finally:
        dnscache.pop("evil.test", None)


# --- the middleware ----------------------------------------------------------------------------
@pytest.fixture
def guard():
    crawler = get_crawler(settings_dict={})
    crawler.stats.open_spider()
    refused = []
    crawler.signals.connect(lambda request, reason, **kw: refused.append((request.url, reason)),
                            signal=focus_signals.request_refused, weak=False)
    middleware = NetworkGuardMiddleware.from_crawler(crawler)
    middleware.refused = refused
    return middleware


def response(url, ip, status=200, headers=None):
    return Response(url, status=status, headers=headers, ip_address=ip_address(ip) if ip else None)


def test_a_response_from_a_refused_peer_is_dropped_counted_and_reported(guard):
    request = Request("http://rebound.test/")
    with pytest.raises(NetworkRefused) as refused:
        guard.process_response(request, response(request.url, "127.0.0.1"), None)
    assert isinstance(refused.value, IgnoreRequest) and refused.value.reason == "private_network/loopback"
    assert guard.refused == [("http://rebound.test/", "private_network/loopback")]
    assert guard.stats.get_value("focus/refused/private_network/loopback") == 1
    assert guard.stats.get_value("focus/network_guard/peer") == 1
    public = response(request.url, "93.184.216.34")
    assert guard.process_response(request, public, None) is public


def test_behind_a_proxy_the_peer_is_the_proxy_and_is_not_judged(guard):
    request = Request("http://public.test/", meta={"proxy": "http://127.0.0.1:8080"})
    answered = response(request.url, "127.0.0.1")
    assert guard.process_response(request, answered, None) is answered


def test_a_robots_txt_redirect_to_a_private_address_is_refused_even_through_a_proxy(guard):
    request = Request("http://site.test/robots.txt", meta={ROBOTS_FOR: "site.test", "proxy": "http://127.0.0.1:8080"})
    moved = response(request.url, "127.0.0.1", 301, {"Location": "http://169.254.169.254/latest/"})
    with pytest.raises(NetworkRefused):
        guard.process_response(request, moved, None)
    assert guard.stats.get_value("focus/refused/private_network/link_local") == 1
    assert guard.stats.get_value("focus/network_guard/robots_redirect") == 1
    elsewhere = response(request.url, None, 301, {"Location": "https://www.site.test/robots.txt"})
    assert guard.process_response(request, elsewhere, None) is elsewhere


def test_a_lookup_the_resolver_refused_becomes_a_refusal_other_errors_pass(guard, resolver, monkeypatch):
    monkeypatch.setattr(GuardedResolver, "installed", resolver)
    dnscache["evil.test"] = "10.0.0.1"
    outcome(resolver.getHostByName("evil.test"))
    request = Request("http://evil.test/page")
    with pytest.raises(NetworkRefused):
        guard.process_exception(request, DNSLookupError("evil.test"), None)
    assert guard.refused == [("http://evil.test/page", "private_network/private")]
    assert guard.stats.get_value("focus/network_guard/resolver") == 1
    assert guard.process_exception(Request("http://nxdomain.test/"), DNSLookupError("no"), None) is None
    assert guard.process_exception(request, TimeoutError(), None) is None
    guard.process_request(Request("http://x.test/", meta={"proxy": "http://proxy.test:3128"}), None)
    assert "proxy.test" in resolver.proxies


def test_the_middleware_stands_aside_when_private_networks_are_allowed():
    with pytest.raises(NotConfigured):
        NetworkGuardMiddleware.from_crawler(get_crawler(settings_dict={"FOCUS_ALLOW_PRIVATE_NETWORKS": True}))
