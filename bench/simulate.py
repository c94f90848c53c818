"""Fast, seeded simulation of the focused crawl on a recorded web, for comparing crawl strategies.

A real replay crawl (``scrapy evaluate``) takes a minute and its order of events depends on
timing, so two runs of one command differ a lot; telling two strategies apart needs many runs.
This simulation replays the same decisions in seconds, with a seed for the randomness:

- the same cores: ``focuscrawl.learning`` (features, learner, credit, the learner's
  ``page_reward``: the scheduler's rewards, with hits from the model's ``even_odds_score``, FOCUS_REWARD_THRESHOLD's
  default) and the topic model's page and link scores (``TopicModel.score`` / ``score_links``);
- the same politeness shape: ``--slots`` requests per round, one per host, best-first over the
  whole frontier, and patience (a URL more than ``--margin`` below the best waits);
- the same accounting as ``scrapy evaluate`` (``focuscrawl.replay.metrics``): every request
  counts, 404s and redirects included, a page served at several URLs counts once.

It obeys the recorded robots.txt as the crawler does (a disallowed URL is never requested, nor
counted), and leaves out what only a real crawl has (download latency, Crawl-delay, the
background re-scoring batches: here the whole frontier is re-scored when the learner's version moves),
so use it to screen ideas and ``scrapy evaluate`` to report figures. The simulated crawl is
chaotic too (which hub is found first decides a run): means of six runs move by +-4 points
between identical set-ups, hence 16 runs by default; compare variants with 16-32. But the seed
only shuffles the seeds and each round's responses, so the runs of one set-up follow nearly one
trajectory, and a small change can move them all at once (see docs/research.md). ``--jitter SD``
perturbs each round's choice, so the runs sample the neighbouring trajectories, as a real crawl's
timing does: a gain that vanishes with it belongs to one trajectory. Jittered runs split into a
starved and a fed mode (on WebKB: whether the one link to a department's course list is fetched
early), so even 32 of them move by about 0.03 in course harvest@500 from one set of runs to the
next: ``--first-run N`` repeats a screen on runs N, N+1, ... (a run is seeded by its number). ``--version-every N`` sets the learner's re-scoring cadence (the
scheduler's is ``learner.VERSION_EVERY``).

``--rank 300,600`` measures the learner itself, less noisily than recall: after that many requests,
how well the priorities rank the URLs waiting in the frontier (ROC AUC for "is a relevant page",
and the mean true future value of the 100 best-ranked URLs beside the best 100 there are).

Two oracles measure the headroom of each part: ``--oracle page`` replaces the topic model's page
scores by the labels (a perfect nugget function: the learner's rewards are exact), and
``--oracle value`` orders the frontier by each URL's true future value over the recorded web
(``oracle_values``: 1 for a relevant page plus half of what its links lead to, at most three
pages' worth, three links deep) instead of the learner: what a perfect link valuation would
reach under the same politeness shape. Two narrower ones bound what a better learner could gain
from knowing one thing the labels know: ``--oracle live`` never follows a link to a page the
recording does not hold (no 404s: a perfect dead-link predictor), and ``--oracle hub`` gives the
learner a feature ``oracle_hub`` (starting weight 1.0) on each link whose target is not on topic
but links a page that is (a perfect one-step hub model). They combine: ``--oracle live,hub``.
``page`` is three uses of the page's judgement at once, and three parts take it apart (the model's
score stays everywhere else): ``hits``, the labels decide which pages count as found for the learner
(its hits, their full reward, the hops since the last one); ``parent``, the score a page's links
inherit is the labels' (``parent_score``); ``rewards``, a page not counted as found is ranked on the
labels' score instead of the model's (``LinkRewardLearner.page_reward``: every such page then ranks
alike). ``--oracle hits,parent,rewards`` is ``page`` but for the link's evidence, which only a model
with a link model adds (``TopicModel.with_link_evidence``).

    python bench/simulate.py --models DIR [--targets course,student] [--runs 16] [--budget 1000]
                             [--oracle page|value|live|hub|hits|parent|rewards|PART,PART]
                             [--rank 300,600] [--jobs 2]
                             [--jitter 0.03] [--first-run 33] [--version-every 16]

``--spend`` (with ``--webs``) counts what the requests bought (``SPEND``): where a strategy's budget
goes when two of them find different amounts. ``--variant`` leaves one part of the learner
out (``VARIANTS``), to see what it is worth.

``--webs NAME,... --pages 10 [--contrast 200 [--unlabelled-contrast]]`` screens the start from ten on-topic pages (drawn as
``bench/draw_examples.py`` draws them), with ``--contrast`` their links read by the words the ten
share and a sample of their sites' other pages does not.

DIR holds TARGET.joblib for each target (``scrapy train ... --exclude-host
'cornell|utexas|washington|wisc' -o DIR/TARGET.joblib``).
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import multiprocessing
import pickle
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

from focuscrawl.config import DEFAULTS
from focuscrawl.learning import LinkContext, LinkRewardLearner, link_features
from focuscrawl.learning.learner import VERSION_EVERY, page_reward
from focuscrawl.learning.strategies import make_strategy
from focuscrawl.meta import LinkMeta, request_meta
from focuscrawl.parsing import parse_html
from focuscrawl.relevance import TopicModel
from focuscrawl.relevance.query import build_query_model
from focuscrawl.replay import RecordedWeb
from focuscrawl.replay.linkgraph import PAGE, REDIRECT, LinkGraph, SamePage, load_aliases
from focuscrawl.replay.metrics import Relevance, load_labels, reachable_relevant
from focuscrawl.urls import canonicalize, extension, host_key, url_key

SEEDS = ["http://www.cs.cornell.edu/", "http://www.cs.utexas.edu/", "http://www.cs.washington.edu/",
         "http://www.cs.wisc.edu/"]
POINTS = (100, 200, 500, 1000, 2000)
ORACLES = ("page", "value", "live", "hub", "hits", "parent", "rewards")
#: The labels' page score (``--oracle page`` and its parts): on topic, or not.
LABEL_SCORES = {True: 0.99, False: 0.01}
STRATEGIES = ("learned", "bestfirst", "shark", "bfs")
HUB_FEATURE = "oracle_hub"
#: What a request bought (``--spend``): a relevant page not found before, a relevant page found
#: already at another URL, another page, a redirect (its target is the next request), nothing (404,
#: not HTML).
SPEND = ("new relevant", "relevant again", "other page", "redirect", "nothing")
#: Diagnostic variants of ``learned`` (``--variant``; bench only): "no-bonus", the learner without its
#: exploration bonus, "frozen" without its online learning of weights, "no-words" without its
#: online link-word counts. The variants screened and not kept (shark-search's inheritance as a
#: feature or a prior, rank rewards in the places' yields, whole directories as places, even odds by
#: prior-shift EM) are in the project's history; research.md has what each gave.
VARIANTS = ("off", "no-bonus", "frozen", "no-words")


def recorded_robots(recorded: RecordedWeb) -> dict[str, str]:
    """{host: robots.txt text} of the robots.txt files a recorded web answered with a 2xx."""
    return {host_key(resp.url): resp.body.decode("utf-8", "replace") for resp in recorded
            if resp.url.endswith("/robots.txt") and 200 <= resp.status < 300}


class Web:
    """The recorded web, parsed once: link graph, pages (title, text, links), same-page map, and
    which URLs its recorded robots.txt files let the crawler fetch (``allowed``)."""

    def allowed(self, url: str) -> bool:
        """Whether the crawler may fetch ``url`` by its host's recorded robots.txt (FocusConfig's
        default agent, as the crawl's gate asks Protego); a host without one allows all."""
        parser = self._robot_parsers.get(host_key(url))
        return parser is None or parser.can_fetch(url, DEFAULTS.robots_agent)

    def use_robots(self, robots: dict[str, str]) -> None:
        """``robots`` ({host: robots.txt text}) parsed once, for ``allowed``."""
        from protego import Protego

        self.robots = robots
        self._robot_parsers = {host: Protego.parse(text.lstrip("\ufeff")) for host, text in robots.items()}

    @classmethod
    def cached(cls, warc: Path, aliases: Path | None, folder: Path | None) -> "Web":
        """The web parsed once into ``folder`` (a pickle beside nothing else; None: not kept), read
        back while it is newer than the WARC: a documentation web takes minutes to parse."""
        if folder is None:
            return cls(warc, aliases)
        path = Path(folder) / f"{Path(warc).parent.name}-{Path(warc).name}.pickle"
        robots = path.with_suffix(".robots.json")  # beside the pickle, whose shape stays as it was
        if path.is_file() and path.stat().st_mtime >= Path(warc).stat().st_mtime:
            web = cls.__new__(cls)  # its parts, not the object: this module may run as __main__
            with path.open("rb") as handle:
                web.graph, web.same, web.pages = pickle.load(handle)
            if robots.is_file() and robots.stat().st_mtime >= Path(warc).stat().st_mtime:
                web.use_robots(json.loads(robots.read_text(encoding="utf-8")))
            else:
                web.use_robots(recorded_robots(RecordedWeb.from_warcs([warc])))  # a pickle kept without them
                robots.write_text(json.dumps(web.robots), encoding="utf-8")
            return web
        web = cls(warc, aliases)
        robots.parent.mkdir(parents=True, exist_ok=True)
        robots.write_text(json.dumps(web.robots), encoding="utf-8")
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(".partial")
        with partial.open("wb") as handle:
            pickle.dump((web.graph, web.same, web.pages), handle, protocol=pickle.HIGHEST_PROTOCOL)
        partial.replace(path)
        return web

    def __init__(self, warc: Path, aliases: Path | None):
        recorded = RecordedWeb.from_warcs([warc])
        self.use_robots(recorded_robots(recorded))
        self.graph = LinkGraph.from_web(recorded)
        self.same = SamePage.for_graph(self.graph, load_aliases(aliases) if aliases else [])
        self.pages = {}
        for resp in recorded:
            key = url_key(resp.url)
            if resp.status == 200 and resp.is_html and key not in self.pages and self.graph.kind.get(key) == PAGE:
                page = parse_html(resp.body, resp.url, content_type=resp.content_type or None)
                self.pages[key] = (page.title, page.text,
                                   [(link.anchor, link.context, link.url) for link in page.links if not link.nofollow])


