"""The host catalogue of the demo web: each site's name, its sections and its role.

Hand-written rather than generated so the web has a known shape: some hosts centre on the
demo topic, some carry it in one section among others, some never mention it, and a few
carry the quirks a careful crawler must cope with (robots.txt, Crawl-delay, windows-1252).
The JavaScript host is not in the catalogue: it is made for the topic asked for (``javascript_profile``).
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.demo import vocabulary as V


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
    javascript: bool = False  # every page is an app shell a script fills in (see ``javascript``)


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


#: The JavaScript host of a topic: (host, site name, tagline); a topic not listed gets a plain one.
_APPS = {"astronomy": ("app.starfield.test", "Starfield", "The night sky, live in your browser")}


def javascript_profile(topic: str) -> HostProfile:
    """The app host of ``topic``: two of the topic's sections and one off-topic, crawled, not
    trained on (its shells would teach the model that a bare page is on topic)."""
    label = V.THEMES[topic]["label"]
    host, name, tagline = _APPS.get(
        topic, (f"app.{topic}-explorer.test", f"{label} Explorer", f"{label}, live in your browser"))
    n = len(V.THEMES[topic]["sections"])
    other = "technology" if topic != "technology" else "travel"
    sections = (_sec(topic, 1, 4), _sec(topic, 3 if n > 3 else 0, 3), _sec(other, 2, 2))
    return HostProfile(host, name, tagline, sections, train=False, javascript=True)
