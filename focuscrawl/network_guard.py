"""The network guard: ``focuscrawl.safety``'s policy enforced where Scrapy connects, so that no page
can make the crawler fetch from its own network (server-side request forgery).

Three lines, each where its question has an answer:

1. admission (``focuscrawl/frontier/admission.py``) refuses a URL whose host spells an address,
   before it takes a place in the frontier: pages, sitemaps and every redirect hop, since each
   hop goes back through the frontier;
2. ``GuardedResolver`` (Scrapy's ``TWISTED_DNS_RESOLVER``) judges a name by the address it
   resolves to, and that address is the one connected to: the check and the connection share
   one resolution, so a name cannot answer a public address to the check and a private one to
   the connection (DNS rebinding). Addresses given as hosts are judged here too (libc reads
   ``0x7f.1`` as 127.0.0.1);
3. ``NetworkGuardMiddleware``, nearest the downloader, turns a name the resolver refused into a
   refusal (counted, sent as ``request_refused`` for the request log; not a network error to
   retry), checks where a robots.txt redirects (robots.txt requests do not pass admission), and
   drops a response whose peer (``response.ip_address``) the policy refuses, for a crawl whose
   resolver is not this one (``CrawlerRunner`` installs none; a project may set another).

A refused request fails with ``NetworkRefused`` (an ``IgnoreRequest``): the spider stores no page
for it, and a refused robots.txt counts as unavailable (RFC 9309: allow all, so the host's pages
are each refused in turn and counted).

Through an explicit proxy (``http_proxy``/``https_proxy``, or ``meta['proxy']`` as
``scrapy replay`` and ``scrapy evaluate`` crawl) the proxy resolves names and is the peer: only
addresses written in URLs are checked (admission, robots.txt redirects). The resolver never refuses
a proxy's own name or address (the replay proxy is 127.0.0.1): the proxies of the environment, and
each ``meta['proxy']`` the middleware sees before its request is sent, are trusted.

Scrapy builds one resolver per process, from the process's settings (the project's and the
command line's), so ``FOCUS_ALLOW_PRIVATE_NETWORKS`` and ``FOCUS_ALLOWED_NETWORKS`` reach it from
there, not from a spider's ``custom_settings``.
"""

from __future__ import annotations

import logging
from ipaddress import ip_address
from typing import ClassVar
from urllib.parse import urljoin, urlsplit
from urllib.request import getproxies

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.resolver import CachingThreadedResolver
from scrapy.utils.datatypes import LocalCache
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import defer
from twisted.internet.error import DNSLookupError

from focuscrawl import signals as focus_signals
from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.meta import ROBOTS_FOR
from focuscrawl.safety import NetworkPolicy, host_address

try:
    from scrapy.exceptions import CannotResolveHostError

    DNS_ERRORS: tuple[type[Exception], ...] = (DNSLookupError, CannotResolveHostError)
except ImportError:  # a Scrapy that passes Twisted's own error on
    DNS_ERRORS = (DNSLookupError,)

logger = logging.getLogger(__name__)

#: names the resolver remembers refusing, for the middleware to say why a lookup failed
REFUSALS_KEPT = 10_000


