"""bench/simulate.py is an instrument: it must be deterministic for a seed and count like evaluate."""

from __future__ import annotations

import copy
import json

import pytest

from focuscrawl.relevance import TopicModel
from focuscrawl.replay.metrics import Relevance, load_labels, reachable_relevant

from .conftest import load_bench

pytestmark = pytest.mark.slow  # simulated crawls of the demo web, several a test


def test_simulation_is_seeded_and_finds_the_topic_on_the_demo_web(demo_web, demo_files, demo_model):
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    reachable = len(reachable_relevant(web.graph, demo_web.seeds, relevance))
    runs = [sim.simulate(web, model, relevance, demo_web.seeds, 150, 8, 0.25, seed) for seed in (1, 1, 2)]
    assert runs[0] == runs[1]  # same seed, same crawl
    for curve in runs:
        assert len(curve) == 150
        assert all(a <= b for a, b in zip(curve, curve[1:]))  # found(i) never decreases
        assert curve[-1] <= reachable
        # a focused crawl of the demo web: most of its 150 requests find relevant pages
        assert curve[-1] > 0.5 * 150, curve[-1]


def test_oracles_bound_the_crawl_from_above(demo_web, demo_files, demo_model):
    """The value oracle orders the frontier by true future value: it finds more than the learned
    crawl and far more than an uninformed order; the page oracle scores pages by their labels."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    values = sim.oracle_values(web.graph, relevance)
    relevant = [key for key in web.graph.kind if web.graph.is_page(key) and relevance.is_relevant_key(key)]
    assert relevant and all(values[key] >= 1.0 for key in relevant)
    assert all(0.0 <= v <= 1.0 + 0.5 * 3.0 for v in values.values())
    oracle = sim.simulate(web, model, relevance, demo_web.seeds, 150, 8, 0.25, 1, "value", values)
    learned = sim.simulate(web, model, relevance, demo_web.seeds, 150, 8, 0.25, 1)
    blind = sim.simulate(web, model, relevance, demo_web.seeds, 150, 8, 0.25, 1, "value", {})  # all worth 0
    assert oracle[-1] >= learned[-1] and oracle[-1] > 2 * blind[-1], (oracle[-1], learned[-1], blind[-1])
    labelled = sim.simulate(web, model, relevance, demo_web.seeds, 150, 8, 0.25, 1, "page")
    assert len(labelled) == 150 and labelled[-1] > 0.5 * 150


def test_frontier_quality_scores_how_priorities_rank_the_frontier(demo_web, demo_files, demo_model):
    sim = load_bench("simulate")
    values = {"http://a.test/1": 1.5, "http://a.test/2": 1.0, "http://a.test/3": 0.2, "http://a.test/4": 0.0}
    keys = {sim.url_key(u): v for u, v in values.items()}
    perfect = sim.frontier_quality(dict(values), keys, top=2)
    assert perfect == {"auc": 1.0, "top": 1.25, "best": 1.25}
    reversed_ = sim.frontier_quality({u: -v for u, v in values.items()}, keys, top=2)
    assert reversed_["auc"] == 0.0 and reversed_["top"] == 0.1 and reversed_["best"] == 1.25
    # the learned crawl's priorities, probed while it runs, put the demo frontier's best URLs first
    web = sim.Web(demo_files["warc"], None)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    oracle = sim.oracle_values(web.graph, relevance)
    seen = []

    def probe(requests, frontier, priority, learner):
        waiting = {u: priority[u] for u in frontier if u in priority}
        seen.append((sim.frontier_quality(waiting, oracle), sim.frontier_quality({u: -p for u, p in waiting.items()}, oracle)))

    sim.simulate(web, TopicModel.load(demo_model), relevance, demo_web.seeds, 80, 8, 0.25, 1, probe=probe)
    # over the second half of the crawl (one probe's top share swings between 0.83 and 1.0 as the
    # frontier changes), the top of the frontier holds most of the value the best order would
    later = seen[len(seen) // 2:]
    share = sum(learned["top"] / learned["best"] for learned, _ in later) / len(later)
    assert share > 0.9, later
    learned, backwards = seen[-1]
    assert learned["top"] > backwards["top"] + 0.3, seen[-1]
    # --rank: one measure per run at each mark, whatever the order of the marks
    quality = {20: [], 60: []}
    for run in (1, 2):
        sim.simulate(web, TopicModel.load(demo_model), relevance, demo_web.seeds, 80, 8, 0.25, run,
                     probe=sim.rank_probe([60, 20], oracle, quality))
    assert [len(rows) for rows in quality.values()] == [2, 2]


def test_runs_in_parallel_give_the_same_figures(demo_web, demo_files, demo_model):
    """--jobs: seeded runs forked into worker processes give the curves and rank probes of the
    same runs one after another, in the order of the seeds."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    values = sim.oracle_values(web.graph, relevance)
    args = (web, model, relevance, demo_web.seeds, 60, 8, 0.25, [3, 1, 2], "off", values, [20, 40])
    one_by_one = sim.simulate_runs(*args, jobs=1)
    forked = sim.simulate_runs(*args, jobs=2)
    assert forked[0] == one_by_one[0]
    assert json.dumps(forked[1]) == json.dumps(one_by_one[1])  # AUC may be NaN, which equals nothing
    curves, quality = forked
    assert curves[1] == sim.simulate(web, model, relevance, demo_web.seeds, 60, 8, 0.25, 1)
    assert [len(rows) for rows in quality.values()] == [3, 3]


