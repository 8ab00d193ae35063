"""longctx.experiments.reports.stats checked against scipy and direct computation on fixed data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from longctx.experiments.reports import stats
from longctx.experiments.reports.comparison import pairwise, significant_winner, verdict_line

DATA = [0.0, 100.0, 100.0, 0.0, 100.0, 100.0, 100.0, 0.0, 100.0, 0.0, 100.0, 100.0]
GRADED = [12.5, 40.0, 33.3, 90.0, 71.4, 0.0, 55.5, 62.0, 18.2, 100.0]


def test_interval_is_scipys_bca_bootstrap_with_the_same_seed():
    ci = stats.interval(GRADED, seed=7, n_resamples=2000)
    ref = sps.bootstrap(
        (np.asarray(GRADED),),
        np.mean,
        confidence_level=0.95,
        n_resamples=2000,
        method="BCa",
        random_state=np.random.default_rng(7),
    )
    assert ci.mean == pytest.approx(np.mean(GRADED)) and ci.n == len(GRADED)
    assert (ci.low, ci.high, ci.se) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high, ref.standard_error)
    )


def test_interval_skips_unscored_questions():
    assert (
        stats.interval([None, 40.0, None, 60.0]).n == 2
        and stats.interval([]).mean is None
        and stats.interval([None]).n == 0
    )


@pytest.mark.parametrize(
    ("values", "right"), [([100.0] * 3, 3), ([100.0], 1), ([0.0] * 6, 0), ([1.0] * 4, 4)]
)
def test_where_every_score_is_equal_a_0_1_score_gets_the_exact_binomial_interval_not_a_point(
    values, right
):
    """3 right answers of 3 is not certainty: the bootstrap cannot vary there,
    Clopper-Pearson can."""
    scale = 1.0 if 1.0 in values else 100.0
    ci = stats.interval(values)
    ref = sps.binomtest(right, len(values)).proportion_ci(confidence_level=0.95, method="exact")
    assert (ci.low, ci.high) == pytest.approx(
        (ref.low * scale, ref.high * scale)
    ) and ci.high - ci.low > 0.3 * scale
    assert ci.se is None and ci.n == len(values)


def test_where_every_graded_score_is_equal_there_is_no_interval():
    assert stats.interval([None, 50.0, None]) == stats.Interval(50.0, None, None, None, 1)
    assert stats.interval([37.5] * 4, ["a", "a", "b", "b"]).low is None


def test_a_stratified_interval_is_bca_like_the_plain_one():
    """One stratum (or others of weight 0 drawn after it) is scipy's BCa bootstrap with the
    same seed."""
    ref = sps.bootstrap(
        (np.asarray(GRADED),),
        np.mean,
        confidence_level=0.95,
        n_resamples=2000,
        method="BCa",
        random_state=np.random.default_rng(7),
    )
    expected = (ref.confidence_interval.low, ref.confidence_interval.high, ref.standard_error)
    one = stats.interval(GRADED, ["all"] * len(GRADED), seed=7, n_resamples=2000)
    weighted = stats.interval(
        GRADED + [0.0, 100.0],
        ["a"] * len(GRADED) + ["b", "b"],
        {"a": 1.0, "b": 0.0},
        seed=7,
        n_resamples=2000,
    )
    assert (one.low, one.high, one.se) == pytest.approx(expected)
    assert (weighted.low, weighted.high, weighted.se) == pytest.approx(
        expected
    ) and weighted.n == len(GRADED) + 2


def test_interval_on_10000_questions_with_ties():
    values = [100.0] * 6000 + [0.0] * 4000
    ci = stats.interval(values, [i % 3 for i in range(10_000)])
    assert ci.mean == pytest.approx(60.0) and ci.low < 60.0 < ci.high and ci.high - ci.low < 3


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
    assert ci.se == pytest.approx(boot.std(ddof=1))
    assert np.quantile(boot, 0.001) <= ci.low < ci.mean < ci.high <= np.quantile(boot, 0.999)


def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs():
    a = [100, 100, 100, 100, 100, 100, 0, 0, 100, 0]
    b = [0, 0, 0, 0, 0, 100, 100, 0, 100, 0]
    r = stats.paired_test(a, b)
    only_a, only_b = 5, 1
    direct = min(1.0, 2 * sum(math.comb(6, k) for k in range(0, min(only_a, only_b) + 1)) / 2**6)
    assert r.test == "mcnemar-exact" and r.p_value == pytest.approx(direct) == pytest.approx(
        sps.binomtest(5, 6, 0.5).pvalue
    )
    assert r.mean_diff == pytest.approx(40.0) and r.n == 10


def test_sign_flip_p_is_the_full_enumeration_on_small_n():
    a = [40.0, 55.0, 61.0, 20.0, 90.0, 75.0, 33.0]
    b = [30.0, 50.0, 65.0, 10.0, 70.0, 75.0, 20.0]
    d = np.subtract(a, b)
    observed = abs(d.mean())
    flips = [
        abs(np.mean(d * np.asarray(signs))) for signs in itertools.product((1, -1), repeat=len(d))
    ]
    direct = sum(f >= observed - 1e-12 for f in flips) / len(flips)
    r = stats.paired_test(a, b)
    assert r.test == "sign-flip-exact" and r.p_value == pytest.approx(direct)


def test_sign_flip_goes_monte_carlo_beyond_sixteen_differences_and_is_seeded():
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 100, 40), rng.uniform(0, 100, 40)
    r1, r2 = stats.paired_test(a, b), stats.paired_test(a, b)
    assert r1.test == "sign-flip-monte-carlo" and r1 == r2 and 0 < r1.p_value <= 1


def _flip_p(d: np.ndarray) -> float:
    """The exact two-sided sign-flip p over the non-zero differences, by direct enumeration."""
    moved = d[d != 0]
    if moved.size == 0:
        return 1.0
    signs = np.asarray(list(itertools.product((1.0, -1.0), repeat=moved.size)))
    return float(np.mean(np.abs(signs @ moved) >= abs(moved.sum()) - 1e-9))


@pytest.mark.timeout(
    120
)  # a hang guard, not a speed check: the old code enumerated 2^N sign patterns (N=200: never ends)
@pytest.mark.parametrize(
    ("n", "moved"),
    [(3, 2), (3, 1), (3, 0), (20, 16), (22, 10), (200, 10), (10_000, 10), (10_000, 16)],
)
def test_tied_graded_scores_enumerate_only_the_non_zero_differences(n, moved):
    """F1 scores where both strategies often score 0: zero differences do not change the test, so
    the exact path enumerates the questions that moved, however many questions there are."""
    rng = np.random.default_rng(n + moved)
    a, b = np.full(n, 0.0), np.full(n, 0.0)
    where = rng.choice(n - 1, moved, replace=False)
    a[-1] = b[-1] = 66.7  # a tie at a graded score too
    a[where], b[where] = rng.uniform(20, 90, moved).round(1), rng.uniform(0, 60, moved).round(1)
    r = stats.paired_test(a, b)
    assert r.test == "sign-flip-exact" and r.n == n
    assert r.p_value == pytest.approx(_flip_p(a - b))


@pytest.mark.timeout(120)  # hang guard: the old code ran out of memory enumerating 2^200 patterns
def test_the_issues_200_questions_with_10_non_zero_differences():
    a = [0.0] * 190 + [35.0, 50.0, 20.0, 66.7, 80.0, 12.5, 40.0, 25.0, 90.0, 57.1]
    r = stats.paired_test(a, [0.0] * 200)
    assert r.test == "sign-flip-exact" and r.p_value == pytest.approx(
        2 / 2**10
    )  # 0.00195: every moved question one way


def test_sign_flip_on_one_question_and_on_10000_mostly_tied_questions_past_the_exact_limit():
    assert stats.paired_test([42.0], [7.0]).test == "none"
    a = np.zeros(10_000)
    a[:3000] = 50.0
    r = stats.paired_test(a, np.zeros(10_000))  # 3,000 moved: Monte-Carlo flips of those only
    assert r.test == "sign-flip-monte-carlo" and r.p_value == pytest.approx(
        2 / (stats.N_RESAMPLES + 1)
    )


def test_paired_interval_is_the_percentile_bootstrap_of_the_differences():
    a, b = GRADED, list(reversed(GRADED))
    r = stats.paired_test(a, b, seed=11, n_resamples=3000)
    ref = sps.bootstrap(
        (np.subtract(a, b),),
        np.mean,
        n_resamples=3000,
        method="percentile",
        random_state=np.random.default_rng(11),
    )
    assert (r.ci_low, r.ci_high) == pytest.approx(
        (ref.confidence_interval.low, ref.confidence_interval.high)
    )


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
        (
            [0.9, 0.8],
            [1.0, 1.0],
        ),  # 2 x 0.8 caps at 1, and the larger p is never adjusted below it (monotone)
    ],
)
def test_holm_against_direct_computation(p, expected):
    assert stats.holm(p) == pytest.approx(expected)


def test_questions_needed_is_the_normal_power_formula():
    z = sps.norm.ppf(0.975) + sps.norm.ppf(0.8)
    assert stats.questions_needed(10.0, 40.0) == math.ceil((z * 4) ** 2)
    assert stats.questions_needed(0.0, 40.0) is None


@pytest.mark.parametrize(
    ("n", "least"), [(2, 0.5), (3, 0.25), (4, 0.125), (5, 0.0625), (6, 0.03125)]
)
def test_the_smallest_p_of_the_exact_tests_is_every_question_moving_one_way(n, least):
    assert (
        stats.smallest_p(n, "mcnemar-exact")
        == least
        == pytest.approx(sps.binomtest(n, n, 0.5).pvalue)
    )
    assert stats.paired_test([100.0] * n, [0.0] * n).p_value == pytest.approx(least)
    assert stats.paired_test(np.arange(1.0, n + 1) * 7, np.zeros(n)).p_value == pytest.approx(
        least
    )  # sign-flip: the same floor
    assert stats.can_be_significant(n, "mcnemar-exact") is (n >= 6)
    assert (
        stats.can_be_significant(n, "sign-flip-exact", family=6) is False
    )  # Holm across 6 pairs needs 6 x p < 0.05


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_no_detectable_difference_is_claimed_where_no_difference_can_be_significant(n):
    assert stats.detectable_difference(stats.paired_test([100.0] * n, [0.0] * n)) is None
    assert (
        stats.detectable_difference(
            stats.paired_test([100.0, 0.0, 100.0, 0.0, 100.0][:n], [0.0] * n)
        )
        is None
    )
    assert (
        stats.detectable_difference(stats.paired_test([10.0, 80.0, 33.0, 5.0, 61.0][:n], [0.0] * n))
        is None
    )


def _mcnemar_power_direct(n: int, p10: float, p01: float) -> float:
    """Exact McNemar power by enumerating every (a-only, b-only) count of n questions (scipy's
    binomtest decides each)."""
    total = 0.0
    for only_a in range(n + 1):
        for only_b in range(n + 1 - only_a):
            prob = sps.multinomial.pmf(
                [only_a, only_b, n - only_a - only_b], n, [p10, p01, 1 - p10 - p01]
            )
            if only_a + only_b and sps.binomtest(only_a, only_a + only_b, 0.5).pvalue < 0.05:
                total += prob
    return total


@pytest.mark.parametrize(("n", "discordant"), [(20, 6), (30, 0), (12, 12)])
def test_mcnemar_detectable_difference_is_where_the_exact_test_reaches_80_percent_power(
    n, discordant
):
    """Oracle: the power of the exact test at the returned difference, by direct enumeration."""
    a = (
        [100.0] * (discordant // 2)
        + [0.0] * (discordant - discordant // 2)
        + [100.0] * (n - discordant)
    )
    b = (
        [0.0] * (discordant // 2)
        + [100.0] * (discordant - discordant // 2)
        + [100.0] * (n - discordant)
    )
    mde = stats.detectable_difference(stats.paired_test(a, b)) / 100
    for diff, reached in ((mde, True), (mde - 0.01, False)):
        share = max(discordant / n, diff)
        assert (
            bool(_mcnemar_power_direct(n, (share + diff) / 2, (share - diff) / 2) >= 0.8) is reached
        )


def test_identical_vectors_do_not_claim_to_detect_any_difference():
    """sd(d) = 0 does not mean every difference is detectable (the old figure was 0.0)."""
    same01 = stats.paired_test([100.0, 0.0] * 20, [100.0, 0.0] * 20)
    assert (
        stats.detectable_difference(same01) > 5
    )  # the least any difference needs: every disagreement one way
    assert (
        stats.detectable_difference(stats.paired_test([12.5, 40.0] * 20, [12.5, 40.0] * 20)) is None
    )


def test_graded_detectable_difference_is_the_paired_t_figure():
    a, b = GRADED, list(reversed(GRADED))
    sd = float(np.std(np.subtract(a, b), ddof=1))
    t = sps.t.ppf(0.975, 9) + sps.t.ppf(0.8, 9)
    assert stats.detectable_difference(stats.paired_test(a, b)) == pytest.approx(
        t * sd / math.sqrt(10)
    )


@pytest.mark.parametrize(
    ("points", "front"),
    [
        (
            {"rag": (60, 0.01), "pai": (80, 0.5), "fc": (55, 0.2)},
            {"rag": True, "pai": True, "fc": False},
        ),
        ({"a": (50, 1.0), "b": (50, 1.0)}, {"a": True, "b": True}),  # equal points dominate neither
        ({"a": (50, None), "b": (40, 1.0)}, {"a": False, "b": True}),
    ],
)
def test_pareto_front(points, front):
    assert stats.pareto_front(points) == front


def test_pairwise_table_adjusts_across_pairs_and_keeps_shared_questions_only():
    scores = {
        "rag": {"q1": 100.0, "q2": 0.0, "q3": None},
        "pai": {"q1": 0.0, "q2": 0.0, "q3": 100.0},
        "fc": {"q1": 100.0},
    }
    rows = {(r["strategy_a"], r["strategy_b"]): r for r in pairwise(scores)}
    assert (
        rows[("rag", "pai")]["n"] == 2
        and rows[("rag", "fc")]["n"] == 1
        and rows[("pai", "fc")]["n"] == 1
    )
    assert all(r["p_adjusted"] >= r["p_value"] for r in rows.values())


def test_pairwise_keeps_full_precision_p_values_and_holm_sees_them():
    """p = 1e-60 stays 1e-60 (rounding to 6 decimals wrote 0.0), and the adjustment sees
    every digit."""
    a, b, c = [100.0] * 200, [0.0] * 200, [100.0] * 150 + [0.0] * 50
    rows = {
        (r["strategy_a"], r["strategy_b"]): r
        for r in pairwise(
            {"a": dict(enumerate(a)), "b": dict(enumerate(b)), "c": dict(enumerate(c))}
        )
    }
    assert (
        rows[("a", "b")]["p_value"]
        == stats.paired_test(a, b).p_value
        == pytest.approx(2.0**-199, rel=1e-9)
    )
    raw = [rows[k]["p_value"] for k in (("a", "b"), ("a", "c"), ("b", "c"))]
    assert [rows[k]["p_adjusted"] for k in (("a", "b"), ("a", "c"), ("b", "c"))] == stats.holm(raw)
    assert rows[("a", "c")]["p_value"] == stats.paired_test(a, c).p_value  # not a rounded copy


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (1e-60, "1.00e-60"),
        (0.0499995, "0.0499995"),
        (0.05, "0.05"),
        (0.25, "0.25"),
        (1.0, "1"),
        (0.012345, "0.0123"),
        (0.0, "<1e-300"),
    ],
)
def test_p_values_are_formatted_only_for_display_and_never_across_alpha(p, text):
    assert stats.format_p(p) == text


def _verdict(scores: dict[str, list[float]], leader: str, others: list[str]) -> tuple[dict, str]:
    pairs = pairwise({name: dict(enumerate(v)) for name, v in scores.items()})
    verdict = significant_winner(leader, others, pairs)
    return verdict, verdict_line("Best score", leader, verdict)


@pytest.mark.parametrize("n", [1, 3, 4, 5])
def test_on_five_questions_or_fewer_no_difference_can_be_significant_and_none_is_claimed_detectable(
    n,
):
    """All right against all wrong on 3 questions: p 0.25 at best, so no "differences of about
    93 points"."""
    verdict, line = _verdict({"a": [100.0] * n, "b": [0.0] * n}, "a", ["b"])
    assert (
        f"no difference can be significant on n={n} questions" in line
        and "detect differences" not in line
    )
    assert stats.format_p(2.0 ** (1 - n)) in line and verdict["significant"] is False


