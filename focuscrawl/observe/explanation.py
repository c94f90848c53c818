"""Why a URL waiting in the frontier has its priority: the one home of the explanation that
``scrapy explain`` prints for a waiting URL and that the crawl's live status shows for its best
URLs, so that the two never disagree.

The frontier keeps hashed feature vectors, and an explanation needs the features' names: they
are rebuilt from the URL and the link that led to it (its request's meta), as the learner
builds them at enqueue. A classic strategy (``FOCUS_STRATEGY``) set the priorities instead:
then it says what they came from. Pure: no Scrapy, nothing read from disk.
"""

from __future__ import annotations

from dataclasses import dataclass

from focuscrawl.learning import link_context, link_features
from focuscrawl.meta import link_parent

#: features shown for a URL unless asked for more
DEFAULT_TOP = 3


@dataclass(frozen=True)
class Explanation:
    """``priority``: the URL's priority if it were scored now (None when nothing can score it);
    ``why``: [name, contribution] of the features that made it, largest first (JSON-able)."""

    priority: float | None
    why: list[list]


NOTHING = Explanation(None, [])


def waiting_explanation(canonical: str, meta: dict, learner, strategy=None, top: int = DEFAULT_TOP,
                        has_features: bool = True) -> Explanation:
    """The priority a waiting URL would get now and the features behind it.

    ``learner``: the crawl's ``LinkRewardLearner``; ``strategy``: the crawl's strategy, or None
    (or the ``learned`` one) when the learner sets the priorities. ``has_features``: whether the
    frontier entry was scored from link features at all (a revisit or a robots.txt request was
    not: nothing to explain)."""
    if strategy is not None and getattr(strategy, "name", "learned") != "learned":
        priority = strategy.priority(canonical)
        return Explanation(None if priority is None else round(float(priority), 4),
                           [[name, value] for name, value in strategy.explain(canonical, meta)])
    if not has_features:
        return NOTHING
    features = link_features(link_context(canonical, meta))
    parent = link_parent(meta)
    return Explanation(round(float(learner.score(features, canonical, parent)), 4),
                       [[name, value] for name, value in learner.explain(features, canonical, parent, top=top)])


def format_why(parts: list) -> str:
    """An explanation's features as one line: ``name +0.1234, name -0.0100``."""
    return ", ".join(f"{name} {value:+.4f}" for name, value in parts) if parts else "(not recorded)"


__all__ = ["DEFAULT_TOP", "Explanation", "format_why", "waiting_explanation"]
