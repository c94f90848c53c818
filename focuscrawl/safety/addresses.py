"""Which IP addresses are public, and which address a URL's host spells.

A page may link to anything, including the crawler's own network: the cloud's metadata service
(``http://169.254.169.254/latest/``), a database on loopback, an intranet's admin page. The
address ranges below are not reachable from the public internet (RFC 6890's special-purpose
registries, and the ranges whose traffic stays on a link or a site), so a public crawl has no
business connecting to them.

``address_kind`` names the range an address lies in (None: public). The kinds, most specific
first: ``loopback``, ``private`` (RFC 1918, unique local fc00::/7, site-local fec0::/10, local-use
NAT64), ``link_local`` (169.254.0.0/16 and fe80::/10: cloud metadata services live there),
``carrier_grade_nat`` (100.64.0.0/10), ``multicast``, ``unspecified`` (0.0.0.0/8 and ``::``: Linux
connects 0.0.0.0 to itself), ``broadcast``, ``documentation``, ``benchmark`` and ``reserved``
(protocol assignments, 240.0.0.0/4, IPv6 outside the global unicast 2000::/3).

An IPv6 address that carries an IPv4 one (IPv4-mapped ``::ffff:127.0.0.1``, IPv4-compatible
``::127.0.0.1``, IPv4-translated, NAT64 64:ff9b::/96, 6to4 2002::/16) is judged by the IPv4
address it carries: the kernel or a translator may well deliver it there.

``host_address`` reads every spelling of an IPv4 address that browsers (the WHATWG URL
standard) and libc's ``inet_aton`` accept in a URL's host: ``2130706433``, ``0x7f.1``,
``017700000001``, ``127.1``, a trailing dot, percent-escapes and full-width digits. A host read as
a name here is a name to every resolver too: nothing spelled as an address slips through as a name.

Pure: the standard library's ``ipaddress`` and no Scrapy.
"""

from __future__ import annotations

import re
import unicodedata
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network
from urllib.parse import unquote, urlsplit

Address = IPv4Address | IPv6Address

#: IPv4 ranges that are not public, and their kind; the first that holds an address names it
IPV4_RANGES: tuple[tuple[IPv4Network, str], ...] = tuple((IPv4Network(net), kind) for net, kind in (
    ("255.255.255.255/32", "broadcast"),
    ("0.0.0.0/8", "unspecified"),  # "this network": Linux connects 0.0.0.0 to the host itself
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "carrier_grade_nat"),  # RFC 6598; Alibaba Cloud's metadata is at 100.100.100.200
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link_local"),  # cloud metadata: 169.254.169.254
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "reserved"),  # IETF protocol assignments
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "reserved"),  # the deprecated 6to4 relay anycast
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmark"),  # also what fake-IP DNS in some proxies and VPNs hands out
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
))

#: IPv6 ranges that are not public (after the forms that carry an IPv4 address are unwrapped)
IPV6_RANGES: tuple[tuple[IPv6Network, str], ...] = tuple((IPv6Network(net), kind) for net, kind in (
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "private"),  # local-use NAT64 (RFC 8215)
    ("100::/64", "reserved"),  # discard-only
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("2001:2::/48", "benchmark"),
    ("2001::/23", "reserved"),  # IETF protocol assignments, Teredo among them
    ("fc00::/7", "private"),  # unique local addresses (RFC 4193); AWS's IPv6 metadata is fd00:ec2::254
    ("fe80::/10", "link_local"),
    ("fec0::/10", "private"),  # site-local, deprecated but still routed by some stacks
    ("ff00::/8", "multicast"),
))
GLOBAL_UNICAST = IPv6Network("2000::/3")
#: the host of a URL of the common shape (no user info, no IPv6, no escapes), as urlsplit reads it
_PLAIN_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([A-Za-z0-9.-]+)(?::[0-9]*)?(?:[/?#]|$)")
_LAST_LABEL_NUMERIC = re.compile(r"(?:^|\.)[0-9][^.]*\.?$")
IPV4_COMPATIBLE = IPv6Network("::/96")
IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")
NAT64 = IPv6Network("64:ff9b::/96")


def embedded_ipv4(address: Address) -> IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, compatible, translated, NAT64, 6to4)."""
    if address.version == 4:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in IPV4_COMPATIBLE or address in IPV4_TRANSLATED or address in NAT64:
        if address in IPV4_COMPATIBLE and int(address) <= 1:
            return None  # :: and ::1 are IPv6's own unspecified and loopback
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def address_kind(address: Address) -> str | None:
    """The kind of non-public range ``address`` lies in (see the module's doc), or None: public."""
    if address.version == 4:
        for network, kind in IPV4_RANGES:
            if address in network:
                return kind
        return None
    carried = embedded_ipv4(address)
    if carried is not None:
        kind = address_kind(carried)
        if kind is None and address in IPV4_COMPATIBLE:
            return "reserved"  # deprecated (RFC 4291): nothing routes it to the public address
        return kind
    for network, kind in IPV6_RANGES:
        if address in network:
            return kind
    return None if address in GLOBAL_UNICAST else "reserved"


def host_address(host: str) -> Address | None:
    """The IP address a URL's host (as ``urlsplit(url).hostname`` gives it, or bracketed) spells,
    in any spelling browsers or libc accept; None when the host is a name."""
    host = unquote(host).strip().lower()
    if not host.isascii():
        host = unicodedata.normalize("NFKC", host)  # full-width digits are digits to a browser
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if ":" in host:
        try:  # a zone (fe80::1%eth0) names an interface, not another address
            return IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return None
    return _ipv4(host)


def url_address(url: str) -> Address | None:
    """The IP address the host of ``url`` spells; None when it is a name (or the URL has none)."""
    plain = _PLAIN_HOST.match(url)
    if plain is not None:  # most URLs: a host of letters, digits, dots and dashes
        host = plain.group(1)
        if not _LAST_LABEL_NUMERIC.search(host):
            return None  # its last label is no number: a name (WHATWG's "ends in a number")
        return _ipv4(host.lower())
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host_address(host) if host else None


def _ipv4(host: str) -> IPv4Address | None:
    """WHATWG's IPv4 parser (as libc's inet_aton): one to four numbers, each decimal, octal
    (leading 0) or hexadecimal (0x); the last fills the bytes the others leave; one trailing dot."""
    parts = host.split(".")
    if len(parts) > 1 and parts[-1] == "":
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    last = _number(parts[-1])  # first: a name's last label is no number, and that ends it
    if last is None:
        return None
    leading = [_number(part) for part in parts[:-1]]
    if any(n is None or n > 255 for n in leading) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for i, n in enumerate(leading):
        value += n << (8 * (3 - i))
    return IPv4Address(value)


_DIGITS = {16: frozenset("0123456789abcdef"), 8: frozenset("01234567"), 10: frozenset("0123456789")}


def _number(part: str) -> int | None:
    """One part of an IPv4 address (lower case), or None when it is no number."""
    if part.startswith("0x"):
        digits, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    if not digits:
        return 0 if base == 16 else None  # "0x" is zero to browsers; "" is no number
    if not _DIGITS[base].issuperset(digits):
        return None
    return int(digits, base)
