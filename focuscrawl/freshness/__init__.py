"""Keeping a continuous crawl's pages fresh, free of Scrapy: how often each page changes
(`estimate`), how often to revisit each for the most weighted freshness at a revisit budget
(`allocate`), and the per-crawl plan the scheduler drives (`revisits`)."""

from focuscrawl.freshness.allocate import (
    Allocation,
    age,
    expected_age,
    expected_freshness,
    freshness,
    optimal_intervals,
    proportional_intervals,
    uniform_intervals,
)
from focuscrawl.freshness.estimate import (
    VisitHistory,
    changefreq_rate,
    estimate_rate,
    naive_rate,
)
from focuscrawl.freshness.revisits import RevisitPlan

__all__ = [
    "Allocation",
    "RevisitPlan",
    "VisitHistory",
    "age",
    "changefreq_rate",
    "estimate_rate",
    "expected_age",
    "expected_freshness",
    "freshness",
    "naive_rate",
    "optimal_intervals",
    "proportional_intervals",
    "uniform_intervals",
]
