"""The learner's linear model: squared-loss regression by AdaGrad SGD over hashed sparse features."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

import numpy as np

Features = Sequence[tuple[str, float]]
Vector = tuple[np.ndarray, np.ndarray]  # hashed feature indices and values


class OnlineLinearRegressor:
    """Squared-loss linear regression by AdaGrad SGD over hashed sparse features.

    Features are hashed once (``vectorise``) into the vectors the frontier keeps; ``fit_vector``
    and ``predict_vector`` work on those. Per-feature learning rates suit sparse text-like
    features that appear rarely; ``contributions`` gives each named feature's exact part of a
    prediction, for explanations. Memory is fixed: ``2 ** bits`` weights (``coef_``) and as many
    AdaGrad squared-gradient sums (``squared_gradients``, which start at 1): both grow by
    increments, so the learners of a shared crawl merge them by adding (``learning.delta``).
    """

    def __init__(self, bits: int = 20, learning_rate: float = 0.2, l2: float = 1e-5,
                 prior: dict[str, float] | None = None):
        self.mask = (1 << bits) - 1
        self.learning_rate = learning_rate
        self.l2 = l2
        self.coef_ = np.zeros(1 << bits, dtype=np.float64)
        self.squared_gradients = np.ones(1 << bits, dtype=np.float64)
        for name, weight in (prior or {}).items():
            self.coef_[self.index(name)] = weight

    def index(self, name: str) -> int:
        return zlib.crc32(name.encode("utf-8", "surrogatepass")) & self.mask

    def vectorise(self, features: Features) -> Vector:
        """Hashed, compact form of named features: what the frontier keeps for re-scoring."""
        idx = np.fromiter((self.index(n) for n, _ in features), dtype=np.int32, count=len(features))
        val = np.fromiter((v for _, v in features), dtype=np.float32, count=len(features))
        return idx, val

    def predict_vector(self, vector: Vector) -> float:
        idx, val = vector
        return float(self.coef_[idx] @ val)

    def fit_vector(self, vector: Vector, target: float, weight: float = 1.0) -> None:
        idx, val = vector
        val = val.astype(np.float64)
        error = float(self.coef_[idx] @ val) - target
        grad = weight * error * val + self.l2 * self.coef_[idx]
        np.add.at(self.squared_gradients, idx, grad * grad)
        np.subtract.at(self.coef_, idx, self.learning_rate * grad / np.sqrt(self.squared_gradients[idx]))

    def contributions(self, features: Features) -> list[tuple[str, float]]:
        return [(name, float(self.coef_[self.index(name)] * value)) for name, value in features]

    def __getstate__(self):
        # most of the 2**bits weights are untouched: keep only those that moved
        state = dict(self.__dict__)
        touched = np.flatnonzero((self.coef_ != 0) | (self.squared_gradients != 1))
        state["coef_"] = (len(self.coef_), touched, self.coef_[touched], self.squared_gradients[touched])
        del state["squared_gradients"]
        return state

    def __setstate__(self, state):
        size, touched, coef, g2 = state.pop("coef_")
        self.__dict__.update(state)
        self.coef_ = np.zeros(size, dtype=np.float64)
        self.squared_gradients = np.ones(size, dtype=np.float64)
        self.coef_[touched], self.squared_gradients[touched] = coef, g2


def per_link(sizes: Sequence[int], values: np.ndarray) -> np.ndarray:
    """Per-link sums of ``values`` in the joined batch form: link i's are the next ``sizes[i]``."""
    sizes = np.asarray(sizes, dtype=np.int64)
    out = np.zeros(len(sizes))
    if len(values):
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        nonempty = sizes > 0
        out[nonempty] = np.add.reduceat(np.asarray(values, dtype=np.float64), starts[nonempty])
    return out


def is_vector(features) -> bool:
    """True for the hashed (idx, val) form that ``vectorise`` returns."""
    return isinstance(features, tuple) and len(features) == 2 and isinstance(features[0], np.ndarray)


def packed(vector: Vector | None) -> bytes | None:
    """A vector in one bytes object, indices then values (``_PathNode.vector`` reads it back)."""
    if vector is None:
        return None
    idx, val = vector
    return np.asarray(idx, np.int32).tobytes() + np.asarray(val, np.float32).tobytes()


__all__ = ["Features", "OnlineLinearRegressor", "Vector", "is_vector", "packed", "per_link"]
