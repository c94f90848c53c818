"""Server-side request forgery probe: does ``scrapy crawl focused`` fetch what a page points at in
the crawler's own network?

    python bench/ssrf_probe.py [--out DIR] [--no-isolation]

A probe web links to hostile targets in every way a crawl meets URLs: links in a page, redirects,
robots.txt's sitemaps, a sitemap's URLs and a robots.txt redirect. The targets cover each
non-public range (loopback, RFC 1918, link-local with the cloud metadata address, carrier-grade
NAT, unique local, multicast, unspecified), IPv4-mapped, NAT64 and 6to4 forms, the odd IPv4
spellings browsers and libc accept (``2130706433``, ``0x7f.1``, ``017700000001``, ``127.1``), and
names that resolve to loopback (``localhost``, this machine's own name when it does).

Three servers, all on loopback: the site (127.0.0.2, the one address the crawl is allowed, with
``FOCUS_ALLOWED_NETWORKS``), a second site (127.0.0.3) whose robots.txt redirects into loopback,
and the secret server on 127.0.0.1 (what ``localhost`` names), which logs every request it gets:
a hit there is a fetch that should not have happened.

The crawl runs twice, as its own process: with the defaults, and with Scrapy's stock resolver in
place of focuscrawl's (``TWISTED_DNS_RESOLVER=scrapy.resolver.CachingThreadedResolver``), which
shows the last line, the check of the address a response came from. Per target, the table says
which line refused it (admission, resolver, robots.txt redirect, peer) and whether it was fetched
(the secret server's log, or for a target no server answers, a request the crawl sent).

The targets outside loopback are only probed in a network namespace of its own (``unshare -rn``,
with loopback up), where a fetch that should not happen goes nowhere; ``--no-isolation`` probes
the loopback targets only. Outputs in DIR: per run, crawl.log, requests.jsonl and secret.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SITE_ADDRESS = "127.0.0.2"  # the site: the one address the crawl allows
MIRROR_ADDRESS = "127.0.0.3"  # the second site, whose robots.txt redirects into loopback
SECRET_ADDRESS = "127.0.0.1"  # what localhost names: nothing may reach it
STOCK_RESOLVER = "scrapy.resolver.CachingThreadedResolver"
ISOLATED = "FOCUSCRAWL_SSRF_PROBE_ISOLATED"


@dataclass(frozen=True)
class Target:
    """One hostile URL: ``url`` holds ``{secret}`` (the secret server's host:port) or ``{port}``
    (its port) when the secret server answers it; its path ends with ``/t/<slug>``, unique among
    the targets."""
    slug: str
    kind: str  # the range, as the guard names it (or what the name resolves to)
    url: str
    via: str = "link"  # link | redirect | robots sitemap | sitemap entry | robots redirect
    loopback: bool = True  # stays on this machine even when fetched

    @property
    def path(self) -> str:
        return f"/t/{self.slug}"


def targets(include_outside: bool = True) -> list[Target]:
    """The probe's targets; ``include_outside``: also those outside loopback (isolated runs)."""
    found = [
        Target("literal", "loopback", "http://{secret}/t/literal"),
        Target("decimal", "loopback (2130706433)", "http://2130706433:{port}/t/decimal"),
        Target("hex", "loopback (0x7f.1)", "http://0x7f.1:{port}/t/hex"),
        Target("octal", "loopback (017700000001)", "http://017700000001:{port}/t/octal"),
        Target("short", "loopback (127.1)", "http://127.1:{port}/t/short"),
        Target("ipv6", "loopback ([::1])", "http://[::1]:{port}/t/ipv6"),
        Target("mapped", "loopback (::ffff:127.0.0.1)", "http://[::ffff:127.0.0.1]:{port}/t/mapped"),
        Target("mapped-hex", "loopback (::ffff:7f00:1)", "http://[::ffff:7f00:1]:{port}/t/mapped-hex"),
        Target("unspecified", "unspecified (0.0.0.0)", "http://0.0.0.0:{port}/t/unspecified"),
        Target("name", "name -> 127.0.0.1", "http://localhost:{port}/t/name"),
        Target("redirect-literal", "loopback", "http://{secret}/t/redirect-literal", via="redirect"),
        Target("redirect-name", "name -> 127.0.0.1", "http://localhost:{port}/t/redirect-name", via="redirect"),
        Target("sitemap.xml", "name -> 127.0.0.1", "http://localhost:{port}/t/sitemap.xml", via="robots sitemap"),
        Target("from-sitemap", "loopback (127.1)", "http://127.1:{port}/t/from-sitemap", via="sitemap entry"),
        Target("robots-redirect", "loopback", "http://{secret}/t/robots-redirect", via="robots redirect"),
    ]
    name = socket.gethostname()
    try:
        own = socket.gethostbyname(name)
    except OSError:
        own = None
    if own and own.startswith("127.") and name.lower() != "localhost":
        found.append(Target("own-name", f"name -> {own}", f"http://{name}:{{port}}/t/own-name"))
    if include_outside:
        found += [
            Target("metadata", "link_local (cloud metadata)", "http://169.254.169.254/latest/meta-data/t/metadata",
                   loopback=False),
            Target("metadata-odd", "link_local (169.254.43518)", "http://169.254.43518/t/metadata-odd", loopback=False),
            Target("metadata-mapped", "link_local (::ffff:a9fe:a9fe)", "http://[::ffff:a9fe:a9fe]/t/metadata-mapped",
                   loopback=False),
            Target("metadata-nat64", "link_local (64:ff9b::a9fe:a9fe)", "http://[64:ff9b::a9fe:a9fe]/t/metadata-nat64",
                   loopback=False),
            Target("metadata-6to4", "link_local (2002:a9fe:a9fe::1)", "http://[2002:a9fe:a9fe::1]/t/metadata-6to4",
                   loopback=False),
            Target("metadata-v6", "private (fd00:ec2::254)", "http://[fd00:ec2::254]/latest/t/metadata-v6",
                   loopback=False),
            Target("alibaba", "carrier_grade_nat", "http://100.100.100.200/latest/t/alibaba", loopback=False),
            Target("rfc1918-10", "private", "http://10.0.0.1/admin/t/rfc1918-10", loopback=False),
            Target("rfc1918-172", "private", "http://172.16.0.1/t/rfc1918-172", loopback=False),
            Target("rfc1918-192", "private", "http://192.168.1.1/t/rfc1918-192", loopback=False),
            Target("link-local-v6", "link_local (fe80::1)", "http://[fe80::1]/t/link-local-v6", loopback=False),
            Target("multicast", "multicast", "http://224.0.0.1/t/multicast", loopback=False),
            Target("redirect-metadata", "link_local (cloud metadata)", "http://169.254.169.254/t/redirect-metadata",
                   via="redirect", loopback=False),
        ]
    return found


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: str, answer, log: list, lock: threading.Lock):
        self.answer, self.log, self.lock = answer, log, lock

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server: _Server = self.server  # type: ignore[assignment]
                with server.lock:
                    server.log.append({"t": round(time.time(), 3), "host": self.headers.get("Host"),
                                       "path": self.path})
                status, headers, body = server.answer(self.path)
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        super().__init__((address, 0), Handler)
        self.netloc = f"{address}:{self.server_address[1]}"


