"""Re-scoring the frontier as the ordering strategy's priorities move (``FOCUS_STRATEGY``): the
learner's as it learns, a classic strategy's as a queued URL is found on a better page.

Every entry carries the learner version it was scored under. Stale entries are re-scored lazily
as they reach the top of their host queue (the frontier does that on ``pop``), and after each
learner update a bounded share of the frontier is re-scored in the background, ``CHUNK`` entries
a reactor turn, so that entries whose value rose since they were queued surface without a pass
over a large frontier ever stalling downloads and callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from focuscrawl.frontier import Entry, Frontier, PackedRescorer
from focuscrawl.learning.learner import LinkRewardLearner
from focuscrawl.learning.strategies import LearnedStrategy
from focuscrawl.meta import link_parent
from focuscrawl.request_codec import LinkPreview

#: what an entry without features (a robots.txt request, a request in flight at a kill) keeps
ROBOTS_PRIORITY = float("inf")
#: entries re-scored in the background per learner update, at most
MAX_PER_UPDATE = 20_000
#: ... of which at most this many in one reactor turn: at 15-30 us an entry, a whole pass over a
#: large frontier would stall every download and callback 0.3-0.7 s
CHUNK = 2048


class BackgroundRescorer:
    """The strategy's priorities for the frontier's entries, lazily and in background chunks.
    ``strategy``: a ``focuscrawl.learning.strategies`` strategy (a ``LinkRewardLearner`` is taken
    as the ``learned`` one). ``call_soon(func)`` runs ``func`` in a later turn of the event loop and
    returns a cancellable call."""

    def __init__(self, frontier: Frontier, strategy, call_soon: Callable[[Callable[[], None]], Any]):
        if isinstance(strategy, LinkRewardLearner):
            strategy = LearnedStrategy(strategy)
        self.frontier = frontier
        self.strategy = strategy
        self.call_soon = call_soon
        self.version = strategy.version
        self.left = 0  # entries still due in the current background pass
        self._call = None  # the pending call that takes the pass on
        # the learner's: packed entries are re-scored from their bytes, others as entries; a
        # classic strategy's: as entries (it needs their stored priority)
        self.rescore = (PackedRescorer(self._rescore_entries, self._rescore_packed) if strategy.packed
                        else strategy.rescore)

    @property
    def learner(self):
        """The learner whose scores are the priorities (``learned``); None for another strategy."""
        return getattr(self.strategy, "learner", None)

    def use_learner(self, learner) -> None:
        """A learner restored from a checkpoint replaces the crawl's."""
        if self.strategy.packed:
            self.strategy.learner = learner
            self.version = self.strategy.version

    def use_strategy(self, strategy) -> None:
        """A classic strategy restored from a checkpoint (what it knew of each URL) replaces the
        crawl's."""
        self.strategy = strategy
        self.rescore = strategy.rescore
        self.version = strategy.version

    def learner_updated(self) -> None:
        """The strategy's priorities may have moved (a new learner version, a URL found on a better
        page): stale entries are re-scored lazily, and a share of them in the background."""
        if self.strategy.version == self.version:
            return
        self.version = self.strategy.version
        self.frontier.version += 1
        # entries whose value rose since they were queued must surface: refresh a good share of
        # the frontier each time (bounded), not only what reaches the top of a host queue
        self.left = min(MAX_PER_UPDATE, max(256, len(self.frontier) // 2))
        self._chunk()

    def _chunk(self) -> None:
        """One turn's share of the background pass; the rest in the turns after. A newer learner
        version starts a new pass where this one stands (the frontier's round robin goes on)."""
        if self.left <= 0:
            return
        done = self.frontier.rescore_stale(self.rescore, limit=min(self.left, CHUNK))
        self.left = self.left - done if done else 0  # none done: nothing is stale
        if self.left > 0 and self._call is None:
            self._call = self.call_soon(self._next_chunk)

    def _next_chunk(self) -> None:
        self._call = None
        self._chunk()

    def cancel(self) -> None:
        if self._call is not None and self._call.active():
            self._call.cancel()

    def _rescore_entries(self, entries: list[Entry]) -> list[float]:
        """New priorities; a packed entry comes as a LinkPreview (its parent), not a Request."""
        scores = iter(self.learner.score_many([
            (e.features, e.url, e.payload.parent if type(e.payload) is LinkPreview else link_parent(e.payload.meta))
            for e in entries if e.features is not None]))
        return [ROBOTS_PRIORITY if e.features is None else next(scores) for e in entries]

    def _rescore_packed(self, urls: list[str], blobs: list[bytes]) -> list[float]:
        """``_rescore_entries`` for packed entries, from their URLs and the codec's bytes."""
        parents, counts, idx, val = self.frontier.codec.links(blobs)
        scores = self.learner.score_joined(urls, parents, [n or 0 for n in counts], idx, val)
        return [ROBOTS_PRIORITY if n is None else score for n, score in zip(counts, scores)]
