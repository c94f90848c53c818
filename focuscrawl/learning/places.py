"""What the learner knows of the places a link leads to: the yield of a host, a path prefix or a
parent page (``Yield``; ``Prior`` for a place never fetched), the fetched pages of crawl paths that
credit flows back along (``PathNode``), and the link features they give (``dynamic_features``)."""

from __future__ import annotations

import math

import numpy as np

from focuscrawl.config import DEFAULTS
from focuscrawl.learning.regressor import Vector, packed


class Yield:
    """Fetched, relevant and wasted (404, error, useless) pages under one host, path prefix or
    parent page."""

    __slots__ = ("fetched", "relevant", "wasted")

    def __init__(self) -> None:
        self.fetched = 0
        self.relevant = 0
        self.wasted = 0

    def rate(self) -> float:
        # Beta(1, 3) prior: an unknown place is assumed to yield 25%
        return (self.relevant + 1.0) / (self.fetched + 4.0)

    def waste(self) -> float:
        return (self.wasted + 0.5) / (self.fetched + 2.0)

    def shrunk(self, fetches: float) -> "Prior":
        """The same rates over at most ``fetches`` observations: pooled evidence used as a prior
        for one place, which must not be as certain as the pool."""
        out = Prior()
        scale = min(1.0, fetches / self.fetched) if self.fetched else 0.0
        out.fetched, out.relevant, out.wasted = self.fetched * scale, self.relevant * scale, self.wasted * scale
        return out

    def uncertainty(self) -> float:
        """Standard deviation of the Beta posterior of the yield: what one more look could teach."""
        a, b = self.relevant + 1.0, self.fetched - self.relevant + 3.0
        return math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


class Prior(Yield):
    """What is assumed about a place never fetched."""

    __slots__ = ()


UNSEEN = Prior()


class PathNode:
    """A fetched page on some crawl path: how we got there and what it was worth.

    Its value is its own reward plus ``decay`` times what its fetched children are worth
    together (each child counted at its latest value, never below zero, the sum capped at
    ``hub_cap``): a hub that led to twenty relevant pages is worth more than one that led to one,
    which is what makes links like it worth following early."""

    __slots__ = ("features", "url", "parent", "reward", "children_value", "passed_up", "counted")

    def __init__(self, features: Vector | None, url: str, parent: str | None, reward: float):
        # the link's features packed in one bytes object (indices, then values): a node lives as
        # long as the crawl holds its page (up to ``max_nodes``), and two arrays in a tuple cost
        # about 300 bytes more a node than the 8 bytes a feature they hold
        self.features = packed(features)
        self.url = url
        self.parent = parent
        self.reward = reward
        self.children_value = 0.0  # sum of the children's contributions
        self.passed_up = 0.0  # what this node contributes to its parent's children_value now
        self.counted: float | None = None  # the label its link's words were counted with

    def value(self, decay: float, hub_cap: float = DEFAULTS.hub_cap) -> float:
        return self.reward + decay * min(self.children_value, hub_cap)

    @property
    def vector(self) -> Vector | None:
        """The link's features (read-only views of the packed bytes), None when it had none."""
        features = self.features
        if features is None or isinstance(features, tuple):  # a checkpoint from before they were packed
            return features
        n = len(features) // 8
        return np.frombuffer(features, np.int32, n), np.frombuffer(features, np.float32, n, 4 * n)


def dynamic_features(host: Yield, prefix: Yield, siblings: Yield | None) -> list[tuple[str, float]]:
    """The evidence about a link that changes as the crawl goes: how its host, path prefix and
    siblings (links from the same page) have paid off so far."""
    return place_features(host, prefix) + sibling_features(siblings)


def place_features(host: Yield, prefix: Yield) -> list[tuple[str, float]]:
    """The dynamic features of a link's host and path prefix (shared by many queued links)."""
    feats = [("host_yield", host.rate()), ("prefix_yield", prefix.rate()),
             ("host_waste", host.waste()), ("prefix_waste", prefix.waste())]
    if isinstance(host, Prior):
        feats.append(("host_unseen", 1.0))
    return feats


def sibling_features(siblings: Yield | None) -> list[tuple[str, float]]:
    """The dynamic features of the links found on the same page: none while none was fetched."""
    if siblings is not None and siblings.fetched:
        return [("sibling_yield", siblings.rate()), ("sibling_waste", siblings.waste())]
    return []


def place_uncertainty(host: Yield, prefix: Yield) -> float:
    """What one more look at a link's host and path prefix could teach (the exploration bonus,
    before its weight): it shrinks as their yields become known."""
    return host.uncertainty() + prefix.uncertainty()


def sibling_uncertainty(siblings: Yield | None) -> float:
    """The same of the page a link was found on: largest while none of its links was fetched."""
    return (siblings or UNSEEN).uncertainty()


__all__ = ["PathNode", "Prior", "UNSEEN", "Yield", "dynamic_features", "place_features", "place_uncertainty",
           "sibling_features", "sibling_uncertainty"]
