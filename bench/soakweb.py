"""The soak benchmark's web: 10^5 generated pages over 10^3 hosts, hostile, made on request.

Nothing is stored: every answer is a function of the seed and the URL (only the 429s of a
throttling host also count that host's requests), so serving it holds the host profiles, three
precomputed bodies and a bounded cache of page paths, never the pages. Hosts are
``h0001.soak.test`` ... ``h1000.soak.test``, ~100 pages each, linked within and across hosts.
Pages are written from the demo web's vocabulary (``focuscrawl.demo.vocabulary``), so a topic
model trained on the demo web scores them: some hosts are about its topic, some carry it on a
share of their pages, most never do, and on-topic pages link to on-topic hosts more often.

What makes it hostile, each on a share of the hosts (``HostProfile``, decided by the seed):

- traps: an infinite calendar (``/calendar/Y/M/``), session ids in the path (``/shop/s/TOKEN/``)
  and as ``;jsessionid=``, ever-deeper paths (``/deep/w/w/w/...``), facet permutations with an
  ever-growing page number (``/catalog?...``);
- slow hosts (1-5 s before every answer);
- huge bodies: 12 MiB with and without Content-Length (past DOWNLOAD_MAXSIZE, 10 MiB), 9.5 MiB
  (just under it; its first 2 MiB are varied words), generated as they are sent; gzip: whole
  hosts serving ``Content-Encoding: gzip``, a gzip bomb (256 MiB of zeros), a 9 MiB page
  gzipped, a body that says gzip but is not;
- wrong charsets: declared ISO-8859-1 over UTF-8 bytes, declared utf-8 over windows-1252 bytes,
  charset names that do not exist;
- 5xx on a share of the URLs of some hosts (a 503 sometimes with Retry-After), 429 on every Nth
  request of throttling hosts (Retry-After in seconds, as an HTTP date, or none);
- robots.txt: absent (404), allowing, disallowing ``/private/`` (linked from everywhere),
  Crawl-delay (one host past FOCUS_MAX_CRAWL_DELAY), 5xx, garbage (binary, an HTML page, odd
  syntax with a BOM), redirected;
- redirects (``/old/N`` -> a page), redirect loops, a chain of 6, cross-host redirects; broken
  links (404) and links to hosts that do not exist (the proxy answers 502).

``SoakWeb.respond(method, url)`` is the whole web; ``SoakWeb.examples()`` names a URL of every
kind (the tests drive it), ``SoakWeb.robots_for_audit(host)`` the rules a polite crawler must have
followed there.
"""

from __future__ import annotations

import email.utils
import functools
import gzip
import hashlib
import math
import random
import re
import time
import zlib
from collections import Counter
from dataclasses import dataclass
from html import escape
from typing import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit

from focuscrawl.demo import vocabulary as V

DOMAIN = "soak.test"
TOPIC = "astronomy"  # the demo web's topic, so the demo's topic model scores these pages
MIB = 1024 * 1024
DOWNLOAD_MAXSIZE = 10 * MIB  # focuscrawl's setting; the huge bodies are placed around it
HUGE_BYTES = 12 * MIB
BIG_BYTES = DOWNLOAD_MAXSIZE - MIB // 2
BIG_GZIP_BYTES = 9 * MIB
BOMB_BYTES = 256 * MIB
VARIED_BYTES = 2 * MIB  # what parse_html reads of a body at most: all of it different words
CHUNK = 64 * 1024
CHAIN_LENGTH = 6
SESSION_ITEMS = 5
DEEP_WORDS = ("alpha", "beta", "gamma", "delta", "omega", "nova", "vega", "rigel", "deneb", "altair")
FACETS = {"color": ("red", "green", "blue"), "size": ("s", "m", "l"), "sort": ("price", "name", "new")}
ROBOTS_KINDS = {  # share of hosts; the rest have none (404)
    "allow": 0.15, "disallow": 0.22, "crawl_delay": 0.07, "error": 0.05, "garbage": 0.06, "redirect": 0.05,
}
CHARSET_KINDS = {"latin1_says_utf8": 0.05, "utf8_says_cp1252": 0.05, "bogus_name": 0.04}
BOGUS_CHARSETS = ("utf-88", "x-user-defined-garbage", "latin-42", "unicode-1-1-utf-7-ish")
TRAP_KINDS = ("calendar", "session", "deep", "facets")
PAGE_RE = re.compile(r"^/(?:[a-z0-9-]+/)+(\d+)-[a-z0-9-]+\.html$")
HOST_RE = re.compile(r"^h(\d{4})\." + re.escape(DOMAIN) + r"$")


