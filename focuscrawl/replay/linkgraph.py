"""The recorded link graph, and which URLs are one page.

Nodes are URL keys (``url_key``: what a canonicalising crawler treats as one request). A node is
``page`` (a recorded response that is not a redirect), ``redirect`` (a recorded 3xx with a
Location: one edge, to its target) or ``missing`` (linked but never recorded: the replay answers
404, so it costs a request and leads nowhere). A page's edges are the http(s) links of its HTML,
in document order, each target once.

``SamePage`` says which URLs are the same page (recorded redirects, byte-identical copies, an
aliases file), so a page served at several URLs is counted once.
"""

from __future__ import annotations

import hashlib
import logging
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from w3lib.url import safe_url_string

from focuscrawl.replay.recorded import RecordedResponse, RecordedWeb
from focuscrawl.tsv import read_pairs
from focuscrawl.urls import url_key

logger = logging.getLogger(__name__)

PAGE, REDIRECT, MISSING = "page", "redirect", "missing"

#: (response) -> absolute link URLs in document order
LinkExtractor = Callable[[RecordedResponse], list[str]]


def parsed_links(resp: RecordedResponse) -> list[str]:
    """Links as the crawler sees them: ``focuscrawl.parsing.parse_html`` (absolute URLs)."""
    from focuscrawl.parsing import (
        parse_html,  # imported late: parsing is a sibling package
    )

    page = parse_html(resp.body, resp.url, content_type=resp.content_type or None)  # charset= read there
    return [link.url for link in page.links]


def _is_http(url: str) -> bool:
    return url[:7].lower() == "http://" or url[:8].lower() == "https://"


