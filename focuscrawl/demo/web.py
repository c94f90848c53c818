"""A generated demo web: several hosts, one clear topic, and the untidiness of real sites.

Why it looks the way it does: a focused crawler should beat breadth-first search here, so
on-topic pages cluster under topical hub pages that link to each other across hosts, while
large off-topic sections link mostly among themselves. Anchor texts and URL paths carry topic
words on topical links, with noise both ways. It also holds what a polite, careful crawler must
handle: robots.txt disallows (with relevant-looking pages behind them), a Crawl-delay, 404s,
301s, exact and near duplicates, and a host serving windows-1252.

``generate_web`` is pure and deterministic for a seed; nothing here imports Scrapy.
"""

from __future__ import annotations

import io
import math
import random
import re
import uuid
from collections import deque
from dataclasses import dataclass, field
from email.utils import format_datetime
from datetime import datetime, timezone
from html import escape
from pathlib import Path
from typing import Iterable
from urllib.parse import urljoin, urlsplit

from protego import Protego

from focuscrawl import BOT_NAME
from focuscrawl.parsing import parse_html
from focuscrawl.demo import vocabulary as V

Record = tuple[int, list[tuple[str, str]], bytes]

#: The date every response claims to be served on: fixed, so a seed gives byte-identical pages.
SERVED_AT = datetime(2026, 3, 14, 12, 0, 0, tzinfo=timezone.utc)
PER_HUB_PAGE = 10  # articles listed per hub page before it paginates


# --- the host catalogue -------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    theme: str
    path: str  # "/science/astronomy/"; its hub is served at that URL
    name: str
    weight: int
    neutral_paths: bool = False  # articles live at /articles/YYYY/MM/story-N.html


@dataclass(frozen=True)
class HostProfile:
    host: str
    site_name: str
    tagline: str
    sections: tuple[Section, ...]
    train: bool  # whether the topic model is trained on this host (else it is crawled)
    private: bool = False  # robots.txt disallows /private/, with topical pages behind it
    crawl_delay: int | None = None
    charset: str = "utf-8"
    header_charset: bool = True  # False: the charset is only in <meta>


def _sec(theme: str, index: int, weight: int, neutral: bool = False) -> Section:
    path, name = V.THEMES[theme]["sections"][index]
    return Section(theme, path, name, weight, neutral)


HOSTS: tuple[HostProfile, ...] = (
    HostProfile(
        "www.stargazers-club.test", "Stargazers Club", "An amateur astronomy society since 1987",
        (_sec("astronomy", 4, 4), _sec("astronomy", 1, 3), _sec("politics", 0, 2),
         _sec("travel", 2, 1), _sec("cooking", 0, 1)),
        train=True, private=True,
    ),
    HostProfile(
        "news.daily-digest.test", "The Daily Digest", "News, sport and money, every day",
        (_sec("politics", 0, 4), _sec("sports", 0, 3), _sec("finance", 0, 3),
         _sec("technology", 0, 2), _sec("astronomy", 0, 2, neutral=True), _sec("music", 0, 1)),
        train=True, header_charset=False,
    ),
    HostProfile(
        "www.cooking-corner.test", "Cooking Corner", "Home cooking for busy people",
        (_sec("cooking", 0, 5), _sec("cooking", 1, 3), _sec("cooking", 2, 2), _sec("gardening", 1, 2)),
        train=True,
    ),
    HostProfile(
        "www.skywatch-journal.test", "Skywatch Journal", "Telescopes, planets and the night sky",
        (_sec("astronomy", 0, 4), _sec("astronomy", 2, 3), _sec("astronomy", 3, 2),
         _sec("technology", 2, 2), _sec("travel", 1, 1)),
        train=False, private=True,
    ),
    HostProfile(
        "www.city-sports.test", "City Sports", "Results, fixtures and the local league",
        (_sec("sports", 0, 4), _sec("sports", 1, 3), _sec("sports", 2, 2), _sec("finance", 2, 1),
         _sec("music", 1, 1)),
        train=False,
    ),
    HostProfile(
        "www.science-weekly.test", "Science Weekly", "Science news for the curious",
        (_sec("astronomy", 3, 3), _sec("astronomy", 0, 2), _sec("technology", 0, 3),
         _sec("gardening", 0, 2)),
        train=False, private=True, crawl_delay=1,
    ),
    HostProfile(
        "www.travel-atlas.test", "Travel Atlas", "Trips, places and stargazing holidays",
        (_sec("travel", 0, 4), _sec("travel", 1, 3),
         Section("astronomy", "/stargazing-trips/", "Stargazing Trips", 2), _sec("cooking", 2, 1)),
        train=False,
    ),
    HostProfile(
        "www.observatoire-amateur.test", "L'Observatoire Amateur",
        "Astronomie d'amateur \u2014 notes from Besançon and Zürich",
        (_sec("astronomy", 4, 4), _sec("astronomy", 1, 2), _sec("travel", 0, 1), _sec("cooking", 0, 1),
         _sec("music", 0, 1)),
        train=False, charset="windows-1252",
    ),
    HostProfile(
        "www.garden-notes.test", "Garden Notes", "A gardener's diary",
        (_sec("gardening", 0, 5), _sec("gardening", 1, 3), _sec("cooking", 1, 1)), train=True,
    ),
    HostProfile(
        "www.tech-review.test", "Tech Review", "Gadgets, apps and the web",
        (_sec("technology", 0, 4), _sec("technology", 1, 3), _sec("astronomy", 3, 1)), train=False,
    ),
    HostProfile(
        "www.money-matters.test", "Money Matters", "Markets and household money",
        (_sec("finance", 0, 4), _sec("finance", 1, 3), _sec("finance", 2, 2)), train=True,
    ),
    HostProfile(
        "www.music-scene.test", "Music Scene", "Gigs, albums and tours",
        (_sec("music", 0, 4), _sec("music", 1, 3), _sec("travel", 2, 1)), train=False,
    ),
)


