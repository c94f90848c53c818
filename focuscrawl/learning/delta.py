"""What a link-reward learner learned since a mark, as a delta another learner can add to its own.

Everything a learner shares is a sum of increments: the weights and AdaGrad's squared-gradient
sums move by steps, the yield counts of hosts, path prefixes and parent pages grow by fetches, the
link word counts by links. So learners that each learned on their own pages merge by adding each
other's deltas, in whatever order they arrive. A learner's ``ChangeLog`` (``LinkRewardLearner.
track_changes``) gives its delta since the last one (``take``), adds another's (``merge``), and
gives its whole state as a delta to an empty learner (``state``, a snapshot) or takes one over
(``replace``).

The counts are noted as the learner changes them (a place a page, too many to compare); the
arrays (2**20 weights) are compared with their state at the last mark, where the weights moved.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field

import numpy as np

from focuscrawl.bounded import drop_oldest
from focuscrawl.learning.places import Yield

#: the learner's place tables whose yield counts are shared
TABLES = ("hosts", "prefixes", "children")
#: the counts a place holds, in the order a delta lists them
FIELDS = ("fetched", "relevant", "wasted")
#: marks between full comparisons of the link word counts with their marked state (the others
#: compare them only where the weights moved: see ``ChangeLog.arrays``)
FULL_DIFF_EVERY = 16


def _empty(dtype) -> np.ndarray:
    return np.zeros(0, dtype)


@dataclass
class LearnerDelta:
    """A learner's changes, ready to add to another learner (``ChangeLog.merge``).

    ``indices``: where the arrays moved; ``weights``, ``squared_gradients`` and, for a learner of
    its links' words, ``word_positive`` and ``word_total``: by how much there (empty when not
    carried). ``words_marked``: feature indices newly known as words. ``counts``: per table of
    ``TABLES``, the places' keys and their counts' changes, flat (``len(FIELDS)`` a key).
    ``new_hosts``: the change of the new-hosts prior's counts; ``links``: of the link word counts'
    (links, positive links). ``credit``: what the children of pages this learner does not hold
    are worth now, more: page URL -> (change, hops of the path left). ``observations``: pages
    observed (for the record, not merged)."""

    observations: int = 0
    indices: np.ndarray = field(default_factory=lambda: _empty(np.uint32))
    weights: np.ndarray = field(default_factory=lambda: _empty(np.float64))
    squared_gradients: np.ndarray = field(default_factory=lambda: _empty(np.float32))
    word_positive: np.ndarray = field(default_factory=lambda: _empty(np.float32))
    word_total: np.ndarray = field(default_factory=lambda: _empty(np.float32))
    words_marked: np.ndarray = field(default_factory=lambda: _empty(np.uint32))
    counts: dict[str, tuple[list, list]] = field(default_factory=dict)
    new_hosts: list | None = None
    links: tuple[float, float] | None = None
    credit: dict[str, tuple[float, int]] = field(default_factory=dict)


class ChangeLog:
    """A learner's changes since its last mark (``LinkRewardLearner.track_changes`` makes it): the
    counts as the learner notes them (``count``), the arrays against a copy of their marked state.
    ``take`` gives them as a delta, ``merge`` adds another learner's, ``state`` and ``replace``
    give and take a learner's whole shared state. Costs a copy of the arrays: ~17 MB at 2**20
    weights, ~26 MB with the link word counts."""

    def __init__(self, learner) -> None:
        self.learner = learner
        self.model = learner.model
        self.words = learner.words
        self.places: dict[str, dict] = {name: {} for name in TABLES}  # key -> [change per field]
        self.new_hosts = [0] * len(FIELDS)
        self.base: dict = {}
        self.marks = 0

    # --- noting -----------------------------------------------------------------------------------
    def count(self, table: str, key, fetched: int, relevant: int, wasted: int) -> None:
        notes = self.places[table]
        change = notes.get(key)
        if change is None:
            notes[key] = [fetched, relevant, wasted]
        else:
            change[0] += fetched
            change[1] += relevant
            change[2] += wasted

    def count_new_host(self, relevant: int, wasted: int) -> None:
        new = self.new_hosts
        new[0] += 1
        new[1] += relevant
        new[2] += wasted

    def mark(self) -> None:
        """What the learner holds now is shared: the next delta holds only what changes after."""
        model, words = self.model, self.words
        self.base = {"coef": model.coef_.copy(), "g2": model.squared_gradients.copy(),
                     "observations": self.learner.observations}
        if self.learner.learn_words:
            self.base.update(positive=words.positive.copy(), total=words.total.copy(),
                             is_word=words.is_word.copy(), links=(words.links, words.positive_links))
        for notes in self.places.values():
            notes.clear()
        self.new_hosts = [0] * len(FIELDS)

    def arrays(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """The arrays a delta carries at its indices: (its field, the array, its marked state). The
        link word counts move where the weights do (a link whose words are counted is a link
        trained), so the weights' moves find theirs; the rare count that moves alone (a link's label
        changed while its weight stood still) waits for the next full comparison of the counts,
        every FULL_DIFF_EVERY deltas."""
        model, base = self.model, self.base
        out = [("weights", model.coef_, base["coef"]), ("squared_gradients", model.squared_gradients, base["g2"])]
        if "positive" in base:
            out += [("word_positive", self.words.positive, base["positive"]),
                    ("word_total", self.words.total, base["total"])]
        return out

    # --- this learner's changes -------------------------------------------------------------------
    def take(self) -> LearnerDelta | None:
        """The changes since the last mark (with the credit the learner owes pages it does not hold,
        which it forgets), marked as shared from now on; None when nothing changed."""
        base, words, observations = self.base, self.words, self.learner.observations
        moved = np.flatnonzero(self.model.coef_ != base["coef"])
        self.marks += 1
        if "positive" in base and self.marks % FULL_DIFF_EVERY == 0:
            counted = np.flatnonzero((words.positive != base["positive"]) | (words.total != base["total"]))
            moved = np.union1d(moved, counted)
        delta = LearnerDelta(observations=observations - base["observations"])
        base["observations"] = observations
        changed = bool(len(moved))
        if changed:
            delta.indices = moved
            for name, current, old in self.arrays():
                setattr(delta, name, current[moved] - old[moved])
                old[moved] = current[moved]
        for name, notes in self.places.items():
            deltas = {key: change for key, change in notes.items() if any(change)}
            notes.clear()
            if deltas:
                delta.counts[name] = (list(deltas), [v for change in deltas.values() for v in change])
                changed = True
        owed = self.learner.credit_elsewhere
        if owed:
            delta.credit = dict(owed)
            owed.clear()
            changed = True
        if any(self.new_hosts):
            delta.new_hosts, self.new_hosts = self.new_hosts, [0] * len(FIELDS)
            changed = True
        if "positive" in base:
            marked = np.flatnonzero(words.is_word & ~base["is_word"])
            links = (words.links - base["links"][0], words.positive_links - base["links"][1])
            if len(marked) or any(links):
                delta.words_marked = marked
                base["is_word"][marked] = True
                delta.links = links
                base["links"] = (words.links, words.positive_links)
                changed = True
        return delta if changed else None

    # --- other learners' changes ------------------------------------------------------------------
    def merge(self, delta: LearnerDelta) -> int:
        """Add another learner's delta: weights, squared-gradient sums, counts, word counts. They are
        not this learner's changes (``take`` leaves them out), but the training a credit it carries
        causes here is, and comes after. Returns how many of its credits applied here (to pages this
        learner holds). Does not move the learner's ``version``: the caller does, once for many."""
        learner, base, idx = self.learner, self.base, delta.indices
        for name, current, old in self.arrays() if len(idx) else ():
            change = getattr(delta, name)
            if len(change) == len(idx):  # a learner that does not learn words sends none of theirs
                current[idx] += change
                old[idx] += change
        if delta.links is not None and "positive" in base:
            words, marked = self.words, delta.words_marked
            words.is_word[marked] = True
            base["is_word"][marked] = True
            links, positive_links = delta.links
            words.links += links
            words.positive_links += positive_links
            base["links"] = (base["links"][0] + links, base["links"][1] + positive_links)
        for name, (keys, flat) in delta.counts.items():
            add_counts(getattr(learner, name), keys, flat, learner.max_nodes if name == "children" else None)
        if delta.new_hosts is not None:
            learner.add_new_hosts(*delta.new_hosts)
        return sum(learner.credit(url, change, hops) for url, (change, hops) in delta.credit.items())

    def state(self) -> LearnerDelta:
        """All the learner shares, as a delta to an empty learner (squared-gradient sums start at 1,
        so theirs is less 1): what ``replace`` takes over."""
        learner, model, words = self.learner, self.model, self.words
        touched = (model.coef_ != 0.0) | (model.squared_gradients != 1.0)
        if learner.learn_words:
            touched |= words.total != 0.0
        touched = np.flatnonzero(touched)
        out = LearnerDelta(indices=touched, weights=model.coef_[touched],
                           squared_gradients=model.squared_gradients[touched] - 1.0,
                           new_hosts=list(values(learner.new_hosts)))
        for name in TABLES:
            table = getattr(learner, name)
            out.counts[name] = (list(table), [value for stats in table.values() for value in values(stats)])
        if learner.learn_words:
            out.word_positive, out.word_total = words.positive[touched], words.total[touched]
            out.words_marked = np.flatnonzero(words.is_word)
            out.links = (words.links, words.positive_links)
        return out

    def replace(self, state: LearnerDelta) -> None:
        """Take ``state`` (another learner's ``state``) over in place of what the learner shares:
        weights, squared-gradient sums, counts and word counts. Its path nodes and its own
        ``observations`` stay; its ``version`` moves (its frontier's scores are stale)."""
        learner, words = self.learner, self.words
        self.model.coef_.fill(0.0)
        self.model.squared_gradients.fill(1.0)
        for name in TABLES:
            getattr(learner, name).clear()
        learner.new_hosts = Yield()
        learner.add_new_hosts(0, 0, 0)
        if learner.learn_words:
            words.positive.fill(0.0)
            words.total.fill(0.0)
            words.is_word.fill(False)
            words.links = words.positive_links = 0.0
        self.mark()
        self.merge(state)
        learner.version += 1


def add_counts(table: dict, keys: list, flat: list, limit: int | None) -> None:
    """Add counts (``flat``: ``len(FIELDS)`` a key) to a place table; a new place beyond ``limit``
    places pushes out the oldest, as the learner does."""
    width = len(FIELDS)
    for i, key in enumerate(keys):
        fetched, relevant, wasted = flat[i * width:(i + 1) * width]
        stats = table.get(key)
        new = stats is None
        if new:
            stats = table[key] = Yield()
        stats.fetched += fetched
        stats.relevant += relevant
        stats.wasted += wasted
        if new and limit is not None:
            drop_oldest(table, limit)


values = operator.attrgetter(*FIELDS)


__all__ = ["ChangeLog", "FIELDS", "FULL_DIFF_EVERY", "LearnerDelta", "TABLES", "add_counts", "values"]