class ProbeWeb:
    """The site, the second site and the secret server (see the module's doc). ``start()`` returns
    self; also a context manager. ``secret_log``: every request the secret server got."""

    def __init__(self, probe_targets: list[Target]):
        self.targets = probe_targets
        self.lock = threading.Lock()
        self.secret_log: list[dict] = []
        self.site_log: list[dict] = []
        self.secret = _Server(SECRET_ADDRESS, self._secret_answer, self.secret_log, self.lock)
        self.site = _Server(SITE_ADDRESS, self._site_answer, self.site_log, self.lock)
        self.mirror = _Server(MIRROR_ADDRESS, self._mirror_answer, self.site_log, self.lock)
        self._servers = (self.secret, self.site, self.mirror)

    @property
    def seed(self) -> str:
        return f"http://{self.site.netloc}/"

    def url(self, target: Target) -> str:
        return target.url.format(secret=self.secret.netloc, port=self.secret.server_address[1])

    def start(self) -> ProbeWeb:
        for server in self._servers:
            threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
        return self

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()

    def __enter__(self) -> ProbeWeb:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def secret_paths(self) -> set[str]:
        with self.lock:
            return {urlsplit(record["path"]).path for record in self.secret_log}

    # --- what the servers answer ---
    def _by(self, via: str) -> list[Target]:
        return [t for t in self.targets if t.via == via]

    def _site_answer(self, path: str):
        if path == "/robots.txt":
            sitemaps = "".join(f"Sitemap: {self.url(t)}\n" for t in self._by("robots sitemap"))
            return 200, [("Content-Type", "text/plain")], (
                f"User-agent: *\nAllow: /\nSitemap: {self.seed}sitemap.xml\n{sitemaps}").encode()
        if path == "/sitemap.xml":
            locs = [f"{self.seed}from-sitemap.html", *(self.url(t) for t in self._by("sitemap entry"))]
            body = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                    + "".join(f"<url><loc>{loc}</loc></url>" for loc in locs) + "</urlset>")
            return 200, [("Content-Type", "application/xml")], body.encode()
        if path.startswith("/go/"):
            target = next((t for t in self._by("redirect") if t.slug == path[4:]), None)
            if target is not None:
                return 302, [("Location", self.url(target))], b""
        if path in ("/", "/from-sitemap.html"):
            links = [self.url(t) for t in self._by("link")]
            links += [f"/go/{t.slug}" for t in self._by("redirect")]
            links.append(f"http://{self.mirror.netloc}/")
            anchors = "".join(f'<li><a href="{href}">star chart {i}</a></li>' for i, href in enumerate(links))
            body = (f"<html><head><title>Observatory</title></head><body><p>Comets, planets and galaxies "
                    f"seen from the observatory.</p><ul>{anchors}</ul></body></html>")
            return 200, [("Content-Type", "text/html; charset=utf-8")], body.encode()
        return 404, [("Content-Type", "text/plain")], b"not here"

    def _mirror_answer(self, path: str):
        redirect = self._by("robots redirect")
        if path == "/robots.txt" and redirect:
            return 302, [("Location", self.url(redirect[0]))], b""
        body = b"<html><title>Mirror</title><body><p>Comets and planets, mirrored.</p></body></html>"
        return 200, [("Content-Type", "text/html")], body

    @staticmethod
    def _secret_answer(path: str):
        body = b"<html><title>secret</title><body><p>Internal: credentials and keys.</p></body></html>"
        return 200, [("Content-Type", "text/html")], body


