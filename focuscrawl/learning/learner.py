"""The online link-reward learner.

Every link gets a predicted reward: a linear model over hashed link features plus the current
yield of its host and path prefix, plus an exploration bonus that shrinks as evidence about the
host and prefix accumulates (a UCB-style bandit), so the crawl neither sticks to one site nor
scatters.

When a fetched page is scored, the link that led to it is trained toward the page's value, and
credit flows back along the path (as in Rennie & McCallum's Q-values): a page's value is its own
reward plus ``decay`` times the best value among its children, so a hub whose children are
relevant is valued even when the hub itself is not. Waste (404s, errors, useless types,
duplicates) is a small negative reward, which lowers links like the ones that led to it.
"""

from __future__ import annotations

import math
import zlib
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from focuscrawl.urls import host_key, path_prefix

Features = Sequence[tuple[str, float]]

WASTE_REWARD = -0.2


class OnlineLinearRegressor:
    """Squared-loss linear regression by AdaGrad SGD over hashed sparse features.

    scikit-learn's shape (``partial_fit``, ``predict``) with per-feature learning rates, which
    suit sparse text-like features that appear rarely, and exact per-feature contributions for
    explanations. Memory is fixed: ``2 ** bits`` weights.
    """

    def __init__(self, bits: int = 20, learning_rate: float = 0.2, l2: float = 1e-5,
                 prior: dict[str, float] | None = None):
        self.mask = (1 << bits) - 1
        self.learning_rate = learning_rate
        self.l2 = l2
        self.coef_ = np.zeros(1 << bits, dtype=np.float64)
        self._g2 = np.ones(1 << bits, dtype=np.float64)
        self.n_updates = 0
        for name, weight in (prior or {}).items():
            self.coef_[self.index(name)] = weight

    def index(self, name: str) -> int:
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) & self.mask

    def _vectorise(self, features: Features) -> tuple[np.ndarray, np.ndarray]:
        idx = np.fromiter((self.index(n) for n, _ in features), dtype=np.int64, count=len(features))
        val = np.fromiter((v for _, v in features), dtype=np.float64, count=len(features))
        return idx, val

    def predict_one(self, features: Features) -> float:
        idx, val = self._vectorise(features)
        return float(self.coef_[idx] @ val)

    def predict(self, X: Sequence[Features]) -> np.ndarray:
        return np.array([self.predict_one(f) for f in X], dtype=np.float64)

    def partial_fit(self, X: Sequence[Features], y: Sequence[float], sample_weight: Sequence[float] | None = None):
        weights = sample_weight if sample_weight is not None else [1.0] * len(X)
        for features, target, weight in zip(X, y, weights):
            idx, val = self._vectorise(features)
            error = float(self.coef_[idx] @ val) - target
            grad = weight * error * val + self.l2 * self.coef_[idx]
            np.add.at(self._g2, idx, grad * grad)
            np.subtract.at(self.coef_, idx, self.learning_rate * grad / np.sqrt(self._g2[idx]))
            self.n_updates += 1
        return self

    def contributions(self, features: Features) -> list[tuple[str, float]]:
        return [(name, float(self.coef_[self.index(name)] * value)) for name, value in features]


class _Yield:
    """Fetched pages and relevant pages under one host or path prefix."""

    __slots__ = ("fetched", "relevant")

    def __init__(self) -> None:
        self.fetched = 0
        self.relevant = 0

    def rate(self) -> float:
        # Beta(1, 3) prior: an unknown place is assumed to yield 25%
        return (self.relevant + 1.0) / (self.fetched + 4.0)


class _PathNode:
    """A fetched page on some crawl path: how we got there and what it was worth."""

    __slots__ = ("features", "url", "parent", "reward", "best_child")

    def __init__(self, features: Features, url: str, parent: str | None, reward: float):
        self.features = features
        self.url = url
        self.parent = parent
        self.reward = reward
        self.best_child = 0.0

    def value(self, decay: float) -> float:
        return self.reward + decay * self.best_child