# --- the demo web -------------------------------------------------------------------------------


@dataclass
class DemoWeb:
    """A recorded web plus its ground truth.

    ``records`` is exactly what ``focuscrawl.replay.RecordedWeb.from_records`` takes; ``labels``
    covers every HTML page answered with 200 (``topic`` or ``"other"``).
    """

    records: dict[str, Record]
    labels: dict[str, str]
    robots: dict[str, str]
    seeds: list[str]
    train_hosts: list[str]
    crawl_hosts: list[str]
    disallowed: list[str] = field(default_factory=list)
    topic: str = "astronomy"
    missing: list[str] = field(default_factory=list)  # deliberate 404s some page links to
    redirects: dict[str, str] = field(default_factory=dict)  # 301 source -> target
    duplicates: list[tuple[str, str, str]] = field(default_factory=list)  # (copy, original, kind)
    _link_cache: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)

    # -- ground truth --------------------------------------------------------------------------

    def relevant_urls(self, hosts: Iterable[str] | None = None) -> set[str]:
        """URLs labelled with the topic, optionally only on ``hosts``."""
        wanted = set(hosts) if hosts is not None else None
        return {
            url for url, label in self.labels.items()
            if label == self.topic and (wanted is None or urlsplit(url).netloc in wanted)
        }

    def links(self, url: str) -> list[str]:
        """Absolute, fragment-free targets of the ``<a href>`` links of a recorded HTML page."""
        if url not in self._link_cache:
            record = self.records.get(url)
            if record is None or record[0] != 200 or not _is_html(record[1]):
                self._link_cache[url] = []
            else:
                page = parse_html(record[2], url, content_type=_header(record[1], "Content-Type"))  # as crawled
                self._link_cache[url] = [link.url for link in page.links]
        return list(self._link_cache[url])

    def allowed(self, url: str) -> bool:
        """Whether the host's robots.txt lets focuscrawl fetch ``url`` (no robots.txt: allowed)."""
        host = urlsplit(url).netloc
        text = self.robots.get(host)
        if text is None:
            return True
        return _robots_parser(text).can_fetch(url, BOT_NAME)

    def reachable_relevant(self, seeds: Iterable[str]) -> set[str]:
        """The relevant pages a crawl from ``seeds`` can possibly fetch.

        Breadth-first over the link graph: robots-disallowed URLs are never fetched (so their
        links are never seen), redirects are followed, 404s and unrecorded URLs end a path.
        """
        seen: set[str] = set()
        queue: deque[str] = deque()
        for seed in seeds:
            if seed not in seen:
                seen.add(seed)
                queue.append(seed)
        fetched: set[str] = set()
        while queue:
            url = queue.popleft()
            if not self.allowed(url):
                continue
            record = self.records.get(url)
            if record is None:
                continue
            status, headers, _ = record
            if 300 <= status < 400:
                targets = [urljoin(url, _header(headers, "Location") or "")]
            elif status == 200:
                fetched.add(url)
                targets = self.links(url)
            else:
                continue
            for target in targets:
                if target not in seen:
                    seen.add(target)
                    queue.append(target)
        return {url for url in fetched if self.labels.get(url) == self.topic}

    # -- output ----------------------------------------------------------------------------------

    def write_warc(self, path: str | Path) -> Path:
        """Every record (robots.txt included) as a gzipped WARC/1.0 of response records."""
        from warcio.statusandheaders import StatusAndHeaders
        from warcio.warcwriter import WARCWriter

        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        warc_date = SERVED_AT.strftime("%Y-%m-%dT%H:%M:%SZ")
        with open(path, "wb") as fh:
            writer = WARCWriter(fh, gzip=True, warc_version="WARC/1.0")
            for url, (status, headers, body) in self.records.items():
                http_headers = StatusAndHeaders(
                    f"{status} {_REASONS.get(status, 'OK')}", list(headers), protocol="HTTP/1.1"
                )
                record_id = f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, url)}>"
                record = writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), http_headers=http_headers,
                    warc_headers_dict={"WARC-Date": warc_date, "WARC-Record-ID": record_id},
                )
                writer.write_record(record)
        return path

    def write_labels(self, path: str | Path) -> Path:
        """A TSV with a header ``url<TAB>label<TAB>host``, one line per labelled page."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["url\tlabel\thost"]
        lines += [f"{url}\t{label}\t{urlsplit(url).netloc}" for url, label in self.labels.items()]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path


_REASONS = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}
_ROBOTS_CACHE: dict[str, Protego] = {}


def _robots_parser(text: str) -> Protego:
    parser = _ROBOTS_CACHE.get(text)
    if parser is None:
        parser = _ROBOTS_CACHE[text] = Protego.parse(text)
    return parser


def _header(headers: list[tuple[str, str]], name: str) -> str | None:
    for key, value in headers:
        if key.lower() == name.lower():
            return value
    return None


def _is_html(headers: list[tuple[str, str]]) -> bool:
    return "html" in (_header(headers, "Content-Type") or "").lower()


_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_-]+)""", re.I)