# --- the crawl and its reading -------------------------------------------------------------------
def crawl_argv(web: ProbeWeb, model: Path, out: Path, *settings: str) -> list[str]:
    args = ["-m", "scrapy", "crawl", "focused", "-a", f"seeds={web.seed}", "-a", f"model={model}",
            "-s", f"FOCUS_ALLOWED_NETWORKS={SITE_ADDRESS},{MIRROR_ADDRESS}",
            "-s", f"FOCUS_STORE={out / 'crawl.db'}", "-s", f"FOCUS_CRAWL_LOG={out / 'requests.jsonl'}",
            "-s", "DOWNLOAD_DELAY=0.05", "-s", "DOWNLOAD_TIMEOUT=5", "-s", "DNS_TIMEOUT=5",
            "-s", "FOCUS_BACKOFF_BASE=0.2", "-s", "FOCUS_PATIENCE=0", "-s", "LOG_LEVEL=INFO"]
    for setting in settings:
        args += ["-s", setting]
    return [sys.executable, *args]


def crawl_env() -> dict:
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("http_proxy", "https_proxy", "no_proxy", "all_proxy")}
    env["SCRAPY_SETTINGS_MODULE"] = "focuscrawl.settings"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


REFUSED_LINE = re.compile(r"refused (\S+) \((private_network/\w+), by the ([a-z ]+) check\): (.*)")


def read_run(web: ProbeWeb, out: Path, log_text: str) -> dict[str, dict]:
    """Per target slug: refused_by (admission, resolver, robots redirect, peer or None), reason, fetched."""
    lines = [m.groups() for m in REFUSED_LINE.finditer(log_text)]
    records = []
    log_path = out / "requests.jsonl"
    if log_path.is_file():
        records = [json.loads(line) for line in log_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    hit = web.secret_paths()
    result = {}
    for target in web.targets:
        path = target.path
        by, reason = None, None
        for url, why, line, detail in lines:
            if urlsplit(url).path.endswith(path) or path in detail:
                by, reason = line, why
                break
        if by is None:
            for record in records:
                if record.get("dropped") and urlsplit(record.get("url", "")).path.endswith(path):
                    by, reason = "admission", record["dropped"]
                    break
        sent = any(not record.get("dropped") and not record.get("event")
                   and urlsplit(record.get("url", "")).path.endswith(path) for record in records)
        fetched = any(p.endswith(path) for p in hit) or (not target.loopback and sent)
        result[target.slug] = {"refused_by": by, "reason": reason, "fetched": fetched}
    return result


def stats_of(log_text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"'(focus/(?:refused|network_guard)/[^']+)': (\d+)", log_text)}