class LinkRewardLearner:
    def __init__(self, credit_decay: float = 0.5, exploration: float = 0.3, credit_hops: int = 3,
                 max_nodes: int = 200_000, version_every: int = 16, bits: int = 20):
        self.model = OnlineLinearRegressor(
            bits=bits, prior={"bias": 0.1, "seed": 0.6, "parent_score": 0.5, "host_yield": 0.3, "prefix_yield": 0.3}
        )
        self.credit_decay = credit_decay
        self.exploration = exploration
        self.credit_hops = credit_hops
        self.max_nodes = max_nodes
        self.version_every = max(1, version_every)
        self.hosts: dict[str, _Yield] = {}
        self.prefixes: dict[str, _Yield] = {}
        self.nodes: OrderedDict[str, _PathNode] = OrderedDict()
        self.observations = 0
        self.version = 0

    # --- scoring ------------------------------------------------------------------------------
    def _dynamic(self, url: str) -> list[tuple[str, float]]:
        host = self.hosts.get(host_key(url))
        prefix = self.prefixes.get(path_prefix(url))
        return [("host_yield", host.rate() if host else 0.25), ("prefix_yield", prefix.rate() if prefix else 0.25)]

    def bonus(self, url: str) -> float:
        host = self.hosts.get(host_key(url))
        prefix = self.prefixes.get(path_prefix(url))
        n_host = host.fetched if host else 0
        n_prefix = prefix.fetched if prefix else 0
        return self.exploration * 0.5 * (1 / math.sqrt(1 + n_host) + 1 / math.sqrt(1 + n_prefix))

    def score(self, features: Features, url: str) -> float:
        return self.model.predict_one(list(features) + self._dynamic(url)) + self.bonus(url)

    def score_many(self, items: Sequence[tuple[Features, str]]) -> list[float]:
        return [self.score(f, u) for f, u in items]

    def explain(self, features: Features, url: str, top: int = 3) -> list[tuple[str, float]]:
        """The features that contributed most to a link's priority (by absolute contribution)."""
        parts = self.model.contributions(list(features) + self._dynamic(url))
        parts.append(("exploration", self.bonus(url)))
        parts.sort(key=lambda kv: abs(kv[1]), reverse=True)
        return [(name, round(value, 4)) for name, value in parts[:top]]

    # --- learning -----------------------------------------------------------------------------
    def observe(self, url: str, parent_url: str | None, features: Features | None, reward: float,
                relevant: bool) -> None:
        """A page reached by a link with ``features`` (from ``parent_url``) was worth ``reward``."""
        self.observations += 1
        for table, key in ((self.hosts, host_key(url)), (self.prefixes, path_prefix(url))):
            stats = table.get(key)
            if stats is None:
                stats = table[key] = _Yield()
            stats.fetched += 1
            stats.relevant += int(relevant)
        node = self.nodes.get(url)
        if node is None:
            node = _PathNode(tuple(features or ()), url, parent_url, reward)
            self.nodes[url] = node
            if len(self.nodes) > self.max_nodes:
                self.nodes.popitem(last=False)
        else:
            node.reward = reward
        self._train(node)
        # credit flows back to ancestors whose best child just improved
        child_value = node.value(self.credit_decay)
        parent_key = node.parent
        for _ in range(self.credit_hops):
            parent = self.nodes.get(parent_key) if parent_key else None
            if parent is None or child_value <= parent.best_child:
                break
            parent.best_child = child_value
            self.nodes.move_to_end(parent.url)
            self._train(parent)
            child_value = parent.value(self.credit_decay)
            parent_key = parent.parent
        if self.observations % self.version_every == 0:
            self.version += 1

    def _train(self, node: _PathNode) -> None:
        if node.features:
            self.model.partial_fit([list(node.features) + self._dynamic(node.url)], [node.value(self.credit_decay)])

    def host_stats(self, host: str) -> tuple[int, int]:
        stats = self.hosts.get(host)
        return (stats.fetched, stats.relevant) if stats else (0, 0)
