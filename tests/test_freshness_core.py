"""Freshness cores (focuscrawl/freshness): change-rate estimates, revisit allocation, the revisit plan.

Statistical tests use fixed seeds and bounds several standard errors wide: they fail when an
estimator or a schedule is wrong, not when a sample is unlucky.
"""

from __future__ import annotations

import math
import pickle
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from scipy.integrate import quad

from focuscrawl.freshness import (
    RevisitPlan,
    VisitHistory,
    age,
    changefreq_rate,
    estimate_rate,
    expected_age,
    expected_freshness,
    freshness,
    naive_rate,
    optimal_intervals,
    proportional_intervals,
    uniform_intervals,
)
from focuscrawl.freshness.allocate import _inverse_g
from focuscrawl.freshness.estimate import rate_from_changes, rate_from_last_modified
from tests.fuzzing import within

HOUR = 3600.0
DAY = 86400.0


# --- simulated pages -----------------------------------------------------------------------------

def observe(rng: np.random.Generator, rate: float, intervals, last_modified: bool = False) -> VisitHistory:
    """The history a crawler sees of a page changing as a Poisson process of `rate`.

    Looking back from a visit, the time to the page's latest change is exponential (the process
    reversed is Poisson too): the interval saw a change iff that time is shorter than the interval,
    and the time is what Last-Modified reports.
    """
    history = VisitHistory(limit=len(intervals))
    for interval in intervals:
        since_change = rng.exponential(1 / rate)
        changed = since_change < interval
        history.add(interval, changed, since_change if (changed and last_modified) else None, limit=len(intervals))
    return history


def relative_errors(estimates, rate) -> np.ndarray:
    return (np.asarray(estimates) - rate) / rate