def oracle_values(graph: LinkGraph, relevance: Relevance, steps: int = 3, decay: float = 0.5,
                  cap: float = 3.0) -> dict[str, float]:
    """Each URL key's true future value: ``V = relevant + decay * min(cap, sum of V over its
    links)``, ``steps`` links deep (V starts as relevant). A redirect leads to its target."""
    reward = {key: float(graph.kind[key] == PAGE and relevance.is_relevant_key(key)) for key in graph.kind}
    value = dict(reward)
    for _ in range(steps):
        value = {key: reward[key] + decay * min(cap, sum(value[t] for t in graph.out.get(key, ()) if t in value))
                 for key in reward}
    return value


def oracle_parts(oracle: str) -> frozenset[str]:
    """``--oracle``'s comma-separated parts ("off" for none); an unknown part is a ValueError."""
    parts = frozenset(part.strip() for part in oracle.split(",") if part.strip()) - {"off"}
    unknown = parts - set(ORACLES)
    if unknown:
        raise ValueError(f"unknown oracle {', '.join(sorted(unknown))} (known: {', '.join(ORACLES)})")
    return parts


def _landing(graph: LinkGraph, key: str) -> str:
    """Where a link to ``key`` lands: a redirect's target, else ``key`` itself."""
    targets = graph.out.get(key) if graph.kind.get(key) == REDIRECT else None
    return targets[0] if targets else key


