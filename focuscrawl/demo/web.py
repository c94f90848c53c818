"""A generated demo web: several hosts, one clear topic, and the untidiness of real sites.

Why it looks the way it does: a focused crawler should beat breadth-first search here, so
on-topic pages cluster under topical hub pages that link to each other across hosts, while
large off-topic sections link mostly among themselves. Anchor texts and URL paths carry topic
words on topical links, with noise both ways. It also holds what a polite, careful crawler must
handle: robots.txt disallows (with relevant-looking pages behind them), a Crawl-delay, 404s,
301s, exact and near duplicates, and a host serving windows-1252. And what only a crawler that
renders JavaScript or reads PDFs finds: a host of app shells a script fills in (``javascript``)
and on-topic PDF documents (``papers``), both optional.

``generate_web`` is pure and deterministic for a seed; nothing here imports Scrapy. The work is
split by job: ``hosts`` (the catalogue), ``pages`` (which pages exist), ``oddities`` (duplicates,
redirects, 404s, robots.txt), ``linking``, ``text``, ``javascript`` (the app host), ``papers``
(the documents), ``rendering`` (bytes and labels) and ``demo_web`` (the result and its
WARC/labels files), all sharing one ``site_plan.SitePlan``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from focuscrawl.demo.demo_web import DemoWeb
from focuscrawl.demo.hosts import HostProfile
from focuscrawl.demo.javascript import add_javascript_host
from focuscrawl.demo.linking import link_pages
from focuscrawl.demo.oddities import add_oddities
from focuscrawl.demo.pages import plan_pages
from focuscrawl.demo.papers import add_documents
from focuscrawl.demo.rendering import build_records
from focuscrawl.demo.site_plan import SitePlan
from focuscrawl.demo.text import write_text


def generate_web(seed=0, hosts: int = 8, pages_per_host: int = 60, topic: str = "astronomy",
                 javascript_host: bool = True, documents: bool = True) -> DemoWeb:
    """Generate the demo web; the same arguments always give the same web.

    ``hosts`` hosts of the catalogue, plus the topic's JavaScript host (crawled, not trained on)
    unless ``javascript_host`` is False; ``documents``: on-topic PDFs on the topical hosts.
    """
    plan = SitePlan(seed, hosts, pages_per_host, topic)
    # the order is fixed: every step draws from the plan's one Random
    plan_pages(plan)
    add_oddities(plan)
    link_pages(plan)
    write_text(plan)
    # the optional parts come after, each drawing from its own Random: the pages above are the same
    # with or without them, but for the few that gain a link to them
    app = add_javascript_host(plan) if javascript_host else None
    pdfs = add_documents(plan) if documents else []
    records, labels, robots = build_records(plan)
    train, crawl = _train_and_crawl_hosts(tuple(p for p in plan.profiles if not p.javascript))
    crawl += [app] if app else []  # after the others: their seeds keep their order
    rendered = {url: [target for target, _, _ in page.links] for url, page in plan.pages.items()
                if page.host == app or page.kind == "document"}
    web = DemoWeb(
        records=records, labels=labels, robots=robots,
        seeds=[f"http://{h}/" for h in crawl], train_hosts=train, crawl_hosts=crawl, topic=topic,
        missing=list(plan.missing), redirects=dict(plan.redirects), duplicates=list(plan.duplicates),
        javascript_host=app, javascript_pages=[u for u in labels if urlsplit(u).netloc == app and u not in pdfs],
        documents=pdfs, rendered_links=rendered,
    )
    web.disallowed = [url for url in records if url in labels and not web.allowed(url)]
    return web


def _train_and_crawl_hosts(profiles: tuple[HostProfile, ...]) -> tuple[list[str], list[str]]:
    train = [p.host for p in profiles if p.train]
    crawl = [p.host for p in profiles if not p.train]
    if not train:  # tiny webs: keep both roles filled
        train, crawl = crawl[:1], crawl[1:]
    if not crawl:
        train, crawl = train[:-1], train[-1:]
    return train, crawl
