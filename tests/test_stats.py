"""experiments.stats checked against scipy and direct computation on fixed data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from experiments import stats
from experiments.comparison import pairwise

DATA = [0.0, 100.0, 100.0, 0.0, 100.0, 100.0, 100.0, 0.0, 100.0, 0.0, 100.0, 100.0]
GRADED = [12.5, 40.0, 33.3, 90.0, 71.4, 0.0, 55.5, 62.0, 18.2, 100.0]


def test_interval_is_scipys_bca_bootstrap_with_the_same_seed():
    ci = stats.interval(GRADED, seed=7, n_resamples=2000)
    ref = sps.bootstrap((np.asarray(GRADED),), np.mean, confidence_level=0.95, n_resamples=2000, method="BCa",
                        random_state=np.random.default_rng(7))  # fmt: skip
    assert ci.mean == pytest.approx(np.mean(GRADED)) and ci.n == len(GRADED)
    assert (ci.low, ci.high, ci.se) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high, ref.standard_error))


def test_interval_skips_unscored_and_is_a_point_for_constant_data():
    assert stats.interval([None, 50.0, None]) == stats.Interval(50.0, 50.0, 50.0, 0.0, 1)
    assert stats.interval([100.0] * 6).low == 100.0 and stats.interval([]).mean is None


def test_stratified_interval_is_the_weighted_mean_of_strata_resampled_apart():
    values = [0, 100, 100, 100, 0, 0, 100, 50]
    strata = ["a", "a", "a", "b", "b", "b", "b", "c"]
    weights = {"a": 1.0, "b": 1.0, "c": 2.0}
    ci = stats.interval(values, strata, weights, seed=3, n_resamples=4000)
    w = {"a": 0.25, "b": 0.25, "c": 0.5}
    assert ci.mean == pytest.approx(0.25 * 200 / 3 + 0.25 * 50 + 0.5 * 50) and ci.n == 8
    rng = np.random.default_rng(3)  # the direct computation, stratum by stratum in first-seen order
    boot = np.zeros(4000)
    for key, group in (("a", [0, 100, 100]), ("b", [100, 0, 0, 100]), ("c", [50])):
        arr = np.asarray(group, dtype=float)
        boot += w[key] * arr[rng.integers(0, arr.size, size=(4000, arr.size))].mean(axis=1)
    assert (ci.low, ci.high) == pytest.approx(tuple(np.quantile(boot, [0.025, 0.975])))
    assert ci.se == pytest.approx(boot.std(ddof=1))


def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs():
    a = [100, 100, 100, 100, 100, 100, 0, 0, 100, 0]
    b = [0, 0, 0, 0, 0, 100, 100, 0, 100, 0]
    r = stats.paired_test(a, b)
    only_a, only_b = 5, 1
    direct = min(1.0, 2 * sum(math.comb(6, k) for k in range(0, min(only_a, only_b) + 1)) / 2**6)
    assert r.test == "mcnemar-exact" and r.p_value == pytest.approx(direct) == pytest.approx(sps.binomtest(5, 6, 0.5).pvalue)
    assert r.mean_diff == pytest.approx(40.0) and r.n == 10


def test_sign_flip_p_is_the_full_enumeration_on_small_n():
    a = [40.0, 55.0, 61.0, 20.0, 90.0, 75.0, 33.0]
    b = [30.0, 50.0, 65.0, 10.0, 70.0, 75.0, 20.0]
    d = np.subtract(a, b)
    observed = abs(d.mean())
    flips = [abs(np.mean(d * np.asarray(signs))) for signs in itertools.product((1, -1), repeat=len(d))]
    direct = sum(f >= observed - 1e-12 for f in flips) / len(flips)
    r = stats.paired_test(a, b)
    assert r.test == "sign-flip-exact" and r.p_value == pytest.approx(direct)


def test_sign_flip_goes_monte_carlo_beyond_sixteen_differences_and_is_seeded():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 100, 40), rng.uniform(0, 100, 40)
    r1, r2 = stats.paired_test(a, b), stats.paired_test(a, b)
    assert r1.test == "sign-flip-monte-carlo" and r1 == r2 and 0 < r1.p_value <= 1


def test_paired_interval_is_the_percentile_bootstrap_of_the_differences():
    a, b = GRADED, list(reversed(GRADED))
    r = stats.paired_test(a, b, seed=11, n_resamples=3000)
    ref = sps.bootstrap((np.subtract(a, b),), np.mean, n_resamples=3000, method="percentile", random_state=np.random.default_rng(11))
    assert (r.ci_low, r.ci_high) == pytest.approx((ref.confidence_interval.low, ref.confidence_interval.high))


def test_paired_test_edge_cases():
    assert stats.paired_test([], []).p_value is None
    assert stats.paired_test([100], [0]).p_value == 1.0  # one question shows nothing
    assert stats.paired_test([100, 0], [100, 0]).p_value == 1.0
    with pytest.raises(ValueError, match="one score per question"):
        stats.paired_test([1, 2], [1])


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        ([0.01, 0.04, 0.03, 0.005], [0.03, 0.06, 0.06, 0.02]),
        ([0.5], [0.5]),
        ([0.2, None, 0.01], [0.2, None, 0.02]),
        ([0.9, 0.8], [1.0, 1.0]),  # 2 x 0.8 caps at 1, and the larger p is never adjusted below it (monotone)
    ],
)
def test_holm_against_direct_computation(p, expected):
    assert stats.holm(p) == pytest.approx(expected)


def test_detectable_difference_and_questions_needed_are_the_normal_power_formula():
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert stats.detectable_difference(40.0, 100) == pytest.approx(z * 4.0)
    assert stats.questions_needed(10.0, 40.0) == math.ceil((z * 4) ** 2)
    assert stats.detectable_difference(None, 10) is None and stats.detectable_difference(3.0, 1) is None


@pytest.mark.parametrize(
    ("points", "front"),
    [
        ({"rag": (60, 0.01), "pai": (80, 0.5), "fc": (55, 0.2)}, {"rag": True, "pai": True, "fc": False}),
        ({"a": (50, 1.0), "b": (50, 1.0)}, {"a": True, "b": True}),  # equal points dominate neither
        ({"a": (50, None), "b": (40, 1.0)}, {"a": False, "b": True}),
    ],
)
def test_pareto_front(points, front):
    assert stats.pareto_front(points) == front


def test_pairwise_table_adjusts_across_pairs_and_keeps_shared_questions_only():
    scores = {"rag": {"q1": 100.0, "q2": 0.0, "q3": None}, "pai": {"q1": 0.0, "q2": 0.0, "q3": 100.0}, "fc": {"q1": 100.0}}
    rows = {(r["strategy_a"], r["strategy_b"]): r for r in pairwise(scores)}
    assert rows[("rag", "pai")]["n"] == 2 and rows[("rag", "fc")]["n"] == 1 and rows[("pai", "fc")]["n"] == 1
    assert all(r["p_adjusted"] >= r["p_value"] for r in rows.values())
