"""On-topic examples from a few URLs a user likes (``scrapy train --urls FILE``), fetched as the
crawl fetches: politely and safely, one page at a time.

- robots.txt first, per host, read with Protego for focuscrawl's robots token; a page it
  disallows is skipped (said why); an unreachable robots.txt or a 4xx allows all, a 5xx refuses
  the host's pages (RFC 9309, as the crawl does);
- focuscrawl's User-Agent; the proxy of the environment (``http_proxy``/``https_proxy``), as
  Scrapy's HttpProxyMiddleware uses it;
- no fetch into private networks (``focuscrawl.safety``, with FOCUS_ALLOW_PRIVATE_NETWORKS and
  FOCUS_ALLOWED_NETWORKS): an address in a URL or a redirect is judged as written, a name by every
  address it resolves to (through a proxy the proxy resolves names: only addresses written in
  URLs are judged, as in the crawl);
- a pause of ``delay`` seconds (more when robots.txt asks for a Crawl-delay) between two requests
  to one host; at most ``MAX_BYTES`` of a body; ``timeout`` seconds a request.

Each URL gives an Example or the reason it did not (``FetchedExamples.failed``).
"""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from protego import Protego

from focuscrawl.parsing import parse_html
from focuscrawl.relevance.examples import Example
from focuscrawl.safety import NetworkPolicy
from focuscrawl.safety.addresses import host_address

MAX_BYTES = 5_000_000


class Refused(Exception):
    """A URL focuscrawl will not fetch (private network, robots.txt, not HTTP)."""


@dataclass
class FetchedExamples:
    examples: list[Example] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, why)


class _SafeRedirects(urllib.request.HTTPRedirectHandler):
    def __init__(self, check):
        super().__init__()
        self.check = check

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        self.check(urljoin(req.full_url, newurl))  # raises Refused: a redirect into a private network
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class PoliteFetcher:
    def __init__(self, user_agent: str, robots_agent: str, policy: NetworkPolicy, delay: float = 1.0,
                 timeout: float = 20.0, proxies: dict[str, str] | None = None, clock=time.monotonic, sleep=time.sleep):
        self.user_agent, self.robots_agent, self.policy = user_agent, robots_agent, policy
        self.delay, self.timeout = delay, timeout
        self.proxies = urllib.request.getproxies() if proxies is None else proxies
        self.clock, self.sleep = clock, sleep
        self.robots: dict[str, Protego | None] = {}  # origin -> rules (None: the host is refused)
        self.last: dict[str, float] = {}  # host -> when it was last asked
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler(self.proxies),
                                                  _SafeRedirects(self.check))

    def check(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise Refused("not an http(s) URL")
        if not self.policy.checks:
            return
        why = self.policy.host_refusal(parts.hostname)
        if why:
            raise Refused(f"refused: {why}")
        if host_address(parts.hostname) is None and not self._proxied(parts.scheme, parts.hostname):
            try:
                infos = socket.getaddrinfo(parts.hostname, parts.port or None, proto=socket.IPPROTO_TCP)
            except OSError as exc:
                raise Refused(f"DNS lookup failed: {exc.strerror or exc}") from None
            for info in infos:
                why = self.policy.host_refusal(info[4][0])
                if why:
                    raise Refused(f"refused: {why} ({parts.hostname} resolves to {info[4][0]})")

    def _proxied(self, scheme: str, host: str) -> bool:
        """The request goes through a proxy (which resolves the name), not straight to the host
        (no proxy for its scheme, or ``no_proxy`` names the host)."""
        if not (self.proxies.get(scheme) or self.proxies.get("all")):
            return False
        no_proxy = self.proxies.get("no")
        if no_proxy is not None:
            return not urllib.request.proxy_bypass_environment(host, {"no": no_proxy})
        return not urllib.request.proxy_bypass(host)

    def _get(self, url: str) -> tuple[int, str, bytes]:
        host = urlsplit(url).hostname or ""
        wait = self.last.get(host, -1e9) + self.delay - self.clock()
        if wait > 0:
            self.sleep(wait)
        self.check(url)
        request = urllib.request.Request(url, headers={"User-Agent": self.user_agent, "Accept": "text/html,*/*;q=0.5"})
        try:
            with self.opener.open(request, timeout=self.timeout) as response:
                return response.status, response.headers.get("Content-Type", ""), response.read(MAX_BYTES)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.headers.get("Content-Type", "") if exc.headers else "", b""
        finally:
            self.last[host] = self.clock()

    def _rules(self, url: str) -> Protego | None:
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self.robots:
            try:
                status, _, body = self._get(origin + "/robots.txt")
            except (OSError, Refused, ValueError):
                status, body = 404, b""  # unreachable: RFC 9309 allows all
            if 500 <= status:
                self.robots[origin] = None
            else:
                text = body.decode("utf-8", "replace") if status == 200 else ""
                self.robots[origin] = Protego.parse(text)
                crawl_delay = self.robots[origin].crawl_delay(self.robots_agent)
                if crawl_delay:
                    self.delay = max(self.delay, float(crawl_delay))
        return self.robots[origin]

    def fetch(self, url: str, label: str) -> Example:
        """The page at ``url`` as an Example labelled ``label``; raises Refused, OSError or
        ValueError with the reason it cannot be."""
        self.check(url)
        rules = self._rules(url)
        if rules is None:
            raise Refused("robots.txt answered with a server error: the host is not fetched")
        if not rules.can_fetch(url, self.robots_agent):
            raise Refused("robots.txt disallows it")
        status, content_type, body = self._get(url)
        if status != 200:
            raise Refused(f"HTTP {status}")
        if content_type and "html" not in content_type.lower() and "text/plain" not in content_type.lower():
            raise Refused(f"not a page ({content_type.split(';')[0]})")
        page = parse_html(body, url, content_type=content_type)
        if not (page.title or page.text).strip():
            raise Refused("no text")
        return Example(url, page.title, page.text, label)

    def fetch_all(self, urls: list[str], label: str) -> FetchedExamples:
        out = FetchedExamples()
        for url in urls:
            try:
                out.examples.append(self.fetch(url, label))
            except Refused as exc:
                out.failed.append((url, str(exc)))
            except (OSError, ValueError) as exc:  # connection refused, timeout, bad URL
                reason = getattr(exc, "reason", None) or exc
                out.failed.append((url, f"{type(exc).__name__}: {reason}"))
        return out


def read_url_list(path) -> list[str]:
    """One URL a line; blank lines and ``#`` comments skipped; duplicates once."""
    urls = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#") and line not in urls:
                urls.append(line)
    return urls
