"""focuscrawl.learning.hits: a page counts as found at the threshold, or among the crawl's best."""

from __future__ import annotations

import random

import pytest

from focuscrawl.config import ConfigError, FocusConfig
from focuscrawl.learning.hits import LEAST_PAGES, Hits


def test_the_threshold_alone_judges_with_top_zero():
    hits = Hits(0.8, top=0.0)
    assert [hits.judge(s) for s in (0.9, 0.1, 0.8, 0.79)] == [True, False, True, False]


def test_a_crawl_whose_pages_all_score_low_counts_its_best_as_found():
    """Every page scores below the threshold (a model reading sites unlike its examples): after the
    first pages, those ranking in the top share count as found, about that share of them."""
    rng = random.Random(1)
    hits = Hits(0.9, top=0.05)
    scores = [rng.uniform(0.001, 0.05) for _ in range(2000)]
    judged = [hits.judge(s) for s in scores]
    assert not any(judged[:LEAST_PAGES])  # a rank among a handful says nothing
    share = sum(judged) / len(judged)
    assert 0.02 < share < 0.08, share
    best = sorted(scores)[-len(scores) // 10:]
    assert sum(j for s, j in zip(scores, judged) if s in set(best)) > 0.5 * sum(judged)  # hits are the high ones


def test_where_the_threshold_finds_many_the_rank_adds_nothing():
    """A crawl whose pages often pass the threshold: the top share of its scores is above it."""
    rng = random.Random(2)
    hits, plain = Hits(0.5, top=0.05), Hits(0.5, top=0.0)
    scores = [rng.choice((rng.uniform(0.6, 0.99), rng.uniform(0.0, 0.3))) for _ in range(1000)]
    assert [hits.judge(s) for s in scores] == [plain.judge(s) for s in scores]


def test_ties_do_not_all_count_as_the_best():
    """Pages that all score the same (an oracle's 0.01 for every off-topic page) are no one's best."""
    hits = Hits(0.9, top=0.05)
    assert not any(hits.judge(0.01) for _ in range(500))
    assert hits.higher_share(0.5) == 0.0 and hits.higher_share(0.0) == pytest.approx(1.0)


def test_scores_at_the_ends_are_counted():
    hits = Hits(0.9, top=0.05)
    for s in (0.0, 1.0, 1e-30, 0.5):
        hits.judge(s)
    assert hits.scored == 4 and hits.counts.sum() == 4


def test_top_is_a_share():
    with pytest.raises(ValueError):
        Hits(0.5, top=1.0)
    assert FocusConfig.from_settings({"FOCUS_REWARD_TOP": "0.1"}).reward_top == 0.1
    with pytest.raises(ConfigError):
        FocusConfig.from_settings({"FOCUS_REWARD_TOP": "1.5"})
