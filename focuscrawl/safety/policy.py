"""What the crawl may connect to: public addresses, and the non-public networks the user allows.

``FOCUS_ALLOW_PRIVATE_NETWORKS`` lifts the rule for every address; ``FOCUS_ALLOWED_NETWORKS``
for some networks only (an intranet crawl allows ``10.0.0.0/8``, a test against a local server
``127.0.0.1``). A refusal is the reason ``private_network/<kind>`` (``addresses.address_kind``),
counted as ``focus/refused/private_network/<kind>`` like the other refusals.

The policy is asked three times about one request: at admission about a host that is an address
(``url_refusal``: cheap, before the URL takes a place in the frontier), and in the downloader
about the address a name resolved to and the address the response came from (``refusal``).

Pure: no Scrapy.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network

from focuscrawl.config import DEFAULTS, FocusConfig
from focuscrawl.safety.addresses import Address, address_kind, embedded_ipv4, host_address, url_address

#: the reasons' prefix: ``private_network/loopback``, ``private_network/link_local``, ...
PRIVATE_NETWORK = "private_network"


@dataclass(frozen=True)
class NetworkPolicy:
    allow_all: bool = False
    allowed: tuple[IPv4Network | IPv6Network, ...] = ()

    @classmethod
    def from_config(cls, config: FocusConfig = DEFAULTS) -> NetworkPolicy:
        return cls(config.allow_private_networks,
                   tuple(ip_network(network, strict=False) for network in config.allowed_networks))

    @property
    def checks(self) -> bool:
        """False when every address is allowed: the parts that enforce the policy stand aside."""
        return not self.allow_all

    def refusal(self, address: Address) -> str | None:
        """Why the crawl must not connect to ``address``; None when it may."""
        if self.allow_all:
            return None
        kind = address_kind(address)
        if kind is None or self.allows(address):
            return None
        return f"{PRIVATE_NETWORK}/{kind}"

    def allows(self, address: Address) -> bool:
        """``address`` (or the IPv4 address it carries) lies in an allowed network."""
        carried = embedded_ipv4(address)
        return any(candidate in network for network in self.allowed
                   for candidate in (address, carried) if candidate is not None)

    def host_refusal(self, host: str) -> str | None:
        """Why a host that spells an address is refused; None for a name (judged once resolved)."""
        if self.allow_all:
            return None
        address = host_address(host)
        return None if address is None else self.refusal(address)

    def url_refusal(self, url: str) -> str | None:
        """Why the host of ``url``, an address, is refused; None for a name (judged once resolved)."""
        if self.allow_all:
            return None
        address = url_address(url)
        return None if address is None else self.refusal(address)