def test_jitter_samples_neighbouring_trajectories_and_stays_seeded(demo_web, demo_files, demo_model):
    """--jitter perturbs each round's choice (seeded: the same seed gives the same crawl); without it
    the crawl is the default one. --version-every reaches the learner."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    order = []  # per crawl: the frontier after each round, as the probe sees it

    def crawl(seed, **options):
        requested = []

        def probe(requests, frontier, priority, learner):
            requested.append((requests, frozenset(frontier)))
            assert learner.version_every == options.get("version_every", sim.VERSION_EVERY)
        curve = sim.simulate(web, model, relevance, demo_web.seeds, 100, 8, 0.25, seed, probe=probe, **options)
        order.append(requested)
        return curve

    plain = crawl(1)
    assert crawl(1, jitter=0.0) == plain and order[0] == order[1]
    jittered = [crawl(seed, jitter=0.2) for seed in (1, 1, 2, 3)]
    assert jittered[0] == jittered[1] and order[2] == order[3]
    assert any(frontiers != order[0] for frontiers in order[2:])  # the noise changed what was chosen
    assert all(curve[-1] > 0.4 * 100 for curve in jittered)
    crawl(1, version_every=4)


def test_hub_oracle_marks_pages_that_link_a_relevant_one():
    """``oracle_hubs``: a page that is not relevant but links one that is, through a redirect too;
    a relevant page, a page linking only a missing or an off-topic page, is not one."""
    sim = load_bench("simulate")
    graph = sim.LinkGraph.from_edges(
        {"http://a.test/": ["http://a.test/list", "http://a.test/people", "http://a.test/moved"],
         "http://a.test/list": ["http://a.test/c1", "http://a.test/gone"],
         "http://a.test/people": ["http://a.test/bob", "http://a.test/gone"],
         "http://a.test/c1": ["http://a.test/c2"], "http://a.test/c2": [], "http://a.test/bob": [],
         "http://a.test/new": ["http://a.test/old-course"]},
        redirects={"http://a.test/moved": "http://a.test/new", "http://a.test/old-course": "http://a.test/c2"})
    labels = {"http://a.test/c1": "course", "http://a.test/c2": "course", "http://a.test/bob": "student"}
    relevance = Relevance(labels, ["course"])
    hubs = {graph.url[key] for key in sim.oracle_hubs(graph, relevance)}
    # /new links a course page through a redirect; /moved is a redirect to that hub
    assert hubs == {"http://a.test/list", "http://a.test/new", "http://a.test/moved"}
    assert sim.oracle_parts("live,hub") == {"live", "hub"} and sim.oracle_parts("off") == set()
    try:
        sim.oracle_parts("live,psychic")
    except ValueError as exc:
        assert "psychic" in str(exc)
    else:
        raise AssertionError("an unknown oracle part was accepted")


def test_live_oracle_never_queues_a_missing_page_and_hub_oracle_feeds_the_learner(demo_web, demo_files,
                                                                                 demo_model):
    """``--oracle live`` queues no link to a page the recording lacks (the demo web links some), and finds about as much as the learned crawl; ``--oracle hub`` starts the
    learner's hub feature at 1.0 and marks the links to hubs with it."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    hubs = sim.oracle_hubs(web.graph, relevance)
    queued = {"live": set(), "off": set(), "live,hub": set()}
    hub_weight = {}

    def prober(oracle):
        def probe(requests, frontier, priority, learner):
            queued[oracle].update(frontier)
            hub_weight.setdefault(oracle, learner.model.coef_[learner.model.index(sim.HUB_FEATURE)])
        return probe

    def dead(url):
        return not web.graph.is_page(sim._landing(web.graph, sim.url_key(url)))

    found = {oracle: [] for oracle in queued}
    for run in (1, 2, 3):
        for oracle in queued:
            curve = sim.simulate(web, model, relevance, demo_web.seeds, 120, 8, 0.25, run, oracle,
                                 probe=prober(oracle))
            found[oracle].append(curve[-1])
    assert demo_web.missing and any(dead(url) for url in demo_web.missing)  # links the live oracle must skip
    assert queued["live"] and not any(dead(url) for url in queued["live"])
    assert sum(found["live"]) >= sum(found["off"]) - 3, found
    assert hubs and any(sim.url_key(url) in hubs for url in queued["live,hub"])
    assert hub_weight["off"] == 0.0 and hub_weight["live,hub"] != 0.0, hub_weight
    assert all(n > 0.5 * 120 for n in found["live,hub"]), found


