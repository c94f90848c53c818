"""The labelling queue: which of a crawl's pages are most worth a person's judgement.

A label is worth most where it moves the topic model most, on a page like many others, and not
on a page like one already judged. Four things say where:

- **Uncertainty**: the model's probability near its decision point (0.5 on the classifier's
  balanced scale, which is also where a page becomes an item). For a logistic regression over
  unit-length TF-IDF rows the expected change a label makes to the weights (the expected gradient
  length, Settles & Craven 2008) is ``2 p (1 - p)``, so "the model least sure" and "the pages a
  label would change most" are one number: ``4 p (1 - p)``, 1 at the boundary.
- **Representativeness** ("information density", Settles & Craven): a label teaches the model
  about the pages like the one judged, so the uncertainty is weighed by the page's mean cosine
  similarity to its ``NEIGHBOURS`` nearest fetched pages. An outlier the model is unsure of
  teaches it about itself alone.
- **Spread**: pages are taken greedily, each next page's value divided by ``1 + the pages already
  chosen from its host``, so a batch spans the crawl's hosts; a page within ``NEAR_DUPLICATE``
  cosine of a page chosen or already judged waits until the others are taken (a second label of
  the same page teaches nothing).
- **Both sides of the boundary**: pages are taken in turn from those the model leans on topic
  (``p >= 0.5``) and those it leans off topic. A topic is a small part of what a crawl fetches, so
  the most uncertain pages are mostly off-topic ones: judged alone, they teach the model what the
  topic is not, and a retrained model turned down the topic's own pages (faculty home pages on
  WebKB: recall 0.39 to 0.09 after 45 such labels of 50). Taking turns asks about the pages it
  would export as well (Ertekin et al. 2007, "Learning on the border").

Measured against labels chosen at random from the same pages (``bench/labelling.py``, WebKB): the
retrained model is better on both targets, where plain uncertainty sampling was worse than random
on one of them and spreading over site sections as well as hosts hurt (see docs/research.md,
"Choosing the pages to label").

The queue reads the crawl store incrementally (``CrawlStore.pages_after``), so it keeps up with a
running crawl at the cost of the new pages only, and leaves out pages already labelled (a skip
too), duplicates, failed fetches and pages with no text. Scrapy-free: ``scrapy label``, the
console and the benchmark drive it directly.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from urllib.parse import urlsplit

import numpy as np
from scipy import sparse

#: characters of main text shown with a candidate
EXTRACT_CHARS = 600
#: cosine similarity at and above which another fetched page counts as "like" a candidate (said in ``why``)
SIMILAR_COSINE = 0.5
#: nearest fetched pages a page's representativeness is measured over
NEIGHBOURS = 10
#: cosine similarity at and above which a page is a near-copy of one chosen or judged: it waits
NEAR_DUPLICATE = 0.8
#: fetched pages representativeness is measured against (a uniform sample of the pool beyond it),
#: so a page costs the same to add however big the crawl
REFERENCE_PAGES = 2000


@dataclass
class Candidate:
    """A page offered for judgement."""

    url: str
    final_url: str
    title: str
    host: str
    score: float  # the model's probability now (the balanced classifier's scale, as pages are scored)
    extract: str
    why: str
    crawl: int
    value: float = 0.0  # the queue's value of a label here, after spreading (for ordering and tests)

    def as_dict(self) -> dict:
        return asdict(self)


def section_of(url: str) -> tuple[str, str]:
    """(host, section): the section is the first directory of the path ("/~smith/", "/courses/"),
    "/" for a page at the site's root."""
    parts = urlsplit(url)
    segments = [s for s in (parts.path or "/").split("/") if s]
    first = segments[0] if len(segments) > 1 else ""
    return (parts.hostname or "").lower(), f"/{first}/" if first else "/"