@dataclass
class LinkGraph:
    """Nodes by URL key: kind, status, the URL to request, successors in link order."""

    kind: dict[str, str] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    url: dict[str, str] = field(default_factory=dict)
    out: dict[str, list[str]] = field(default_factory=dict)
    #: recorded 2xx pages with identical bodies, as (url, first url with that body)
    copies: list[tuple[str, str]] = field(default_factory=list)

    # --- construction ----------------------------------------------------------------------------

    def add_node(self, link: str, kind: str = MISSING, status: int = 404) -> str:
        """The key of ``link``, made a node (``kind``, ``status``) when it is not one yet."""
        key = url_key(link)
        if key not in self.kind:
            self.kind[key] = kind
            self.status[key] = status
            self.url[key] = link
            self.out[key] = []
        return key

    def _set_edges(self, key: str, links: Iterable[str]) -> None:
        targets: list[str] = []
        seen = {key}
        for link in links:
            if not _is_http(link):
                continue
            try:
                link = safe_url_string(link)  # what a crawler sends; a URL it cannot send is no link
            except ValueError:
                continue
            target = url_key(link)
            if target in seen:
                continue
            seen.add(target)
            self.add_node(link)
            targets.append(target)
        self.out[key] = targets

    @classmethod
    def from_web(cls, web: RecordedWeb, extract_links: LinkExtractor | None = None) -> "LinkGraph":
        """Build the graph of a recorded web; links come from ``extract_links`` (default: parsing).

        A page whose HTML cannot be parsed is kept with no links (logged), never fatal.
        """
        extract = extract_links or parsed_links
        graph = cls()
        by_hash: dict[str, str] = {}
        for resp in web:
            key = url_key(resp.url)
            if graph.kind.get(key, MISSING) != MISSING:
                continue  # the first record for a key is the one the replay serves
            location = resp.location
            graph.kind[key] = REDIRECT if location else PAGE
            graph.status[key] = resp.status
            graph.url[key] = resp.url
            graph.out.setdefault(key, [])
            if location:
                graph._set_edges(key, [location])
                continue
            if 200 <= resp.status < 300 and resp.body:
                digest = hashlib.sha1(resp.body).hexdigest()
                if digest in by_hash:
                    graph.copies.append((resp.url, by_hash[digest]))
                else:
                    by_hash[digest] = resp.url
            if not resp.is_html or not resp.body:
                continue
            try:
                links = extract(resp)
            except Exception as exc:
                logger.warning("no links from %s: %s", resp.url, exc)
                links = []
            graph._set_edges(key, links)
        # keys first met as links were created MISSING; a later record fixed them above
        return graph

    @classmethod
    def from_edges(cls, pages: Mapping[str, Iterable[str]],
                   redirects: Mapping[str, str] | None = None) -> "LinkGraph":
        """A graph by hand: ``pages`` {url: [links]} answer 200, ``redirects`` {url: target} 301,
        every other linked URL is missing (404)."""
        graph = cls()
        for url in pages:
            graph.add_node(url, PAGE, 200)
        for url in redirects or {}:
            graph.add_node(url, REDIRECT, 301)
        for url, links in pages.items():
            graph._set_edges(url_key(url), links)
        for url, target in (redirects or {}).items():
            graph._set_edges(url_key(url), [target])
        return graph

    # --- queries -------------------------------------------------------------------------------

    def key(self, url: str) -> str:
        return url_key(url)

    def successors(self, key: str) -> list[str]:
        return self.out.get(key, [])

    def status_of(self, key: str) -> int:
        return self.status.get(key, 404)

    def is_page(self, key: str) -> bool:
        """A recorded page whose content is served (2xx): the only kind that can be 'found'."""
        return self.kind.get(key) == PAGE and 200 <= self.status.get(key, 0) < 300

    def reachable(self, seeds: Iterable[str]) -> set[str]:
        """Every node (missing ones included) reachable from the seeds over recorded links."""
        start = [url_key(s) for s in seeds]
        seen = set(start)
        queue = deque(start)
        while queue:
            for nxt in self.out.get(queue.popleft(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    queue.append(nxt)
        return seen

    def redirect_pairs(self) -> list[tuple[str, str]]:
        """(redirect URL, its target URL) for every recorded redirect."""
        return [(self.url[k], self.url[self.out[k][0]]) for k, kind in self.kind.items()
                if kind == REDIRECT and self.out.get(k)]


class SamePage:
    """Union-find over URL keys: URLs that serve one page share a representative.

    ``canonical(url)`` is the representative key; when one member of a group is a preferred URL
    (the ``same_as`` column of an aliases file) it is the representative.
    """

    def __init__(self, pairs: Iterable[tuple[str, str]] = ()):
        self._parent: dict[str, str] = {}
        for a, b in pairs:
            self.union(a, b)

    def _find(self, key: str) -> str:
        parent = self._parent
        root = key
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(key, key) != root:  # path compression
            parent[key], key = root, parent[key]
        return root

    def union(self, url: str, same_as: str) -> None:
        """Make ``url`` an alias of ``same_as`` (whose group keeps its representative)."""
        a, b = self._find(url_key(url)), self._find(url_key(same_as))
        if a != b:
            self._parent[a] = b

    def canonical(self, url: str) -> str:
        return self._find(url_key(url))

    def canonical_key(self, key: str) -> str:
        """``canonical`` for a value that is already a URL key (skips re-canonicalising)."""
        return self._find(key)

    @classmethod
    def for_graph(cls, graph: LinkGraph, aliases: Iterable[tuple[str, str]] = ()) -> "SamePage":
        """Redirects and identical copies from the graph, then the aliases (which win)."""
        same = cls(graph.redirect_pairs())
        for url, first in graph.copies:
            same.union(url, first)
        for url, same_as in aliases:
            same.union(url, same_as)
        return same


def load_aliases(path: str | Path) -> list[tuple[str, str]]:
    """(url, same_as) pairs from a TSV with a header naming ``url`` and ``same_as`` columns
    (extra columns ignored); without such a header, the first two columns."""
    try:
        return read_pairs(path, "url", "same_as")
    except FileNotFoundError:
        raise FileNotFoundError(f"aliases file not found: {path}") from None