def oracle_hubs(graph: LinkGraph, relevance: Relevance) -> set[str]:
    """The URL keys a link to which lands on a page that is not relevant but links one that is
    (by the labels): the targets a perfect one-step hub model would mark."""
    def relevant(key):
        key = _landing(graph, key)
        return graph.is_page(key) and relevance.is_relevant_key(key)

    hubs = {key for key in graph.kind if graph.is_page(key) and not relevance.is_relevant_key(key)
            and any(relevant(t) for t in graph.out.get(key, ()))}
    return hubs | {key for key in graph.kind if graph.kind[key] == REDIRECT and _landing(graph, key) in hubs}


def frontier_quality(priority: dict[str, float], values: dict[str, float], top: int = 100) -> dict[str, float]:
    """How well ``priority`` ranks the frontier's URLs against their true future values
    (``oracle_values``): ROC AUC for "is a relevant page" (value >= 1), and the mean value of the
    ``top`` best-ranked URLs beside that of the ``top`` most valuable ones."""
    urls = list(priority)
    scores = np.fromiter((priority[u] for u in urls), dtype=float, count=len(urls))
    value = np.fromiter((values.get(url_key(u), 0.0) for u in urls), dtype=float, count=len(urls))
    relevant = value >= 1.0
    auc = roc_auc_score(relevant, scores) if 0 < relevant.sum() < len(urls) else float("nan")
    return {"auc": auc, "top": float(value[np.argsort(-scores)[:top]].mean()) if urls else 0.0,
            "best": float(np.sort(value)[::-1][:top].mean()) if urls else 0.0}


def rank_probe(marks: list[int], values: dict[str, float], quality: dict[int, list[dict]]):
    """A ``probe`` for one simulated run: appends the frontier's ``frontier_quality`` to
    ``quality[mark]`` once, when the run first reaches each of ``marks`` requests."""
    pending = sorted(marks)

    def probe(requests, frontier, priority, learner):
        while pending and requests >= pending[0]:
            quality[pending.pop(0)].append(frontier_quality({u: priority[u] for u in frontier if u in priority}, values))
    return probe


