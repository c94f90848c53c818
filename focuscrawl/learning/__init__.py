"""The link-reward learner, free of Scrapy: link features, an online linear reward model, credit
assignment along crawl paths, and an exploration bonus over hosts and path prefixes."""

from focuscrawl.learning.features import LinkContext, link_context, link_features, link_meta, link_parent
from focuscrawl.learning.learner import LinkRewardLearner, OnlineLinearRegressor

__all__ = ["LinkContext", "link_context", "LinkRewardLearner", "OnlineLinearRegressor", "link_features", "link_meta",
           "link_parent"]