@dataclass
class _Page:
    url: str
    host: str
    kind: str  # home | about | hub | article | private | print | syndicated
    theme: str | None
    title: str
    section: Section | None = None
    subtopics: tuple[str, ...] = ()
    date: str = ""
    author: str = ""
    paragraphs: list[str] = field(default_factory=list)
    # (url, anchor, where): where is nav | crumb | body | list | related | blogroll | footer | extra
    links: list[tuple[str, str, str]] = field(default_factory=list)
    topic_density: float = 0.3
    mention: float = 0.0  # share of words borrowed from the demo topic on an off-topic page


class _Builder:
    """Plans every host's pages, then links and renders them; one Random drives it all."""

    def __init__(self, seed, hosts: int, pages_per_host: int, topic: str):
        if topic not in V.THEMES:
            raise ValueError(f"unknown topic {topic!r}; choose one of {', '.join(sorted(V.THEMES))}")
        if not 1 <= hosts <= len(HOSTS):
            raise ValueError(f"hosts must be between 1 and {len(HOSTS)}")
        if pages_per_host < 12:
            raise ValueError("pages_per_host must be at least 12")
        self.rng = random.Random(f"focuscrawl-demo:{seed}")
        self.topic = topic
        self.profiles = HOSTS[:hosts]
        self.pages_per_host = pages_per_host
        self.pages: dict[str, _Page] = {}
        self.hubs: dict[str, dict[Section, list[str]]] = {}  # host -> section -> hub page URLs
        self.articles: dict[str, dict[Section, list[str]]] = {}
        self.home: dict[str, str] = {}
        self.missing: list[str] = []
        self.redirects: dict[str, str] = {}
        self.duplicates: list[tuple[str, str, str]] = []
        self.theme_words = {t: V.theme_words(t) for t in V.THEMES}

    # -- planning ------------------------------------------------------------------------------

    def plan(self) -> None:
        for profile in self.profiles:
            self._plan_host(profile)

    def _plan_host(self, p: HostProfile) -> None:
        rng, base = self.rng, f"http://{p.host}"
        self.home[p.host] = home = f"{base}/"
        self.pages[home] = _Page(home, p.host, "home", None, p.site_name)
        about = f"{base}/about.html"
        self.pages[about] = _Page(about, p.host, "about", None, f"About {p.site_name}")
        n_articles = max(3 * len(p.sections), self.pages_per_host - 2 - math.ceil(1.4 * len(p.sections)))
        counts = _apportion(n_articles, [s.weight for s in p.sections], minimum=3)
        self.hubs[p.host], self.articles[p.host] = {}, {}
        used_slugs: set[str] = set()
        for section, count in zip(p.sections, counts):
            n_hub_pages = math.ceil(count / PER_HUB_PAGE)
            hub_urls = [f"{base}{section.path}"] + [
                f"{base}{section.path}page-{k}.html" for k in range(2, n_hub_pages + 1)
            ]
            for k, url in enumerate(hub_urls, start=1):
                title = section.name if k == 1 else f"{section.name} \u2014 page {k}"
                self.pages[url] = _Page(url, p.host, "hub", section.theme, title, section,
                                        topic_density=rng.uniform(0.15, 0.25))
            self.hubs[p.host][section] = hub_urls
            urls = []
            for _ in range(count):
                slug = self._slug(section.theme, used_slugs)
                if section.neutral_paths:
                    url = f"{base}/articles/2026/{rng.randint(1, 3):02d}/story-{rng.randint(1000, 9999)}.html"
                    while url in self.pages:
                        url = url.replace(".html", "-1.html")
                else:
                    url = f"{base}{section.path}{slug}.html"
                self.pages[url] = self._article(url, p.host, "article", section, slug)
                urls.append(url)
            self.articles[p.host][section] = urls
        if p.private and self._topical_sections(p.host):
            for _ in range(3):
                slug = self._slug(self.topic, used_slugs)
                url = f"{base}/private/observing-logs/{slug}.html"
                self.pages[url] = self._article(url, p.host, "private", self._topical_sections(p.host)[0], slug)

    def _article(self, url: str, host: str, kind: str, section: Section, slug: str) -> _Page:
        rng, theme = self.rng, section.theme
        subtopics = tuple(rng.sample(sorted(V.THEMES[theme]["subtopics"]), k=rng.choice((1, 2))))
        words = slug.replace("-", " ").split()
        suffix = rng.choice(_TITLE_SUFFIXES)
        title = f"{' '.join(words).capitalize()}: {suffix}"
        return _Page(
            url, host, kind, theme, title, section, subtopics,
            date=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)} {rng.choice((2024, 2025, 2026))}",
            author=rng.choice(V.AUTHORS), topic_density=rng.uniform(0.14, 0.36),
            # a few off-topic pages talk about the topic in passing ("a stargazing weekend")
            mention=rng.uniform(0.06, 0.12) if theme != self.topic and rng.random() < 0.08 else 0.0,
        )

    def _slug(self, theme: str, used: set[str]) -> str:
        rng = self.rng
        base = rng.choice(V.THEMES[theme]["slug_words"])
        slug = base
        while slug in used:
            extra = rng.choice(self.theme_words[theme])
            slug = f"{base}-{re.sub(r'[^a-z0-9]+', '-', extra.lower()).strip('-')}"
            if slug in used:
                slug = f"{slug}-{rng.randint(2, 99)}"
        used.add(slug)
        return slug

    def _topical_sections(self, host: str) -> list[Section]:
        return [s for s in self.hubs.get(host, {}) if s.theme == self.topic]

    # -- oddities: duplicates, redirects, 404s ---------------------------------------------------

    def add_oddities(self) -> None:
        rng = self.rng
        # one topical host the model trains on and one it crawls, so both sides meet each oddity
        topical_hosts = [p.host for p in self.profiles if self._topical_sections(p.host)]
        topical_hosts.sort(key=lambda h: not next(p.train for p in self.profiles if p.host == h))
        train_side = [h for h in topical_hosts if next(p.train for p in self.profiles if p.host == h)]
        crawl_side = [h for h in topical_hosts if h not in train_side]
        topical_hosts = train_side[:1] + crawl_side[:1] + train_side[1:] + crawl_side[1:]
        # exact duplicates: a printer-friendly copy with identical bytes
        for host in topical_hosts[:2]:
            original = self.articles[host][self._topical_sections(host)[0]][0]
            copy = original.replace(f"http://{host}/", f"http://{host}/print/", 1)
            self.pages[original].links.append((copy, "Print this article", "extra"))
            self.duplicates.append((copy, original, "exact"))
        # near duplicates: a syndicated copy on another host, date line changed
        for host in topical_hosts[:2]:
            # the copy lands on a crawled host, so the crawl meets it
            crawled = [p.host for p in self.profiles if not p.train and p.host != host]
            others = crawled or [h for h in self.home if h != host]
            if not others:
                break
            partner = rng.choice(others)
            original = self.articles[host][self._topical_sections(host)[0]][1]
            src = self.pages[original]
            copy = f"http://{partner}/syndicated/{src.url.rsplit('/', 1)[1]}"
            page = _Page(copy, partner, "syndicated", src.theme, src.title, src.section, src.subtopics,
                         date=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)} 2026", author=src.author,
                         topic_density=src.topic_density)
            page.paragraphs = src.paragraphs  # filled by write(); shared on purpose
            self.pages[copy] = page
            self.pages[self.home[partner]].links.append((copy, f"From our partners: {src.title}", "extra"))
            self.duplicates.append((copy, original, "near"))
        # 301s: an old archive URL that moved, linked from the home page
        for host in topical_hosts[:2]:
            target = self.articles[host][self._topical_sections(host)[0]][2]
            old = f"http://{host}/archive/{target.rsplit('/', 1)[1]}"
            self.redirects[old] = target
            self.pages[self.home[host]].links.append((old, f"From the archive: {self.pages[target].title}", "extra"))
        # 404s: a link to a page that was never published, on every other host
        for i, profile in enumerate(self.profiles):
            if i % 2:
                continue
            section = profile.sections[0]
            source = self.pages[self.articles[profile.host][section][-1]]
            slug = rng.choice(V.THEMES[section.theme]["slug_words"])
            gone = f"http://{profile.host}{section.path}{slug}-draft.html"
            if gone in self.pages:
                continue
            self.missing.append(gone)
            source.links.append((gone, slug.replace("-", " ").capitalize(), "related"))

    # -- linking ---------------------------------------------------------------------------------

    def link(self) -> None:
        rng = self.rng
        for profile in self.profiles:
            host = profile.host
            nav = [(self.home[host], "Home", "nav")] + [
                (urls[0], s.name, "nav") for s, urls in self.hubs[host].items()
            ]
            footer = [(f"http://{host}/about.html", "About us", "footer"), (self.home[host], "Home", "footer")]
            # home: nav, featured articles from every section, partner sites
            home = self.pages[self.home[host]]
            featured = []
            for section, urls in self.articles[host].items():
                for url in rng.sample(urls, k=min(2, len(urls))):
                    featured.append((url, self._anchor(url), "list"))
            partners = [(self.home[h], self._site_name(h), "blogroll")
                        for h in rng.sample([h for h in self.home if h != host], k=min(3, len(self.home) - 1))]
            home.links = nav + featured + home.links + partners + footer
            self.pages[f"http://{host}/about.html"].links = nav + footer
            for section, hub_urls in self.hubs[host].items():
                self._link_section(host, section, hub_urls, nav, footer)
            for url in [u for u, p in self.pages.items() if p.host == host and p.kind == "syndicated"]:
                page = self.pages[url]
                page.links = nav + [(self.home[host], "Home", "crumb")] + footer

    def _link_section(self, host, section, hub_urls, nav, footer) -> None:
        rng = self.rng
        articles = self.articles[host][section]
        topical = section.theme == self.topic
        for k, hub_url in enumerate(hub_urls):
            hub = self.pages[hub_url]
            chunk = articles[k * PER_HUB_PAGE:(k + 1) * PER_HUB_PAGE]
            links = list(nav) + [(u, self._anchor(u), "list") for u in chunk]
            if k + 1 < len(hub_urls):
                links.append((hub_urls[k + 1], "Older articles", "list"))
            if k > 0:
                links.append((hub_urls[k - 1], "Newer articles", "list"))
            if k == 0:
                if topical:
                    links += [(u, self._anchor(u), "list") for u in self._private_pages(host)]
                links += self._blogroll(host, section)
            hub.links = links + footer
        for url in articles:
            page = self.pages[url]
            extra = page.links  # print links, 404s added earlier
            same = [u for u in articles if u != url]
            related = rng.sample(same, k=min(len(same), rng.randint(3, 5)))
            if rng.random() < 0.25:  # one link into another section of the same host
                other = [s for s in self.articles[host] if s != section]
                if other:
                    related.append(rng.choice(self.articles[host][rng.choice(other)]))
            body_links, aside = related[:2], related[2:]
            cross = []
            if rng.random() < (0.3 if topical else 0.12):
                cross.append(self._random_article(section.theme, exclude_host=host))
            if rng.random() < 0.05:
                cross.append(self._random_article(rng.choice(sorted(V.THEMES)), exclude_host=host))
            page.links = (
                list(nav) + [(hub_urls[0], section.name, "crumb")]
                + [(u, self._anchor(u), "body") for u in body_links]
                + [(u, self._anchor(u), "related") for u in aside + [c for c in cross if c]]
                + extra + footer
            )
        for url in self._private_pages(host) if topical and section == self._topical_sections(host)[0] else []:
            page = self.pages[url]
            same = [u for u in self._private_pages(host) if u != url]
            page.links = list(nav) + [(hub_urls[0], section.name, "crumb")] + [
                (u, self._anchor(u), "related") for u in same
            ] + footer

    def _private_pages(self, host: str) -> list[str]:
        return [u for u, p in self.pages.items() if p.host == host and p.kind == "private"]

    def _blogroll(self, host: str, section: Section) -> list[tuple[str, str, str]]:
        """Cross-host links from a section's first hub page: mostly to same-theme hubs."""
        rng = self.rng
        same_theme = [
            (urls[0], f"{s.name} at {self._site_name(h)}", "blogroll")
            for h, sections in self.hubs.items() if h != host
            for s, urls in sections.items() if s.theme == section.theme
        ]
        links = rng.sample(same_theme, k=min(3, len(same_theme)))
        if rng.random() < 0.3:  # noise: a link into some other theme's hub
            other = [(urls[0], f"{s.name} at {self._site_name(h)}", "blogroll")
                     for h, sections in self.hubs.items() if h != host
                     for s, urls in sections.items() if s.theme != section.theme]
            if other:
                links.append(rng.choice(other))
        return links

    def _random_article(self, theme: str, exclude_host: str) -> str | None:
        pool = [u for h, sections in self.articles.items() if h != exclude_host
                for s, urls in sections.items() if s.theme == theme for u in urls]
        return self.rng.choice(pool) if pool else None

    def _anchor(self, url: str) -> str:
        if self.rng.random() < 0.15:
            return self.rng.choice(V.NEUTRAL_ANCHORS)
        return self.pages[url].title

    def _site_name(self, host: str) -> str:
        return next(p.site_name for p in self.profiles if p.host == host)

    # -- text --------------------------------------------------------------------------------------

    def write_text(self) -> None:
        for page in self.pages.values():
            if page.kind == "syndicated":
                continue  # shares the original's paragraphs
            n = {"home": 2, "about": 2, "hub": 2}.get(page.kind, self.rng.randint(4, 7))
            page.paragraphs = [self._paragraph(page) for _ in range(n)]
        for copy, original, kind in self.duplicates:
            if kind == "near":
                self.pages[copy].paragraphs = self.pages[original].paragraphs

    def _paragraph(self, page: _Page) -> str:
        rng = self.rng
        if page.theme is None:
            theme_pool: list[str] = []
        elif page.subtopics:
            theme_pool = [w for s in page.subtopics for w in V.THEMES[page.theme]["subtopics"][s].split()]
        else:
            theme_pool = self.theme_words[page.theme]
        accented = V.ACCENTED_1252 if self._charset(page.host) == "windows-1252" else V.ACCENTED
        noise_themes = sorted(V.THEMES)
        sentences = []
        for _ in range(rng.randint(3, 5)):
            words = []
            for _ in range(rng.randint(8, 16)):
                r = rng.random()
                if rng.random() < page.mention:
                    words.append(rng.choice(self.theme_words[self.topic]))
                elif theme_pool and r < page.topic_density:
                    pool = theme_pool if rng.random() < 0.8 else self.theme_words[page.theme]
                    words.append(rng.choice(pool))
                elif r < page.topic_density + 0.04 or (not theme_pool and r < 0.25):
                    words.append(rng.choice(self.theme_words[rng.choice(noise_themes)]))
                elif r < page.topic_density + 0.06:
                    words.append(rng.choice(accented))
                else:
                    words.append(rng.choice(V.FILLER))
            sentence = " ".join(words)
            sentences.append(sentence[0].upper() + sentence[1:] + ".")
        return " ".join(sentences)

    def _charset(self, host: str) -> str:
        return next(p.charset for p in self.profiles if p.host == host)

    # -- output ------------------------------------------------------------------------------------

    def records(self) -> tuple[dict[str, Record], dict[str, str], dict[str, str]]:
        records: dict[str, Record] = {}
        robots: dict[str, str] = {}
        for p in self.profiles:
            robots[p.host] = text = _robots_txt(p)
            records[f"http://{p.host}/robots.txt"] = _response(200, "text/plain", text.encode("ascii"))
        labels: dict[str, str] = {}
        copies = {copy: original for copy, original, kind in self.duplicates if kind == "exact"}
        for url, page in self.pages.items():
            profile = next(p for p in self.profiles if p.host == page.host)
            body = self._render(page, profile)
            ctype = f"text/html; charset={profile.charset}" if profile.header_charset else "text/html"
            records[url] = _response(200, ctype, body)
            labels[url] = self.topic if page.theme == self.topic and page.kind not in ("home", "about") else "other"
        for copy, original in copies.items():
            records[copy] = records[original]
            labels[copy] = labels[original]
        for old, target in self.redirects.items():
            body = f'<html><body>Moved to <a href="{escape(target)}">{escape(target)}</a></body></html>'
            records[old] = _response(301, "text/html; charset=utf-8", body.encode(), [("Location", target)])
        for url in self.missing:
            records[url] = _response(404, "text/html; charset=utf-8", b"<html><body><h1>Not Found</h1></body></html>")
        return records, labels, robots

    def _render(self, page: _Page, profile: HostProfile) -> bytes:
        e = escape
        cp1252 = profile.charset == "windows-1252"
        dash = "\u2014" if cp1252 else "-"

        def a(link):
            url, anchor, _ = link
            href = urlsplit(url).path if urlsplit(url).netloc == page.host else url
            return f'<a href="{e(href)}">{e(anchor)}</a>'

        by = {w: [l for l in page.links if l[2] == w] for w in
              ("nav", "crumb", "body", "list", "related", "blogroll", "footer", "extra")}
        out = [
            "<!DOCTYPE html>", '<html lang="en">', "<head>", f'<meta charset="{profile.charset}">',
            f"<title>{e(page.title)} | {e(profile.site_name)}</title>",
            f'<meta name="description" content="{e(profile.tagline)}">', "</head>", "<body>",
            f'<header><div class="logo">{e(profile.site_name)}</div><p class="tagline">{e(profile.tagline)}</p>',
            "<nav><ul>" + "".join(f"<li>{a(l)}</li>" for l in by["nav"]) + "</ul></nav></header>",
            "<main><article>",
        ]
        if by["crumb"]:
            out.append('<p class="breadcrumb">' + " \u203a ".join(a(l) for l in by["crumb"]) + "</p>")
        out.append(f"<h1>{e(page.title)}</h1>")
        if page.date:
            out.append(f'<p class="byline">By {e(page.author)} {dash} <time>{e(page.date)}</time></p>')
        body_links = list(by["body"])
        for i, para in enumerate(page.paragraphs):
            tail = ""
            if body_links and i % 2 == 1:
                tail = f" Related reading: {a(body_links.pop(0))}."
            out.append(f"<p>{e(para)}{tail}</p>")
        for link in body_links:
            out.append(f"<p>See also {a(link)}.</p>")
        if cp1252 and page.kind in ("article", "private"):
            out.append("<p>\u201cClear skies\u201d \u2014 entry 5 \u20ac at the café, Besançon.</p>")
        if by["list"]:
            out.append('<ul class="articles">' + "".join(f"<li>{a(l)}</li>" for l in by["list"]) + "</ul>")
        if by["extra"]:
            out.append('<ul class="more">' + "".join(f"<li>{a(l)}</li>" for l in by["extra"]) + "</ul>")
        out.append("</article></main>")
        if by["related"]:
            out.append('<aside class="related"><h2>Related</h2><ul>'
                       + "".join(f"<li>{a(l)}</li>" for l in by["related"]) + "</ul></aside>")
        if by["blogroll"]:
            out.append('<aside class="blogroll"><h2>Elsewhere on the web</h2><ul>'
                       + "".join(f"<li>{a(l)}</li>" for l in by["blogroll"]) + "</ul></aside>")
        out.append(f"<footer><p>\u00a9 2026 {e(profile.site_name)}. All rights reserved. "
                   + " \u00b7 ".join(a(l) for l in by["footer"]) + "</p></footer>")
        out += ["</body>", "</html>", ""]
        return "\n".join(out).encode(profile.charset, errors="xmlcharrefreplace")


