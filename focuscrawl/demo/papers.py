"""On-topic PDF documents: the reports and handbooks topical sites publish beside their pages.

A focused crawler that reads only HTML misses them; one that reads PDFs finds text in the topic's
words and links back into the site. Each topical host gets one (the first topical host of each
side of the train/crawl split two), served at ``/papers/NAME.pdf`` as application/pdf and linked,
with the document's title as anchor, from its section's hub and from one article of the section:
the only change to those pages. The bytes come from ``documents.pdf_document``. The documents
draw from a Random of their own, and the JavaScript host, added last, comes last here too, so the
other hosts' documents are the same with or without it.
"""

from __future__ import annotations

from focuscrawl.demo import vocabulary as V
from focuscrawl.demo.documents import pdf_document
from focuscrawl.demo.oddities import _topical_hosts_both_sides_first
from focuscrawl.demo.site_plan import Page, SitePlan
from focuscrawl.demo.text import write_text

#: What a site calls the documents it publishes.
_DOCUMENT_KINDS = [
    "field report", "practical handbook", "technical note", "annual report", "survey results",
    "workshop notes", "member handbook", "research summary",
]


def add_documents(plan: SitePlan) -> list[str]:
    """Plan, link and write the documents; return their URLs."""
    plan.use_random("documents")
    hosts = [p.host for p in plan.profiles if plan.topical_sections(p.host)]
    twice = set(_topical_hosts_both_sides_first(plan)[:2])
    documents = []
    for host in hosts:
        used: set[str] = set()
        for i in range(2 if host in twice else 1):
            documents.append(_add_document(plan, host, i, used))
            # written at once, so a host's documents draw only after the hosts before it
            write_text(plan, [plan.pages[documents[-1]]])
    return documents


def _add_document(plan: SitePlan, host: str, index: int, used: set[str]) -> str:
    rng = plan.rng
    sections = plan.topical_sections(host)
    section = sections[index % len(sections)]
    slug = title = ""
    while not slug or slug in used:
        base, kind = rng.choice(V.THEMES[plan.topic]["slug_words"]), rng.choice(_DOCUMENT_KINDS)
        slug, title = f"{base}-{kind.replace(' ', '-')}", f"{base.replace('-', ' ').capitalize()}: {kind}"
    used.add(slug)
    url = f"http://{host}/papers/{slug}.pdf"
    subtopics = tuple(rng.sample(sorted(V.THEMES[plan.topic]["subtopics"]), k=2))
    page = Page(url, host, "document", plan.topic, title, section, subtopics,
                date=f"{rng.randint(1, 28)} {rng.choice(V.MONTHS)} {rng.choice((2024, 2025))}",
                author=rng.choice(V.AUTHORS), topic_density=rng.uniform(0.25, 0.4))
    hub, articles = plan.hubs[host][section][0], plan.articles[host][section]
    # links back into the web: the hub that lists the document and two of its section's articles
    page.links = [(hub, section.name, "body")] + [
        (u, plan.pages[u].title, "body") for u in rng.sample(articles, k=min(2, len(articles)))
    ]
    plan.pages[url] = page
    anchor = f"{title} (PDF)"
    plan.pages[hub].links.append((url, anchor, "extra"))
    plan.pages[rng.choice(articles)].links.append((url, anchor, "related"))
    return url


def render_document(page: Page) -> bytes:
    """The PDF: title, byline, paragraphs, then the links as lines of anchor text under link annotations."""
    byline = f"{page.author} \u2014 {page.date}"
    return pdf_document(page.title, [byline, *page.paragraphs], [(anchor, url) for url, anchor, _ in page.links])
