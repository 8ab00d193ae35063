"""Statistics that say when a difference between strategies is real.

Every score of a report is a mean over questions, so it carries sampling error; two strategies
answered the *same* questions, so they are compared pairwise. The API:

* :func:`interval`: a score's 95% bootstrap confidence interval and standard error, over
  questions, stratified where the benchmark's headline averages sub-sets (each stratum is
  resampled on its own and the strata are combined with the headline's weights);
* :func:`paired_test`: two strategies on the questions both answered: the mean difference, its
  paired-bootstrap interval, and a p-value from McNemar's exact test (0/1 scores) or a paired
  sign-flip permutation test (exact up to 2^16 sign patterns, Monte-Carlo beyond);
* :func:`holm`: p-values adjusted across the pairs of a comparison (Holm's step-down);
* :func:`detectable_difference`: the smallest paired difference these questions could detect
  (two-sided 5%, 80% power) from the observed variance of the differences;
* :func:`pareto_front`: which strategies no other beats on both score and cost.

Seeds are fixed, so a report is reproducible; scipy does the resampling and the tests where it
has the method (``scipy.stats.bootstrap``, ``binomtest``, ``permutation_test``).
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


@functools.cache
def _scipy_stats() -> Any:
    """``scipy.stats``, imported on first use: it costs ~0.4 s, and the CLI imports this module to start."""
    from scipy import stats

    return stats


@dataclass(frozen=True)
class Interval:
    """A mean over questions with its bootstrap interval and standard error."""

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
    test: str  # "mcnemar-exact", "sign-flip-exact", "sign-flip-monte-carlo", "none" (fewer than two questions)
    sd_diff: float | None


def _clean(values: Sequence[float | None]) -> np.ndarray:
    return np.asarray([float(v) for v in values if v is not None and math.isfinite(float(v))], dtype=float)


def interval(values: Sequence[float | None], strata: Sequence[Hashable] | None = None,
             weights: Mapping[Hashable, float] | None = None, *, seed: int = SEED,
             n_resamples: int = N_RESAMPLES) -> Interval:  # fmt: skip
    """The mean of ``values`` with its 95% bootstrap interval (BCa, percentile where BCa is
    undefined) and standard error; ``None`` values (unscored questions) take no part.

    Args:
        values: One score per question.
        strata: One stratum key per question (a sub-set of the benchmark); the statistic is then
            ``sum(weights[s] * mean of stratum s)`` and each stratum is resampled on its own.
        weights: Stratum weights (default equal: the macro mean); normalised to sum 1.
    """
    if strata is None:
        x = _clean(values)
        if x.size == 0:
            return Interval(None, None, None, None, 0)
        mean = float(x.mean())
        if x.size < 2 or np.all(x == x[0]):
            return Interval(mean, mean, mean, 0.0, int(x.size))
        res = None
        for method in ("BCa", "percentile"):
            res = _scipy_stats().bootstrap((x,), np.mean, confidence_level=CONFIDENCE, n_resamples=n_resamples, method=method,
                                random_state=np.random.default_rng(seed))  # fmt: skip
            if math.isfinite(res.confidence_interval.low) and math.isfinite(res.confidence_interval.high):
                break
        assert res is not None
        return Interval(mean, float(res.confidence_interval.low), float(res.confidence_interval.high), float(res.standard_error), int(x.size))
    groups: dict[Hashable, list[float]] = {}
    for v, s in zip(values, strata, strict=True):
        if v is not None and math.isfinite(float(v)):
            groups.setdefault(s, []).append(float(v))
    if not groups:
        return Interval(None, None, None, None, 0)
    w = {s: float((weights or {}).get(s, 1.0)) for s in groups}
    total = sum(w.values())
    w = {s: v / total for s, v in w.items()}
    mean = float(sum(w[s] * np.mean(g) for s, g in groups.items()))
    rng = np.random.default_rng(seed)
    boot = np.zeros(n_resamples)
    for s, g in groups.items():  # sorted insertion order: reproducible draws
        arr = np.asarray(g)
        boot += w[s] * arr[rng.integers(0, arr.size, size=(n_resamples, arr.size))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(boot, [tail, 1 - tail])
    return Interval(mean, float(low), float(high), float(boot.std(ddof=1)), sum(len(g) for g in groups.values()))


def _binary(a: np.ndarray, b: np.ndarray) -> bool:
    values = set(np.unique(a)) | set(np.unique(b))
    return values <= {0.0, 1.0} or values <= {0.0, 100.0}


def paired_test(a: Sequence[float], b: Sequence[float], *, seed: int = SEED, n_resamples: int = N_RESAMPLES) -> PairedResult:
    """Strategy a against strategy b on the same questions (``a[i]`` and ``b[i]`` score question i).

    McNemar's exact test when every score is 0/1 (or 0/100): the two-sided binomial test of the
    discordant pairs. Otherwise a paired sign-flip permutation test of the mean difference.
    """
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired_test needs one score per question on both sides, got {x.size} and {y.size}")
    n = int(x.size)
    if n == 0:
        return PairedResult(0, None, None, None, None, "none", None)
    d = x - y
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2:  # one question cannot show a difference beyond chance
        return PairedResult(n, mean, None, None, 1.0, "none", None)
    if np.all(d == d[0]):
        low = high = mean
    else:
        res = _scipy_stats().bootstrap((d,), np.mean, confidence_level=CONFIDENCE, n_resamples=n_resamples, method="percentile",
                            random_state=np.random.default_rng(seed))  # fmt: skip
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if _binary(x, y):
        a_only, b_only = int(np.sum(x > y)), int(np.sum(y > x))
        p = 1.0 if a_only + b_only == 0 else float(_scipy_stats().binomtest(a_only, a_only + b_only, 0.5).pvalue)
        return PairedResult(n, mean, low, high, p, "mcnemar-exact", sd)
    nonzero = int(np.count_nonzero(d))
    if nonzero == 0:
        return PairedResult(n, mean, low, high, 1.0, "sign-flip-exact", sd)
    exact = nonzero <= EXACT_SIGN_FLIPS
    res = _scipy_stats().permutation_test((x, y), lambda u, v, axis: np.mean(u - v, axis=axis), permutation_type="samples",
                               vectorized=True, n_resamples=np.inf if exact else n_resamples, alternative="two-sided",
                               random_state=np.random.default_rng(seed))  # fmt: skip
    return PairedResult(n, mean, low, high, float(min(1.0, res.pvalue)), "sign-flip-exact" if exact else "sign-flip-monte-carlo", sd)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjustment of a family of p-values (``None`` stays ``None``)."""
    present = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted


