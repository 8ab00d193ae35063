"""The winner per metric: the leader (best value; the cheaper strategy wins a tie), named the
winner only when paired tests on the shared questions say it beats every other strategy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.experiments.reports import comparison

#: Metrics that can have a winner: (summary key, label, higher is better).
METRICS = (
    ("score", "Best score", True),
    ("evidence_recall", "Best evidence recall", True),
    ("cost_usd", "Cheapest (estimated USD per answer)", False),
    ("tokens", "Fewest tokens per answer", False),
    ("seconds", "Fastest (seconds per answer)", False),
)

#: How each metric's differences read in a sentence.
UNITS = {
    "score": "points",
    "evidence_recall": "points",
    "cost_usd": "USD",
    "tokens": "tokens",
    "seconds": "seconds",
}


def pick_winners(
    rows: Sequence[Mapping[str, Any]],
    per_question: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Per metric, the leader (the best value; among equal values the cheaper strategy, or for the
    cost metrics the better-scoring one) and whether the data makes it the winner.

    A winner is named (``strategies``) only when the leader beats every other strategy on the
    questions they share with a Holm-adjusted paired p below 0.05
    (``longctx.experiments.reports.comparison``); otherwise ``strategies`` is empty and ``note``
    says so, with n and the smallest difference these questions could detect. Without
    ``per_question`` (metric -> strategy -> question id -> value) nothing can be tested and no
    winner is named.

    ``rows`` are summary rows with ``strategy``, ``score``, ``cost_usd``, ``tokens`` and
    ``seconds`` (missing or ``None`` values take no part).
    """
    winners = []
    for key, label, higher in METRICS:
        candidates = [r for r in rows if isinstance(r.get(key), (int, float))]
        if candidates:
            winners.append(
                _metric_winner(key, label, higher, candidates, (per_question or {}).get(key))
            )
    return winners


def _metric_winner(
    key: str,
    label: str,
    higher: bool,
    candidates: list[Mapping[str, Any]],
    values: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """One metric's entry of :func:`pick_winners` among ``candidates`` (the rows with a value)."""
    best = max(r[key] for r in candidates) if higher else min(r[key] for r in candidates)
    tied = [r for r in candidates if abs(r[key] - best) <= 1e-9]
    top = (_cheaper if key in ("score", "evidence_recall") else _better_scoring)(tied)
    leader = top[0]["strategy"]
    others = [r["strategy"] for r in candidates if r["strategy"] != leader]
    verdict, note = _verdict(key, label, higher, leader, others, candidates, values)
    return {
        "metric": key,
        "label": label,
        "strategies": [leader] if verdict["significant"] else [],
        "leader": leader,
        "value": best,
        "significant": verdict["significant"],
        "n": verdict["n"],
        "detectable": verdict["detectable"],
        "note": note,
    }


def _verdict(
    key: str,
    label: str,
    higher: bool,
    leader: str,
    others: list[str],
    candidates: list[Mapping[str, Any]],
    values: Mapping[str, Mapping[str, Any]] | None,
) -> tuple[dict[str, Any], str]:
    """Whether ``leader`` beats ``others`` on the per-question ``values``, and the sentence
    that says so."""
    if not others:
        return _untested(), f"{label}: only {leader} has a value; nothing to compare."
    if values is None:
        return _untested(), f"{label}: not tested (no per-question values); best value {leader}."
    by_strategy = {r["strategy"]: values.get(r["strategy"], {}) for r in candidates}
    seen = {v for per in by_strategy.values() for v in per.values() if v is not None}
    if len(seen) == 1:  # no spread to test: say so, not a detectable difference sized on nothing
        n = max(len(per) for per in by_strategy.values())
        return _untested(), (
            f"{label}: every strategy has the same value ({seen.pop():g} "
            f"{UNITS.get(key, 'points')}) on every one of the {n} questions; nothing to test."
        )
    pairs = comparison.pairwise(by_strategy, metric=key)
    verdict = comparison.significant_winner(leader, others, pairs, higher=higher)
    return verdict, comparison.verdict_line(label, leader, verdict, UNITS.get(key, "points"))


def _untested() -> dict[str, Any]:
    """The verdict of a metric no test was run on: no winner."""
    return {"significant": False, "n": 0, "detectable": None, "closest": None, "p_adjusted": None}


def _cheaper(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    for key in ("cost_usd", "tokens"):
        known = [r for r in rows if isinstance(r.get(key), (int, float))]
        if len(known) == len(rows) and len(rows) > 1:
            low = min(r[key] for r in rows)
            rows = [r for r in rows if abs(r[key] - low) <= 1e-12]
    return rows


def _better_scoring(rows: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    known = [r for r in rows if isinstance(r.get("score"), (int, float))]
    if len(known) == len(rows) and len(rows) > 1:
        high = max(r["score"] for r in rows)
        rows = [r for r in rows if abs(r["score"] - high) <= 1e-9]
    return rows


def incomplete_line(missing: Mapping[str, int], questions: int) -> str:
    """What an unfinished run lacks, and how to finish it."""
    parts = ", ".join(f"{name} {n} of {questions}" for name, n in missing.items())
    return (
        f"Incomplete run: answers missing ({parts}). No winner is named until every strategy has "
        "answered every "
        "question: rerun the same 'longctx run' command (same --out) to finish it."
    )


def significance_text(
    winners: Sequence[Mapping[str, Any]],
    *,
    missing: Mapping[str, int] | None = None,
    questions: int = 0,
) -> str:
    """The verdict of every metric, one line each (the terminal's and
    ``significance.md``'s text)."""
    if missing:
        return incomplete_line(missing, questions) + "\n"
    head = "Winners (paired tests on the shared questions, Holm-adjusted, 5%)"
    lines = [f"{head}:"] + [f"- {w['note']}" for w in winners]
    return "\n".join(lines) + "\n"
