"""What orders the frontier (``FOCUS_STRATEGY``): the link-reward learner, or one of the classic
focused crawlers it is measured against, in the same crawler.

Every strategy goes through the same frontier, admission (seen set, traps, scope), politeness gate,
robots.txt and release policies: only the priorities differ. The scheduler asks a strategy

- ``score(canonical, meta, vector)``: the priority of a URL admitted to the frontier;
- ``refound(canonical, meta)``: a link to a URL already seen (admission refused it as SEEN); True
  when the URL's priority rose, to be picked up at the next ``settle``;
- ``settle()``: True when priorities of queued URLs rose since the last call; the strategy's
  ``version`` then moved on, so the ``BackgroundRescorer`` re-scores the frontier's stale entries
  (lazily and in background chunks) through ``rescore``;
- ``released(canonical)``: the URL left the frontier (a later better link to it changes nothing);
- ``explain(canonical, meta)``: what the priority came from (the request log, ``scrapy explain``).

``learned`` (the default) is a thin wrapper over ``LinkRewardLearner``: the scheduler and the
rescorer score exactly as they did before strategies existed. The classic ones are pure, learn
nothing, and keep per canonical URL (at most ``max_urls``, the oldest forgotten first) its best
value so far and its discovery order. Their priority is ``value - order * TIE``: ties go first
come first served by discovery, whatever the frontier does to its sequence numbers (a request
put back after its host's robots.txt, or re-scored, gets a new one), and a value is moved by at
most ``TIE`` x the URLs seen (1e-6 at a million).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from focuscrawl.config import DEFAULTS, STRATEGIES
from focuscrawl.learning.features import link_context, link_features
from focuscrawl.meta import link_meta, link_parent

#: a seed's value in ``bestfirst`` and ``shark``: above any probability, so seeds go first
SEED_PRIORITY = 2.0
#: discovery order's part of a priority, per URL discovered before (ties first come first served)
TIE = 2.0 ** -40
#: URLs a classic strategy remembers (best value, discovery order, shark's inherited score)
MAX_URLS = 1_000_000

# Shark-search: M. Hersovici, M. Jacovi, Y. Maarek, D. Pelleg, M. Shtalhaim, S. Ur, "The
# shark-search algorithm. An application: tailored Web site mapping", WWW7 (1998), section 3.
#: decay of the inherited score per hop from the last relevant page ("delta", 0.5 in the paper)
SHARK_DELTA = 0.5
#: weight of the anchor's score against its context's in the neighbourhood score ("beta", 0.8)
SHARK_BETA = 0.8
#: weight of the inherited score against the neighbourhood score in the potential score ("gamma")
SHARK_GAMMA = 0.5
#: a seed's inherited score: the user chose it, as if it were relevant
SHARK_SEED_INHERITED = 1.0

class LearnedStrategy:
    """The link-reward learner orders the frontier (the default): its score at enqueue and its
    re-scoring of stale entries as it learns (``BackgroundRescorer`` re-scores packed entries from
    their bytes through ``learner.score_joined``)."""

    name = "learned"
    packed = True  # the rescorer may hand it packed records' features as they are stored

    def __init__(self, learner) -> None:
        self.learner = learner

    @property
    def version(self) -> int:
        return self.learner.version

    def score(self, canonical: str, meta: dict, vector) -> float:
        return self.learner.score(vector, canonical, link_parent(meta))

    def refound(self, canonical: str, meta: dict) -> bool:
        return False

    def settle(self) -> bool:
        return False  # the learner's version moves as it observes pages (the scheduler re-scores then)

    def released(self, canonical: str) -> None:
        pass

    def explain(self, canonical: str, meta: dict) -> list[tuple[str, float]]:
        return self.learner.explain(link_features(link_context(canonical, meta)), canonical, link_parent(meta))


class _Record:
    """What a classic strategy knows of a URL."""

    __slots__ = ("value", "order", "inherited", "done")

    def __init__(self, value: float, order: int, inherited: float = 0.0) -> None:
        self.value = value
        self.order = order
        self.inherited = inherited
        self.done = False  # released: a better link found later changes nothing


class _Classic:
    """A strategy whose priority is a value of the link (``_value``), the best of the links found to
    the URL so far, ties broken by discovery order. It learns nothing."""

    name = ""
    packed = False  # re-scoring needs the entry's stored priority (a URL forgotten keeps it)

    def __init__(self, max_urls: int = MAX_URLS) -> None:
        self.max_urls = max_urls
        self.urls: OrderedDict[str, _Record] = OrderedDict()
        self.discovered = 0
        self.version = 0
        self._raised = False

    def _value(self, meta: dict) -> tuple[float, float]:
        """(value, shark's inherited score) of the link a request follows."""
        raise NotImplementedError

    def _priority(self, record: _Record) -> float:
        return record.value - record.order * TIE

    def score(self, canonical: str, meta: dict, vector=None) -> float:
        value, inherited = self._value(meta)
        record = self.urls.get(canonical)
        if record is None:
            record = self.urls[canonical] = _Record(value, self.discovered, inherited)
            self.discovered += 1
            if len(self.urls) > self.max_urls:
                self.urls.popitem(last=False)
        else:  # queued again (a redirect back, dont_filter): its best link and first place kept
            record.value, record.inherited, record.done = (max(record.value, value),
                                                           max(record.inherited, inherited), False)
        return self._priority(record)

    def refound(self, canonical: str, meta: dict) -> bool:
        record = self.urls.get(canonical)
        if record is None:
            return False
        value, inherited = self._value(meta)
        record.inherited = max(record.inherited, inherited)
        if record.done or value <= record.value:
            return False
        record.value = value
        self._raised = True
        return True

    def settle(self) -> bool:
        if not self._raised:
            return False
        self._raised = False
        self.version += 1
        return True

    def released(self, canonical: str) -> None:
        record = self.urls.get(canonical)
        if record is not None:
            record.done = True

    def rescore(self, entries: Sequence[Any]) -> list[float]:
        """The frontier's entries' priorities now: a URL's best value so far, or the priority it
        was queued with when it is forgotten (or is no link: robots.txt keeps its own)."""
        out = []
        for entry in entries:
            record = self.urls.get(entry.url)
            out.append(entry.priority if record is None else max(entry.priority, self._priority(record)))
        return out

    def priority(self, canonical: str) -> float | None:
        """The URL's priority now (None when it is not known)."""
        record = self.urls.get(canonical)
        return None if record is None else self._priority(record)

    def explain(self, canonical: str, meta: dict) -> list[tuple[str, float]]:
        record = self.urls.get(canonical)
        parts = self._parts(meta, record)
        if record is not None:
            parts.append((f"{self.name}:discovered", float(record.order)))
        return parts

    def _parts(self, meta: dict, record: _Record | None) -> list[tuple[str, float]]:
        value = record.value if record is not None else self._value(meta)[0]
        return [(f"{self.name}:value", round(value, 4))]


class BestFirstStrategy(_Classic):
    """The classic focused crawler (Cho, Garcia-Molina & Page 1998; Chakrabarti, van den Berg & Dom
    1999; Menczer et al.'s BestFirst): a URL's priority is the topic model's score of the best page
    found linking to it (its LinkMeta's ``parent_score``); found again on a better page, it rises.
    Seeds go first."""

    name = "bestfirst"

    def _value(self, meta: dict) -> tuple[float, float]:
        score = link_meta(meta).get("parent_score")
        return (SEED_PRIORITY if score is None else float(score)), 0.0

    def _parts(self, meta: dict, record: _Record | None) -> list[tuple[str, float]]:
        if link_meta(meta).get("parent_score") is None and (record is None or record.value == SEED_PRIORITY):
            return [("bestfirst:seed", SEED_PRIORITY)]
        value = record.value if record is not None else self._value(meta)[0]
        return [("bestfirst:best_parent_score", round(value, 4))]


class SharkStrategy(_Classic):
    """Shark-search (Hersovici et al. 1998). A link's inherited score is ``SHARK_DELTA`` x its parent
    page's score when the parent is relevant (``parent_score`` >= ``threshold``), else
    ``SHARK_DELTA`` x the parent's own inherited score: it decays per hop from the last relevant
    page and restarts at the next one. The parent's inherited score is looked up by its canonical
    URL in what this strategy keeps (0 when it was forgotten); a seed's is ``SHARK_SEED_INHERITED``.

    The neighbourhood score is ``SHARK_BETA`` x anchor score + (1 - ``SHARK_BETA``) x context
    score. The spider scores a link's words once, anchor, surrounding text and URL together (the
    LinkMeta's ``link_score``: the topic model's link model when it has one, else the topic model
    reading those words), so that score is the anchor score, and the context score follows the
    paper's rule: 1 when the anchor is relevant (here: ``link_score`` >= ``threshold``), else the
    same score of the link's words. The priority is ``SHARK_GAMMA`` x inherited + (1 -
    ``SHARK_GAMMA``) x neighbourhood; found again through a better link, the best is kept. Seeds go
    first."""

    name = "shark"

    def __init__(self, threshold: float = DEFAULTS.relevance_threshold, max_urls: int = MAX_URLS) -> None:
        super().__init__(max_urls)
        self.threshold = threshold

    def _inherited(self, meta: dict) -> float | None:
        """The link's inherited score (None for a seed)."""
        score = link_meta(meta).get("parent_score")
        if score is None:
            return None
        if score >= self.threshold:
            return SHARK_DELTA * float(score)
        parent = self.urls.get(link_parent(meta) or "")
        return SHARK_DELTA * (parent.inherited if parent is not None else 0.0)

    def _neighbourhood(self, meta: dict) -> float:
        anchor = float(link_meta(meta).get("link_score") or 0.0)
        context = 1.0 if anchor >= self.threshold else anchor
        return SHARK_BETA * anchor + (1 - SHARK_BETA) * context

    def _value(self, meta: dict) -> tuple[float, float]:
        inherited = self._inherited(meta)
        if inherited is None:
            return SEED_PRIORITY, SHARK_SEED_INHERITED
        return SHARK_GAMMA * inherited + (1 - SHARK_GAMMA) * self._neighbourhood(meta), inherited

    def _parts(self, meta: dict, record: _Record | None) -> list[tuple[str, float]]:
        inherited = self._inherited(meta)
        if inherited is None:
            return [("shark:seed", SEED_PRIORITY)]
        return [("shark:inherited", round(SHARK_GAMMA * inherited, 4)),
                ("shark:neighbourhood", round((1 - SHARK_GAMMA) * self._neighbourhood(meta), 4))]


class BreadthFirstStrategy(_Classic):
    """Breadth-first by discovery order: every URL has the same value, so the first discovered goes
    first (among the hosts the politeness gate lets go now)."""

    name = "bfs"
    VALUE = 1.0

    def _value(self, meta: dict) -> tuple[float, float]:
        return self.VALUE, 0.0

    def _parts(self, meta: dict, record: _Record | None) -> list[tuple[str, float]]:
        return []  # the discovery order is all there is


def make_strategy(name: str, learner, config=DEFAULTS):
    """The strategy ``FOCUS_STRATEGY`` names; ``learned`` wraps ``learner``."""
    if name == "learned":
        return LearnedStrategy(learner)
    if name == "bestfirst":
        return BestFirstStrategy()
    if name == "shark":
        return SharkStrategy(config.relevance_threshold)
    if name == "bfs":
        return BreadthFirstStrategy()
    raise ValueError(f"no such strategy: {name!r} (one of {', '.join(STRATEGIES)})")
