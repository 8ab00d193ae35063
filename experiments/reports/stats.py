"""Statistics that say when a difference between strategies is real.

Every score of a report is a mean over questions, so it carries sampling error; two strategies
answered the *same* questions, so they are compared pairwise. The API:

* :func:`interval`: a score's 95% BCa bootstrap confidence interval and standard error, over
  questions, stratified where the benchmark's headline averages sub-sets (each stratum is
  resampled on its own and the strata are combined with the headline's weights); where the
  bootstrap cannot vary (every score equal) a 0/1 score gets the exact binomial interval instead;
* :func:`paired_test`: two strategies on the questions both answered: the mean difference, its
  paired-bootstrap interval, and a p-value from McNemar's exact test (0/1 scores) or a paired
  sign-flip permutation test over the non-zero differences (exact up to 2^16 sign patterns,
  Monte-Carlo beyond);
* :func:`holm`: p-values adjusted across the pairs of a comparison (Holm's step-down), on
  full-precision p-values (:func:`format_p` formats them for display only);
* :func:`smallest_p` / :func:`can_be_significant`: whether the exact test used can reach
  p < 0.05 at all on so few questions;
* :func:`detectable_difference`: the smallest paired difference these questions could detect
  (two-sided 5%, 80% power) with the test actually used;
* :func:`pareto_front`: which strategies no other beats on both score and cost.

Seeds are fixed, so a report is reproducible; scipy does the tests where it has the method
(``binomtest``, ``permutation_test``, the paired ``bootstrap``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

VERSION = 1
#: Confidence level of every interval, and the significance level of every test (two-sided).
CONFIDENCE = 0.95
ALPHA = 0.05
#: Power at which :func:`detectable_difference` is computed.
POWER = 0.80
#: Bootstrap resamples: percentile limits at 95% are stable to about 0.3 points of a 0-100 score.
N_RESAMPLES = 5_000
#: Up to this many non-zero paired differences the sign-flip test enumerates every pattern.
EXACT_SIGN_FLIPS = 16
SEED = 20_240_501
#: Resampled values held at once (resamples x questions): bounds memory and keeps large n fast.
_BATCH_VALUES = 2_000_000


@functools.cache
def _scipy_stats() -> Any:
    """``scipy.stats``, imported on first use: it costs ~0.4 s, and the CLI imports this
    module to start."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Interval:
    """A mean over questions with its 95% interval and standard error (``None`` where the data
    cannot give one)."""

    mean: float | None
    low: float | None
    high: float | None
    se: float | None
    n: int


@dataclass(frozen=True)
class PairedResult:
    """Strategy a minus strategy b on the questions both answered."""

    n: int
    mean_diff: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    # "mcnemar-exact", "sign-flip-exact", "sign-flip-monte-carlo", "none" (fewer than two questions)
    test: str
    sd_diff: float | None
    discordant: int | None = None  # McNemar: questions one strategy got right and the other wrong
    scale: float | None = None  # McNemar: the score of a right answer (1 or 100)


def _clean(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray(
        [float(v) for v in values if v is not None and math.isfinite(float(v))], dtype=float
    )


def _binary_scale(values: np.ndarray) -> float | None:
    """100 or 1 when every value is 0 or that score (all zeros: 100, the points of a report),
    else ``None``."""
    seen = set(np.unique(values).tolist())
    if (seen <= {0.0, 100.0} and 100.0 in seen) or seen == {0.0}:
        return 100.0
    return 1.0 if seen <= {0.0, 1.0} else None


def interval(
    values: Sequence[float | None],
    strata: Sequence[Hashable] | None = None,
    weights: Mapping[Hashable, float] | None = None,
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> Interval:
    """The mean of ``values`` with its 95% bootstrap interval (BCa, percentile where BCa is
    undefined) and standard error; ``None`` values (unscored questions) take no part.

    Where every resample gives the same mean (all scores equal, or one question) the bootstrap
    says nothing about uncertainty: 0/1 (or 0/100) scores then get the exact Clopper-Pearson
    interval of the right answers among the questions, and other scores no interval (``None``),
    never a zero-width one.

    Args:
        values: One score per question.
        strata: One stratum key per question (a sub-set of the benchmark); the statistic is then
            ``sum(weights[s] * mean of stratum s)``, each stratum is resampled on its own and the
            BCa acceleration comes from every question's influence within its stratum.
        weights: Stratum weights (default equal: the macro mean); normalised to sum 1.
    """
    groups: dict[Hashable, list[float]] = {}
    keys = strata if strata is not None else [None] * len(values)
    for v, s in zip(values, keys, strict=True):
        if v is not None and math.isfinite(float(v)):
            groups.setdefault(s, []).append(float(v))
    if not groups:
        return Interval(None, None, None, None, 0)
    w = {s: float((weights or {}).get(s, 1.0)) for s in groups}
    total = sum(w.values())
    w = {s: v / total for s, v in w.items()}
    arrays = {s: np.asarray(g) for s, g in groups.items()}
    n = sum(a.size for a in arrays.values())
    mean = float(sum(w[s] * a.mean() for s, a in arrays.items()))
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples)
    for (
        s,
        arr,
    ) in (
        arrays.items()
    ):  # insertion order: reproducible draws (one stratum draws as scipy.stats.bootstrap does)
        boot += w[s] * _resample_means(arr, rng, n_resamples)
    if np.ptp(boot) <= 1e-12 * max(1.0, abs(mean)):
        return _degenerate_interval(mean, np.concatenate(list(arrays.values())))
    influence = np.concatenate([w[s] * (a - a.mean()) / a.size for s, a in arrays.items()])
    low, high = _bca_limits(boot, mean, influence)
    return Interval(mean, low, high, float(boot.std(ddof=1)), n)


def _resample_means(arr: np.ndarray, rng: np.random.Generator, n_resamples: int) -> np.ndarray:
    """Means of ``n_resamples`` resamples of ``arr``, drawn in row batches of ~2M values (the same
    draws as one ``(n_resamples, size)`` call, without its memory on 10,000 questions)."""
    rows = max(1, _BATCH_VALUES // arr.size)
    return np.concatenate(
        [
            arr[rng.integers(0, arr.size, size=(min(rows, n_resamples - i), arr.size))].mean(axis=1)
            for i in range(0, n_resamples, rows)
        ]
    )


def _bca_limits(boot: np.ndarray, estimate: float, influence: np.ndarray) -> tuple[float, float]:
    """BCa limits of a bootstrap distribution (Efron 1987; the bias from the share of resamples
    below the estimate, the acceleration from the questions' empirical influence), percentile limits
    where undefined."""
    norm = _scipy_stats().norm
    tail = (1 - CONFIDENCE) / 2
    below = (np.count_nonzero(boot < estimate) + np.count_nonzero(boot <= estimate)) / (
        2 * boot.size
    )
    spread = float(np.sum(influence**2))
    accel = float(np.sum(influence**3)) / (6 * spread**1.5) if spread > 0 else 0.0
    z0 = norm.ppf(below)
    levels = [tail, 1 - tail]
    if math.isfinite(z0):
        z = norm.ppf(levels)
        adjusted = norm.cdf(z0 + (z0 + z) / (1 - accel * (z0 + z)))
        if np.all(np.isfinite(adjusted)):
            levels = list(adjusted)
    low, high = np.percentile(boot, [100 * levels[0], 100 * levels[1]])
    return float(low), float(high)


def _degenerate_interval(mean: float, values: np.ndarray) -> Interval:
    """The interval where the bootstrap cannot vary: exact binomial for 0/1 scores,
    none otherwise."""
    scale = _binary_scale(values)
    if scale is None:
        return Interval(mean, None, None, None, int(values.size))
    right = int(np.count_nonzero(values))
    ci = (
        _scipy_stats()
        .binomtest(right, int(values.size))
        .proportion_ci(confidence_level=CONFIDENCE, method="exact")
    )
    return Interval(mean, float(ci.low) * scale, float(ci.high) * scale, None, int(values.size))


def paired_test(
    a: Sequence[float],
    b: Sequence[float],
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
    binary: bool = True,
) -> PairedResult:
    """Strategy a against strategy b on the same questions (``a[i]`` and ``b[i]`` score question i).

    McNemar's exact test when every score is 0/1 (or 0/100) and ``binary`` (false for costs, tokens
    and seconds: a cost of 0 or 1 is no right or wrong answer): the two-sided binomial test of the
    discordant pairs. The interval is the percentile bootstrap of the differences, ``None`` where
    every question differs by the same amount (3 of 3 questions moved by 100: no interval, not [100,
    100]). Otherwise a paired sign-flip permutation test of the mean difference over the questions
    whose difference is not zero (flipping a zero changes nothing, so the p-value is the same as
    over all questions): exact up to :data:`EXACT_SIGN_FLIPS` of them.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(
            f"paired_test needs one score per question on both sides, got {x.size} and {y.size}"
        )
    n = int(x.size)
    if n == 0:
        return PairedResult(0, None, None, None, None, "none", None)
    d = x - y
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2:  # one question cannot show a difference beyond chance
        return PairedResult(n, mean, None, None, 1.0, "none", None)
    low: float | None = None
    high: float | None = None
    if not np.all(d == d[0]):
        # equal differences: resampling cannot vary, and a zero-width
        # interval would read as certainty
        res = _scipy_stats().bootstrap(
            (d,),
            np.mean,
            confidence_level=CONFIDENCE,
            n_resamples=n_resamples,
            method="percentile",
            batch=max(1, _BATCH_VALUES // n),
            random_state=np.random.default_rng(seed),
        )
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    scale = _binary_scale(np.concatenate([x, y])) if binary else None
    if scale is not None:
        a_only, b_only = int(np.sum(x > y)), int(np.sum(y > x))
        p = (
            1.0
            if a_only + b_only == 0
            else float(_scipy_stats().binomtest(a_only, a_only + b_only, 0.5).pvalue)
        )
        return PairedResult(n, mean, low, high, p, "mcnemar-exact", sd, a_only + b_only, scale)
    moved = d != 0
    nonzero = int(np.count_nonzero(moved))
    if nonzero < 2:  # one moved question flipped is as far from zero as before: p = 1
        return PairedResult(n, mean, low, high, 1.0, "sign-flip-exact", sd)
    exact = nonzero <= EXACT_SIGN_FLIPS
    res = _scipy_stats().permutation_test(
        (x[moved], y[moved]),
        lambda u, v, axis: np.mean(u - v, axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=np.inf if exact else n_resamples,
        alternative="two-sided",
        batch=max(1, _BATCH_VALUES // nonzero),
        random_state=np.random.default_rng(seed),
    )
    return PairedResult(
        n,
        mean,
        low,
        high,
        float(min(1.0, res.pvalue)),
        "sign-flip-exact" if exact else "sign-flip-monte-carlo",
        sd,
    )


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (``None`` stays ``None``), on the values
    as given: round only for display (:func:`format_p`), or a p near 0.05 can cross it."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def format_p(p: float | None) -> str:
    """A p-value for people: three significant digits, scientific below 0.001, and never rounded
    across :data:`ALPHA` (0.0499995 shows all its digits rather than "0.05")."""
    if p is None:
        return ""
    if p == 0:
        return "<1e-300"  # below what a float holds
    text = f"{p:.3g}" if p >= 1e-3 else f"{p:.2e}"
    return text if (float(text) < ALPHA) == (p < ALPHA) else repr(float(p))


def smallest_p(n: int, test: str, *, n_resamples: int = N_RESAMPLES) -> float:
    """The smallest p-value ``test`` (a :class:`PairedResult` test name) can return on
    ``n`` questions.

    Both exact tests reach ``2 / 2**n`` at best (every question moved the same way: 0.25 on 3
    questions, 0.125 on 4); the Monte-Carlo sign-flip test also cannot go below
    ``2 / (n_resamples + 1)``.
    """
    if n < 2 or test == "none":
        return 1.0
    floor = min(1.0, 2.0 ** (1 - n))
    return max(floor, 2 / (n_resamples + 1)) if test == "sign-flip-monte-carlo" else floor


def can_be_significant(n: int, test: str, *, family: int = 1, alpha: float = ALPHA) -> bool:
    """Whether any outcome on ``n`` questions can give p < ``alpha`` after Holm's adjustment across
    ``family`` pairs (every adjusted p is at least ``family`` times the family's smallest p)."""
    return family * smallest_p(n, test) < alpha


def detectable_difference(
    result: PairedResult, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The smallest mean paired difference the test behind ``result`` detects with ``power`` at
    two-sided ``alpha`` on its ``n`` questions; ``None`` where no difference can be significant at
    that n (see :func:`can_be_significant`) or the data give no spread to size it from.

    McNemar (0/1 scores): the exact binomial test's power at the observed share of discordant
    questions (at least the difference itself: where the two never disagreed, the figure assumes
    every disagreement goes one way, the least any difference needs). Graded scores: a paired-t
    figure with ``n - 1`` degrees of freedom from the standard deviation of the differences.
    """
    if result.n < 2 or not can_be_significant(result.n, result.test, alpha=alpha):
        return None
    if result.test == "mcnemar-exact" and result.scale is not None:
        share = (result.discordant or 0) / result.n
        return _mcnemar_detectable(result.n, share, alpha, power) * result.scale
    if not result.sd_diff:
        return None
    t = _scipy_stats().t
    return float(
        (t.ppf(1 - alpha / 2, result.n - 1) + t.ppf(power, result.n - 1))
        * result.sd_diff
        / math.sqrt(result.n)
    )


def _mcnemar_power(n: int, discordance: float, diff: float, alpha: float) -> float:
    """Power of the exact two-sided McNemar test on ``n`` questions when a share ``discordance``
    of them are discordant (at least ``diff``) and a wins ``diff`` more of them than b
    (shares of n)."""
    st = _scipy_stats()
    share = max(discordance, diff)
    if share <= 0:
        return 0.0
    m = np.arange(n + 1)
    k = _mcnemar_critical(n, alpha)
    q = (share + diff) / (2 * share)
    reject = st.binom.sf(k - 1, m, q) + st.binom.cdf(m - k, m, q)
    return float(np.sum(st.binom.pmf(m, n, share) * reject))


@functools.lru_cache(maxsize=64)
def _mcnemar_critical(n: int, alpha: float) -> np.ndarray:
    """Per discordant count m = 0..n, the larger side's count from which the exact two-sided test
    rejects (above m: never)."""
    st = _scipy_stats()
    m = np.arange(n + 1)
    k = st.binom.ppf(1 - alpha / 2, m, 0.5) + 1
    return np.where(2 * st.binom.sf(k - 1, m, 0.5) < alpha, k, k + 1)


def _mcnemar_detectable(n: int, discordance: float, alpha: float, power: float) -> float:
    """The smallest difference (a share of n) with exact McNemar power of at least ``power``
    (bisection; power grows with it)."""
    low, high = 0.0, 1.0
    for _ in range(30):
        mid = (low + high) / 2
        low, high = (
            (low, mid) if _mcnemar_power(n, discordance, mid, alpha) >= power else (mid, high)
        )
    return high


def questions_needed(
    difference: float, sd_diff: float, *, alpha: float = ALPHA, power: float = POWER
) -> int | None:
    """How many paired questions a true mean difference of ``difference`` needs to be
    detected (normal approximation: a planning figure; :func:`detectable_difference` sizes a
    given n exactly)."""
    if difference == 0 or sd_diff <= 0:
        return None
    return math.ceil(
        (
            (_scipy_stats().norm.ppf(1 - alpha / 2) + _scipy_stats().norm.ppf(power))
            * sd_diff
            / abs(difference)
        )
        ** 2
    )


def pareto_front(points: Mapping[str, tuple[float | None, float | None]]) -> dict[str, bool]:
    """Per name, whether (score, cost) is Pareto-optimal: no other point has a score at least as
    high and a cost at least as low, one of them strictly. Names with a missing value are not
    on the front (``False``)."""
    known = {k: v for k, v in points.items() if v[0] is not None and v[1] is not None}
    out = dict.fromkeys(points, False)
    for name, (s, c) in known.items():
        out[name] = not any(
            (s2 >= s and c2 <= c) and (s2 > s or c2 < c)  # type: ignore[operator]
            for other, (s2, c2) in known.items()
            if other != name
        )
    return out