def detectable_difference(sd_diff: float | None, n: int, *, alpha: float = ALPHA, power: float = POWER) -> float | None:
    """The smallest mean paired difference a two-sided test at ``alpha`` detects with ``power``
    on ``n`` questions, given the standard deviation of the paired differences (normal approximation)."""
    if sd_diff is None or n < 2:
        return None
    return float((_scipy_stats().norm.ppf(1 - alpha / 2) + _scipy_stats().norm.ppf(power)) * sd_diff / math.sqrt(n))


def questions_needed(difference: float, sd_diff: float, *, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """How many paired questions a true mean difference of ``difference`` needs to be detected."""
    if difference == 0 or sd_diff <= 0:
        return None
    return math.ceil(((_scipy_stats().norm.ppf(1 - alpha / 2) + _scipy_stats().norm.ppf(power)) * sd_diff / abs(difference)) ** 2)


def pareto_front(points: Mapping[str, tuple[float | None, float | None]]) -> dict[str, bool]:
    """Per name, whether (score, cost) is Pareto-optimal: no other point has a score at least as
    high and a cost at least as low, one of them strictly. Names with a missing value are not
    on the front (``False``)."""
    known = {k: v for k, v in points.items() if v[0] is not None and v[1] is not None}
    out = dict.fromkeys(points, False)
    for name, (s, c) in known.items():
        out[name] = not any(
            (s2 >= s and c2 <= c) and (s2 > s or c2 < c)  # type: ignore[operator]
            for other, (s2, c2) in known.items() if other != name
        )
    return out