def simulate(web: Web, model: TopicModel, relevance: Relevance, seeds: list[str], budget: int, slots: int,
              margin: float, seed: int, oracle: str = "off", values: dict[str, float] | None = None,
              probe=None, version_every: int = VERSION_EVERY, jitter: float = 0.0,
              hubs: set[str] | None = None, strategy: str = "learned", scores: dict | None = None,
              variant: str = "off", spend: dict[str, int] | None = None) -> list[int]:
    """found(i) after each request, as ``metrics.found_curve`` counts it. ``oracle`` (comma-separated
    parts, ``oracle_parts``) "page": the labels score pages; "value": ``values`` (``oracle_values``)
    order the frontier; "live": links to pages the recording lacks are never followed; "hub": links to
    ``hubs`` (``oracle_hubs``, worked out here if not given) carry the feature HUB_FEATURE, starting
    weight 1.0. ``probe(requests,
    frontier, priority, learner)`` is called after each round (for diagnostics). ``version_every``:
    observations per learner version, the cadence of re-scoring the frontier. ``jitter``: the
    standard deviation of Gaussian noise added to each candidate's priority when a round is chosen
    (not stored): without it, seeded runs differ only in the seeds' and the responses' order and
    follow nearly one trajectory; with it, they sample the neighbouring ones, as a real crawl's
    timing does, so a variant can be checked for a gain that only one trajectory has.
    ``strategy``: what orders the frontier (``STRATEGIES``: the learner, or a classic crawler of
    ``focuscrawl.learning.strategies`` fed the same links as the scheduler feeds it). ``scores``: a
    dict kept across runs of one model, where the model's page and link scores are remembered (they
    do not depend on the run). ``variant``: a diagnostic variant of ``learned`` (``VARIANTS``).
    ``spend``: a dict where each request is counted by what it bought (``SPEND``)."""
    rng = random.Random(seed)
    scores = {} if scores is None else scores
    classic = None if strategy == "learned" else make_strategy(strategy, None)
    seeds = list(seeds)
    rng.shuffle(seeds)
    parts = oracle_parts(oracle)
    if "hub" not in parts:
        hubs = set()
    elif hubs is None:
        hubs = oracle_hubs(web.graph, relevance)
    learner = LinkRewardLearner(link_model=model.learned_links,  # as the scheduler's
                                version_every=version_every,
                                **({"exploration": 0.0} if variant == "no-bonus" else {}),
                                **({"learning_rate": 0.0} if variant == "frozen" else {}))
    priors = {**(model.learner_priors or {}), **({HUB_FEATURE: 1.0} if hubs else {})}
    learner.use_link_model(model.learned_links, priors)
    if variant == "no-words":
        learner.learn_words = False
    hit_threshold = model.even_odds_score  # FOCUS_REWARD_THRESHOLD's default
    deny = set(DEFAULTS.deny_extensions)
    frontier: dict[str, tuple] = {}  # canonical URL -> (vector, parent, depth, hops)
    seen: set[str] = set()
    priority: dict[str, float] = {}
    page_scores: dict[str, float] = {}
    found: set[str] = set()
    curve: list[int] = []
    link_scores: dict[str, float | None] = {}  # the link model's score of the link that found a URL

    def enqueue(url, parent, anchor, context, parent_score, depth, hops, link_score):
        canonical = canonicalize(url)
        if extension(canonical) in deny:
            return
        if canonical in seen:
            if classic is not None and canonical in frontier:  # a better link raises a classic's value
                meta = request_meta(LinkMeta(anchor, context, parent, parent_score, hops, link_score), depth)
                if classic.refound(canonical, meta):
                    priority[canonical] = classic.priority(canonical)
            return
        if not web.allowed(canonical):  # the gate refuses it: never requested, never counted
            seen.add(canonical)
            return
        key = url_key(canonical)
        if "live" in parts and parent is not None and not web.graph.is_page(_landing(web.graph, key)):
            return  # the recording lacks it: a 404 the live oracle knows of
        seen.add(canonical)
        context_ = LinkContext(canonical, anchor, context, parent, parent_score, depth, hops, link_score)
        features = link_features(context_)
        if key in hubs:
            features = (*features, (HUB_FEATURE, 1.0))
        frontier[canonical] = (learner.vectorise(features), parent, depth, hops)
        link_scores[canonical] = link_score
        if classic is not None:
            meta = request_meta(LinkMeta(anchor, context, parent, parent_score, hops, link_score), depth)
            priority[canonical] = classic.score(canonical, meta)

    def fetch(url, vector, parent, depth, hops):
        key = url_key(url)
        kind = web.graph.kind.get(key)
        curve.append(len(found))  # this request is counted whatever it returns
        if spend is not None:
            bought = ("redirect" if kind == REDIRECT else "nothing" if kind != PAGE or key not in web.pages
                      else "other page" if not relevance.is_relevant_key(key)
                      else "relevant again" if relevance.page_of_key(key) in found else "new relevant")
            spend[bought] = spend.get(bought, 0) + 1
        if kind == REDIRECT:  # the target is requested next, as Scrapy's redirect middleware does
            targets = web.graph.out.get(key) or []
            target = canonicalize(web.graph.url[targets[0]]) if targets else None
            if target and (target not in seen or target in frontier) and len(curve) < budget and web.allowed(target):
                seen.add(target)
                frontier.pop(target, None)
                link_scores[target] = link_scores.get(url)  # the request keeps its link's meta
                fetch(target, vector, parent, depth, hops)
            return
        if kind != PAGE or key not in web.pages:
            learner.observe(url, parent, vector, page_reward(None, False), False, True)
            return
        title, text, links = web.pages[key]
        score = page_scores.get(key)
        labelled = LABEL_SCORES[relevance.is_relevant_key(key)]
        if score is None:
            if "page" in parts:
                score = labelled
            else:
                score = scores.get(("page", key))
                if score is None:
                    score = scores[("page", key)] = model.score_page(title, text, links)
            page_scores[key] = score
        # the page and the link that led to it, as the spider judges them (FOCUS_LINK_EVIDENCE)
        evidence = score if "page" in parts else model.with_link_evidence(score, link_scores.get(url))
        hit = relevance.is_relevant_key(key) if "hits" in parts else evidence >= hit_threshold
        reward = learner.page_reward(labelled if "rewards" in parts else evidence, hit)
        learner.observe(url, parent, vector, reward, hit, False)
        if relevance.is_relevant_key(key):
            found.add(relevance.page_of_key(key))
            curve[-1] = len(found)
        hops = 0 if hit else hops + 1
        found_links = scores.get(("links", key))
        if found_links is None:
            found_links = scores[("links", key)] = model.score_links(links)
        if classic is not None:
            classic.released(url)
        for (anchor, context, link), link_score in zip(links, found_links):
            enqueue(link, url, anchor, context,
                    round(model.probability(labelled if "parent" in parts else evidence), 4), depth + 1, hops,
                    round(link_score, 4))

    for url in seeds:
        enqueue(url, None, "", "", None, 0, 0, None)
    version = None
    while frontier and len(curve) < budget:
        if "value" in parts:  # fixed values: only new URLs need one
            priority.update({url: values.get(url_key(url), 0.0) for url in frontier.keys() - priority.keys()})
        elif classic is not None:
            pass  # a classic's priorities are set when a link is found, raised when a better one is
        elif learner.version != version:
            version = learner.version
            priority = dict(zip(frontier, learner.score_many([(v, u, p) for u, (v, p, _, _) in frontier.items()])))
        for url in frontier.keys() - priority.keys():
            vector, parent, _, _ = frontier[url]
            priority[url] = learner.score(vector, url, parent)
        chosen, hosts, best = [], set(), None
        candidates = heapq.nlargest(max(slots * 20, 200), frontier, key=priority.__getitem__)
        seen_as = priority
        if jitter:
            seen_as = {url: priority[url] + rng.gauss(0.0, jitter) for url in candidates}
            candidates.sort(key=seen_as.__getitem__, reverse=True)
        for url in candidates:
            best = seen_as[url] if best is None else best
            if seen_as[url] < best - margin or len(chosen) >= slots:
                break
            host = host_key(url)
            if host not in hosts:
                hosts.add(host)
                chosen.append(url)
        rng.shuffle(chosen)  # responses come back in no particular order
        for url in chosen:
            if url in frontier and len(curve) < budget:
                vector, parent, depth, hops = frontier.pop(url)
                priority.pop(url, None)
                fetch(url, vector, parent, depth, hops)
        if probe is not None:
            probe(len(curve), frontier, priority, learner)
    return curve


