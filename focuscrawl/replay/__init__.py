"""Replay a recorded web (WARC) through a local HTTP proxy, and measure a crawl against it.

- ``recorded``: the responses of a WARC, looked up by URL.
- ``server``: ``ReplayProxy``, the forward proxy that serves them and logs every request.
- ``changing``: ``ChangingWeb``, the recorded web with pages that change (Poisson), validators,
  304s, feeds and sitemaps.
- ``freshness``: ``freshness_report``, freshness and age of a crawl's copies from the log.
- ``linkgraph``: the recorded link graph and which URLs are the same page.
- ``metrics``: harvest@N and recall@N from a server log.
- ``baselines``: breadth-first, random and oracle crawls simulated on the link graph.
"""

from focuscrawl.replay.changing import ChangeMix, ChangingWeb
from focuscrawl.replay.freshness import freshness_report
from focuscrawl.replay.recorded import RecordedResponse, RecordedWeb, RecordError
from focuscrawl.replay.server import ReplayProxy

__all__ = ["RecordedWeb", "RecordedResponse", "RecordError", "ReplayProxy", "ChangingWeb", "ChangeMix",
           "freshness_report"]