def _rng(*parts) -> random.Random:
    """A Random for one decision, seeded by a stable hash of ``parts`` (Python's hash() is salted
    per process, and the web must be the same in the bench, the proxy and the tests)."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "big"))


def _unit(*parts) -> float:
    """A uniform number in [0, 1) from a stable hash of ``parts``: one cheap decision."""
    digest = hashlib.blake2b("|".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _pick(rng: random.Random, shares: dict[str, float], default: str) -> str:
    r = rng.random()
    for name, share in shares.items():
        if r < share:
            return name
        r -= share
    return default


@dataclass(frozen=True)
class HostProfile:
    """One host's character: what it is about and how it misbehaves."""

    index: int
    host: str
    pages: int  # page 0 is the home page "/"
    theme: str  # the demo vocabulary's theme of its off-topic pages
    topic_share: float  # share of its pages on TOPIC
    robots: str  # "none" | a key of ROBOTS_KINDS
    crawl_delay: int  # seconds, robots "crawl_delay" only
    charset: str  # "utf-8" | a key of CHARSET_KINDS
    gzip: bool  # every page sent with Content-Encoding: gzip
    latency: float  # seconds before every answer (slow hosts)
    throttle: int  # every Nth request answered 429 (0: never)
    retry_after: str  # for the 429s: "seconds" | "date" | "none"
    errors: float  # share of its URLs answered 5xx
    traps: tuple[str, ...]
    files: bool  # serves /files/: huge, big, bomb, gzipped, bad gzip
    redirects: bool  # serves /loop/, /chain/, /away/


def host_name(index: int) -> str:
    return f"h{index:04d}.{DOMAIN}"


def make_profile(seed: int, index: int) -> HostProfile:
    rng = _rng(seed, "host", index)
    kind = rng.random()
    # about the topic (12% of hosts), carrying it on a share of their pages (18%), or hardly ever
    topic_share = (rng.uniform(0.6, 0.9) if kind < 0.12 else rng.uniform(0.1, 0.3) if kind < 0.3
                   else rng.uniform(0, 0.03))
    themes = sorted(t for t in V.THEMES if t != TOPIC)
    robots = _pick(rng, ROBOTS_KINDS, "none")
    return HostProfile(
        index=index, host=host_name(index), pages=rng.randint(60, 140), theme=rng.choice(themes),
        topic_share=round(topic_share, 3), robots=robots,
        crawl_delay=_crawl_delay(rng, robots, index),
        charset=_pick(rng, CHARSET_KINDS, "utf-8"), gzip=rng.random() < 0.2,
        latency=round(rng.uniform(1, 5), 2) if rng.random() < 0.05 else 0.0,
        throttle=rng.randint(4, 9) if rng.random() < 0.06 else 0,
        retry_after=rng.choice(("seconds", "date", "none")),
        errors=rng.uniform(0.1, 0.3) if rng.random() < 0.1 else 0.0,
        traps=tuple(t for t in TRAP_KINDS if rng.random() < 0.08),
        files=rng.random() < 0.05, redirects=rng.random() < 0.1,
    )


def _crawl_delay(rng: random.Random, robots: str, index: int) -> int:
    delay = rng.randint(2, 5) if robots == "crawl_delay" else 0
    return 60 if delay and index % 7 == 0 else delay  # 60: past FOCUS_MAX_CRAWL_DELAY, crawled at the cap


@dataclass(frozen=True)
class Reply:
    """One answer. A body too big to hold is a ``stream`` of chunks of ``length`` bytes (sent with
    Content-Length when ``with_length``, else delimited by closing the connection)."""

    status: int
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""
    kind: str = "page"  # which part of the web answered: for the tests and the bench's counts
    latency: float = 0.0
    stream: Callable[[], Iterator[bytes]] | None = None
    length: int = 0
    with_length: bool = True
    retry_after: str | None = None  # the Retry-After sent, as the politeness audit reads it

    @property
    def size(self) -> int:
        return self.length if self.stream is not None else len(self.body)

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def read(self, limit: int | None = None) -> bytes:
        """The whole body (a stream up to ``limit`` bytes): for tests."""
        if self.stream is None:
            return self.body
        out = bytearray()
        for chunk in self.stream():
            out += chunk
            if limit is not None and len(out) >= limit:
                return bytes(out[:limit])
        return bytes(out)


