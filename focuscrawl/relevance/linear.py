"""P(positive) of a fitted TF-IDF + binary logistic regression Pipeline, without scikit-learn's
per-call overhead.

The crawl scores one page (and one page's links) at a time. For one short document,
``Pipeline.predict_proba`` spends ~0.7 ms on input validation and building sparse matrices, five
to ten times the arithmetic. :class:`LinearScorer` does the same arithmetic on plain arrays: the
pipeline's own analyzer, the count of each vocabulary term, ``1 + log(tf)``, times idf, divided by
the row's L2 norm, dot the coefficients, plus the intercept, then the logistic function. It uses
the same dtypes and the same order of summation as scikit-learn and SciPy (a row's squares and
products are added one after the other in ascending term order, the squares in float64, the
products in the type SciPy computes them in), so the probabilities are the same numbers (on the
WebKB pages and links, bit for bit). In case a scikit-learn release computes them differently,
the first batch is scored both ways and the scorer steps aside (the pipeline scores, as before) if
they disagree.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy.special import expit
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

logger = logging.getLogger(__name__)

#: The first batch's probabilities must match the pipeline's to this (they match exactly).
AGREEMENT = 1e-9


class LinearScorer:
    """``pipeline.predict_proba(docs)[:, 1]`` for a ``[TfidfVectorizer, LogisticRegression]``
    pipeline with two classes (build it with :meth:`for_pipeline`)."""

    def __init__(self, pipeline, vectorizer: TfidfVectorizer, classifier: LogisticRegression):
        self.pipeline = pipeline
        self.analyze = vectorizer.build_analyzer()
        self.vocabulary = vectorizer.vocabulary_
        self.dtype = vectorizer.dtype
        self.binary = vectorizer.binary
        self.sublinear_tf = vectorizer.sublinear_tf
        self.idf = vectorizer.idf_ if vectorizer.use_idf else None
        self.l2 = vectorizer.norm == "l2"
        self.coef = np.ascontiguousarray(classifier.coef_[0])
        self.intercept = classifier.intercept_
        # SciPy's sparse-dense product computes in the common type (float32 when both are)
        self.product_dtype = np.result_type(self.dtype, self.coef.dtype)
        self.checked = False  # the first batch was scored both ways and agreed
        self.disagrees = False  # ... or did not: the pipeline scores

    @classmethod
    def for_pipeline(cls, pipeline) -> LinearScorer | None:
        """A scorer for the pipelines ``scrapy train`` builds; None for any other kind."""
        steps = getattr(pipeline, "steps", None)
        if not steps or len(steps) != 2:
            return None
        vectorizer, classifier = steps[0][1], steps[1][1]
        if type(vectorizer) is not TfidfVectorizer or type(classifier) is not LogisticRegression:
            return None
        try:
            ok = (vectorizer.norm in ("l2", None) and len(classifier.classes_) == 2
                  and classifier.coef_.shape == (1, len(vectorizer.vocabulary_))
                  and (not vectorizer.use_idf or len(vectorizer.idf_) == len(vectorizer.vocabulary_)))
        except (AttributeError, TypeError):  # not fitted
            return None
        return cls(pipeline, vectorizer, classifier) if ok else None

    def score_many(self, docs: Sequence) -> list[float]:
        if not docs:
            return []
        if self.disagrees:
            return self.pipeline.predict_proba(docs)[:, 1].tolist()
        proba = self._proba(docs)
        if not self.checked:
            reference = self.pipeline.predict_proba(docs)[:, 1]
            if not np.allclose(proba, reference, rtol=0, atol=AGREEMENT):
                logger.warning("the fast scorer disagrees with scikit-learn's pipeline (by up to %.3g): "
                               "the pipeline scores", float(np.abs(proba - reference).max()))
                self.disagrees = True
                return reference.tolist()
            self.checked = True
        return proba.tolist()

    def _proba(self, docs: Sequence) -> np.ndarray:
        term_of, analyze = self.vocabulary.get, self.analyze
        index, counts, lengths = [], [], []
        for doc in docs:
            # CountVectorizer._count_vocab: each vocabulary term's count, terms in ascending order
            terms = sorted(Counter([j for j in map(term_of, analyze(doc)) if j is not None]).items())
            index += [j for j, _ in terms]
            counts += [n for _, n in terms]
            lengths.append(len(terms))
        lengths = np.array(lengths, dtype=np.intp)
        index = np.array(index, dtype=np.intp)
        data = np.array(counts, dtype=self.dtype)
        if self.binary:
            data.fill(1)
        if self.sublinear_tf:  # TfidfTransformer.transform, in place and in the vectorizer's dtype
            np.log(data, data)
            data += 1.0
        if self.idf is not None:
            data *= self.idf[index]
        if self.l2:  # inplace_csr_row_normalize_l2: squares in the data's dtype, summed in float64
            norms = np.sqrt(_row_sums(data * data, lengths, np.float64))
            norms[norms == 0.0] = 1.0  # an empty row is left as it is
            data = (data / np.repeat(norms, lengths)).astype(data.dtype)
        # LogisticRegression.decision_function: SciPy's csr_matvecs (products summed in term order,
        # in the common type), plus the intercept; then predict_proba's expit
        dtype = self.product_dtype
        decision = _row_sums(data.astype(dtype) * self.coef[index], lengths, dtype) + self.intercept
        return expit(decision)


def _row_sums(values: np.ndarray, lengths: np.ndarray, dtype) -> np.ndarray:
    """Per row, the sum of its values added one after the other in ``dtype``, as a C loop adds
    them (``np.add.reduceat`` sums pairwise, which rounds differently)."""
    if not len(values):
        return np.zeros(len(lengths), dtype=dtype)
    width = int(lengths.max())
    padded = np.zeros((len(lengths), width), dtype=dtype)  # trailing zeros do not change a sum
    starts = np.cumsum(lengths) - lengths
    padded[np.repeat(np.arange(len(lengths)), lengths),
           np.arange(len(values)) - np.repeat(starts, lengths)] = values
    return np.cumsum(padded, axis=1)[:, -1]