class NetworkRefused(IgnoreRequest):
    """The network policy refused the request; ``reason`` is ``private_network/<kind>``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def proxy_host(proxy_url: str) -> str | None:
    """The host of a proxy URL (``http://127.0.0.1:8080``, or ``127.0.0.1:8080`` as the
    environment may give it), lower case."""
    try:
        return urlsplit(proxy_url if "://" in proxy_url else f"//{proxy_url}").hostname
    except ValueError:
        return None


def environment_proxies() -> set[str]:
    """The hosts of the proxies the environment names (Scrapy's HttpProxyMiddleware uses them)."""
    hosts = {proxy_host(url) for scheme, url in getproxies().items() if scheme != "no"}
    return {host for host in hosts if host}


class GuardedResolver(CachingThreadedResolver):
    """Scrapy's default resolver (IPv4, cached, DNS_TIMEOUT), refusing what the policy refuses."""

    #: the resolver installed on the reactor, which the middleware tells about proxies and asks
    #: about refusals (one per process, as the reactor)
    installed: ClassVar[GuardedResolver | None] = None

    def __init__(self, reactor, cache_size: int, timeout: float, policy: NetworkPolicy = NetworkPolicy(),
                 proxies: set[str] | frozenset[str] = frozenset()):
        super().__init__(reactor, cache_size, timeout)
        self.policy = policy
        self.proxies = {host.lower() for host in proxies}
        self.refused: LocalCache[str, tuple[str, str]] = LocalCache(REFUSALS_KEPT)  # name -> (reason, address)

    @classmethod
    def from_crawler(cls, crawler, reactor):
        settings = crawler.settings  # the process's (Scrapy passes its CrawlerProcess)
        try:
            policy = NetworkPolicy.from_config(FocusConfig.from_settings(settings))
        except ConfigError:
            policy = NetworkPolicy()  # the crawl reports the bad setting and stops; nothing private meanwhile
        cache_size = settings.getint("DNSCACHE_SIZE") if settings.getbool("DNSCACHE_ENABLED") else 0
        return cls(reactor, cache_size, settings.getfloat("DNS_TIMEOUT"), policy, environment_proxies())

    def install_on_reactor(self) -> None:
        super().install_on_reactor()
        GuardedResolver.installed = self

    def trust_proxy(self, proxy_url: str) -> None:
        host = proxy_host(proxy_url)
        if host:
            self.proxies.add(host)

    def refusal(self, name: str) -> tuple[str, str] | None:
        """(reason, address) when the last lookup of ``name`` was refused."""
        return self.refused.get(name.lower())

    def getHostByName(self, name: str, timeout=()):  # noqa: N802 - Twisted's interface
        if not self.policy.checks or name.lower() in self.proxies:
            return super().getHostByName(name, timeout)
        address = host_address(name)
        if address is not None:  # an address in any spelling: judged as it is, before libc reads it
            try:
                self._judge(name, str(address))
            except DNSLookupError as refused:
                return defer.fail(refused)
        return super().getHostByName(name, timeout).addCallback(self._judge_resolved, name)

    def _judge_resolved(self, resolved: str, name: str) -> str:
        return self._judge(name, resolved)

    def _judge(self, name: str, resolved: str) -> str:
        reason = self.policy.refusal(ip_address(resolved))
        if reason is None:
            self.refused.pop(name.lower(), None)
            return resolved
        self.refused[name.lower()] = (reason, resolved)
        raise DNSLookupError(f"{name} resolves to {resolved}: {reason}")


class NetworkGuardMiddleware:
    """Downloader middleware, nearest the network (see the module's doc)."""

    def __init__(self, policy: NetworkPolicy, crawler):
        self.policy = policy
        self.stats = crawler.stats
        self.signals = crawler.signals
        self._warned_unguarded = False
        # the render service of FOCUS_RENDER_BACKEND=splash, asked on the crawl's behalf like a
        # proxy: trusted, and the pages it loads are its own to guard (scrapy render-server does)
        self.render_service = crawler.settings.get("SPLASH_URL") or None

    @classmethod
    def from_crawler(cls, crawler):
        policy = NetworkPolicy.from_config(FocusConfig.from_settings(crawler.settings))
        if not policy.checks:
            raise NotConfigured("FOCUS_ALLOW_PRIVATE_NETWORKS is on")
        return cls(policy, crawler)

    def process_request(self, request, spider=None):
        proxy = request.meta.get("proxy") or (self.render_service if request.meta.get("splash") else None)
        resolver = GuardedResolver.installed
        if proxy and resolver is not None:
            resolver.trust_proxy(proxy)  # before the handler resolves the proxy's name
        elif not proxy and resolver is None and not self._warned_unguarded:
            self._warned_unguarded = True
            logger.warning("names are not judged before connecting (the DNS resolver is not "
                           "focuscrawl.network_guard.GuardedResolver): a response from a refused "
                           "address is dropped once it has come")
        return None

    def process_response(self, request, response, spider=None):
        if request.meta.get(ROBOTS_FOR) and 300 <= response.status < 400:
            self._check_robots_redirect(request, response)
        address = response.ip_address
        if address is not None and not request.meta.get("proxy") and not request.meta.get("splash"):
            reason = self.policy.refusal(address)
            if reason:
                self._refuse(request, reason, "peer", f"{urlparse_cached(request).hostname} answered from {address}",
                             level=logging.WARNING)
        return response

    def process_exception(self, request, exception, spider=None):
        resolver = GuardedResolver.installed
        if (resolver is None or request.meta.get("proxy") or request.meta.get("splash")
                or not isinstance(exception, DNS_ERRORS)):
            return None
        host = urlparse_cached(request).hostname or ""
        refused = resolver.refusal(host)
        if refused is not None:
            reason, address = refused
            self._refuse(request, reason, "resolver", f"{host} resolves to {address}")
        return None

    def _check_robots_redirect(self, request, response) -> None:
        location = response.headers.get(b"Location")
        if not location:
            return
        target = urljoin(request.url, location.decode("latin-1"))
        reason = self.policy.url_refusal(target)
        if reason:
            self._refuse(request, reason, "robots_redirect", f"robots.txt redirects to {target}")

    def _refuse(self, request, reason: str, line: str, detail: str, level: int = logging.INFO) -> None:
        """Count, report and log the refusal; the request fails with NetworkRefused."""
        self.stats.inc_value(f"focus/refused/{reason}")
        self.stats.inc_value(f"focus/network_guard/{line}")
        self.signals.send_catch_log(focus_signals.request_refused, request=request, reason=reason)
        logger.log(level, "refused %s (%s, by the %s check): %s", request.url, reason, line.replace("_", " "), detail)
        raise NetworkRefused(reason, detail)