def test_holm_across_the_pairs_counts_in_what_can_be_significant():
    """Four strategies on 6 questions: 0.03125 at best, times 6 pairs: nothing can pass 0.05
    after Holm."""
    scores = {"a": [100.0] * 6, "b": [0.0] * 6, "c": [0.0] * 6, "d": [0.0] * 6}
    _, line = _verdict(scores, "a", ["b", "c", "d"])
    assert (
        "no difference can be significant on n=6 questions" in line
        and "Holm's adjustment across 6 pairs" in line
    )
    _, two = _verdict({"a": [100.0] * 6, "b": [0.0] * 6}, "a", ["b"])
    assert "beats every other strategy" in two  # one pair: 0.03125 < 0.05


def test_the_rival_named_beside_the_leader_is_the_tied_one_not_the_one_far_behind():
    """The demo named a strategy scoring 0 as the rival the leader could not be told from, while
    another tied it."""
    scores = {"lead": [100.0, 0.0, 0.0], "zero": [0.0, 0.0, 0.0], "tied": [100.0, 0.0, 0.0]}
    verdict, line = _verdict(scores, "lead", ["zero", "tied"])
    assert (
        verdict["closest"] == "tied"
        and verdict["tied"] == ["tied"]
        and "best: lead, tied with tied" in line
    )