_SHARED: dict = {}  # what the worker processes of ``simulate_runs`` read (inherited by fork)


def _one_run(run: int) -> tuple[list[int], dict[int, list[dict]], dict[str, int]]:
    """One seeded run with what ``simulate_runs`` shared: its curve, its rank probes and its spend."""
    shared = _SHARED
    spend: dict[str, int] = {}
    quality: dict[int, list[dict]] = {mark: [] for mark in shared["marks"]}
    probe = rank_probe(shared["marks"], shared["values"], quality) if shared["marks"] else None
    curve = simulate(shared["web"], shared["model"], shared["relevance"], shared["seeds"], shared["budget"],
                     shared["slots"], shared["margin"], run, shared["oracle"], shared["values"], probe,
                     shared["version_every"], shared["jitter"], shared["hubs"], shared["strategy"],
                     shared["scores"], shared["variant"], spend)
    return curve, quality, spend


def simulate_runs(web: Web, model: TopicModel, relevance: Relevance, seeds: list[str], budget: int, slots: int,
                  margin: float, runs: list[int], oracle: str = "off", values: dict[str, float] | None = None,
                  marks: list[int] = (), jobs: int = 1,
                  version_every: int = VERSION_EVERY,
                  jitter: float = 0.0, strategy: str = "learned", scores: dict | None = None,
                  variant: str = "off", spends: list | None = None) -> tuple[list[list[int]], dict[int, list[dict]]]:
    """``simulate`` for each seed in ``runs`` (curves in that order) and the ``--rank`` probes at
    ``marks``; with ``jobs`` > 1, in that many forked processes (a run is seeded, so the curves are
    the same either way). The model's scores are worked out once for all the runs of a process
    (``scores``: a dict to keep them in for later calls with the same model). ``spends``: a list each
    run's spend (``SPEND``: requests by what they bought) is appended to."""
    hubs = oracle_hubs(web.graph, relevance) if "hub" in oracle_parts(oracle) else None  # once, not per run
    _SHARED.update(web=web, model=model, relevance=relevance, seeds=seeds, budget=budget, slots=slots,
                   margin=margin, oracle=oracle, values=values, marks=list(marks), version_every=version_every,
                   jitter=jitter, hubs=hubs, strategy=strategy, scores={} if scores is None else scores,
                   variant=variant)
    try:
        if jobs > 1 and len(runs) > 1:
            with multiprocessing.get_context("fork").Pool(min(jobs, len(runs))) as pool:
                results = pool.map(_one_run, runs, chunksize=1)
        else:
            results = [_one_run(run) for run in runs]
    finally:
        _SHARED.clear()
    quality: dict[int, list[dict]] = {mark: [] for mark in marks}
    for _, probes, spend in results:
        for mark, rows in probes.items():
            quality[mark].extend(rows)
        if spends is not None:
            spends.append(spend)
    return [curve for curve, _, _ in results], quality


