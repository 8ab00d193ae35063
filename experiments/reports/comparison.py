"""Strategies compared on the same questions: pairwise tables, winners the data supports, frontiers.

Built on :mod:`longctx.experiments.reports.stats`; used by the report (``report/pairwise.csv``, the
summary's intervals, the page's matrix and winners) and by ``longctx compare`` across run folders.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from longctx.experiments.reports import stats

#: Columns of ``pairwise.csv`` (mean_diff = a - b, on the questions both answered).
PAIRWISE_COLUMNS = (
    "metric",
    "strategy_a",
    "strategy_b",
    "n",
    "mean_a",
    "mean_b",
    "mean_diff",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "test",
    "detectable_difference",
)

Scores = Mapping[
    str, Mapping[str, "float | None"]
]  # strategy -> question id -> value (None: unscored)


#: Metrics whose values are right or wrong answers where they are 0/1 (or
#: 0/100): McNemar's test applies.
SCORE_METRICS = ("score", "evidence_recall")


def pairwise(scores: Scores, *, metric: str = "score") -> list[dict[str, Any]]:
    """Every pair of strategies on the questions both have a value for, Holm-adjusted
    across the pairs.

    Values of a metric outside :data:`SCORE_METRICS` (USD, tokens, seconds) are never read as right
    or wrong answers, even where every one is 0 or 1: the sign-flip test, with a detectable
    difference in the metric's own unit.

    p-values stay at full precision (the adjustment must see them so;
    :func:`longctx.experiments.reports.stats.format_p` formats them for display), the other figures
    are rounded to 4 decimals.
    """
    names = list(scores)
    rows: list[dict[str, Any]] = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = [
                q for q, v in scores[a].items() if v is not None and scores[b].get(q) is not None
            ]
            xa = [float(scores[a][q]) for q in shared]  # type: ignore[arg-type]
            xb = [float(scores[b][q]) for q in shared]  # type: ignore[arg-type]
            r = stats.paired_test(xa, xb, binary=metric in SCORE_METRICS)
            rows.append(
                {
                    "metric": metric,
                    "strategy_a": a,
                    "strategy_b": b,
                    "n": r.n,
                    "mean_a": _round(sum(xa) / len(xa)) if xa else None,
                    "mean_b": _round(sum(xb) / len(xb)) if xb else None,
                    "mean_diff": _round(r.mean_diff),
                    "ci_low": _round(r.ci_low),
                    "ci_high": _round(r.ci_high),
                    "p_value": r.p_value,
                    "test": r.test,
                    "detectable_difference": _round(stats.detectable_difference(r)),
                }
            )
    for row, p in zip(rows, stats.holm([r["p_value"] for r in rows])):
        row["p_adjusted"] = p
    return [{c: r.get(c) for c in PAIRWISE_COLUMNS} for r in rows]


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(float(value), digits) + 0.0  # + 0.0: no "-0.0"


def _versus(
    pairs: Sequence[Mapping[str, Any]], a: str, b: str
) -> tuple[float | None, float | None, int, float | None]:
    """(difference a - b, adjusted p, n, detectable difference) from a pairwise table, either
    orientation."""
    for r in pairs:
        if (r["strategy_a"], r["strategy_b"]) == (a, b):
            return r["mean_diff"], r["p_adjusted"], r["n"], r["detectable_difference"]
        if (r["strategy_a"], r["strategy_b"]) == (b, a):
            return (
                (None if r["mean_diff"] is None else -r["mean_diff"]),
                r["p_adjusted"],
                r["n"],
                r["detectable_difference"],
            )
    return None, None, 0, None


def significant_winner(
    leader: str, others: Sequence[str], pairs: Sequence[Mapping[str, Any]], *, higher: bool = True
) -> dict[str, Any]:
    """Whether ``leader`` beats every other strategy with an adjusted p below 0.05.

    Returns ``{"significant": bool, "n", "detectable", "closest", "p_adjusted", "tied",
    "reachable", "smallest_p", "family"}``:

    - ``n``: the fewest shared questions;
    - ``detectable``: the detectable difference against the closest rival;
    - ``closest``: that rival (among those it was not shown to beat, the highest adjusted p,
      then the smallest difference: a tied strategy before one far behind);
    - ``p_adjusted``: its adjusted p;
    - ``tied``: rivals with the leader's mean on the shared questions;
    - ``reachable``: whether any outcome of these pairs could be significant after Holm's
      adjustment;
    - ``smallest_p``: the least raw p their tests can return;
    - ``family``: how many pairs were tested.
    """
    verdicts = []
    for other in others:
        diff, p, n, mde = _versus(pairs, leader, other)
        better = diff is not None and (diff > 0 if higher else diff < 0)
        gap = abs(diff) if diff is not None else math.inf
        verdicts.append(
            (
                p if p is not None else 1.0,
                other,
                bool(better and p is not None and p < stats.ALPHA),
                n,
                mde,
                gap,
            )
        )
    tested = [r for r in pairs if r.get("p_value") is not None]
    floor = min((stats.smallest_p(r["n"], r["test"]) for r in tested), default=1.0)
    if not verdicts:
        return {
            "significant": False,
            "n": 0,
            "detectable": None,
            "closest": None,
            "p_adjusted": None,
            "tied": [],
            "reachable": False,
            "smallest_p": floor,
            "family": len(tested),
        }
    worst = max(
        verdicts, key=lambda v: (not v[2], v[0], -v[5])
    )  # the rival the leader is least sure to beat
    return {
        "significant": all(v[2] for v in verdicts),
        "n": min(v[3] for v in verdicts),
        "detectable": worst[4],
        "closest": worst[1],
        "p_adjusted": worst[0],
        "tied": [v[1] for v in verdicts if v[5] == 0],
        "reachable": len(tested) * floor < stats.ALPHA,
        "smallest_p": floor,
        "family": len(tested),
    }


def verdict_line(
    label: str, leader: str | None, verdict: Mapping[str, Any], unit: str = "points"
) -> str:
    """One sentence for the terminal and the page: the winner, or why none is named."""
    if leader is None:
        return f"{label}: no strategy has a value."
    if verdict["significant"]:
        return (
            f"{label}: {leader} beats every other strategy (adjusted p "
            f"{stats.format_p(verdict['p_adjusted'])} against "
            f"{verdict['closest']}, n={verdict['n']})."
        )
    tied = verdict.get("tied") or []
    best = f"best: {leader}" + (f", tied with {', '.join(tied)}" if tied else "")
    if verdict.get("reachable") is False:
        family = verdict.get("family") or 0
        holm = (
            f", and Holm's adjustment across {family} pairs multiplies that by {family}"
            if family > 1
            else ""
        )
        return (
            f"{label}: no difference can be significant on n={verdict['n']} questions: the "
            "paired tests here reach p "
            f"{stats.format_p(verdict.get('smallest_p'))} at best{holm} ({best})."
        )
    mde = verdict.get("detectable")
    detect = (
        f"; these questions detect differences of about {mde:.3g} {unit} or more (80% power, one "
        "pair at 5%)"
        if mde
        else ""
    )
    closest = (
        f" ({best}; against {verdict['closest']} adjusted p "
        f"{stats.format_p(verdict['p_adjusted'])})"
        if verdict.get("closest")
        else ""
    )
    return f"{label}: no significant difference on n={verdict['n']} questions{closest}{detect}."


def write_pairwise(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """``pairwise.csv`` with :data:`PAIRWISE_COLUMNS` (a header only when there is one strategy)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=PAIRWISE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def frontier(rows: Sequence[Mapping[str, Any]], cost_key: str) -> dict[str, bool]:
    """Per strategy of the summary rows: on the (score, ``cost_key``) Pareto front or not."""
    return stats.pareto_front({r["strategy"]: (r.get("score"), r.get(cost_key)) for r in rows})
