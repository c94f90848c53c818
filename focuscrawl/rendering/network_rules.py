"""What a render may fetch, for ``scrapy render-server`` and the crawl's own browser: the crawl's rules on private networks
(``focuscrawl.safety``), so that a Splash-compatible service anyone can reach is not a door into the
machine's own network (a render of ``http://127.0.0.1:6379/`` or of the cloud's metadata service).

Asked about every request a render makes (the page, its redirects, every subresource):

- a host that spells an address is judged by that address, whatever the proxy;
- a name is resolved here and judged by every address it resolves to, when the render connects
  directly; through a proxy, the proxy resolves it (as in the crawl: only literal addresses are
  judged), and the proxy is the operator's choice;
- the browser itself is launched with the crawl's proxy auto-configuration
  (``chromium.proxy_script``), which sends a direct connection to a name resolving into a refused
  network nowhere, at the moment Chromium resolves it: a redirect, which Playwright's route never
  sees, is refused there too.

``--allow-private-networks`` (``NetworkPolicy(allow_all=True)``) lifts the rules,
``-s FOCUS_ALLOWED_NETWORKS=...`` lifts them for some networks. The crawl's own browser
(``browser.guard.RenderGuard``) judges the names its pages load with the same ``refusal``.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from ipaddress import ip_address
from urllib.parse import urlsplit

from focuscrawl.safety import NetworkPolicy, url_address

logger = logging.getLogger(__name__)

#: the longest a name's resolution may take before the request is refused
RESOLVE_TIMEOUT = 5.0
#: schemes that fetch nothing from the network
LOCAL_SCHEMES = frozenset({"data", "about", "blob"})


class ServerRules:
    """The policy, and the names it resolved (for one render: a ``Names`` each)."""

    def __init__(self, policy: NetworkPolicy | None = None):
        self.policy = policy if policy is not None else NetworkPolicy()

    @property
    def checks(self) -> bool:
        return self.policy.checks

    def literal_refusal(self, url: str) -> str | None:
        """Why ``url``'s host, an address, is refused (None for a name or an allowed address)."""
        if not self.policy.checks or urlsplit(url).scheme.lower() in LOCAL_SCHEMES:
            return None
        return self.policy.url_refusal(url)

    async def refusal(self, url: str, proxied: bool, names: dict[str, str | None] | None = None) -> str | None:
        """Why a render may not fetch ``url``; None when it may. ``names``: the render's cache of
        names already judged."""
        reason = self.literal_refusal(url)
        if reason or not self.policy.checks or proxied or url_address(url) is not None:
            return reason
        parts = urlsplit(url)
        if parts.scheme.lower() in LOCAL_SCHEMES or not parts.hostname:
            return None
        host = parts.hostname.lower()
        if names is not None and host in names:
            return names[host]
        reason = await self._name_refusal(host)
        if names is not None:
            names[host] = reason
        return reason

    async def _name_refusal(self, host: str) -> str | None:
        loop = asyncio.get_running_loop()
        try:
            infos = await asyncio.wait_for(loop.getaddrinfo(host, None, type=socket.SOCK_STREAM), RESOLVE_TIMEOUT)
        except (OSError, asyncio.TimeoutError):
            return None  # a name that does not resolve: the browser fails to load it as well
        for info in infos:
            try:
                address = ip_address(info[4][0].split("%", 1)[0])
            except ValueError:
                continue
            reason = self.policy.refusal(address)
            if reason:
                return f"{reason} ({host} resolves to {address})"
        return None
