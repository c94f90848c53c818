"""Baseline crawls simulated on the recorded link graph (no HTTP), scored like a real crawl.

Each baseline returns its request sequence as (url, status), the same shape
``metrics.counted_requests`` gives for a server log, so ``metrics.found_curve`` scores both
with one accounting: every request costs one (404s and redirects included), a redirect's target
is discovered like a link, a URL is requested at most once (by URL key).

- ``bfs_requests``: FIFO from the seeds, links in document order.
- ``random_requests``: the next request is drawn uniformly from the discovered, unfetched URLs.
- ``oracle_requests``: knows every label and link, but may only request discovered URLs; it
  fetches along a shortest path to the nearest unfetched relevant page (ties: discovery order,
  then link order), and once none is left reachable, falls back to FIFO.
"""

from __future__ import annotations

import random
from collections import deque
from typing import Iterable

from focuscrawl.replay.linkgraph import MISSING, LinkGraph
from focuscrawl.replay.metrics import Relevance, found_curve
from focuscrawl.urls import url_key

Requests = list[tuple[str, int]]


class _Crawl:
    """The discovered/fetched bookkeeping every baseline shares."""

    def __init__(self, graph: LinkGraph, seeds: Iterable[str]):
        self.graph = graph
        self.discovered: dict[str, None] = {}  # insertion-ordered set: discovery order
        self.fetched: set[str] = set()
        self.requests: Requests = []
        self.new: list[str] = []  # keys discovered by the last fetch
        for seed in seeds:
            key = url_key(seed)
            if key not in graph.kind:
                graph.add_node(seed)  # a seed outside the recording: a missing node
            if key not in self.discovered:
                self.discovered[key] = None
                self.new.append(key)

    def fetch(self, key: str) -> list[str]:
        """Request ``key``; return the URL keys it newly discovered, in link order."""
        self.fetched.add(key)
        self.requests.append((self.graph.url.get(key, key), self.graph.status_of(key)))
        new = []
        for nxt in self.graph.successors(key):
            if nxt not in self.discovered:
                self.discovered[nxt] = None
                new.append(nxt)
        return new


def bfs_requests(graph: LinkGraph, seeds: Iterable[str], budget: int) -> Requests:
    """Breadth-first: a FIFO queue from the seeds, links appended in document order."""
    crawl = _Crawl(graph, seeds)
    queue = deque(crawl.new)
    while queue and len(crawl.requests) < budget:
        queue.extend(crawl.fetch(queue.popleft()))
    return crawl.requests


def random_requests(graph: LinkGraph, seeds: Iterable[str], budget: int, seed: int = 0) -> Requests:
    """Random frontier: each request drawn uniformly from the discovered, unfetched URLs."""
    rng = random.Random(seed)
    crawl = _Crawl(graph, seeds)
    frontier = list(crawl.new)
    while frontier and len(crawl.requests) < budget:
        i = rng.randrange(len(frontier))
        frontier[i], frontier[-1] = frontier[-1], frontier[i]
        frontier.extend(crawl.fetch(frontier.pop()))
    return crawl.requests


def oracle_requests(graph: LinkGraph, seeds: Iterable[str], budget: int, relevance: Relevance) -> Requests:
    """The oracle: along a shortest path to the nearest unfetched relevant page not yet found.

    Paths run through recorded pages and redirects only (a missing URL leads nowhere); a page
    counts as found once any of its URLs was fetched with a 2xx, so its aliases stop being targets.
    """
    crawl = _Crawl(graph, seeds)
    frontier: dict[str, None] = dict.fromkeys(crawl.new)  # discovered, unfetched, in discovery order
    found: set[str] = set()

    def is_target(key: str) -> bool:
        return (graph.is_page(key) and relevance.is_relevant_key(key)
                and relevance.page_of_key(key) not in found)

    def nearest_path() -> list[str] | None:
        parent: dict[str, str | None] = {}
        queue: deque[str] = deque()
        for key in frontier:
            parent[key] = None
            queue.append(key)
        while queue:
            key = queue.popleft()
            if is_target(key):
                path = [key]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return path[::-1]
            for nxt in graph.successors(key):
                if nxt not in parent and nxt not in crawl.fetched and graph.kind.get(nxt) != MISSING:
                    parent[nxt] = key
                    queue.append(nxt)
        return None

    exhausted = False  # no target left: none can appear later (every unfetched reachable
    # node is reachable from the frontier through unfetched nodes), so stop searching
    while frontier and len(crawl.requests) < budget:
        path = None if exhausted else nearest_path()
        if path is None:
            exhausted = True
            path = [next(iter(frontier))]
        for key in path:
            if len(crawl.requests) >= budget:
                break
            frontier.pop(key, None)
            for new in crawl.fetch(key):
                frontier[new] = None
            if graph.is_page(key) and relevance.is_relevant_key(key):
                found.add(relevance.page_of_key(key))
    return crawl.requests


def mean_curve(curves: list[list[int]]) -> list[float]:
    """The pointwise mean of found curves; a curve that ended early holds its last value."""
    length = max((len(c) for c in curves), default=0)
    return [sum(c[min(i, len(c) - 1)] if c else 0 for c in curves) / len(curves) for i in range(length)]


def baseline_curves(graph: LinkGraph, seeds: list[str], relevance: Relevance, budget: int,
                    random_runs: int = 10) -> dict[str, list[float]]:
    """found(i) curves of BFS, random (mean over seeds 0..random_runs-1) and the oracle."""
    runs = [found_curve(random_requests(graph, seeds, budget, seed=s), relevance) for s in range(random_runs)]
    return {
        "bfs": found_curve(bfs_requests(graph, seeds, budget), relevance),
        "random": mean_curve(runs),
        "oracle": found_curve(oracle_requests(graph, seeds, budget, relevance), relevance),
    }
