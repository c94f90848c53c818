"""The state of one demo web while it is built: its hosts, its pages and one Random.

Each step of ``generate_web`` (pages, oddities, links, text) reads and extends one ``SitePlan``
and draws from its Random in turn. That fixed order is what makes a seed give the same web
byte for byte, so a step must never draw from the Random out of turn or from another Random.
The optional parts added afterwards (the JavaScript host, the documents) each switch to a Random
of their own (``use_random``), so the web is the same whether or not they are added.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.hosts import HOSTS, HostProfile, Section

PER_HUB_PAGE = 10  # articles listed per hub page before it paginates


@dataclass
class Page:
    url: str
    host: str
    kind: str  # home | about | hub | article | private | print | syndicated | document (a PDF)
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
    data: str = ""  # a JavaScript host's page: its data is fetched ("api") or in the page ("embedded")


class SitePlan:
    """Every planned page by URL, how each host's pages are organised, and the oddities added."""

    def __init__(self, seed, hosts: int, pages_per_host: int, topic: str):
        if topic not in V.THEMES:
            raise ValueError(f"unknown topic {topic!r}; choose one of {', '.join(sorted(V.THEMES))}")
        if not 1 <= hosts <= len(HOSTS):
            raise ValueError(f"hosts must be between 1 and {len(HOSTS)}")
        if pages_per_host < 12:
            raise ValueError("pages_per_host must be at least 12")
        self.seed = seed
        self.rng = random.Random(f"focuscrawl-demo:{seed}")
        self.topic = topic
        self.profiles = HOSTS[:hosts]
        self.pages_per_host = pages_per_host
        self.pages: dict[str, Page] = {}
        self.hubs: dict[str, dict[Section, list[str]]] = {}  # host -> section -> hub page URLs
        self.articles: dict[str, dict[Section, list[str]]] = {}
        self.home: dict[str, str] = {}
        self.about: dict[str, str] = {}
        self.missing: list[str] = []
        self.redirects: dict[str, str] = {}
        self.duplicates: list[tuple[str, str, str]] = []
        self.theme_words = {t: V.theme_words(t) for t in V.THEMES}

    def use_random(self, part: str) -> None:
        """Draw from here on from ``part``'s own Random (seeded from the seed): what an optional
        part draws then never shifts the draws of the web before it, nor of another part."""
        self.rng = random.Random(f"focuscrawl-demo:{self.seed}:{part}")

    def profile(self, host: str) -> HostProfile:
        return next(p for p in self.profiles if p.host == host)

    def topical_sections(self, host: str) -> list[Section]:
        return [s for s in self.hubs.get(host, {}) if s.theme == self.topic]