def _mean_and_error(values: list[float]) -> tuple[float, float]:
    """The mean and its standard error (0 for one value)."""
    mean = statistics.mean(values)
    return mean, (statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else 0.0)


def suite_cases(names: list[str], topics: list[str] | None = None, words: bool = False, **where):
    """(web, topic, model path) for each topic of the suite's webs ``names`` that this machine has
    (``bench/webs.py``), the models trained from example pages in the web's cache folder (with
    ``words``, no model path: the model is made from the topic's words); and what was skipped, with
    why. ``where``: ``shared`` and ``cache`` folders other than the catalogue's."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import webs as catalogue  # bench/webs.py

    found = catalogue.suite(names, **where)
    cases, skipped = [], dict(found.skipped)
    for web, topic in found.pairs():
        if topics and topic.name not in topics:
            continue
        model = web.cache("models", f"{topic.name}.joblib")
        if words:
            cases.append((web, topic, None))
        elif model.is_file():
            cases.append((web, topic, model))
        else:
            skipped[f"{web.name}/{topic.name}"] = f"{model} not trained (python bench/webs.py --train)"
    return cases, skipped


def run_suite(args, oracle) -> int:
    """``--webs``: each web and topic of the suite, recall at the web's budget and harvest@500 (or
    at the budget, when smaller), with standard errors over the runs, and the suite's mean."""
    started = time.time()
    cases, skipped = suite_cases(args.webs.split(","), [t for t in args.targets.split(",") if t] or None,
                                 words=args.words or bool(args.pages))
    for name, why in skipped.items():
        print(f"{name}: skipped: {why}", file=sys.stderr)
    if not cases:
        print("error: no web of the suite is here", file=sys.stderr)
        return 2
    run_seeds = list(range(args.first_run, args.first_run + args.runs))
    strategies = args.strategy.split(",")
    print(f"{args.runs} runs per topic (runs {run_seeds[0]}-{run_seeds[-1]}), {args.slots} slots, margin "
          f"{args.margin}, oracle {args.oracle}, version every {args.version_every}, jitter {args.jitter}")
    print("| web/topic (reachable) | strategy | recall@budget mean (se) [min-max] | harvest@500 |")
    print("|---|---|---|---|")
    means: dict[str, list[float]] = {name: [] for name in strategies}
    marks, ranking, spent = [int(n) for n in args.rank.split(",") if n], [], []
    results: dict[str, dict] = {}  # "web/topic" (strategy) -> per-run recall and harvest, for --output
    webs: dict[Path, Web] = {}
    for web, topic, model_path in cases:
        parsed = webs.get(web.warc)
        if parsed is None:
            webs.clear()  # one web in memory at a time (langdocs parsed is ~1 GB)
            parsed = webs[web.warc] = Web.cached(web.warc, web.aliases, args.cache)
        if args.words:
            model = build_query_model(topic.words)
        elif args.pages:
            from draw_examples import few_page_model  # bench/, on sys.path (suite_cases)

            model = few_page_model(web, topic, args.pages, args.contrast, calibrate=args.unlabelled_contrast)
        else:
            model = TopicModel.load(model_path)
        relevance = Relevance(load_labels(web.labels), topic.positive, parsed.same)
        reachable = len(reachable_relevant(parsed.graph, web.seeds, relevance)) or 1
        budget = args.budget or web.budget
        values = oracle_values(parsed.graph, relevance) if "value" in oracle or marks else None
        harvest_at = min(500, budget)
        scores: dict = {}  # the model's scores, for every strategy's runs
        for name in strategies:
            curves, quality = simulate_runs(parsed, model, relevance, list(web.seeds), budget, args.slots,
                                            args.margin, run_seeds, args.oracle, values, marks, args.jobs,
                                            args.version_every, args.jitter, name, scores, args.variant,
                                            spends := [])
            if args.spend:
                spent.append(f"| {web.name}/{topic.name} | {name} | "
                             + " | ".join(f"{statistics.mean(s.get(what, 0) for s in spends):.0f}" for what in SPEND) + " |")
            ranking.extend(f"| {web.name}/{topic.name} | {name} | {mark} | {np.nanmean([r['auc'] for r in rows]):.3f} | "
                           f"{statistics.mean(r['top'] for r in rows):.3f} | {statistics.mean(r['best'] for r in rows):.3f} |"
                           for mark, rows in quality.items() if rows)
            recall = [(c[-1] if c else 0) / reachable for c in curves]
            harvest = [(c[min(harvest_at, len(c)) - 1] if c else 0) / harvest_at for c in curves]
            mean, error = _mean_and_error(recall)
            means[name].append(mean)
            case = f"{web.name}/{topic.name}" + ("" if len(strategies) == 1 else f" ({name})")
            results[case] = {"strategy": name, "recall": recall, "harvest": harvest}
            print(f"| {web.name}/{topic.name} ({reachable}) | {name} | {mean:.3f} ({error:.3f}) "
                  f"[{min(recall):.2f}-{max(recall):.2f}] | {statistics.mean(harvest):.3f} |", flush=True)
    for name in strategies:
        print(f"suite mean recall@budget, {name}: {statistics.mean(means[name]):.3f} over {len(means[name])} "
              f"topics")
    if ranking:
        print("\n| web/topic | strategy | after requests | AUC (relevant) | value of best-ranked 100 | best 100 there |"
              "\n|---|---|---|---|---|---|")
        print("\n".join(ranking))
    if spent:
        print("\n| web/topic | strategy | requests: " + " | ".join(SPEND) + " |\n|---|---|" + "---|" * len(SPEND))
        print("\n".join(spent))
    print(f"({time.time() - started:.0f} s)")
    if args.output:
        args.output.write_text(json.dumps(results, indent=1))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--webs", default="", metavar="NAME[,NAME]",
                        help="simulate these webs of the suite (bench/webs.py: webkb, demo, langdocs, tooldocs), "
                             "each with its seeds, budget and models trained from example pages")
    parser.add_argument("--cache", type=Path, default=None, metavar="DIR",
                        help="with --webs: keep each parsed web here, read back next time")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="FILE",
                        help="with --webs: write each web/topic's per-run recall and harvest as JSON "
                             "(compare two screens with bench/compare_sims.py)")
    parser.add_argument("--words", action="store_true",
                        help="with --webs: each topic's model made from its words (scrapy train --query "
                             "Topic.words), not from example pages")
    parser.add_argument("--pages", type=int, default=0, metavar="N",
                        help="with --webs: each topic's model made from N on-topic pages of its training hosts "
                             "(bench/draw_examples.py, seed 0) against the background corpus")
    parser.add_argument("--contrast", type=int, default=0, metavar="K",
                        help="with --pages: their links read by the words the N pages share and K other pages "
                             "of their sites do not (query.attach_link_reading)")
    parser.add_argument("--unlabelled-contrast", action="store_true",
                        help="with --contrast: the K pages are the page classifier's unlabelled side too, "
                             "calibrated (scrapy train --unlabelled-contrast)")
    parser.add_argument("--strategy", default="learned", metavar="NAME[,NAME]",
                        help=f"what orders the frontier: {', '.join(STRATEGIES)} (default learned)")
    parser.add_argument("--spend", action="store_true",
                        help="with --webs: also report what the requests bought (mean per run: a new relevant "
                             "page, one found already at another URL, another page, a redirect, nothing)")
    parser.add_argument("--variant", default="off", choices=VARIANTS,
                        help="diagnostic: learned without a part (no-bonus: its exploration bonus; frozen: "
                             "its online learning of weights; no-words: its online link-word counts)")
    parser.add_argument("--webkb", default=str(Path(__file__).resolve().parents[2] / "shared" / "webkb"))
    parser.add_argument("--models", help="without --webs: the folder with TARGET.joblib per WebKB target")
    parser.add_argument("--targets", default=None,
                        help="topics (default: WebKB's four; with --webs, every topic of each web)")
    parser.add_argument("--runs", type=int, default=16,
                        help="seeded runs per target (default 16: fewer cannot tell variants apart)")
    parser.add_argument("--first-run", type=int, default=1, metavar="N",
                        help="number (and seed) of the first run (default 1): runs N..N+runs-1, so a "
                             "screen can be repeated on other trajectories")
    parser.add_argument("--budget", type=int, default=None,
                        help="requests per run (default 1000; with --webs, each web's budget)")
    parser.add_argument("--slots", type=int, default=16, help="requests per round, one per host (default 16)")
    parser.add_argument("--margin", type=float, default=DEFAULTS.patience_margin,
                        help=f"patience margin (default {DEFAULTS.patience_margin}, FOCUS_PATIENCE_MARGIN's)")
    parser.add_argument("--oracle", default="off", metavar="PART[,PART]",
                        help="page: labels score pages; value: true future values order the frontier; "
                             "live: links to pages never recorded are not followed; hub: a perfect one-step "
                             "hub feature; page's parts: hits (labels decide the learner's hits), parent "
                             "(labels give the score links inherit), rewards (a page not found is ranked on "
                             "the labels' score) (default off)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="runs at once, in forked processes (default 1; the figures do not change)")
    parser.add_argument("--version-every", type=int, default=VERSION_EVERY, metavar="N",
                        help=f"learner observations per version, the cadence of re-scoring (default "
                             f"{VERSION_EVERY}, the scheduler's)")
    parser.add_argument("--jitter", type=float, default=0.0, metavar="SD",
                        help="noise on priorities when a round is chosen, so runs sample neighbouring "
                             "trajectories (default 0)")
    parser.add_argument("--rank", default="", metavar="N,N",
                        help="also report how well the priorities rank the frontier after N requests")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    try:
        oracle = oracle_parts(args.oracle)
    except ValueError as exc:
        parser.error(str(exc))
    unknown = set(args.strategy.split(",")) - set(STRATEGIES)
    if unknown:
        parser.error(f"unknown strategy {', '.join(sorted(unknown))} (known: {', '.join(STRATEGIES)})")
    if args.webs:
        args.targets = args.targets or ""
        return run_suite(args, oracle)
    if not args.models:
        parser.error("--models is required without --webs")
    args.targets = args.targets or "course,student,faculty,project"
    args.budget = args.budget or 1000
    webkb = Path(args.webkb)
    if not (webkb / "webkb.warc.gz").exists():
        print(f"{webkb / 'webkb.warc.gz'} not found", file=sys.stderr)
        return 2
    started = time.time()
    web = Web(webkb / "webkb.warc.gz", webkb / "aliases.tsv")
    labels = load_labels(webkb / "labels.tsv")
    points = [n for n in POINTS if n <= args.budget]
    run_seeds = list(range(args.first_run, args.first_run + args.runs))
    print(f"{args.runs} runs per target (runs {run_seeds[0]}-{run_seeds[-1]}), budget {args.budget}, "
          f"{args.slots} slots, margin {args.margin}, oracle {args.oracle}, "
          f"version every {args.version_every} observations, jitter {args.jitter}")
    print("| target (reachable) | " + " | ".join(f"harvest@{n}" for n in points) + " | "
          + " | ".join(f"recall@{n} mean (min-max)" for n in points) + " |")
    print("|---|" + "---|" * 2 * len(points))
    recalls, marks, ranking = [], [int(n) for n in args.rank.split(",") if n], []
    strategy = args.strategy.split(",")[0]
    for target in args.targets.split(","):
        model = TopicModel.load(Path(args.models) / f"{target}.joblib")
        relevance = Relevance(labels, [target], web.same)
        reachable = len(reachable_relevant(web.graph, SEEDS, relevance))
        values = oracle_values(web.graph, relevance) if "value" in oracle or marks else None
        curves, quality = simulate_runs(web, model, relevance, SEEDS, args.budget, args.slots, args.margin,
                                        run_seeds, args.oracle, values, marks, args.jobs,
                                        args.version_every, args.jitter, strategy, variant=args.variant)
        for mark, rows in quality.items():
            if rows:
                ranking.append(f"| {target} | {mark} | {np.nanmean([r['auc'] for r in rows]):.3f} | "
                               f"{statistics.mean(r['top'] for r in rows):.3f} | "
                               f"{statistics.mean(r['best'] for r in rows):.3f} |")
        at = {n: [c[min(n, len(c)) - 1] if c else 0 for c in curves] for n in points}
        recalls.append(statistics.mean(at[points[-1]]) / reachable)
        print(f"| {target} ({reachable}) | "
              + " | ".join(f"{statistics.mean(at[n]) / n:.3f}" for n in points) + " | "
              + " | ".join(f"{100 * statistics.mean(at[n]) / reachable:.1f}% ({100 * min(at[n]) / reachable:.0f}-"
                           f"{100 * max(at[n]) / reachable:.0f})" for n in points) + " |")
    print(f"mean recall@{points[-1]} over targets: {100 * statistics.mean(recalls):.1f}%  ({time.time() - started:.0f} s)")
    if ranking:
        print("\n| target | after requests | AUC (relevant) | value of best-ranked 100 | best 100 there |\n|---|---|---|---|---|")
        print("\n".join(ranking))
    return 0


if __name__ == "__main__":
    sys.exit(main())
