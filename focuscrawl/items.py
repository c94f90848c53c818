"""The record of one fetched page, as it flows from the spider through the pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class PageItem:
    """Every fetched page becomes one PageItem: relevant or not, HTML or not.

    The store keeps all of them (to inspect a crawl and retrain from it); only relevant,
    non-duplicate ones reach the feed export.
    """

    url: str  # the URL that was requested first (before redirects)
    final_url: str  # the URL of the response that was scored
    status: int
    content_type: str = ""
    title: str = ""
    text: str = ""  # main content, boilerplate removed
    # relevance: the page's words with the evidence of the link that led here (FOCUS_LINK_EVIDENCE);
    # None when not scored (non-HTML, errors). ``relevant`` is score >= FOCUS_RELEVANCE_THRESHOLD.
    score: float | None = None
    page_score: float | None = None  # the topic model's score of the page's words alone
    link_score: float | None = None  # the link model's score of the link that led here (None: a seed)
    relevant: bool = False
    fetched_at: str = ""  # ISO 8601, UTC
    depth: int = 0
    referrer: str | None = None
    content_hash: str = ""  # sha1 of the normalised main text (exact-duplicate key)
    outlinks: int = 0
    elapsed: float = 0.0  # seconds, download latency
    length: int = 0  # body bytes
    encoding: str = ""
    # the response's validators, sent back when the page is revisited (FOCUS_RECRAWL)
    etag: str | None = None
    last_modified: str | None = None
    duplicate_of: str | None = None  # set by the dedup pipeline: the URL this page duplicates
    duplicate_kind: str | None = None  # "exact" or "near"
    extra: dict = field(default_factory=dict)
    # the page's followable links (parsing ``Link``s), on their way to the store's link table (what
    # ``scrapy train`` learns the link model from on a crawl store): not a page column, not exported
    links: list = field(default_factory=list, repr=False, metadata={"column": False})
    # on the item's way through the pipelines only: ``restored``, re-emitted from the crawl store by
    # a resumed crawl (already deduplicated and stored); ``exported``, the crawl's feed already has
    # the page (fetched again after a kill), so it is not exported twice
    restored: bool = field(default=False, repr=False, metadata={"column": False})
    exported: bool = field(default=False, repr=False, metadata={"column": False})
    # the page of a response a project's own spider handled (focuscrawl.Addon): judged and stored,
    # never exported, so the project's pipelines and feeds see only the spider's own items
    record_only: bool = field(default=False, repr=False, metadata={"column": False})

    #: fields written to the feed export for relevant pages
    EXPORT_FIELDS = (
        "url", "final_url", "title", "score", "page_score", "link_score", "text", "fetched_at", "depth", "referrer",
        "content_hash",
    )