def test_the_classic_strategies_are_simulated_with_the_same_accounting(demo_web, demo_files, demo_model):
    """``strategy``: a classic crawler of focuscrawl.learning.strategies orders the frontier, fed
    the same links; the model's scores, kept in ``scores`` across runs, change nothing."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    scores: dict = {}
    for name in ("bestfirst", "shark", "bfs"):
        curve = sim.simulate(web, model, relevance, demo_web.seeds, 120, 8, 0.25, 1, strategy=name, scores=scores)
        again = sim.simulate(web, model, relevance, demo_web.seeds, 120, 8, 0.25, 1, strategy=name, scores=scores)
        assert curve == again and len(curve) == 120
        assert all(a <= b for a, b in zip(curve, curve[1:]))
    assert scores  # filled once, read by the later runs
    bestfirst = sim.simulate(web, model, relevance, demo_web.seeds, 120, 8, 0.25, 1, strategy="bestfirst")
    bfs = sim.simulate(web, model, relevance, demo_web.seeds, 120, 8, 0.25, 1, strategy="bfs")
    assert bestfirst[-1] > bfs[-1]  # the topic model's order beats discovery order on the demo web


def test_the_suite_cases_skip_what_this_machine_lacks(tmp_path):
    sim = load_bench("simulate")
    cases, skipped = sim.suite_cases(["webkb", "tooldocs"], shared=tmp_path, cache=tmp_path)
    assert cases == [] and set(skipped) == {"webkb", "tooldocs"}


def test_spend_counts_every_request_and_the_variants_run(demo_web, demo_files, demo_model):
    """``spend`` counts each request once, by what it bought (a relevant page once, however many
    URLs serve it); the diagnostic variants of ``learned`` run seeded, each a crawl of its own."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    spend: dict[str, int] = {}
    curve = sim.simulate(web, model, relevance, demo_web.seeds, 80, 8, 0.25, 1, spend=spend)
    assert set(spend) <= set(sim.SPEND) and sum(spend.values()) == len(curve) == 80
    assert spend.get("new relevant", 0) == curve[-1]
    for variant in sim.VARIANTS:
        runs = [sim.simulate(web, model, relevance, demo_web.seeds, 80, 8, 0.25, 1, variant=variant) for _ in (1, 2)]
        assert runs[0] == runs[1] and len(runs[0]) == 80, variant


def test_the_page_oracle_is_its_three_parts(demo_web, demo_files, demo_model):
    """``page`` is ``hits``, ``parent`` and ``rewards`` together for a model without a link model
    (no link evidence to leave out); each part alone runs seeded and counts every request."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    model = copy.copy(TopicModel.load(demo_model))  # the loaded model is shared (TopicModel.load keeps it)
    model.link_pipeline = None
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    page = sim.simulate(web, model, relevance, demo_web.seeds, 80, 8, 0.25, 1, "page")
    assert sim.simulate(web, model, relevance, demo_web.seeds, 80, 8, 0.25, 1, "hits,parent,rewards") == page
    for part in ("hits", "parent", "rewards"):
        runs = [sim.simulate(web, model, relevance, demo_web.seeds, 80, 8, 0.25, 1, part) for _ in (1, 2)]
        assert runs[0] == runs[1] and len(runs[0]) == 80, part


def test_the_simulation_obeys_the_recorded_robots_txt(demo_web, demo_files, demo_model, monkeypatch, tmp_path):
    """The demo web's robots.txt files disallow /private/ on three hosts, with relevant pages behind
    it: the crawler never requests them, so neither does the simulation (it fetched them, and its
    recall on the demo web stood ~0.05 over what any polite crawl can reach). The cached web reads
    the same robots.txt files back."""
    sim = load_bench("simulate")
    web = sim.Web(demo_files["warc"], None)
    assert web.robots and not web.allowed("http://www.skywatch-journal.test/private/a.html")
    assert web.allowed("http://www.skywatch-journal.test/a.html") and web.allowed("http://unknown.test/private/")
    cached = sim.Web.cached(demo_files["warc"], None, tmp_path)
    again = sim.Web.cached(demo_files["warc"], None, tmp_path)
    assert cached.robots == again.robots == web.robots
    model = TopicModel.load(demo_model)
    relevance = Relevance(load_labels(demo_files["labels"]), [demo_web.topic], web.same)
    requested = []
    observe = sim.LinkRewardLearner.observe
    monkeypatch.setattr(sim.LinkRewardLearner, "observe",
                        lambda self, url, *args: requested.append(url) or observe(self, url, *args))

    def private_requests(robots):
        web.use_robots(robots)
        requested.clear()
        sim.simulate(web, model, relevance, demo_web.seeds, 400, 8, 0.25, 1)
        return sum("/private/" in url for url in requested)

    assert private_requests(again.robots) == 0
    assert private_requests({}) > 0  # without them, the pages behind are found and fetched
