"""A page's rank among the crawl's scored pages, and the learner's reward read on it."""
import pickle

import pytest

from focuscrawl.learning import LinkRewardLearner
from focuscrawl.learning.learner import WASTE_REWARD
from focuscrawl.learning.ranks import RANK_REWARD
from focuscrawl.learning.ranks import ScoreRanks


def test_rank_is_the_share_of_pages_scored_lower():
    ranks = ScoreRanks()
    assert ranks.rank(0.3) == 0.5  # nothing to compare with yet
    for score in (0.01, 0.02, 0.03, 0.04):
        ranks.add(score)
    assert ranks.rank(0.9) == pytest.approx(4.5 / 5)  # above all four
    assert ranks.rank(1e-6) == pytest.approx(0.5 / 5)  # below all four
    assert ranks.rank(0.025) == pytest.approx(2.5 / 5)
    assert ranks.rank(0.03) == pytest.approx(3.0 / 5)  # its own bin's page counts half


def test_rank_needs_the_order_of_scores_not_their_scale():
    """A model that scores every page of a web far below even odds orders them as one that does not."""
    low, high = ScoreRanks(), ScoreRanks()
    for i in range(1, 40):
        low.add(0.001 * i)
        high.add(0.02 * i)
    assert low.rank(0.0205) == pytest.approx(high.rank(0.41), abs=0.03)
    assert low.rank(0.05) > 0.95 and high.rank(0.99) > 0.95


def test_scores_past_the_histogram_fall_in_its_end_bins():
    ranks = ScoreRanks()
    for score in (0.0, 1.0, 1e-30, 1 - 1e-15):
        ranks.add(score)
    assert ranks.scored == 4 and ranks.counts.sum() == 4


def test_learner_rewards_a_page_not_found_by_its_rank():
    learner = LinkRewardLearner()
    rewards = [learner.page_reward(score, False) for score in (0.03, 0.01, 0.02, 0.05)]
    # each among the pages scored before it: first (0.5), below one, between two, above three
    assert rewards == pytest.approx([RANK_REWARD * r for r in (0.5, 0.5 / 2, 1.5 / 3, 3.5 / 4)])
    assert learner.page_reward(0.001, True) == 1.0  # a hit is a hit, whatever it scores
    assert learner.page_reward(None, False) == WASTE_REWARD
    assert learner.ranks.scored == 5  # waste is no score


def test_a_model_scoring_every_page_low_still_teaches_the_learner():
    """Before ranks, a page at 0.04 and one at 0.02 were worth 0.01 and 0.005: nothing to learn from."""
    learner = LinkRewardLearner()
    for i in range(50):
        learner.page_reward(0.02 + 0.0004 * (i % 10), False)
    assert learner.page_reward(0.05, False) - learner.page_reward(0.015, False) > 0.2


def test_ranks_survive_a_checkpoint_and_an_old_checkpoint_gets_them():
    learner = LinkRewardLearner()
    for score in (0.1, 0.2, 0.3):
        learner.page_reward(score, False)
    restored = pickle.loads(pickle.dumps(learner))
    assert restored.ranks.scored == 3 and restored.ranks.rank(0.5) == learner.ranks.rank(0.5)
    state = learner.__dict__.copy()
    del state["ranks"]
    old = LinkRewardLearner.__new__(LinkRewardLearner)
    old.__setstate__(state)
    assert old.ranks.scored == 0 and old.page_reward(0.2, False) == pytest.approx(RANK_REWARD * 0.5)