def mixed_collection(size: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rates spread over three decades (a change every 20 minutes to every two weeks), weights 0.05 to 1."""
    rng = np.random.default_rng(seed)
    rates = np.exp(rng.uniform(np.log(1 / (14 * DAY)), np.log(1 / (20 * 60)), size))
    weights = rng.uniform(0.05, 1.0, size)
    return rates, weights


# --- estimate.py ---------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", range(11))
def test_at_regular_intervals_the_estimate_is_the_papers_bias_reduced_estimator(changes):
    visits = 10
    history = VisitHistory([(HOUR, i < changes) for i in range(visits)])
    expected = -math.log((visits - changes + 0.5) / (visits + 0.5)) / HOUR
    assert estimate_rate(history, prior_rate=1 / DAY, prior_weight=0) == pytest.approx(expected, rel=1e-9)
    reordered = VisitHistory(reversed(list(history)))
    assert estimate_rate(reordered, prior_rate=1 / DAY, prior_weight=0) == pytest.approx(expected, rel=1e-9)


def test_it_recovers_a_known_rate_from_changes_seen_at_irregular_intervals():
    rng = np.random.default_rng(7)
    rate = 1 / (6 * HOUR)
    estimates = []
    for _ in range(300):
        intervals = rng.uniform(0.2, 3.0, 24) / rate  # some visits well apart, some close
        estimates.append(estimate_rate(observe(rng, rate, intervals), prior_rate=1 / DAY, prior_weight=0))
    errors = relative_errors(estimates, rate)
    assert abs(np.median(errors)) < 0.08
    assert abs(errors.mean()) < 0.12
    assert np.mean(np.abs(errors)) < 0.35


def test_at_sparse_visits_it_is_far_less_biased_than_changes_over_time():
    rng = np.random.default_rng(11)
    rate = 1 / HOUR
    ours, naive = [], []
    for _ in range(300):
        intervals = rng.uniform(1.5, 2.5, 20) / rate  # about two changes between visits
        history = observe(rng, rate, intervals)
        ours.append(estimate_rate(history, prior_rate=1 / DAY, prior_weight=0))
        naive.append(naive_rate(history))
    naive_bias = relative_errors(naive, rate).mean()
    our_bias = relative_errors(ours, rate).mean()
    assert naive_bias < -0.5  # X/T can never see more than one change an interval
    assert abs(our_bias) < 0.15
    assert abs(our_bias) < abs(naive_bias) / 4


def test_last_modified_times_estimate_the_rate_better_than_changes_alone():
    rng = np.random.default_rng(5)
    rate = 1 / HOUR
    with_times, changes_only = [], []
    for _ in range(300):
        intervals = rng.uniform(4.0, 10.0, 24) / rate  # several changes between visits
        history = observe(rng, rate, intervals, last_modified=True)
        assert history.modification_times_known or not history.changes
        with_times.append(estimate_rate(history, prior_rate=1 / DAY, prior_weight=0))
        changes_only.append(rate_from_changes(history))
    with_times_errors = relative_errors(with_times, rate)
    changes_only_errors = relative_errors(changes_only, rate)
    assert abs(np.median(with_times_errors)) < 0.08
    assert abs(with_times_errors.mean()) < 0.08
    assert np.sqrt(np.mean(with_times_errors ** 2)) < 0.6 * np.sqrt(np.mean(changes_only_errors ** 2))


def test_the_last_modified_estimator_is_the_papers_formula():
    # 4 visits an hour apart, 2 changed, last modified 10 and 40 minutes before the visit
    history = VisitHistory([(HOUR, True, 600.0), (HOUR, False), (HOUR, True, 2400.0), (HOUR, False)])
    corrected = (2 - 1) - 2 / (4 * math.log(1 - 2 / 4))
    assert rate_from_last_modified(history) == pytest.approx(corrected / (600 + 2400 + 2 * HOUR))
    everything_changed = VisitHistory([(HOUR, True, 600.0)] * 3)
    assert rate_from_last_modified(everything_changed) == pytest.approx(2 / 1800)


def test_a_change_without_a_time_makes_the_estimate_use_changes_alone():
    history = VisitHistory([(HOUR, True, 600.0), (HOUR, True), (HOUR, False)])
    assert not history.modification_times_known
    assert estimate_rate(history, 1 / DAY, 0) == pytest.approx(rate_from_changes(history))


def test_a_page_seen_twice_gets_a_finite_positive_rate_moved_from_the_prior_as_its_visit_says():
    prior = 1 / DAY
    changed = VisitHistory([(HOUR, True)])
    unchanged = VisitHistory([(HOUR, False)])
    assert math.isfinite(estimate_rate(changed, prior)) and estimate_rate(changed, prior) > prior
    assert 0 < estimate_rate(unchanged, prior) < prior
    assert estimate_rate(VisitHistory(), prior) == prior
    # without a prior: the paper's half interval keeps "always changed" finite; "never" is 0
    assert math.isfinite(estimate_rate(changed, prior, prior_weight=0)) and estimate_rate(changed, prior, 0) > 0
    assert estimate_rate(unchanged, prior, prior_weight=0) == 0.0
    once_with_time = VisitHistory([(HOUR, True, 60.0)])
    assert 0 < estimate_rate(once_with_time, prior) < math.inf


@pytest.mark.parametrize("prior_error", [10.0, 0.1])
def test_a_days_history_outweighs_a_prior_ten_times_off(prior_error):
    rng = np.random.default_rng(3)
    rate = 1 / (2 * HOUR)
    estimates = [estimate_rate(observe(rng, rate, np.full(24, HOUR)), prior_rate=rate * prior_error)
                 for _ in range(200)]
    off_by = np.abs(np.log(np.median(estimates) / rate))
    assert off_by < math.log(1.6) and off_by < math.log(10) / 4


def test_the_history_forgets_its_oldest_intervals():
    history = VisitHistory()
    for i in range(30):
        history.add(float(i + 1), i % 3 == 0, limit=8)
    assert len(history) == 8
    assert [interval for interval, _, _ in history] == [float(i + 1) for i in range(22, 30)]
    assert history.span == sum(range(23, 31))


def test_the_history_ignores_empty_intervals_and_last_modified_that_contradicts_the_change():
    history = VisitHistory()
    assert not history.add(0.0, True) and not history.add(-5.0, True) and not history.add(math.nan, False)
    history.add(100.0, True, since_modified=250.0)  # modified before the previous visit
    history.add(100.0, True, since_modified=-1.0)
    history.add(100.0, True, since_modified=30.0)
    assert list(history) == [(100.0, True, None), (100.0, True, None), (100.0, True, 30.0)]
    assert pickle.loads(pickle.dumps(history)) == history


def test_changefreq_words_become_rates_in_order():
    words = ["always", "hourly", "daily", "weekly", "monthly", "yearly", "never"]
    rates = [changefreq_rate(word) for word in words]
    assert rates == sorted(rates, reverse=True)
    assert changefreq_rate(" Daily\n") == pytest.approx(1 / DAY)
    assert changefreq_rate("sometimes") is None and changefreq_rate(None) is None and changefreq_rate("") is None


intervals_st = st.floats(min_value=0, max_value=1e12, allow_subnormal=True)
visits_st = st.lists(st.tuples(intervals_st, st.booleans(), st.one_of(st.none(), intervals_st)), max_size=30)
prior_rate_st = st.floats(min_value=0, max_value=1e6, allow_subnormal=True)
prior_weight_st = st.floats(min_value=0, max_value=1e3)


@given(visits_st, prior_rate_st, prior_weight_st)
def test_any_history_and_prior_give_a_finite_rate(visits, prior_rate, prior_weight):
    rate = estimate_rate(VisitHistory(visits), prior_rate, prior_weight)
    assert math.isfinite(rate) and rate >= 0


@given(st.lists(st.tuples(st.floats(1.0, 1e7), st.booleans()), max_size=20), st.floats(1.0, 1e7),
       st.floats(1e-8, 1.0), st.floats(0.0, 10.0))
def test_a_change_never_lowers_the_estimate_and_a_higher_prior_never_does(visits, interval, prior_rate, weight):
    with_change = estimate_rate(VisitHistory([*visits, (interval, True)]), prior_rate, weight)
    without_change = estimate_rate(VisitHistory([*visits, (interval, False)]), prior_rate, weight)
    assert with_change >= without_change * (1 - 1e-9)
    history = VisitHistory(visits)
    assert estimate_rate(history, 2 * prior_rate, weight) >= estimate_rate(history, prior_rate, weight) * (1 - 1e-9)


# --- allocate.py ---------------------------------------------------------------------------------

def g(x):
    return 1 - (1 + x) * np.exp(-x)


def test_the_allocation_spends_the_budget_and_meets_the_lagrange_condition():
    rates, weights = mixed_collection(2000, seed=1)
    budget = 2000 / (2 * DAY)  # every page once in two days, on average
    intervals, multiplier = optimal_intervals(rates, weights, budget)
    revisited = np.isfinite(intervals)
    assert np.sum(1 / intervals[revisited]) == pytest.approx(budget, rel=1e-9)
    x = rates[revisited] * intervals[revisited]
    assert weights[revisited] / rates[revisited] * g(x) == pytest.approx(np.full(x.shape, multiplier), rel=1e-7)
    value_per_change = weights / rates
    assert not revisited[value_per_change <= multiplier].any()
    assert revisited[value_per_change > multiplier * (1 + 1e-9)].all()
    assert 0 < (~revisited).sum() < len(rates) / 2  # some pages change too fast to be worth it


def test_no_small_shift_of_revisits_between_pages_improves_on_it():
    rates, weights = mixed_collection(50, seed=2)
    budget = 50 / DAY
    intervals = optimal_intervals(rates, weights, budget).intervals
    frequencies = np.where(np.isfinite(intervals), 1 / intervals, 0.0)
    best = expected_freshness(rates, intervals, weights)
    rng = np.random.default_rng(0)
    for _ in range(200):
        shift = rng.normal(0, 0.05, len(rates)) * frequencies.mean()
        shifted = np.maximum(frequencies + shift - shift.mean(), 0.0)
        shifted *= budget / shifted.sum()
        with np.errstate(divide="ignore"):
            assert expected_freshness(rates, 1 / shifted, weights) <= best + 1e-12


def test_it_beats_uniform_which_beats_proportional_on_a_mixed_collection():
    rates, weights = mixed_collection(2000, seed=4)
    budget = 2000 / DAY
    optimal = expected_freshness(rates, optimal_intervals(rates, weights, budget).intervals, weights)
    uniform = expected_freshness(rates, uniform_intervals(rates, budget), weights)
    proportional = expected_freshness(rates, proportional_intervals(rates, budget), weights)
    assert optimal > uniform + 0.05
    assert uniform > proportional + 0.05
    for intervals in (uniform_intervals(rates, budget), proportional_intervals(rates, budget)):
        assert np.sum(1 / intervals) == pytest.approx(budget)


def test_at_equal_weights_the_fastest_changing_pages_are_not_revisited_most():
    rates = np.geomspace(1 / (30 * DAY), 1 / 60, 200)
    intervals = optimal_intervals(rates, np.ones_like(rates), 200 / DAY).intervals
    frequencies = np.where(np.isfinite(intervals), 1 / intervals, 0.0)
    peak = int(np.argmax(frequencies))
    assert 0 < peak < len(rates) - 1
    assert frequencies[-1] == 0.0
    assert np.all(np.diff(frequencies[:peak + 1]) >= 0) and np.all(np.diff(frequencies[peak:]) <= 0)


def test_pages_that_never_change_or_weigh_nothing_get_no_revisits():
    rates = np.array([0.0, 1 / HOUR, 1 / HOUR, np.inf, 1 / DAY])
    weights = np.array([1.0, 0.0, 1.0, 1.0, 0.5])
    intervals, _ = optimal_intervals(rates, weights, 1 / HOUR)
    assert np.isinf(intervals[[0, 1, 3]]).all() and np.isfinite(intervals[[2, 4]]).all()
    assert np.isinf(optimal_intervals(rates, weights, 0.0).intervals).all()
    assert np.isinf(optimal_intervals(rates[:2], weights[:2], 1.0).intervals).all()
    assert len(optimal_intervals([], [], 1.0).intervals) == 0
    with pytest.raises(ValueError):
        optimal_intervals([-1.0], [1.0], 1.0)
    with pytest.raises(ValueError):
        optimal_intervals([1.0, 2.0], [1.0], 1.0)


def test_a_minimum_interval_caps_revisits_and_a_budget_beyond_it_is_left_unspent():
    rates, weights = mixed_collection(100, seed=6)
    capped = optimal_intervals(rates, weights, 30 / HOUR, min_interval=2 * HOUR)  # the cap allows 50 an hour
    assert np.all(capped.intervals >= 2 * HOUR * (1 - 1e-12))
    assert np.isclose(capped.intervals, 2 * HOUR).any()
    assert np.sum(1 / capped.intervals) == pytest.approx(30 / HOUR, rel=1e-9)
    generous = optimal_intervals(rates, weights, 1000 / HOUR, min_interval=HOUR)
    assert generous.multiplier == 0.0 and np.allclose(generous.intervals, HOUR)


def exact_inverse_g(load: float) -> float:
    """x with 1 − (1 + x) e^{−x} = load, by Newton's method in 60-digit decimals."""
    getcontext().prec = 60
    target = Decimal(load)
    x = (2 * target).sqrt()
    for _ in range(200):
        step = (1 - (1 + x) * (-x).exp() - target) / (x * (-x).exp())
        x -= step
        if abs(step) < Decimal(10) ** -40 * x:
            break
    return float(x)


def test_the_inverse_of_g_is_exact_across_its_range():
    loads = np.concatenate([np.geomspace(1e-14, 0.5, 60), np.linspace(0.5, 1 - 1e-6, 41)[1:], [1 - 1e-12, 1 - 1e-15]])
    x = _inverse_g(loads)
    assert x == pytest.approx([exact_inverse_g(load) for load in loads], rel=1e-12)
    assert np.all(np.diff(x) > 0)
    assert _inverse_g(np.array([0.0, 1e-300]))[0] == 0.0 and _inverse_g(np.array([1e-300]))[0] > 0


def test_freshness_and_age_match_their_definitions():
    for rate, interval in [(1 / HOUR, 30.0), (1 / HOUR, HOUR), (1 / HOUR, 10 * DAY), (2.0, 1e-5)]:
        fresh, _ = quad(lambda t, rate=rate: math.exp(-rate * t), 0, interval)
        stale_for, _ = quad(lambda t, rate=rate: t - (1 - math.exp(-rate * t)) / rate, 0, interval)
        assert freshness([rate], [interval])[0] == pytest.approx(fresh / interval, rel=1e-9)
        assert age([rate], [interval])[0] == pytest.approx(stale_for / interval, rel=1e-6)
    assert freshness([0.0, 1.0, 1.0], [np.inf, np.inf, 0.0]).tolist() == [1.0, 0.0, 1.0]
    assert age([0.0, 1.0, 1.0], [np.inf, np.inf, 0.0]).tolist() == [0.0, np.inf, 0.0]
    assert expected_age([1.0, 1.0], [1.0, np.inf], [1.0, 0.0]) == pytest.approx(age([1.0], [1.0])[0])


rates_st = st.lists(st.floats(min_value=0, max_value=1e9, allow_subnormal=True), min_size=1, max_size=40)


@given(rates_st, st.data(), st.floats(min_value=0, max_value=1e9, allow_subnormal=True),
       st.sampled_from([0.0, 1e-3, 1.0, 60.0]))
def test_any_non_negative_inputs_give_a_schedule_within_the_budget(rates, data, budget, min_interval):
    weights = data.draw(st.lists(st.floats(min_value=0, max_value=1e6, allow_subnormal=True),
                                 min_size=len(rates), max_size=len(rates)))
    intervals, multiplier = optimal_intervals(rates, weights, budget, min_interval=min_interval)
    assert not np.isnan(intervals).any() and np.all(intervals > 0) and not math.isnan(multiplier)
    spent = np.sum(1 / intervals)
    assert spent <= budget * (1 + 1e-9) + 1e-300  # subnormal budgets have few digits
    useful = [(r, w) for r, w in zip(rates, weights) if r > 0 and w > 0]
    spread = [r for r, _ in useful]
    if useful and min_interval == 0 and budget > 1e-12 and max(spread) / min(spread) < 1e12 \
            and max(w for _, w in useful) / min(w for _, w in useful) < 1e12:
        assert spent == pytest.approx(budget, rel=1e-6)
    for values in (freshness(rates, intervals), age(rates, intervals)):
        assert not np.isnan(values).any()
    assert 0 <= expected_freshness(rates, intervals, weights) <= 1


@given(st.lists(st.tuples(st.floats(1e-6, 1.0), st.floats(1e-3, 1.0)), min_size=1, max_size=30),
       st.floats(1e-3, 10.0), st.floats(1.01, 10.0), st.integers(0, 29))
def test_more_budget_never_lengthens_an_interval_and_more_weight_never_lengthens_its_own(pages, budget, factor, page):
    assume(page < len(pages))
    rates = np.array([rate for rate, _ in pages])
    weights = np.array([weight for _, weight in pages])
    less = optimal_intervals(rates, weights, budget).intervals
    more = optimal_intervals(rates, weights, budget * factor).intervals
    assert np.all(more <= less * (1 + 1e-7))
    heavier = weights.copy()
    heavier[page] *= factor
    assert optimal_intervals(rates, heavier, budget).intervals[page] <= less[page] * (1 + 1e-7)


def test_allocating_a_hundred_thousand_pages_is_fast():
    rates, weights = mixed_collection(100_000, seed=8)
    budget = 100_000 / DAY
    with within(2.0, "a first allocation of 10^5 pages"):
        first = optimal_intervals(rates, weights, budget)
    weights = weights * np.random.default_rng(0).uniform(0.95, 1.05, len(weights))
    with within(1.0, "a reallocation of 10^5 pages from the last multiplier"):
        again = optimal_intervals(rates, weights, budget, multiplier_hint=first.multiplier)
    assert np.sum(1 / again.intervals[np.isfinite(again.intervals)]) == pytest.approx(budget, rel=1e-9)


# --- revisits.py ---------------------------------------------------------------------------------

def revisited_plan(**options) -> RevisitPlan:
    """A plan with three pages that change at different paces, each revisited eight times hourly."""
    plan = RevisitPlan(min_interval=0.0, **options)
    for url, weight in [("http://a.test/slow", 0.9), ("http://a.test/medium", 0.6), ("http://a.test/fast", 0.8)]:
        plan.record_visit(url, 0.0, None, weight=weight)
    for visit in range(1, 9):
        plan.record_visit("http://a.test/slow", visit * HOUR, visit == 4)
        plan.record_visit("http://a.test/medium", visit * HOUR, visit % 2 == 0)
        plan.record_visit("http://a.test/fast", visit * HOUR, True)
    return plan


def test_revisits_estimate_each_pages_rate_from_its_history():
    plan = revisited_plan()
    slow, medium, fast = (plan.rate(f"http://a.test/{name}") for name in ("slow", "medium", "fast"))
    assert slow < medium < fast
    expected = estimate_rate(VisitHistory([(HOUR, visit % 2 == 0) for visit in range(1, 9)]), 1 / DAY)
    assert medium == pytest.approx(expected, rel=1e-9)


def test_due_pages_come_most_overdue_first_and_known_changes_before_them():
    plan = revisited_plan()
    plan.reallocate(revisit_rate=3 / HOUR)
    urls = ["http://a.test/slow", "http://a.test/medium", "http://a.test/fast"]
    intervals = {url: plan.interval(url) for url in urls}
    assert all(0 < interval < math.inf for interval in intervals.values())
    now = 8 * HOUR + 10 * max(intervals.values())
    overdue = sorted(urls, key=lambda url: -(now - 8 * HOUR) / intervals[url])
    assert [url for url, _ in plan.take_due(now, limit=10)] == overdue

    plan = revisited_plan()
    plan.reallocate(revisit_rate=3 / HOUR)
    plan.record_visit("http://a.test/light", 8 * HOUR, None, weight=0.2)
    plan.record_visit("http://a.test/heavy", 8 * HOUR, None, weight=0.95)
    assert plan.hint("http://a.test/light", 8.2 * HOUR, changed_at=8.1 * HOUR)
    assert plan.hint("http://a.test/heavy", 8.2 * HOUR, changed_at=8.15 * HOUR)
    taken = plan.take_due(now, limit=10)
    assert [url for url, _ in taken] == ["http://a.test/heavy", "http://a.test/light", *overdue]
    assert "hinted" in taken[0][1] and "weight 0.95" in taken[0][1]
    assert "revisit every" in taken[2][1] and "revisits changed" in taken[2][1]


def test_a_hinted_change_makes_a_page_due_only_if_it_came_after_the_last_visit():
    plan = RevisitPlan()
    plan.record_visit("http://a.test/p", 1000.0, None, weight=0.7)
    assert not plan.hint("http://a.test/p", 1500.0, changed_at=900.0)
    assert plan.take_due(1500.0, 10) == []
    assert plan.hint("http://a.test/p", 1500.0, changed_at=1200.0)
    assert plan.next_due_time() == 1200.0
    assert [url for url, _ in plan.take_due(1500.0, 10)] == ["http://a.test/p"]
    assert plan.take_due(1501.0, 10) == []  # handed out: its visit is on its way
    assert not plan.hint("http://a.test/unknown", 1500.0, changed_at=1200.0)


def test_a_sitemap_changefreq_is_the_prior_of_a_page_without_history():
    plan = RevisitPlan()
    plan.record_visit("http://a.test/p", 0.0, None)
    plan.hint("http://a.test/p", 10.0, changefreq="hourly")
    assert plan.rate("http://a.test/p") == pytest.approx(1 / HOUR)
    plan.reallocate(1.0)
    assert plan.rate("http://a.test/p") == pytest.approx(1 / HOUR)  # not the pool's
    assert "sitemap changefreq" in plan.explain("http://a.test/p", 20.0)


def test_pages_without_history_follow_the_pool_of_pages_with_some():
    plan = revisited_plan(default_rate=1 / DAY)
    plan.record_visit("http://a.test/new", 8 * HOUR, None)
    assert plan.rate("http://a.test/new") == pytest.approx(1 / DAY)
    plan.reallocate(1 / HOUR)
    pool = math.exp(np.mean([math.log(plan.rate(f"http://a.test/{n}")) for n in ("slow", "medium", "fast")]))
    assert plan.rate("http://a.test/new") == pytest.approx(pool)
    assert plan.stats(8 * HOUR)["pool_rate"] == pytest.approx(pool)


def test_a_handed_out_page_is_due_again_only_after_another_interval():
    plan = revisited_plan()
    plan.reallocate(3 / HOUR)
    interval = plan.interval("http://a.test/slow")
    due_at = 8 * HOUR + interval
    assert "http://a.test/slow" not in [url for url, _ in plan.take_due(due_at - 1, 10)]
    assert "http://a.test/slow" in [url for url, _ in plan.take_due(due_at, 10)]
    assert "http://a.test/slow" not in [url for url, _ in plan.take_due(due_at + interval - 1, 10)]
    assert "http://a.test/slow" in [url for url, _ in plan.take_due(due_at + interval, 10)]
    plan.record_visit("http://a.test/slow", due_at + interval + 5, False)
    assert "http://a.test/slow" not in [url for url, _ in plan.take_due(due_at + interval + 6, 10)]


def test_early_spends_idle_capacity_on_the_pages_nearest_their_revisit_never_on_one_on_its_way():
    plan = revisited_plan()
    plan.reallocate(3 / HOUR)
    urls = sorted(["http://a.test/slow", "http://a.test/medium", "http://a.test/fast"], key=plan.interval)
    now = 8 * HOUR + 60  # a minute after the last visits: nothing due
    assert plan.take_due(now, 3) == []
    assert [url for url, _ in plan.take_due(now, 2, early=True)] == urls[:2]  # nearest in intervals
    assert [url for url, _ in plan.take_due(now, 3, early=True)] == urls[2:]
    assert plan.take_due(now + 1, 3, early=True) == []
    assert plan.explain(urls[0], now + 5).startswith("revisit sent 5 s ago")


def test_a_page_whose_weight_fades_is_dropped_and_its_slot_reused():
    plan = revisited_plan(fade_below=0.3)
    assert len(plan) == 3
    assert not plan.set_weight("http://a.test/medium", 0.1)
    assert "http://a.test/medium" not in plan and len(plan) == 2
    assert plan.rate("http://a.test/medium") is None and plan.validators("http://a.test/medium") == {}
    assert not plan.record_visit("http://a.test/faint", 9 * HOUR, None, weight=0.2)
    assert plan.record_visit("http://a.test/other", 9 * HOUR, None, weight=0.5)
    assert plan._size == 3  # the forgotten page's slot
    assert plan.rate("http://a.test/other") == pytest.approx(plan.stats(9 * HOUR)["pool_rate"])
    assert plan.explain("http://a.test/other", 9 * HOUR).endswith("weight 0.50")
    assert not plan.record_visit("http://a.test/slow", 10 * HOUR, False, weight=0.29)
    assert "http://a.test/slow" not in plan and plan.forget("http://a.test/fast") and not plan.forget("x")


def test_the_validators_follow_the_responses():
    plan = RevisitPlan()
    url = "http://a.test/p"
    assert plan.validators(url) == {}
    plan.record_visit(url, 0.0, None, etag='"v1"', last_modified="Wed, 21 Oct 2015 07:28:00 GMT")
    assert plan.validators(url) == {"If-None-Match": '"v1"', "If-Modified-Since": "Wed, 21 Oct 2015 07:28:00 GMT"}
    plan.record_visit(url, 100.0, False)  # a 304 that repeats nothing: the validators still hold
    assert plan.validators(url)["If-None-Match"] == '"v1"'
    plan.record_visit(url, 200.0, True, etag='"v2"')  # new content without a Last-Modified
    assert plan.validators(url) == {"If-None-Match": '"v2"'}


def test_last_modified_feeds_the_estimate_only_when_it_explains_the_change():
    plan = RevisitPlan()
    url = "http://a.test/p"
    plan.record_visit(url, 0.0, None)
    plan.record_visit(url, HOUR, True, modified_at=HOUR - 600)
    plan.record_visit(url, 2 * HOUR, True, modified_at=0.5 * HOUR)  # before the previous visit
    assert list(plan._histories[plan._slots[url]]) == [(HOUR, True, 600.0), (HOUR, True, None)]


def test_the_plan_survives_pickling():
    plan = revisited_plan()
    for i in range(100):
        plan.record_visit(f"http://b.test/{i}", 9 * HOUR, None, weight=0.5 + i / 250, etag=f'"{i}"')
    plan.hint("http://b.test/7", 9.5 * HOUR, changed_at=9.2 * HOUR, changefreq="daily")
    plan.reallocate(10 / HOUR)
    restored = pickle.loads(pickle.dumps(plan))
    now = 12 * HOUR
    assert restored.stats(now) == plan.stats(now)
    assert restored.validators("http://b.test/3") == {"If-None-Match": '"3"'}
    assert restored.take_due(now, 20) == plan.take_due(now, 20)
    for i in range(100, 300):  # grows again after the checkpoint's trimmed columns
        restored.record_visit(f"http://b.test/{i}", now, None)
    assert len(restored) == 303


def test_a_crawl_of_a_hundred_thousand_pages_keeps_the_plan_small_and_fast():
    plan = RevisitPlan()
    rng = np.random.default_rng(0)
    pages = 100_000
    for i in range(pages):
        plan.record_visit(f"http://h{i % 1000}.test/page/{i}", 0.0, None, weight=float(rng.uniform(0.1, 1)))
    for i in range(0, pages, 10):  # a tenth of them revisited a few times
        for visit in range(1, 5):
            plan.record_visit(f"http://h{i % 1000}.test/page/{i}", visit * HOUR, bool(rng.random() < 0.3))
    with within(2.0, "reallocating 10^5 pages"):
        plan.reallocate(pages / DAY)
    with within(1.0, "reallocating again"):
        plan.reallocate(pages / DAY)
    with within(0.5, "taking due pages"):
        for _ in range(10):
            plan.take_due(5 * HOUR, 16)
    assert len(pickle.dumps(plan)) / pages < 200  # bytes a page in a checkpoint


def test_driven_at_a_revisit_rate_the_plan_keeps_pages_fresher_than_uniform_revisits():
    # a focused crawl's pages: rates over two and a half decades (a change every 20 s to every
    # 80 min of simulated time), relevance probabilities that are mostly clearly low or high
    rng = np.random.default_rng(1)
    pages = 80
    rates = np.exp(rng.uniform(np.log(1 / 5000), np.log(1 / 20), pages))
    weights = np.where(rng.random(pages) < 0.5, rng.uniform(0.05, 0.15, pages), rng.uniform(0.85, 1.0, pages))
    revisit_rate, duration, warmup = 0.4, 8000, 2000

    def revisit_slots():  # R a second on average, at random moments (as requests free up)
        slots = np.random.default_rng(101)
        return [now for now in range(1, duration) if slots.random() < revisit_rate]

    plan = RevisitPlan(default_rate=1 / 500, min_interval=1.0)
    world = PoissonWorld(rates, weights, seed=1, warmup=warmup)
    for page in range(pages):
        plan.record_visit(f"http://s.test/{page}", 0.0, None, weight=float(weights[page]))
    reallocated = 0
    for now in revisit_slots():
        if now - reallocated >= 20:
            plan.reallocate(revisit_rate)
            reallocated = now
        for url, _ in plan.take_due(float(now), 1, early=True):
            page = int(url.rsplit("/", 1)[1])
            changed, modified_at = world.visit(page, now)
            plan.record_visit(url, float(now), changed, modified_at=modified_at if page % 2 else None)
    planned = world.weighted_freshness(duration)

    world = PoissonWorld(rates, weights, seed=1, warmup=warmup)
    for turn, now in enumerate(revisit_slots()):
        world.visit(turn % pages, now)
    uniform = world.weighted_freshness(duration)

    best = expected_freshness(rates, optimal_intervals(rates, weights, revisit_rate).intervals, weights)
    assert uniform == pytest.approx(
        expected_freshness(rates, uniform_intervals(rates, revisit_rate), weights), abs=0.03)
    assert planned > uniform + 0.04
    assert planned > best - 0.035  # learning the rates from what revisits see costs little


class PoissonWorld:
    """Pages changing as Poisson processes; what each visit finds, and how fresh the copies stayed."""

    def __init__(self, rates, weights, seed: int, warmup: float):
        self.rng = np.random.default_rng(seed)
        self.rates = rates
        self.weights = weights
        self.warmup = warmup
        self.copied_at = np.zeros(len(rates))
        self.stale_from = self.rng.exponential(1 / rates)  # first change after the copy was taken
        self.fresh_seconds = np.zeros(len(rates))

    def visit(self, page: int, now: float) -> tuple[bool, float | None]:
        """(changed since the last visit, when it last changed if it did)."""
        self._count_fresh(page, now)
        changed = bool(self.stale_from[page] <= now)
        modified_at = max(self.stale_from[page], now - self.rng.exponential(1 / self.rates[page])) if changed else None
        self.copied_at[page] = now
        self.stale_from[page] = now + self.rng.exponential(1 / self.rates[page])
        return changed, modified_at

    def _count_fresh(self, page: int, until: float) -> None:
        start = max(self.copied_at[page], self.warmup)
        end = min(self.stale_from[page], until)
        self.fresh_seconds[page] += max(0.0, end - start)

    def weighted_freshness(self, end: float) -> float:
        for page in range(len(self.rates)):
            self._count_fresh(page, end)
            self.copied_at[page] = end
        return float((self.weights * self.fresh_seconds).sum() / (self.weights.sum() * (end - self.warmup)))
