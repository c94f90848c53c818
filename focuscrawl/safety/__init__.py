"""Network safety, free of Scrapy: which addresses are public (``addresses``), and what the crawl
may connect to (``policy``), so that a page cannot make the crawler fetch from its own network
(server-side request forgery). The Scrapy side is ``focuscrawl/network_guard.py``."""

from focuscrawl.safety.addresses import address_kind, embedded_ipv4, host_address, url_address
from focuscrawl.safety.policy import PRIVATE_NETWORK, NetworkPolicy

__all__ = ["PRIVATE_NETWORK", "NetworkPolicy", "address_kind", "embedded_ipv4", "host_address", "url_address"]
