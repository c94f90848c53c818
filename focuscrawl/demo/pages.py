"""Which pages each host of the demo web has: home, about, paginated hubs, articles, private logs.

Only the skeleton is planned here (URLs, titles, themes, dates, how dense the topic words
are); links and text are added by later steps, once every host's pages are known.
"""

from __future__ import annotations

import math
import re

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.hosts import HostProfile, Section
from focuscrawl.demo.site_plan import PER_HUB_PAGE, Page, SitePlan

_TITLE_SUFFIXES = [
    "what to see this week", "a beginner's guide", "notes from the weekend", "five things to know",
    "our readers' questions", "the complete guide", "a closer look", "tips and tricks",
    "what we learned", "the story so far",
]


def plan_pages(plan: SitePlan, profiles: tuple[HostProfile, ...] | None = None) -> None:
    """Plan every host's pages, or only ``profiles``' (a host added later)."""
    for profile in plan.profiles if profiles is None else profiles:
        _plan_host(plan, profile)


def _plan_host(plan: SitePlan, p: HostProfile) -> None:
    rng, base = plan.rng, f"http://{p.host}"
    ext = "" if p.javascript else ".html"  # an app's routes carry no extension
    plan.home[p.host] = home = f"{base}/"
    plan.pages[home] = Page(home, p.host, "home", None, p.site_name)
    plan.about[p.host] = about = f"{base}/about{ext}"
    plan.pages[about] = Page(about, p.host, "about", None, f"About {p.site_name}")
    n_articles = max(3 * len(p.sections), plan.pages_per_host - 2 - math.ceil(1.4 * len(p.sections)))
    counts = _apportion(n_articles, [s.weight for s in p.sections], minimum=3)
    plan.hubs[p.host], plan.articles[p.host] = {}, {}
    used_slugs: set[str] = set()
    for section, count in zip(p.sections, counts):
        n_hub_pages = math.ceil(count / PER_HUB_PAGE)
        hub_urls = [f"{base}{section.path}"] + [
            f"{base}{section.path}page-{k}{ext}" for k in range(2, n_hub_pages + 1)
        ]
        for k, url in enumerate(hub_urls, start=1):
            title = section.name if k == 1 else f"{section.name} \u2014 page {k}"
            plan.pages[url] = Page(url, p.host, "hub", section.theme, title, section,
                                   topic_density=rng.uniform(0.15, 0.25))
        plan.hubs[p.host][section] = hub_urls
        urls = []
        for _ in range(count):
            slug = _slug(plan, section.theme, used_slugs)
            if section.neutral_paths:
                url = f"{base}/articles/2026/{rng.randint(1, 3):02d}/story-{rng.randint(1000, 9999)}.html"
                while url in plan.pages:
                    url = url.replace(".html", "-1.html")
            else:
                url = f"{base}{section.path}{slug}{ext}"
            plan.pages[url] = _article(plan, url, p.host, "article", section, slug)
            urls.append(url)
        plan.articles[p.host][section] = urls
    if p.private and plan.topical_sections(p.host):
        for _ in range(3):
            slug = _slug(plan, plan.topic, used_slugs)
            url = f"{base}/private/observing-logs/{slug}.html"
            plan.pages[url] = _article(plan, url, p.host, "private", plan.topical_sections(p.host)[0], slug)


def _article(plan: SitePlan, url: str, host: str, kind: str, section: Section, slug: str) -> Page:
    rng, theme = plan.rng, section.theme
    subtopics = tuple(rng.sample(sorted(V.THEMES[theme]["subtopics"]), k=rng.choice((1, 2))))
    words = slug.replace("-", " ").split()
    suffix = rng.choice(_TITLE_SUFFIXES)
    title = f"{' '.join(words).capitalize()}: {suffix}"
    return Page(
        url, host, kind, theme, title, section, subtopics,
        date=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)} {rng.choice((2024, 2025, 2026))}",
        author=rng.choice(V.AUTHORS), topic_density=rng.uniform(0.14, 0.36),
        # a few off-topic pages talk about the topic in passing ("a stargazing weekend")
        mention=rng.uniform(0.06, 0.12) if theme != plan.topic and rng.random() < 0.08 else 0.0,
    )


def _slug(plan: SitePlan, theme: str, used: set[str]) -> str:
    rng = plan.rng
    base = rng.choice(V.THEMES[theme]["slug_words"])
    slug = base
    while slug in used:
        extra = rng.choice(plan.theme_words[theme])
        slug = f"{base}-{re.sub(r'[^a-z0-9]+', '-', extra.lower()).strip('-')}"
        if slug in used:
            slug = f"{slug}-{rng.randint(2, 99)}"
    used.add(slug)
    return slug


def _apportion(total: int, weights: list[int], minimum: int) -> list[int]:
    """Split ``total`` by ``weights`` (largest remainder), each part at least ``minimum``."""
    spare = total - minimum * len(weights)
    shares = [spare * w / sum(weights) for w in weights]
    counts = [minimum + int(s) for s in shares]
    order = sorted(range(len(weights)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts
