"""The link-reward learner, free of Scrapy's crawler: link features, an online linear reward
model, credit assignment along crawl paths, and an exploration bonus over hosts and path
prefixes."""

from focuscrawl.learning.features import LinkContext, link_context, link_features
from focuscrawl.learning.learner import LinkRewardLearner, OnlineLinearRegressor
# link_parent lives in focuscrawl.meta; importable from here until the scheduler's rewrite is in
from focuscrawl.meta import link_parent

__all__ = ["LinkContext", "link_context", "LinkRewardLearner", "OnlineLinearRegressor", "link_features",
           "link_parent"]
