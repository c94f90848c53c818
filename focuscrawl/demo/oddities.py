"""The untidiness a polite, careful crawler must handle: duplicates, 301s, 404s and robots.txt.

Each oddity is planted on topical hosts so that it costs a focused crawler something to get
wrong; the steps run in a fixed order because they draw from the plan's one Random.
"""

from __future__ import annotations

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.hosts import HostProfile
from focuscrawl.demo.site_plan import Page, SitePlan


def add_oddities(plan: SitePlan) -> None:
    hosts = _topical_hosts_both_sides_first(plan)
    _add_exact_duplicates(plan, hosts[:2])
    _add_near_duplicates(plan, hosts[:2])
    _add_redirects(plan, hosts[:2])
    _add_missing_pages(plan)


def robots_txt(p: HostProfile) -> str:
    lines = [f"# robots.txt for {p.host}", "User-agent: *"]
    if p.javascript:
        # an app keeps its accounts out but must let a renderer load its script and its pages' data
        lines += ["Allow: /static/", "Allow: /api/", "Disallow: /account/"]
    else:
        lines.append("Disallow: /private/" if p.private else "Disallow:")
    if p.crawl_delay:
        lines.append(f"Crawl-delay: {p.crawl_delay}")
    lines.append("")
    return "\n".join(lines)


def _topical_hosts_both_sides_first(plan: SitePlan) -> list[str]:
    """Topical hosts, one the model trains on and one it crawls first, so both sides meet each oddity."""
    topical_hosts = [p.host for p in plan.profiles if plan.topical_sections(p.host)]
    train_side = [h for h in topical_hosts if plan.profile(h).train]
    crawl_side = [h for h in topical_hosts if h not in train_side]
    return train_side[:1] + crawl_side[:1] + train_side[1:] + crawl_side[1:]


def _first_topical_article(plan: SitePlan, host: str, index: int) -> str:
    return plan.articles[host][plan.topical_sections(host)[0]][index]


def _add_exact_duplicates(plan: SitePlan, hosts: list[str]) -> None:
    """A printer-friendly copy with identical bytes."""
    for host in hosts:
        original = _first_topical_article(plan, host, 0)
        copy = original.replace(f"http://{host}/", f"http://{host}/print/", 1)
        plan.pages[original].links.append((copy, "Print this article", "extra"))
        plan.duplicates.append((copy, original, "exact"))


def _add_near_duplicates(plan: SitePlan, hosts: list[str]) -> None:
    """A syndicated copy on another host, with the date line changed."""
    rng = plan.rng
    for host in hosts:
        # the copy lands on a crawled host, so the crawl meets it
        crawled = [p.host for p in plan.profiles if not p.train and p.host != host]
        others = crawled or [h for h in plan.home if h != host]
        if not others:
            break
        partner = rng.choice(others)
        original = _first_topical_article(plan, host, 1)
        src = plan.pages[original]
        copy = f"http://{partner}/syndicated/{src.url.rsplit('/', 1)[1]}"
        page = Page(copy, partner, "syndicated", src.theme, src.title, src.section, src.subtopics,
                    date=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)} 2026", author=src.author,
                    topic_density=src.topic_density)
        page.paragraphs = src.paragraphs  # filled in by the text step; shared on purpose
        plan.pages[copy] = page
        plan.pages[plan.home[partner]].links.append((copy, f"From our partners: {src.title}", "extra"))
        plan.duplicates.append((copy, original, "near"))


def _add_redirects(plan: SitePlan, hosts: list[str]) -> None:
    """A 301 from an old archive URL that moved, linked from the home page."""
    for host in hosts:
        target = _first_topical_article(plan, host, 2)
        old = f"http://{host}/archive/{target.rsplit('/', 1)[1]}"
        plan.redirects[old] = target
        plan.pages[plan.home[host]].links.append((old, f"From the archive: {plan.pages[target].title}", "extra"))


def _add_missing_pages(plan: SitePlan) -> None:
    """A 404: a link to a page that was never published, on every other host."""
    rng = plan.rng
    for i, profile in enumerate(plan.profiles):
        if i % 2:
            continue
        section = profile.sections[0]
        source = plan.pages[plan.articles[profile.host][section][-1]]
        slug = rng.choice(V.THEMES[section.theme]["slug_words"])
        gone = f"http://{profile.host}{section.path}{slug}-draft.html"
        if gone in plan.pages:
            continue
        plan.missing.append(gone)
        source.links.append((gone, slug.replace("-", " ").capitalize(), "related"))