def extract_of(text: str, limit: int = EXTRACT_CHARS) -> str:
    """The start of a page's main text, whitespace collapsed, cut at a word."""
    words = " ".join((text or "").split())
    if len(words) <= limit:
        return words
    cut = words.rfind(" ", 0, limit)
    return words[: cut if cut > limit // 2 else limit] + " …"


def uncertainty(p: np.ndarray) -> np.ndarray:
    """4 p (1 - p): 1 where the model cannot tell, 0 where it is sure."""
    p = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
    return 4.0 * p * (1.0 - p)


def density(X, reference, neighbours: int = NEIGHBOURS, chunk: int = 1000) -> np.ndarray:
    """Each row's mean cosine similarity to its ``neighbours`` most similar rows of ``reference``
    (unit-length rows; a row found in the reference, itself, is not its own neighbour)."""
    X, R = sparse.csr_matrix(X), sparse.csr_matrix(reference)
    out = np.zeros(X.shape[0])
    if not R.shape[0]:
        return out
    k = min(neighbours, max(1, R.shape[0] - 1))
    for start in range(0, X.shape[0], chunk):
        sims = (X[start:start + chunk] @ R.T).toarray()
        sims[sims >= 1.0 - 1e-9] = 0.0  # the row itself (or an exact copy: no evidence of a kind of page)
        part = np.partition(sims, sims.shape[1] - k, axis=1)[:, -k:]
        out[start:start + chunk] = part.mean(axis=1)
    return out


def choose(vectors, probabilities, hosts: list[str], n: int, labelled=None, densities=None) -> list[tuple[int, float]]:
    """The ``n`` rows most worth judging, as (row, value) in the order to ask them.

    ``vectors``: the pool's rows (unit-length, sparse or dense); ``probabilities``: the model's for
    each row; ``hosts``: each row's host; ``labelled``: rows of pages judged before (same space);
    ``densities``: each row's representativeness (``density``; measured against the pool when
    not given). The rows are taken in turn from each side of the model's boundary (on-topic side
    first), from one side alone when the other has none left but near-copies. Pure: the queue
    and the tests call it directly.
    """
    X = sparse.csr_matrix(vectors)
    rows = X.shape[0]
    if rows == 0 or n <= 0:
        return []
    dens = density(X, X) if densities is None else np.asarray(densities, dtype=float)
    base = uncertainty(probabilities) * dens
    closest = np.zeros(rows)  # cosine to the nearest page judged or chosen
    if labelled is not None and sparse.csr_matrix(labelled).shape[0]:
        closest = (X @ sparse.csr_matrix(labelled).T).max(axis=1).toarray().ravel()
    leans_on = np.asarray(probabilities, dtype=float) >= 0.5
    taken_from: dict[str, int] = {}
    taken = np.zeros(rows, dtype=bool)
    chosen: list[tuple[int, float]] = []
    for turn in range(min(n, rows)):
        spread = np.array([1.0 / (1 + taken_from.get(h, 0)) for h in hosts])
        value = base * spread
        value = np.where(closest >= NEAR_DUPLICATE, value * 0.01, value)
        value[taken] = -1.0
        side = leans_on if turn % 2 == 0 else ~leans_on
        if (side & ~taken & (closest < NEAR_DUPLICATE)).any():  # near-copies wait on either side
            value[~side] = -1.0
        best = int(np.argmax(value))
        chosen.append((best, float(value[best])))
        taken[best] = True
        taken_from[hosts[best]] = taken_from.get(hosts[best], 0) + 1
        closest = np.maximum(closest, (X @ X[best].T).toarray().ravel())
    return chosen


class LabelQueue:
    """The pages of a crawl store most worth judging, by a topic model.

    ``next(n)`` re-reads the pages stored since its last call and the labels given since (by this
    process or another: ``scrapy label`` beside a running crawl), and returns the ``n`` best
    Candidates. ``crawl`` keeps one crawl's pages (None: every crawl's). ``model`` is a
    ``TopicModel``, given, never imported: the queue reads pages through its public doors
    (``document``, ``pipeline``, ``score_many``), so labelling stays below relevance."""

    def __init__(self, store, model, crawl: int | None = None) -> None:
        self.store = store
        self.model = model
        self.crawl = crawl
        steps = getattr(model.pipeline, "named_steps", {})
        self._tfidf = steps.get("tfidf")
        self._classifier = steps.get("classifier")
        self._last_id = 0
        self._rows: dict[str, dict] = {}  # requested url -> {"page", "vector", "p", "density", "measured"}
        # a uniform sample of the pages seen (reservoir), the neighbours representativeness is measured among
        self._reference: list = []
        self._seen = 0
        self._random = random.Random(0)

    # --- reading the store ---------------------------------------------------------------------

    def _refresh(self) -> None:
        new = []
        for row_id, page in self.store.pages_after(self._last_id, crawl=self.crawl):
            self._last_id = row_id
            if page.get("duplicate_of") or not (page.get("title") or page.get("text")):
                self._rows.pop(page.get("url"), None)
                continue
            status = page.get("status")
            if isinstance(status, int) and not 200 <= status < 300:
                continue
            new.append(page)
        if not new:
            return
        vectors, probabilities = self._vectorise(new)
        for i, page in enumerate(new):
            self._rows[page["url"]] = {"page": page, "vector": vectors[i], "p": float(probabilities[i]),
                                       "density": 0.0, "measured": 0}
            self._sample(vectors[i])

    def _sample(self, vector) -> None:
        """Keep ``vector`` in the reference sample with the reservoir's odds."""
        self._seen += 1
        if len(self._reference) < REFERENCE_PAGES:
            self._reference.append(vector)
        elif (slot := self._random.randrange(self._seen)) < REFERENCE_PAGES:
            self._reference[slot] = vector

    def _densities(self, urls: list[str]) -> np.ndarray:
        """Each page's representativeness, measured again once the reference has doubled since it
        was (so the first pages of a crawl are not judged against a handful)."""
        size = len(self._reference)
        stale = [u for u in urls if 2 * self._rows[u]["measured"] < size or not self._rows[u]["measured"]]
        if stale:
            reference = sparse.vstack(self._reference).tocsr()
            values = density(sparse.vstack([self._rows[u]["vector"] for u in stale]).tocsr(), reference)
            for url, value in zip(stale, values):
                self._rows[url]["density"], self._rows[url]["measured"] = float(value), size
        return np.array([self._rows[u]["density"] for u in urls])

    def _vectorise(self, pages: list[dict]):
        """Unit-length rows in the model's own feature space and the model's probabilities (one
        transform serves both); a pipeline of another shape falls back to its word counts."""
        docs = [self.model.document(p.get("title") or "", p.get("text") or "") for p in pages]
        if self._tfidf is not None and self._classifier is not None:
            X = self._tfidf.transform(docs)
            probabilities = self._classifier.predict_proba(X)[:, 1]
        else:
            from sklearn.feature_extraction.text import HashingVectorizer
            X = HashingVectorizer(n_features=2**18).transform(docs)
            probabilities = np.asarray(self.model.score_many([(p.get("title") or "", p.get("text") or "")
                                                              for p in pages]))
        return _unit_rows(sparse.csr_matrix(X)), probabilities

    def pool(self) -> list[dict]:
        """The pages the queue chooses from now (stored, with text, not a duplicate, not labelled):
        what a random choice of pages to judge would draw from."""
        self._refresh()
        judged = {row["url"] for row in self.store.labels(crawl=self.crawl)}
        return [row["page"] for url, row in self._rows.items() if url not in judged]

    # --- choosing ------------------------------------------------------------------------------

    def next(self, n: int = 10) -> list[Candidate]:
        """The ``n`` pages most worth judging now, best first."""
        self._refresh()
        judged = {row["url"] for row in self.store.labels(crawl=self.crawl)}
        urls = [url for url in self._rows if url not in judged]
        if not urls or n <= 0:
            return []
        X = sparse.vstack([self._rows[u]["vector"] for u in urls]).tocsr()
        p = np.array([self._rows[u]["p"] for u in urls])
        keys = [section_of(self._rows[u]["page"].get("final_url") or u) for u in urls]
        known = [self._rows[u]["vector"] for u in judged if u in self._rows]
        labelled = sparse.vstack(known).tocsr() if known else None
        picks = choose(X, p, [k[0] for k in keys], n, labelled=labelled, densities=self._densities(urls))
        return [self._candidate(urls[i], X, i, p[i], keys[i], value) for i, value in picks]

    def _candidate(self, url: str, X, i: int, p: float, key: tuple[str, str], value: float) -> Candidate:
        page = self._rows[url]["page"]
        similar = int(((X @ X[i].T).toarray().ravel() >= SIMILAR_COSINE).sum()) - 1
        return Candidate(
            url=url, final_url=page.get("final_url") or url, title=page.get("title") or "",
            host=key[0], score=round(float(p), 4), extract=extract_of(page.get("text") or ""),
            why=_why(float(p), similar, key), crawl=int(page.get("crawl") or self.crawl or 0),
            value=round(value, 4),
        )


def _unit_rows(X: sparse.csr_matrix) -> sparse.csr_matrix:
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags(1.0 / norms) @ X


def _why(p: float, similar: int, key: tuple[str, str]) -> str:
    if abs(p - 0.5) < 0.15:
        lean = f"the model cannot tell ({p:.2f})"
    else:
        lean = f"the model leans {'on' if p > 0.5 else 'off'} topic ({p:.2f}) but is not sure"
    like = f"; {similar} other fetched page{'s' if similar != 1 else ''} like it" if similar > 0 else ""
    return f"{lean}{like}; from {key[0]}{key[1]}"


__all__ = ["Candidate", "LabelQueue", "choose", "density", "extract_of", "section_of", "uncertainty"]