@dataclass(frozen=True)
class PagePlan:
    index: int
    path: str
    theme: str
    title: str

    @property
    def on_topic(self) -> bool:
        return self.theme == TOPIC


class SoakWeb:
    def __init__(self, seed: int = 0, hosts: int = 1000):
        self.seed = seed
        self.profiles = [make_profile(seed, i) for i in range(1, hosts + 1)]
        self.by_host = {p.host: p for p in self.profiles}
        self.topical = [p for p in self.profiles if p.topic_share >= 0.5]
        self.requests = Counter()  # host -> page requests so far (the 429s of throttling hosts)
        # one page plan is cheap, but a page's links need 15 of them: a bounded cache
        self.plan = functools.lru_cache(maxsize=65536)(self._plan)

    def __len__(self) -> int:
        """Pages (home pages included), traps and files not counted."""
        return sum(p.pages for p in self.profiles)

    def seeds(self, n: int = 20) -> list[str]:
        """Home pages of ``n`` hosts: half about the topic, half not."""
        others = [p for p in self.profiles if p.topic_share < 0.5]
        chosen = self.topical[: n // 2] + others[: n - n // 2]
        return [f"http://{p.host}/" for p in sorted(chosen, key=lambda p: p.index)]

    # --- the page graph -----------------------------------------------------------------------

    def _plan(self, host: str, index: int) -> PagePlan:
        profile = self.by_host[host]
        rng = _rng(self.seed, host, "page", index)
        theme = TOPIC if rng.random() < profile.topic_share else (
            profile.theme if rng.random() < 0.8 else rng.choice(sorted(V.THEMES)))
        slug = rng.choice(V.THEMES[theme]["slug_words"])
        section = "/private/" if rng.random() < 0.06 else rng.choice(V.THEMES[theme]["sections"])[0]
        title = f"{slug.replace('-', ' ').title()} {rng.choice(V.MONTHS)} {2020 + index % 7}"
        return PagePlan(index, f"{section}{index}-{slug}.html", theme, title)

    def url(self, host: str, index: int) -> str:
        return f"http://{host}/" if index == 0 else f"http://{host}{self.plan(host, index).path}"

    def _links(self, profile: HostProfile, page: PagePlan) -> list[tuple[str, str]]:
        """(href, anchor) of a page: its host's pages, other hosts (topical ones from topical
        pages), and the entries of its host's traps, files and redirects."""
        rng = _rng(self.seed, profile.host, "links", page.index)
        home = page.index == 0
        links = []
        for _ in range(25 if home else rng.randint(8, 14)):
            target = self.plan(profile.host, rng.randrange(1, profile.pages))
            links.append((target.path, target.title))
        for _ in range(rng.randint(1, 4)):
            pool = self.topical if page.on_topic and rng.random() < 0.7 else self.profiles
            other = rng.choice(pool)
            j = rng.randrange(0, other.pages)
            anchor = other.host if j == 0 else self.plan(other.host, j).title
            links.append((self.url(other.host, j), anchor))
        if rng.random() < 0.3:  # a broken link: a real page number with another slug
            links.append((f"/news/{rng.randrange(1, profile.pages)}-missing-page.html", "An old story"))
        if rng.random() < 0.2:
            links.append((f"/old/{rng.randrange(1, profile.pages)}", "Archived article"))
        if rng.random() < 0.05:  # a host that does not exist (beyond the web, or long gone)
            links.append((f"http://h{len(self.profiles) + rng.randint(1, 50):04d}.{DOMAIN}/", "Partner site"))
        if rng.random() < 0.1:
            links.append(("/search?q=" + rng.choice(V.THEMES[page.theme]["slug_words"]), "Search"))
        if home or page.index % 7 == 0:
            entries = {"calendar": "/calendar/2026/03/", "session": "/shop/", "deep": "/deep/",
                       "facets": "/catalog?color=red&page=1&size=m&sort=price"}
            links += [(entries[t], f"{t.title()} of {profile.host}") for t in profile.traps]
        if profile.files and (home or page.index % 5 == 0):
            links += [(f"/files/{name}", f"Download {name}") for name in FILES]
        if profile.redirects and (home or page.index % 11 == 0):
            links += [("/loop/a", "Latest issue"), ("/chain/0", "Moved section"),
                      (f"/away/{rng.randint(1, len(self.profiles))}", "Our partners")]
        return links

    # --- answering ----------------------------------------------------------------------------

    def respond(self, method: str, url: str) -> Reply:
        """The answer to ``method url`` (GET or HEAD; a HEAD's body is not sent)."""
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        profile = self.by_host.get(host) if parts.port in (None, 80) else None
        if profile is None:
            return Reply(502, (("Content-Type", "text/plain"),), f"Bad Gateway: cannot reach {host}\n".encode(),
                         kind="unknown_host")
        reply = self._answer(profile, parts.path or "/", parts.query)
        return _with_latency(reply, profile.latency)

    def _answer(self, profile: HostProfile, path: str, query: str) -> Reply:
        if path == "/robots.txt":
            return self._robots(profile)
        if path == "/robots-real.txt" and profile.robots == "redirect":
            return _text(200, robots_text(profile), kind="robots")
        self.requests[profile.host] += 1
        n = self.requests[profile.host]
        if profile.throttle and n % profile.throttle == 0:
            return _throttled(profile, n)
        url = f"http://{profile.host}{path}" + (f"?{query}" if query else "")
        if profile.errors and _unit(self.seed, url, "error") < profile.errors:
            return _server_error(self.seed, url)
        index = 0 if path == "/" else _page_index(path)
        if index is not None and index < profile.pages and (index == 0 or self.plan(profile.host, index).path == path):
            return self._page(profile, self.plan(profile.host, index) if index else _home_plan(profile))
        for prefix, handler in self._special:
            if path.startswith(prefix):
                reply = handler(self, profile, path, query)
                if reply is not None:
                    return reply
        return _html(404, "<html><body><h1>Not Found</h1></body></html>", kind="not_found")

    def _page(self, profile: HostProfile, page: PagePlan, links=None, kind: str = "page") -> Reply:
        rng = _rng(self.seed, profile.host, "text", page.path)
        accented = V.ACCENTED_1252 if profile.charset == "utf8_says_cp1252" else V.ACCENTED
        paragraphs = [paragraph(rng, page.theme, accented) for _ in range(rng.randint(3, 6))]
        links = self._links(profile, page) if links is None else links
        html = render(page.title, profile.host, paragraphs, links, meta_charset=profile.charset == "utf-8")
        body, ctype = encode(html, profile.charset)
        headers = [("Content-Type", ctype)]
        if profile.gzip:
            body = gzip.compress(body, compresslevel=5, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        kind = kind if kind != "page" else ("topic_page" if page.on_topic else "page")
        return Reply(200, tuple(headers), body, kind=kind)

    def _robots(self, profile: HostProfile) -> Reply:
        kind = profile.robots
        if kind == "none":
            return _html(404, "<html><body>Not Found</body></html>", kind="robots_none")
        if kind == "error":
            return _text(500 + profile.index % 4, "internal error\n", kind="robots_error")
        if kind == "redirect":
            return Reply(301, (("Location", "/robots-real.txt"), ("Content-Type", "text/plain")), b"moved\n",
                         kind="robots_redirect")
        if kind == "garbage":
            return Reply(200, (("Content-Type", "text/plain"),), garbage_robots(profile), kind="robots_garbage")
        return _text(200, robots_text(profile), kind=f"robots_{kind}")

    def robots_for_audit(self, host: str) -> str | None:
        """The robots.txt a polite crawler obeys at ``host``: 404 allows everything, a 5xx (or a
        host the proxy cannot reach) disallows everything (RFC 9309), a redirect its target."""
        profile = self.by_host.get(host)
        if profile is None:
            return "User-agent: *\nDisallow: /\n"
        if profile.robots == "none":
            return ""
        if profile.robots == "error":
            return "User-agent: *\nDisallow: /\n"
        if profile.robots == "garbage":
            return garbage_robots(profile).decode("utf-8", "replace")
        return robots_text(profile)

    # --- traps, files, redirects --------------------------------------------------------------

    def _calendar(self, profile, path, query):
        m = re.fullmatch(r"/calendar/(\d{1,5})/(\d\d)/", path)
        if "calendar" not in profile.traps or not m or not 1 <= int(m[2]) <= 12:
            return None
        year, month = int(m[1]), int(m[2])
        prev_y, prev_m = (year, month - 1) if month > 1 else (year - 1, 12)
        next_y, next_m = (year, month + 1) if month < 12 else (year + 1, 1)
        theme = TOPIC if profile.topic_share >= 0.5 else profile.theme
        title = f"{'Sky events' if theme == TOPIC else 'Events'} in {V.MONTHS[month - 1]} {year}"
        links = [(f"/calendar/{prev_y}/{prev_m:02d}/", "Previous month"),
                 (f"/calendar/{next_y}/{next_m:02d}/", "Next month"),
                 (f"/calendar/{year + 1}/{month:02d}/", "Next year"), ("/", "Home")]
        return self._page(profile, PagePlan(-1, path, theme, title), links, kind="trap_calendar")

    def _shop(self, profile, path, query):
        """Session ids: in the path (``/shop/s/TOKEN/item/K``: a new URL on every page) and as
        ``;jsessionid=`` (which a careful crawler strips)."""
        if "session" not in profile.traps:
            return None
        m = re.fullmatch(r"/shop/(?:s/([0-9a-f]{10})/)?(?:item/(\d+)(?:;jsessionid=[0-9a-f]+)?)?", path)
        if not m or (m[2] is not None and int(m[2]) >= SESSION_ITEMS):
            return None
        token = hashlib.blake2b(f"{self.seed}{profile.host}{path}".encode(), digest_size=5).hexdigest()
        links = [(f"/shop/s/{token}/item/{k}", f"Telescope model {k}") for k in range(SESSION_ITEMS)]
        links += [(f"/shop/item/{k};jsessionid={token}", f"Eyepiece {k}") for k in range(SESSION_ITEMS)]
        title = f"Shop item {m[2]}" if m[2] is not None else "Shop"
        return self._page(profile, PagePlan(-1, path, profile.theme, title), links, kind="trap_session")

    def _deep(self, profile, path, query):
        segments = [s for s in path.split("/")[2:] if s]
        if "deep" not in profile.traps or not path.endswith("/") or any(s not in DEEP_WORDS for s in segments):
            return None
        rng = _rng(self.seed, profile.host, path)
        links = [(f"{w}/", f"More about {w}") for w in rng.sample(DEEP_WORDS, 3)]  # relative: ever deeper
        title = "Archive " + " / ".join(segments[-3:])
        return self._page(profile, PagePlan(-1, path, profile.theme, title), links, kind="trap_deep")

    def _catalog(self, profile, path, query):
        if "facets" not in profile.traps or path != "/catalog":
            return None
        params = dict(parse_qsl(query))
        page = int(params.get("page", "1")) if params.get("page", "1").isdigit() else 1
        links = []
        for name, values in FACETS.items():
            for value in values:
                links.append(("/catalog?" + urlencode({**params, name: value}), f"{name} {value}"))
        links.append(("/catalog?" + urlencode({**params, "page": page + 1}), "Next page"))
        return self._page(profile, PagePlan(-1, path, profile.theme, f"Catalogue page {page}"), links,
                          kind="trap_facets")

    def _search(self, profile, path, query):
        return self._page(profile, PagePlan(-1, path, profile.theme, "Search results"), [("/", "Home")],
                          kind="search") if path == "/search" else None

    def _old(self, profile, path, query):
        m = re.fullmatch(r"/old/(\d+)", path)
        if not m or not 0 < int(m[1]) < profile.pages:
            return None
        return _redirect(301, self.plan(profile.host, int(m[1])).path, "redirect")

    def _loops(self, profile, path, query):
        if not profile.redirects:
            return None
        if path in ("/loop/a", "/loop/b"):
            return _redirect(302, "/loop/b" if path == "/loop/a" else "/loop/a", "redirect_loop")
        m = re.fullmatch(r"/chain/(\d+)", path)
        if m and int(m[1]) < CHAIN_LENGTH:
            return _redirect(301, f"/chain/{int(m[1]) + 1}", "redirect_chain")
        if m and int(m[1]) == CHAIN_LENGTH:
            return self._page(profile, PagePlan(-1, path, profile.theme, "End of the chain"), [("/", "Home")],
                              kind="redirect_chain_end")
        m = re.fullmatch(r"/away/(\d+)", path)
        if m and 0 < int(m[1]) <= len(self.profiles):
            return _redirect(302, f"http://{host_name(int(m[1]))}/", "redirect_cross_host")
        return None

    def _files(self, profile, path, query):
        name = path[len("/files/"):]
        if not profile.files or name not in FILES:
            return None
        title = f"{name} of {profile.host}"
        html = ("text/html; charset=utf-8",)
        if name == "bomb.html":
            return Reply(200, (("Content-Type", html[0]), ("Content-Encoding", "gzip")), gzip_bomb(), kind="gzip_bomb")
        if name == "bad-gzip.html":
            body = render(title, profile.host, ["This body says gzip and is not."], [("/", "Home")]).encode()
            return Reply(200, (("Content-Type", html[0]), ("Content-Encoding", "gzip")), body, kind="bad_gzip")
        if name == "big-gzip.html":
            return Reply(200, (("Content-Type", html[0]), ("Content-Encoding", "gzip")), big_gzip(), kind="big_gzip")
        size = BIG_BYTES if name == "big.html" else HUGE_BYTES
        head = render(title, profile.host, [paragraph(_rng(self.seed, profile.host, name), TOPIC, V.ACCENTED)],
                      [("/", "Home")]).replace("</body></html>", "").encode()
        return Reply(200, (("Content-Type", html[0]),), kind=FILES[name], length=size,
                     with_length=name != "huge-stream.html", stream=functools.partial(huge_body, head, size))

    _special = (("/calendar/", _calendar), ("/shop/", _shop), ("/deep/", _deep), ("/catalog", _catalog),
                ("/search", _search), ("/old/", _old), ("/loop/", _loops), ("/chain/", _loops), ("/away/", _loops),
                ("/files/", _files))

    # --- one URL of every kind ----------------------------------------------------------------

    def examples(self) -> dict[str, str]:
        """{kind: a URL of that kind}, for the tests and the bench's header."""
        first = lambda pred: next(p for p in self.profiles if pred(p))  # noqa: E731
        plain = first(lambda p: not (p.gzip or p.latency or p.throttle or p.errors) and p.charset == "utf-8")
        out = {"home": f"http://{plain.host}/", "page": self.url(plain.host, 1)}
        topical = first(lambda p: p.topic_share >= 0.5 and not (p.gzip or p.latency or p.throttle or p.errors))
        out["topic_page"] = next(self.url(topical.host, i) for i in range(1, topical.pages)
                                 if self.plan(topical.host, i).on_topic)
        for kind in ("none", *ROBOTS_KINDS):
            out[f"robots_{kind}"] = f"http://{first(lambda p: p.robots == kind).host}/robots.txt"
        for kind in CHARSET_KINDS:
            out[f"charset_{kind}"] = self.url(first(lambda p: p.charset == kind and not (p.gzip or p.errors)).host, 0)
        out["gzip_page"] = self.url(first(lambda p: p.gzip and not (p.errors or p.throttle)).host, 0)
        out["slow"] = self.url(first(lambda p: p.latency and not (p.errors or p.throttle)).host, 0)
        out["throttled"] = self.url(first(lambda p: p.throttle and not p.errors).host, 0)
        errors = first(lambda p: p.errors)
        out["server_error"] = next(self.url(errors.host, i) for i in range(errors.pages)
                                   if _unit(self.seed, self.url(errors.host, i), "error") < errors.errors)
        clean = lambda p: not (p.errors or p.throttle)  # noqa: E731
        for trap, url in (("calendar", "/calendar/2026/03/"), ("session", "/shop/s/0123456789/item/1"),
                          ("deep", "/deep/nova/vega/"), ("facets", "/catalog?color=red&page=7")):
            out[f"trap_{trap}"] = f"http://{first(lambda p: trap in p.traps and clean(p)).host}{url}"
        files = first(lambda p: p.files and clean(p))
        for name, kind in FILES.items():
            out[kind] = f"http://{files.host}/files/{name}"
        redirects = first(lambda p: p.redirects and clean(p)).host
        out.update(redirect=f"http://{plain.host}/old/2", redirect_loop=f"http://{redirects}/loop/a",
                   redirect_chain=f"http://{redirects}/chain/0", redirect_cross_host=f"http://{redirects}/away/3",
                   not_found=f"http://{plain.host}/news/1-missing-page.html",
                   unknown_host=f"http://h{len(self.profiles) + 7:04d}.{DOMAIN}/")
        return out


#: /files/ names -> the kind of answer
FILES = {"huge.html": "huge", "huge-stream.html": "huge_stream", "big.html": "big", "bomb.html": "gzip_bomb",
         "big-gzip.html": "big_gzip", "bad-gzip.html": "bad_gzip"}


def _page_index(path: str) -> int | None:
    m = PAGE_RE.match(path)
    return int(m[1]) if m else None


def _home_plan(profile: HostProfile) -> PagePlan:
    theme = TOPIC if profile.topic_share >= 0.5 else profile.theme
    return PagePlan(0, "/", theme, f"{V.THEMES[theme]['label']} at {profile.host}")


# --- answers ---------------------------------------------------------------------------------------

def _with_latency(reply: Reply, latency: float) -> Reply:
    if not latency:
        return reply
    return Reply(reply.status, reply.headers, reply.body, reply.kind, latency, reply.stream, reply.length,
                 reply.with_length, reply.retry_after)


def _text(status: int, text: str, kind: str) -> Reply:
    return Reply(status, (("Content-Type", "text/plain; charset=utf-8"),), text.encode("utf-8"), kind=kind)


def _html(status: int, html: str, kind: str) -> Reply:
    return Reply(status, (("Content-Type", "text/html; charset=utf-8"),), html.encode("utf-8"), kind=kind)


def _redirect(status: int, location: str, kind: str) -> Reply:
    body = f'<html><body>Moved to <a href="{escape(location)}">here</a></body></html>'.encode()
    return Reply(status, (("Location", location), ("Content-Type", "text/html; charset=utf-8")), body, kind=kind)


def _throttled(profile: HostProfile, n: int) -> Reply:
    value = {"seconds": str(1 + n % 3), "date": email.utils.formatdate(math.ceil(time.time()) + 2, usegmt=True),
             "none": None}[profile.retry_after]
    headers = [("Content-Type", "text/plain")] + ([("Retry-After", value)] if value else [])
    return Reply(429, tuple(headers), b"Too Many Requests\n", kind="throttled", retry_after=value)


def _server_error(seed: int, url: str) -> Reply:
    status = (500, 502, 503, 504)[int(_unit(seed, url, "status") * 4)]
    retry = "1" if status == 503 and _unit(seed, url, "retry") < 0.5 else None
    headers = [("Content-Type", "text/html")] + ([("Retry-After", retry)] if retry else [])
    return Reply(status, tuple(headers), b"<html><body>Server error</body></html>", kind="server_error",
                 retry_after=retry)


def robots_text(profile: HostProfile) -> str:
    if profile.robots == "allow":
        return "User-agent: *\nDisallow:\n"
    if profile.robots == "crawl_delay":
        return f"User-agent: *\nCrawl-delay: {profile.crawl_delay}\nDisallow: /private/\n"
    # "disallow", and the target of "redirect"
    lines = ["# soak web", "User-agent: *", "Disallow: /private/", "Disallow: /search"]
    if profile.index % 3 == 0:  # a group of our own, which replaces the * group for us
        lines += ["", "User-agent: focuscrawl", "Disallow: /private/", "Disallow: /calendar/", "Disallow: /search"]
    return "\n".join(lines) + "\n"


def garbage_robots(profile: HostProfile) -> bytes:
    """Three sorts of garbage: binary bytes, an HTML page, odd syntax (BOM, CRLF, case, unknown
    lines) that still disallows /private/."""
    kind = profile.index % 3
    if kind == 0:
        return bytes(_rng("garbage", profile.host).randrange(256) for _ in range(700))
    if kind == 1:
        return b"<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>Welcome!</h1></body></html>\n"
    return ("\ufeffuser-AGENT: *\r\nnoindex: /x\r\n\r\nDISALLOW: /private/\r\nfoo bar baz\r\n"
            "Sitemap: not a url\r\n").encode("utf-8")


# --- text and HTML -----------------------------------------------------------------------------------

_theme_words = functools.lru_cache(maxsize=None)(V.theme_words)


def paragraph(rng: random.Random, theme: str, accented: list[str]) -> str:
    """Sentences of filler with the theme's words at a page's density, and a few accented names."""
    words_of = _theme_words(theme)
    topic_words = _theme_words(TOPIC)
    sentences = []
    for _ in range(rng.randint(3, 5)):
        words = []
        for _ in range(rng.randint(8, 16)):
            r = rng.random()
            if r < 0.3:
                words.append(rng.choice(words_of))
            elif r < 0.33:
                words.append(rng.choice(topic_words))  # noise: the topic's words everywhere, rarely
            elif r < 0.36:
                words.append(rng.choice(accented))
            else:
                words.append(rng.choice(V.FILLER))
        sentence = " ".join(words)
        sentences.append(sentence[0].upper() + sentence[1:] + ".")
    return " ".join(sentences)


def render(title: str, host: str, paragraphs: list[str], links: list[tuple[str, str]],
           meta_charset: bool = True) -> str:
    e = escape
    nav = "".join(f'<li><a href="{e(h)}">{e(a)}</a></li>' for h, a in links)
    head = '<meta charset="utf-8">' if meta_charset else ""
    return (f"<!DOCTYPE html><html><head>{head}<title>{e(title)}</title></head><body>"
            f"<header><p>{e(host)}</p></header><main><h1>{e(title)}</h1>"
            + "".join(f"<p>{e(p)} \u201cquoted\u201d \u2014 caf\u00e9</p>" for p in paragraphs)
            + f"</main><aside><ul>{nav}</ul></aside><footer>\u00a9 2026 {e(host)}</footer></body></html>")


def encode(html: str, charset: str) -> tuple[bytes, str]:
    """(bytes, Content-Type) of a page in its host's charset, lies included."""
    if charset == "latin1_says_utf8":
        return html.encode("utf-8"), "text/html; charset=ISO-8859-1"
    if charset == "utf8_says_cp1252":
        return html.encode("cp1252", errors="xmlcharrefreplace"), "text/html; charset=utf-8"
    if charset == "bogus_name":
        name = BOGUS_CHARSETS[zlib.crc32(html[:64].encode()) % len(BOGUS_CHARSETS)]
        return html.encode("utf-8"), f"text/html; charset={name}"
    return html.encode("utf-8"), "text/html; charset=utf-8"


# --- big bodies: built once, or streamed ----------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def varied_block() -> bytes:
    """VARIED_BYTES of paragraphs of different words (every 5-word shingle almost new): the part of a
    big page the crawler reads, as costly to fingerprint as a page can be."""
    rng = random.Random(1)
    vocab = sorted({w for t in V.THEMES for w in V.theme_words(t)} | set(V.FILLER))
    out, size = [], 0
    while size < VARIED_BYTES:
        p = "<p>" + " ".join(rng.choices(vocab, k=80)) + "</p>\n"
        out.append(p)
        size += len(p)
    return "".join(out).encode()[:VARIED_BYTES]


def huge_body(head: bytes, size: int) -> Iterator[bytes]:
    """``size`` bytes: ``head``, the varied block, then a repeated paragraph, then closing tags."""
    tail = b"</body></html>\n"
    filler = (b"<p>" + b"padding " * 1000 + b"</p>\n") * 8
    sent = 0
    for part in (head, varied_block()):
        part = part[: size - len(tail) - sent]
        yield part
        sent += len(part)
    while sent < size - len(tail):
        part = filler[: size - len(tail) - sent]
        yield part
        sent += len(part)
    yield tail


@functools.lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """BOMB_BYTES of zeros, gzipped (~250 KB on the wire)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(MIB)
    return b"".join([comp.compress(zeros) for _ in range(BOMB_BYTES // MIB)] + [comp.flush()])


@functools.lru_cache(maxsize=1)
def big_gzip() -> bytes:
    """A BIG_GZIP_BYTES page, gzipped: under DOWNLOAD_MAXSIZE once decompressed."""
    return gzip.compress(b"".join(huge_body(b"<html><body><h1>Big and gzipped</h1>", BIG_GZIP_BYTES)),
                         compresslevel=6, mtime=0)
