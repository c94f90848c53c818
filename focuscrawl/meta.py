"""The ``Request.meta`` contract: every key focuscrawl puts in a request's meta, who writes it and
who reads it, and ``LinkMeta``, the typed record of what the spider knew about the link a request
follows.

Scrapy carries a request's state in ``request.meta``, a plain dict that survives the frontier's
codec, JOBDIR checkpoints and redirects. Its keys are named here once, so the spider, the link
features, the frontier's codec, the scheduler, the request log and ``scrapy explain`` agree on
them. Scrapy's own keys that focuscrawl reads (``depth``, ``download_slot``, ``download_latency``,
``redirect_times``, ``redirect_urls``) keep their Scrapy names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from focuscrawl.urls import canonicalize

# --- written by the spider ------------------------------------------------------------------
#: LinkMeta as a dict: the link a request follows (read by the link features and the codec)
LINK = "focus_link"
#: True on a sitemap's request (admitted past the trap rules' extension check: sitemaps are .xml.gz)
SITEMAP = "focus_sitemap"
#: True on a feed's request (RSS or Atom, found in a page's head): parsed as a feed
FEED = "focus_feed"

# --- written by the scheduler ---------------------------------------------------------------
#: the host a robots.txt request is fetched for (the request's own URL may have been redirected)
ROBOTS_FOR = "focus_robots_for"
#: the host a request was released for: the politeness gate frees it when the request leaves
HOST = "focus_host"
#: the priority a request had when it left the frontier, and the features behind it
PRIORITY = "focus_priority"
EXPLAIN = "focus_explain"
#: the learner's feature vector of the link, so the page's reward trains the same vector
FEATURES = "focus_features"
#: on a HEAD check: the GET it checks; on that GET once checked: True (not checked again)
HEAD_FOR = "focus_head_for"
HEAD_CHECKED = "focus_head_checked"
#: on a URL the host's learned aliases re-spelled: the spelling the link gave, fetched instead if the
#: new one fails (focuscrawl/frontier/aliases.py); True on that fallback: fetched as linked
ALIAS_OF = "focus_alias_of"
AS_LINKED = "focus_as_linked"
#: on a revisit (FOCUS_RECRAWL): why the revisit plan chose it, the hash of the text of the
#: version the crawl has (a 200 with the same text is no change) and the conditional headers sent
REVISIT = "focus_revisit"
REVISIT_HASH = "focus_revisit_hash"
REVISIT_HEADERS = "focus_revisit_headers"
#: on a request to render (FOCUS_RENDER): why it goes to the browser (written by the spider for a
#: page whose plain HTML was a shell, or by the scheduler's RenderRouting for a host that needs it)
RENDER = "focus_render"
#: on a render the spider asked for: (words, links) of the page's plain HTML, to judge what the
#: render added
RENDER_PLAIN = "focus_render_plain"
#: a response came back (else the request failed on the network), and its status
GOT_RESPONSE = "focus_got_response"
STATUS = "focus_status"

# --- written by the add-on's spider middleware (focuscrawl/spidermw.py) ----------------------
#: on a response of a project's own spider, before its callback: the page's score (None when not
#: scored) and whether it is relevant (FOCUS_RELEVANCE_THRESHOLD)
SCORE = "focus_score"
RELEVANT = "focus_relevant"

# --- Scrapy's, read by focuscrawl -----------------------------------------------------------
DEPTH = "depth"


@dataclass(slots=True)
class LinkMeta:
    """What the spider knew about a link when it found it (not frozen: a frozen dataclass is built
    several times slower, and the spider builds one per link; ``to_meta`` copies it anyway).

    ``parent_score`` is None for a seed; ``hops`` counts the pages since the last one the learner
    counted as found (0: the parent was one); ``link_score`` is the topic model's (or the link
    model's) score of the link's own words."""

    anchor: str = ""
    context: str = ""
    parent_url: str | None = None
    parent_score: float | None = None
    hops: int = 0
    link_score: float | None = None

    def to_meta(self) -> dict[str, Any]:
        """The dict ``meta[LINK]`` holds: every field, in LINK_FIELDS order (written out: a loop over
        the fields costs more, once per link found; tests/test_meta.py checks the two agree)."""
        return {"anchor": self.anchor, "context": self.context, "parent_url": self.parent_url,
                "parent_score": self.parent_score, "hops": self.hops, "link_score": self.link_score}

    @classmethod
    def from_meta(cls, meta: dict) -> LinkMeta:
        """The link of a request (defaults for a request another component made, whose meta has
        no link or a partial one)."""
        link = link_meta(meta)
        try:
            return cls(**link)
        except TypeError:  # keys LinkMeta does not know: a meta written by something else
            return cls(**{name: link[name] for name in LINK_FIELDS if name in link})


#: LinkMeta's fields in order (the codec packs a link as these values)
LINK_FIELDS = tuple(f.name for f in fields(LinkMeta))


def link_meta(meta: dict) -> dict:
    """The link's dict as the spider wrote it (empty when there is none): for reading one field on
    the hot path without building a LinkMeta."""
    return meta.get(LINK) or {}


def link_parent(meta: dict) -> str | None:
    """The canonical URL of the page a request's link was found on (None for seeds)."""
    parent = link_meta(meta).get("parent_url")
    return canonicalize(parent) if parent else None


def request_meta(link: LinkMeta, depth: int, **extra: Any) -> dict[str, Any]:
    """The meta of a request the spider makes for a link."""
    return {DEPTH: depth, LINK: link.to_meta(), **extra}