def topic_model(path: Path) -> Path:
    """A tiny astronomy model: which pages are relevant does not matter to the probe."""
    from focuscrawl.relevance import Example, train_topic_model

    sky = ["Comets, planets and galaxies seen through the telescope at night.",
           "The observatory charts stars, nebulae and the orbits of the planets.",
           "A comet's tail points away from the sun; its nucleus is ice and dust.",
           "Galaxies hold billions of stars; the telescope resolves their spiral arms."]
    other = ["Add items to your basket and pay at the checkout.", "The match ended after extra time.",
             "Our office is open on weekdays from nine to five.", "Read the release notes of the installer."]
    examples = ([Example(f"http://t/pos/{i}", "Sky", text, "astronomy") for i, text in enumerate(sky * 3)]
                + [Example(f"http://t/neg/{i}", "Other", text, "other") for i, text in enumerate(other * 3)])
    model, _ = train_topic_model(examples, ["astronomy"], cv_folds=3)
    model.save(str(path))
    return path


def run(web: ProbeWeb, model: Path, out: Path, *settings: str, timeout: float = 180) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    result = subprocess.run(crawl_argv(web, model, out, *settings), cwd=out, env=crawl_env(),
                            capture_output=True, text=True, timeout=timeout)
    (out / "crawl.log").write_text(result.stderr, encoding="utf-8")
    time.sleep(0.2)  # the servers' last log lines
    (out / "secret.jsonl").write_text("".join(json.dumps(r) + "\n" for r in web.secret_log), encoding="utf-8")
    return {"returncode": result.returncode, "seconds": round(time.time() - started, 1),
            "targets": read_run(web, out, result.stderr), "stats": stats_of(result.stderr)}


def table(web: ProbeWeb, default: dict, stock: dict) -> str:
    head = ("| target | kind | linked as | refused by (defaults) | fetched? "
            "| refused by (stock resolver) | fetched? |\n|---|---|---|---|---|---|---|\n")
    rows = []
    for target in web.targets:
        a, b = default["targets"][target.slug], stock["targets"][target.slug]
        url = web.url(target).replace(web.secret.netloc, "127.0.0.1:PORT").replace(
            f":{web.secret.server_address[1]}", ":PORT")
        rows.append(f"| `{url}` | {target.kind} | {target.via} | {a['refused_by'] or '-'} | "
                    f"{'**yes**' if a['fetched'] else 'no'} | {b['refused_by'] or '-'} | "
                    f"{'**yes**' if b['fetched'] else 'no'} |")
    return head + "\n".join(rows) + "\n"


def isolate(argv: list[str]) -> int | None:
    """Run this script again in a network namespace of its own, loopback up; None if impossible."""
    if os.environ.get(ISOLATED) or not shutil.which("unshare") or not shutil.which("ip"):
        return None
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True)
    if probe.returncode != 0:
        return None
    env = dict(os.environ, **{ISOLATED: "1"})
    command = f"ip link set lo up && exec {shlex.join([sys.executable, *argv])}"
    return subprocess.run(["unshare", "-rn", "sh", "-c", command], env=env).returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="where the runs' logs go (default: a temporary folder)")
    parser.add_argument("--no-isolation", action="store_true",
                        help="run here, not in a network namespace of its own: loopback targets only")
    opts = parser.parse_args()
    isolated = bool(os.environ.get(ISOLATED))
    if not isolated and not opts.no_isolation:
        code = isolate([str(Path(__file__).resolve()), *sys.argv[1:]])
        if code is not None:
            return code
        print("no network namespace (unshare -rn) here: probing loopback targets only", file=sys.stderr)
    out = opts.out or Path(tempfile.mkdtemp(prefix="ssrf-probe-"))
    out.mkdir(parents=True, exist_ok=True)
    model = topic_model(out / "model.joblib")
    with ProbeWeb(targets(include_outside=isolated)) as web:
        default = run(web, model, out / "defaults")
        web.secret_log.clear()
        stock = run(web, model, out / "stock-resolver", f"TWISTED_DNS_RESOLVER={STOCK_RESOLVER}")
        print(f"# {len(web.targets)} targets, {'isolated network namespace' if isolated else 'loopback only'}; "
              f"crawls {default['seconds']} s and {stock['seconds']} s (exit {default['returncode']}, "
              f"{stock['returncode']})\n")
        print(table(web, default, stock))
        print("defaults:", json.dumps(default["stats"], sort_keys=True))
        print("stock resolver:", json.dumps(stock["stats"], sort_keys=True))
        print(f"\nlogs in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
