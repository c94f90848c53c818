"""Chromium for rendering: where it is, the switches it is launched with, the proxy script that
keeps its own traffic in, and its processes. The crawl's browser (``rendering.browser``) and the
render server (``rendering.server``) launch it alike, from here."""

from __future__ import annotations

import base64
import os
import shutil
from urllib.parse import urlsplit

from focuscrawl.safety import NetworkPolicy

#: where Chromium is, when neither the setting nor Playwright's own download says
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: the switches every render's Chromium gets: Playwright's own come first and keep the browser
#: quiet; these stop its sync, pings and reports, and a container's small /dev/shm crashing its
#: tabs. --disable-features is not passed, as it would replace Playwright's list instead of adding
QUIET_SWITCHES = ("--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--disable-sync",
                  "--disable-domain-reliability", "--disable-client-side-phishing-detection", "--no-pings")


def find_browser(configured: str | None = None) -> str | None:
    """The Chromium executable to launch: the setting, else None when Playwright has its own
    browser installed (it finds it), else the first of BROWSER_NAMES on the PATH."""
    if configured:
        return configured if os.path.exists(configured) or shutil.which(configured) else None
    if _playwright_has_browser():
        return ""
    for name in BROWSER_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def _playwright_has_browser() -> bool:
    root = os.environ.get("PLAYWRIGHT_BROWSERS_PATH") or os.path.expanduser("~/.cache/ms-playwright")
    try:
        return any(name.startswith("chromium") for name in os.listdir(root))
    except OSError:
        return False


def launch_args(proxy_script_text: str | None = None) -> list[str]:
    """Chromium's command line switches: ``QUIET_SWITCHES``, ``--no-sandbox`` as root (Chromium
    refuses to run as root with its sandbox), and the proxy auto-configuration ``proxy_script_text``
    (``proxy_script``'s) when given."""
    args = list(QUIET_SWITCHES)
    if proxy_script_text is not None:
        pac = base64.b64encode(proxy_script_text.encode()).decode()
        args.append(f"--proxy-pac-url=data:application/x-ns-proxy-autoconfig;base64,{pac}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")
    return args


#: Hosts of the browser's own services (sign-in, updates, safe browsing, field trials): the
#: browser's traffic that no page asked for, which the route never sees. Playwright's switches
#: stop most of it; the proxy configuration sends the rest to a closed port.
BROWSER_SERVICE_HOSTS = ("accounts.google.com", "clients*.google.com", "android.clients.google.com",
                         "update.googleapis.com", "safebrowsing.googleapis.com", "*-pa.googleapis.com",
                         "content-autofill.googleapis.com", "redirector.gvt1.com", "*.gvt1.com")
#: where what must not go out goes: the discard port of the loopback, closed on a normal machine
NOWHERE = "PROXY 127.0.0.1:9"


#: IPv4 networks no page may make the browser connect to when it resolves names itself (no
#: proxy): loopback, RFC 1918, link-local (cloud metadata), carrier-grade NAT, this network,
#: multicast and reserved
PRIVATE_IPV4 = (("127.0.0.0", 8), ("10.0.0.0", 8), ("172.16.0.0", 12), ("192.168.0.0", 16), ("169.254.0.0", 16),
                ("100.64.0.0", 10), ("0.0.0.0", 8), ("224.0.0.0", 4), ("240.0.0.0", 4))


def proxy_script(proxy: str | None, policy: NetworkPolicy | None = None) -> str:
    """The browser's proxy auto-configuration: the downloader's proxy (or none) for what pages
    ask for; nowhere for the browser's own services and for favicons (the browser asks for one
    of every host it shows; a crawl needs none); and, without a proxy, nowhere for a name that
    resolves into a private network the policy refuses (the route checks addresses written as
    hosts; the browser resolves names itself, so the check is here, where it resolves them)."""
    upstream = f"PROXY {urlsplit(proxy).netloc or proxy}" if proxy else "DIRECT"
    services = " || ".join(f'shExpMatch(host, "{pattern}")' for pattern in BROWSER_SERVICE_HOSTS)
    private = ""
    if proxy is None and policy is not None and policy.checks:
        # the networks the user allows first (an allowed 127.0.0.2 leaves the rest of loopback refused)
        allowed = " || ".join(f'isInNet(ip, "{network.network_address}", "{network.netmask}")'
                              for network in policy.allowed if network.version == 4)
        tests = " || ".join(f'isInNet(ip, "{net}", "{_mask(bits)}")' for net, bits in PRIVATE_IPV4)
        private = (f'var ip = dnsResolve(host); if (!ip) return "{NOWHERE}"; '
                   + (f'if ({allowed}) return "{upstream}"; ' if allowed else "")
                   + f'if ({tests}) return "{NOWHERE}"; ')
    return (f'function FindProxyForURL(url, host) {{ if ({services}) return "{NOWHERE}"; '
            f'if (shExpMatch(url, "*/favicon.ico")) return "{NOWHERE}"; {private}return "{upstream}"; }}')


async def block_favicons(page) -> None:
    """The browser asks for a favicon of every page it shows, outside the page's route (Playwright
    never sees that request) and, for a loopback host, past the proxy script (Chromium never sends
    loopback through one): blocked in the page's own network layer (DevTools'
    ``Network.setBlockedURLs``), so no favicon is fetched, whatever the host."""
    session = await page.context.new_cdp_session(page)
    await session.send("Network.enable")
    await session.send("Network.setBlockedURLs", {"urls": ["*/favicon.ico"]})


def _mask(bits: int) -> str:
    value = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    return ".".join(str((value >> shift) & 0xFF) for shift in (24, 16, 8, 0))


def browser_pids(root_pid: int | None = None) -> list[int]:
    """The Chromium processes among ``root_pid``'s descendants (this process's by default; Linux
    /proc, empty elsewhere)."""
    root_pid = os.getpid() if root_pid is None else root_pid
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                stat = handle.read().decode("latin-1")
        except OSError:
            continue
        names[pid] = stat[stat.find("(") + 1:stat.rfind(")")]
        children.setdefault(int(stat[stat.rfind(")") + 2:].split()[1]), []).append(pid)
    found, stack = [], list(children.get(root_pid, ()))
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        if "chrom" in names.get(pid, "").lower():
            found.append(pid)
    return found


def browser_memory_mb(root_pid: int | None = None) -> float:
    """Memory of the browser processes among ``root_pid``'s descendants, in MB: their proportional
    set size (a page shared by several processes counted once, in shares), or their resident size
    where the kernel gives no PSS."""
    return sum(_process_kb(pid) for pid in browser_pids(root_pid)) / 1024


def _process_kb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024
    except (OSError, ValueError, IndexError):
        return 0.0