_TITLE_SUFFIXES = [
    "what to see this week", "a beginner's guide", "notes from the weekend", "five things to know",
    "our readers' questions", "the complete guide", "a closer look", "tips and tricks",
    "what we learned", "the story so far",
]


def _apportion(total: int, weights: list[int], minimum: int) -> list[int]:
    """Split ``total`` by ``weights`` (largest remainder), each part at least ``minimum``."""
    spare = total - minimum * len(weights)
    shares = [spare * w / sum(weights) for w in weights]
    counts = [minimum + int(s) for s in shares]
    order = sorted(range(len(weights)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _response(status: int, ctype: str, body: bytes, extra: list[tuple[str, str]] | None = None) -> Record:
    headers = [("Content-Type", ctype), ("Content-Length", str(len(body))),
               ("Date", format_datetime(SERVED_AT, usegmt=True)), ("Server", "focuscrawl-demo/1.0")]
    return status, headers + list(extra or []), body


def _robots_txt(p: HostProfile) -> str:
    lines = [f"# robots.txt for {p.host}", "User-agent: *"]
    lines.append("Disallow: /private/" if p.private else "Disallow:")
    if p.crawl_delay:
        lines.append(f"Crawl-delay: {p.crawl_delay}")
    lines.append("")
    return "\n".join(lines)


def generate_web(seed=0, hosts: int = 8, pages_per_host: int = 60, topic: str = "astronomy") -> DemoWeb:
    """Generate the demo web; the same arguments always give the same web."""
    b = _Builder(seed, hosts, pages_per_host, topic)
    b.plan()
    b.add_oddities()
    b.link()
    b.write_text()
    records, labels, robots = b.records()
    chosen = [p for p in b.profiles]
    train = [p.host for p in chosen if p.train]
    crawl = [p.host for p in chosen if not p.train]
    if not train:  # tiny webs: keep both roles filled
        train, crawl = crawl[:1], crawl[1:]
    if not crawl:
        train, crawl = train[:-1], train[-1:]
    web = DemoWeb(
        records=records, labels=labels, robots=robots,
        seeds=[f"http://{h}/" for h in crawl], train_hosts=train, crawl_hosts=crawl, topic=topic,
        missing=list(b.missing), redirects=dict(b.redirects), duplicates=list(b.duplicates),
    )
    web.disallowed = [url for url in records if url in labels and not web.allowed(url)]
    return web
