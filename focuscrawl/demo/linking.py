"""The link structure of the demo web, which is what lets a focused crawler beat breadth-first.

On-topic pages cluster under topical hubs that link to same-theme hubs on other hosts, while
off-topic sections link mostly among themselves; anchors carry the target's title, with a
share of uninformative ones ("Read more") so the anchor alone never settles a link.
"""

from __future__ import annotations

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.hosts import HostProfile, Section
from focuscrawl.demo.site_plan import PER_HUB_PAGE, SitePlan

Link = tuple[str, str, str]  # (url, anchor, where on the page), as Page.links holds


def link_pages(plan: SitePlan, profiles: tuple[HostProfile, ...] | None = None) -> None:
    """Link every host's pages, or only ``profiles``' (a host added later links into the rest)."""
    for profile in plan.profiles if profiles is None else profiles:
        _link_host(plan, profile.host)


def _link_host(plan: SitePlan, host: str) -> None:
    rng = plan.rng
    nav = [(plan.home[host], "Home", "nav")] + [
        (urls[0], s.name, "nav") for s, urls in plan.hubs[host].items()
    ]
    footer = [(plan.about[host], "About us", "footer"), (plan.home[host], "Home", "footer")]
    # home: nav, featured articles from every section, partner sites
    home = plan.pages[plan.home[host]]
    featured = []
    for section, urls in plan.articles[host].items():
        for url in rng.sample(urls, k=min(2, len(urls))):
            featured.append((url, _anchor(plan, url), "list"))
    partners = [(plan.home[h], plan.profile(h).site_name, "blogroll")
                for h in rng.sample([h for h in plan.home if h != host], k=min(3, len(plan.home) - 1))]
    home.links = nav + featured + home.links + partners + footer
    plan.pages[plan.about[host]].links = nav + footer
    for section, hub_urls in plan.hubs[host].items():
        _link_section(plan, host, section, hub_urls, nav, footer)
    for url in [u for u, p in plan.pages.items() if p.host == host and p.kind == "syndicated"]:
        page = plan.pages[url]
        page.links = nav + [(plan.home[host], "Home", "crumb")] + footer


def _link_section(plan: SitePlan, host: str, section: Section, hub_urls: list[str],
                  nav: list[Link], footer: list[Link]) -> None:
    rng = plan.rng
    articles = plan.articles[host][section]
    topical = section.theme == plan.topic
    for k, hub_url in enumerate(hub_urls):
        hub = plan.pages[hub_url]
        chunk = articles[k * PER_HUB_PAGE:(k + 1) * PER_HUB_PAGE]
        links = list(nav) + [(u, _anchor(plan, u), "list") for u in chunk]
        if k + 1 < len(hub_urls):
            links.append((hub_urls[k + 1], "Older articles", "list"))
        if k > 0:
            links.append((hub_urls[k - 1], "Newer articles", "list"))
        if k == 0:
            if topical:
                links += [(u, _anchor(plan, u), "list") for u in _private_pages(plan, host)]
            links += _blogroll(plan, host, section)
        hub.links = links + footer
    for url in articles:
        page = plan.pages[url]
        extra = page.links  # print links, 404s added earlier
        same = [u for u in articles if u != url]
        related = rng.sample(same, k=min(len(same), rng.randint(3, 5)))
        if rng.random() < 0.25:  # one link into another section of the same host
            other = [s for s in plan.articles[host] if s != section]
            if other:
                related.append(rng.choice(plan.articles[host][rng.choice(other)]))
        body_links, aside = related[:2], related[2:]
        cross = []
        if rng.random() < (0.3 if topical else 0.12):
            cross.append(_random_article(plan, section.theme, exclude_host=host))
        if rng.random() < 0.05:
            cross.append(_random_article(plan, rng.choice(sorted(V.THEMES)), exclude_host=host))
        page.links = (
            list(nav) + [(hub_urls[0], section.name, "crumb")]
            + [(u, _anchor(plan, u), "body") for u in body_links]
            + [(u, _anchor(plan, u), "related") for u in aside + [c for c in cross if c]]
            + extra + footer
        )
    private_here = topical and section == plan.topical_sections(host)[0]
    for url in _private_pages(plan, host) if private_here else []:
        page = plan.pages[url]
        same = [u for u in _private_pages(plan, host) if u != url]
        page.links = list(nav) + [(hub_urls[0], section.name, "crumb")] + [
            (u, _anchor(plan, u), "related") for u in same
        ] + footer


def _private_pages(plan: SitePlan, host: str) -> list[str]:
    return [u for u, p in plan.pages.items() if p.host == host and p.kind == "private"]


def _blogroll(plan: SitePlan, host: str, section: Section) -> list[Link]:
    """Cross-host links from a section's first hub page: mostly to same-theme hubs."""
    rng = plan.rng

    def hubs_elsewhere(same_theme: bool) -> list[Link]:
        return [(urls[0], f"{s.name} at {plan.profile(h).site_name}", "blogroll")
                for h, sections in plan.hubs.items() if h != host
                for s, urls in sections.items() if (s.theme == section.theme) == same_theme]

    same_theme = hubs_elsewhere(same_theme=True)
    links = rng.sample(same_theme, k=min(3, len(same_theme)))
    if rng.random() < 0.3:  # noise: a link into some other theme's hub
        other = hubs_elsewhere(same_theme=False)
        if other:
            links.append(rng.choice(other))
    return links


def _random_article(plan: SitePlan, theme: str, exclude_host: str) -> str | None:
    pool = [u for h, sections in plan.articles.items() if h != exclude_host
            for s, urls in sections.items() if s.theme == theme for u in urls]
    return plan.rng.choice(pool) if pool else None


def _anchor(plan: SitePlan, url: str) -> str:
    if plan.rng.random() < 0.15:
        return plan.rng.choice(V.NEUTRAL_ANCHORS)
    return plan.pages[url].title
