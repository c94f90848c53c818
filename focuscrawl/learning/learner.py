"""The online link-reward learner.

Every link gets a predicted reward: a linear model over hashed link features plus the current
yield of its host and path prefix, plus an exploration bonus that shrinks as evidence about the
host, the prefix and the page the link was found on accumulates (a UCB-style bandit), so the crawl
neither sticks to one site nor scatters, and tries a list before it judges all of the list's links.

When a fetched page is scored, the link that led to it is trained toward the page's value, and
credit flows back along the path (as in Rennie & McCallum's Q-values): a page's value is its own
reward plus ``decay`` times what its fetched children are worth together (capped), so a hub whose
children are relevant is valued even when the hub itself is not, and more the more it led to. A
host never fetched is judged by how new hosts have paid off so far (an empirical-Bayes prior for
the host bandit), not by a fixed optimism. Waste (404s, errors, useless types,
duplicates) is a small negative reward, which lowers links like the ones that led to it; a page not
counted as found is worth a part of a found page by its rank among the pages the crawl has scored
(``ranks``): the topic model's order of pages transfers to sites unlike its examples better than
its scale.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from focuscrawl.bounded import drop_oldest
from focuscrawl.config import DEFAULTS
from focuscrawl.learning.delta import ChangeLog
from focuscrawl.learning.link_words import LinkWordCounts
from focuscrawl.learning.places import (UNSEEN, PathNode, Prior, Yield, dynamic_features, place_features, place_uncertainty,
                                        sibling_features, sibling_uncertainty)
from focuscrawl.learning.regressor import Features, OnlineLinearRegressor, Vector, is_vector, per_link
from focuscrawl.learning.ranks import ScoreRanks
from focuscrawl.urls import host_and_prefix, host_key, path_prefix

WASTE_REWARD = -0.2


def page_reward(score: float | None, relevant: bool) -> float:
    """What a fetched page is worth, read on the score's own scale. The crawl is judged on relevant
    pages found: a relevant page is worth a full point, an irrelevant one little, whatever its exact
    probability; a request that bought no scored page (``score`` None: 404, error, useless type) is
    waste. A crawl's learner reads a page not found on its rank instead
    (``LinkRewardLearner.page_reward``)."""
    if score is None:
        return WASTE_REWARD
    return 1.0 if relevant else 0.25 * float(score)
#: The evidence that changes as the crawl goes (``places.dynamic_features``), by name.
DYNAMIC_FEATURES = ("host_yield", "prefix_yield", "host_waste", "prefix_waste", "host_unseen", "sibling_yield",
                    "sibling_waste")
#: How many fetches' worth of pooled evidence about new hosts an unseen host starts with.
UNSEEN_HOST_EVIDENCE = 8.0
#: Observations per learner version. A new version is what makes the scheduler re-score stale
#: frontier entries (lazily, and in bounded background batches); links found since are scored with
#: the current weights when queued. The crawl's order depends on this cadence: measured on WebKB,
#: it moves which hub a simulated crawl reaches first, and with it the whole run.
VERSION_EVERY = 16
#: The starting weights of a link's two scores, by where its score comes from. A link model
#: (``scrapy train`` on a WARC) has read thousands of labelled links and scores this link itself,
#: while the parent page's relevance mostly vouches for its own sub-pages (a course's syllabus and
#: homework), which the learner would chase until it learned better: with a link model, the link
#: counts three times the parent. Without one, the link's score is the topic model reading a few
#: words, weak evidence, and the parent's relevance counts as much. Measured on WebKB (simulated):
#: the link's weight raised to 0.75 lifts the early harvest of three topics of four; past 1.0 it
#: costs recall.
LINK_PRIORS = {True: {"link_score": 0.75, "parent_score": 0.25},
               False: {"link_score": 0.5, "parent_score": 0.5}}
#: The weights the crawl starts from, besides LINK_PRIORS. A link on a seed page ("depth:1") starts
#: at the worth of a relevant page: the user chose the seeds as ways into the topic's sites, their
#: links are those sites' navigation, where the hubs are, and the learner lowers the weight as they
#: turn out poor (on WebKB, simulated, this lifted course recall@1000 from 34% to 51%).
STARTING_WEIGHTS = {"bias": 0.1, "seed": 0.6, "depth:1": 1.0, "host_yield": 0.3, "prefix_yield": 0.3,
                    "sibling_yield": 0.3, "host_waste": -0.2, "prefix_waste": -0.2, "cross_host": -0.2,
                    "host_unseen": -0.1}


# the names a checkpoint's pickles know them by
_Yield, _Prior, _PathNode, _UNSEEN = Yield, Prior, PathNode, UNSEEN


class LinkRewardLearner:
    def __init__(self, credit_decay: float = DEFAULTS.credit_decay, exploration: float = DEFAULTS.exploration,
                 credit_hops: int = 3, max_nodes: int = DEFAULTS.learner_nodes, version_every: int = VERSION_EVERY, bits: int = 20,
                 hub_cap: float = DEFAULTS.hub_cap, learning_rate: float = DEFAULTS.learning_rate,
                 link_model: bool = True):
        # ``link_model``: the links' scores come from a link model (LINK_PRIORS)
        self.model = OnlineLinearRegressor(bits=bits, learning_rate=learning_rate,
                                           prior={**STARTING_WEIGHTS, **LINK_PRIORS[bool(link_model)]})
        self.credit_decay = credit_decay
        self.hub_cap = hub_cap
        self.exploration = exploration
        self.credit_hops = credit_hops
        self.max_nodes = max_nodes
        self.version_every = max(1, version_every)
        self.hosts: dict[str, _Yield] = {}
        self.prefixes: dict[str, _Yield] = {}
        self.children: dict[str, _Yield] = {}  # parent page -> how its fetched links paid off
        # Empirical-Bayes prior of the host bandit: a host never fetched is judged by how the first
        # fetch at each new host has paid off so far (over at most UNSEEN_HOST_EVIDENCE fetches),
        # not by a fixed optimistic prior: where most links to other hosts are dead, optimism about
        # every new host would spiral off the topic's sites.
        self.new_hosts = _Yield()
        self._unseen_host = _UNSEEN
        self._dynamic_index = {name: self.model.index(name) for name in DYNAMIC_FEATURES}
        self._link_score_index = self.model.index("link_score")
        # the link model learned from the crawl's own links (see link_words), when no link model
        # learned offline scores the links: one that has read thousands of labelled links is not
        # improved by a crawl's first few dozen (on WebKB, simulated, correcting it with them cost
        # student recall@1000 73% -> 17%), while the topic model reading a link's words is
        self.words = LinkWordCounts(len(self.model.coef_))
        self.learn_words = not link_model
        # the pages credit can flow back to, least recently credited first (a plain dict: an
        # OrderedDict costs ~50 bytes a node more; ``_touch`` moves a node to the end)
        self.nodes: dict[str, _PathNode] = {}
        # Credit owed to parent pages this learner does not hold: URL -> (change, hops left). None
        # drops it (one process holds every page it fetched, up to ``max_nodes``); a shared
        # crawl's learner sync sets a dict and hands it to the worker that fetched the parent.
        self.credit_elsewhere: dict[str, tuple[float, int]] | None = None
        # what changed since the last delta taken, while other learners share this one's
        # (``track_changes``); None otherwise, and not kept in a checkpoint
        self.changes: ChangeLog | None = None
        # the scores of the pages fetched so far: a page not counted as found is rewarded by its rank
        # among them (``page_reward``)
        self.ranks = ScoreRanks()
        self.observations = 0
        self.version = 0

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("changes", None)
        return state

    def page_reward(self, score: float | None, relevant: bool) -> float:
        """What a fetched page is worth to the learner: ``page_reward``'s, but a page not counted as
        found is worth its rank among the pages the crawl has scored (``ScoreRanks.reward``), not its
        score: where the topic model scores every page of a web far below even odds, its order of
        them still leads. Call it once per scored page: each page asked about counts in the ranks."""
        if score is None:
            return page_reward(None, relevant)
        reward = self.ranks.reward(score)  # every scored page counts in the ranks, found or not
        return page_reward(score, True) if relevant else reward

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("new_hosts", _Yield())  # a checkpoint from before it was kept
        self.__dict__.setdefault("hub_cap", DEFAULTS.hub_cap)
        self.__dict__.setdefault("credit_elsewhere", None)
        self.changes = None
        self.__dict__.setdefault("ranks", ScoreRanks())
        if type(self.nodes) is not dict:  # a checkpoint that kept them in an OrderedDict
            self.nodes = dict(self.nodes)
        self._unseen_host = self.new_hosts.shrunk(UNSEEN_HOST_EVIDENCE)
        self._dynamic_index = {name: self.model.index(name) for name in DYNAMIC_FEATURES}
        self._link_score_index = self.model.index("link_score")
        if "words" not in self.__dict__:  # a checkpoint from before the crawl learned its links' words
            self.words = LinkWordCounts(len(self.model.coef_))
            self.learn_words = False

    def use_link_model(self, present: bool, priors: dict[str, float] | None = None) -> None:
        """Start from LINK_PRIORS for where the links' scores come from, and from ``priors``, the
        starting weights the topic model measured on its training web (``TopicModel.
        learner_priors``: how a found page's parts pay off there). The crawl's topic model is known
        only once the spider opens. A learner that has learned keeps its weights."""
        if self.observations or self.version:  # learned here, or taken over from a shared crawl's learner
            return
        self.learn_words = not present
        for name, weight in {**LINK_PRIORS[bool(present)], **(priors or {})}.items():
            self.model.coef_[self.model.index(name)] = weight

    # --- scoring ------------------------------------------------------------------------------
    def _places(self, url: str, parent: str | None) -> tuple[_Yield, _Yield, _Yield | None]:
        """Where the evidence that changes as the crawl goes is kept: how the link's host, path
        prefix and siblings (links from the same page) have paid off so far."""
        host = self.hosts.get(host_key(url)) or self._unseen_host
        prefix = self.prefixes.get(path_prefix(url), _UNSEEN)
        siblings = self.children.get(parent) if parent else None
        return host, prefix, siblings

    def bonus(self, url: str, parent: str | None = None) -> float:
        """Optimism under uncertainty: places we know little about get a bonus that shrinks as
        their yield becomes known. The places are the link's host, its path prefix and the page it
        was found on (its siblings): a list of people whose pages are worth a look for courses, say
        at a site without a course list, reads as poorly as any other list until one or two of its
        links have been tried (on WebKB, the way into Cornell's courses is through such a list of
        people, whose links all read as poorly as the next)."""
        return self._bonus_at(*self._places(url, parent))

    def _bonus_at(self, host: _Yield, prefix: _Yield, siblings: _Yield | None) -> float:
        # two products summed, as ``_dynamic_values`` sums them (equal floats)
        return self.exploration * place_uncertainty(host, prefix) + self.exploration * sibling_uncertainty(siblings)

    def vectorise(self, features: Features) -> Vector:
        vector = self.model.vectorise(features)
        if self.learn_words:  # only a crawl that learns its links' words needs to know which they are
            self.words.mark_words(features, vector[0].tolist())
        return vector

    def _dynamic_vector(self, url: str, parent: str | None) -> Vector:
        feats = dynamic_features(*self._places(url, parent))
        return (np.fromiter((self._dynamic_index[name] for name, _ in feats), dtype=np.int32, count=len(feats)),
                np.fromiter((value for _, value in feats), dtype=np.float32, count=len(feats)))

    def score(self, features: Features | Vector, url: str, parent: str | None = None) -> float:
        """Predicted reward of a link plus its exploration bonus. ``features`` are named features
        or their vector (``vectorise``), which is what the frontier stores."""
        vector = features if is_vector(features) else self.vectorise(features)
        places = self._places(url, parent)  # looked up once: this runs for every (re-)scored URL
        return (self.model.predict_vector(vector) + self._word_values([len(vector[0])], *vector)[0]
                + _weighted(dynamic_features(*places), self._dynamic_weights()) + self._bonus_at(*places))

    def score_many(self, items: Sequence[tuple[Features | Vector, str, str | None]]) -> list[float]:
        """``score`` for many links at once (the frontier's re-scoring batches)."""
        if not items:
            return []
        vectors = [f if is_vector(f) else self.vectorise(f) for f, _, _ in items]
        sizes = [len(v[0]) for v in vectors]
        if sum(sizes):
            idx, val = np.concatenate([v[0] for v in vectors]), np.concatenate([v[1] for v in vectors])
        else:
            idx, val = np.zeros(0, np.int32), np.zeros(0, np.float32)
        return self.score_joined([url for _, url, _ in items], [parent for _, _, parent in items], sizes, idx, val)

    def score_joined(self, urls: Sequence[str], parents: Sequence[str | None], sizes: Sequence[int],
                     idx: np.ndarray, val: np.ndarray) -> list[float]:
        """``score_many`` with the links' hashed features joined: link i's are the next ``sizes[i]``
        of ``idx`` and ``val``. A packed frontier hands its feature bytes over this way, read in one
        numpy pass instead of two small arrays per link."""
        # the linear model's part of each link's score (one dot product per link, in one pass),
        # and what the crawl learned of its words
        static = per_link(sizes, self.model.coef_[idx] * val) + self._word_values(sizes, idx, val)
        return [value + extra for value, extra in zip(static.tolist(), self._dynamic_values(urls, parents))]

    def _word_values(self, sizes: Sequence[int], idx: np.ndarray, val: np.ndarray) -> np.ndarray:
        """What the crawl has learned about each link's words (``LinkWordCounts.values``)."""
        if not self.learn_words:
            return np.zeros(len(sizes))
        weight = float(self.model.coef_[self._link_score_index])
        return self.words.values(sizes, idx, val, self._link_score_index, weight)

    def _dynamic_values(self, urls: Sequence[str], parents: Sequence[str | None]) -> list[float]:
        """The dynamic evidence and exploration bonus of each link, as ``score`` adds them. The host
        and prefix part is worked out once per prefix and the siblings' part once per parent page
        (links of a batch share them), and they are summed in the order ``score`` sums them (equal
        floats)."""
        weights = self._dynamic_weights()
        places: dict[str, tuple[float, float]] = {}  # prefix (host + "/" ...) -> (evidence, bonus)
        pages: dict[str | None, tuple[list, float]] = {}  # parent -> (sibling features, bonus)
        out = []
        for url, parent in zip(urls, parents):
            host_name, prefix_name = host_and_prefix(url)
            place = places.get(prefix_name)
            if place is None:
                host = self.hosts.get(host_name) or self._unseen_host
                prefix = self.prefixes.get(prefix_name, _UNSEEN)
                place = places[prefix_name] = (_weighted(place_features(host, prefix), weights),
                                               self.exploration * place_uncertainty(host, prefix))
            page = pages.get(parent)
            if page is None:
                siblings = self.children.get(parent) if parent else None
                page = pages[parent] = (sibling_features(siblings), self.exploration * sibling_uncertainty(siblings))
            out.append(_weighted(page[0], weights, place[0]) + place[1] + page[1])
        return out

    def _dynamic_weights(self) -> dict[str, float]:
        """The model's current weights of the dynamic features, as floats."""
        coef = self.model.coef_
        return {name: float(coef[i]) for name, i in self._dynamic_index.items()}

    def explain(self, features: Features, url: str, parent: str | None = None, top: int = 3) -> list[tuple[str, float]]:
        """The features that contributed most to a link's priority (by absolute contribution)."""
        parts = self.model.contributions(list(features) + dynamic_features(*self._places(url, parent)))
        if self.learn_words:
            vector = self.model.vectorise(features)
            parts.append(("link words", float(self._word_values([len(vector[0])], *vector)[0])))
        parts.append(("exploration", self.bonus(url, parent)))
        parts.sort(key=lambda kv: abs(kv[1]), reverse=True)
        return [(name, round(value, 4)) for name, value in parts[:top]]

    # --- learning -----------------------------------------------------------------------------
    def observe(self, url: str, parent_url: str | None, features: Features | None, reward: float,
                relevant: bool, wasted: bool = False) -> None:
        """A page reached by a link with ``features`` (from ``parent_url``) was worth ``reward``;
        ``wasted``: the request bought nothing (404, error, useless type, duplicate)."""
        self.observations += 1
        held = self.nodes.get(parent_url) if parent_url else None
        if held is not None:
            parent_url = held.url  # one string for the parent's URL, whoever holds it
        self._train_link(features, url, parent_url, reward)  # as scored before this outcome was known
        places = [("hosts", self.hosts, host_key(url)), ("prefixes", self.prefixes, path_prefix(url))]
        if parent_url:
            places.append(("children", self.children, parent_url))
        hit, waste, changes = int(relevant), int(wasted), self.changes
        for name, table, key in places:
            stats = table.get(key)
            if stats is None:
                stats = table[key] = _Yield()
                if table is self.hosts:
                    self.new_hosts.fetched += 1
                    self.new_hosts.relevant += hit
                    self.new_hosts.wasted += waste
                    self._unseen_host = self.new_hosts.shrunk(UNSEEN_HOST_EVIDENCE)
                    if changes is not None:
                        changes.count_new_host(hit, waste)
                if table is self.children:
                    drop_oldest(table, self.max_nodes)
            stats.fetched += 1
            stats.relevant += hit
            stats.wasted += waste
            if changes is not None:
                changes.count(name, key, 1, hit, waste)
        node = self.nodes.get(url)
        if node is None:
            node = _PathNode(_as_vector(self, features), url, parent_url, reward)
            self.nodes[url] = node
            drop_oldest(self.nodes, self.max_nodes)
        else:
            node.reward = reward
        self._count_words(node)
        self._credit_ancestors(node)
        if self.observations % self.version_every == 0:
            self.version += 1

    def _credit_ancestors(self, node: _PathNode, hops: int | None = None) -> None:
        """Credit flows back along the path, ``hops`` steps (``credit_hops``): each ancestor's
        children_value moves by the change in what its child is worth, and its link is trained
        toward its new value."""
        hops = self.credit_hops if hops is None else hops
        for left in range(hops, 0, -1):
            parent = self.nodes.get(node.parent) if node.parent else None
            contribution = max(0.0, node.value(self.credit_decay, self.hub_cap))
            if abs(contribution - node.passed_up) < 1e-9:
                return
            if parent is None:
                if node.parent and self.credit_elsewhere is not None:
                    change, most = self.credit_elsewhere.get(node.parent, (0.0, 0))
                    self.credit_elsewhere[node.parent] = (change + contribution - node.passed_up, max(most, left))
                    node.passed_up = contribution
                return
            parent.children_value += contribution - node.passed_up
            node.passed_up = contribution
            self._touch(parent.url)
            self._train(parent)
            self._count_words(parent)
            node = parent

    def _touch(self, url: str) -> None:
        """The node of ``url`` was credited: the last to be forgotten."""
        self.nodes[url] = self.nodes.pop(url)

    def credit(self, url: str, change: float, hops: int) -> bool:
        """What the children of page ``url`` are worth changed by ``change``, as learned by another
        learner (a shared crawl's worker that fetched them), ``hops`` steps of the path left from
        here: the page is valued, and credit flows on from it, as if they were its own. False when
        this learner does not hold the page."""
        node = self.nodes.get(url)
        if node is None:
            return False
        node.children_value += change
        self._touch(url)
        self._train(node)
        self._count_words(node)
        self._credit_ancestors(node, hops - 1)
        return True

    def mark_wasted(self, url: str) -> None:
        """A page turned out to be worthless after all (e.g. a near-duplicate of one already
        found): count it as waste where it was counted (a hit taken back if ``observe`` counted
        one), and teach its link that."""
        node = self.nodes.get(url)
        if node is None:
            return
        relevant_before = node.reward >= page_reward(1.0, True)
        places = [("hosts", self.hosts, host_key(url)), ("prefixes", self.prefixes, path_prefix(url))]
        if node.parent:
            places.append(("children", self.children, node.parent))
        for name, table, key in places:
            stats = table.get(key)
            if stats is not None:
                taken_back = int(relevant_before and stats.relevant > 0)
                stats.wasted += 1
                stats.relevant -= taken_back
                if self.changes is not None:
                    self.changes.count(name, key, 0, -taken_back, 1)
        node.reward = WASTE_REWARD
        self._train(node)
        self._count_words(node)
        self._credit_ancestors(node)

    def _count_words(self, node: _PathNode) -> None:
        """Count the words of the link that led to ``node`` with its value now (a soft label in
        [0, 1]), or move them by how much that value changed."""
        if node.features is None or not self.learn_words:
            return
        label = min(1.0, max(0.0, node.value(self.credit_decay, self.hub_cap)))
        if node.counted is None:
            self.words.add(node.vector, label)
        elif label != node.counted:
            self.words.add(node.vector, label - node.counted, links=0.0)
        node.counted = label

    def _train(self, node: _PathNode) -> None:
        self._train_link(node.vector, node.url, node.parent, node.value(self.credit_decay, self.hub_cap))

    def _train_link(self, features: Features | Vector | None, url: str, parent: str | None, target: float) -> None:
        vector = _as_vector(self, features)
        if vector is None:
            return
        dynamic = self._dynamic_vector(url, parent)
        self.model.fit_vector((np.concatenate((vector[0], dynamic[0])), np.concatenate((vector[1], dynamic[1]))),
                              target)


    # --- sharing with other learners (a shared crawl's workers: distributed.learner_sync) -------
    def track_changes(self) -> ChangeLog:
        """Note what this learner learns from now on, in ``changes`` (``learning.delta``: its
        deltas for other learners, and theirs merged here); what it holds now counts as shared.
        Credit owed to pages it does not hold is kept for the deltas too."""
        if self.changes is None:
            if self.credit_elsewhere is None:
                self.credit_elsewhere = {}
            self.changes = ChangeLog(self)
            self.changes.mark()
        return self.changes

    def add_new_hosts(self, fetched: int, relevant: int, wasted: int) -> None:
        """Add to the new-hosts prior's counts (how other learners' first fetches of hosts paid off)."""
        new = self.new_hosts
        new.fetched, new.relevant, new.wasted = new.fetched + fetched, new.relevant + relevant, new.wasted + wasted
        self._unseen_host = new.shrunk(UNSEEN_HOST_EVIDENCE)


def _weighted(features: Features, weights: dict[str, float], start: float = 0.0) -> float:
    """``start`` plus the features times their weights, summed in order."""
    total = start
    for name, value in features:
        total += weights[name] * value
    return total


def _as_vector(owner, features) -> Vector | None:
    if features is None or len(features) == 0:
        return None
    if is_vector(features):
        return features if len(features[0]) else None
    return owner.vectorise(features)
