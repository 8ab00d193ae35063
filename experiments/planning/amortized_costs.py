"""Cost per question as the questions over one corpus accumulate, per strategy of a run, and the
break-even points.

A strategy that builds something once per corpus (RAPTOR's tree, structured's records:
``usage.index_*`` on the answer that paid for it) costs most on its first question and less on each
further one; a strategy that builds nothing costs the same each time. From a run's rows each
strategy gets a line (:class:`~experiments.planning.break_even.CostLine`): ``index``, the index-time
cost of one corpus (summed over that corpus's answers, averaged over the corpora that built one; 0
where none was built, an index reused from the cache included), and ``per_question``, the mean cost
of an answer without it. Asked ``n`` questions over one corpus, a question costs
``(index + n * per_question) / n``.

The unit is USD when every strategy's rows are priced (:mod:`longctx.experiments.planning.prices`)
and cost something, else tokens (prompt + completion), for every strategy alike so the lines can be
compared. ``longctx report`` writes ``amortized_cost.md`` / ``.csv`` and the plot, and
``report.html`` shows them.
"""

from __future__ import annotations

import csv
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from longctx.experiments.planning.break_even import (
    BreakEven,
    CostLine,
    break_evens,
    crossing_interval,
)

#: The numbers of questions over one corpus the table shows a question's cost at.
SHOWN_QUESTIONS = (1, 2, 5, 10, 20, 50, 100)
#: The most decimals :func:`shown_digits` gives (beyond them a float's own rounding decides).
MAX_DIGITS = 15


@dataclass(frozen=True)
class Amortization:
    """Every strategy's cost line over one corpus and where each pair crosses.

    Attributes:
        unit: ``"USD"`` or ``"tokens"``.
        lines: One per strategy with answers, in the run's order.
        break_evens: Every strategy against every other
            (:func:`~experiments.planning.break_even.break_evens`).
    """

    unit: Literal["USD", "tokens"]
    lines: list[CostLine]
    break_evens: list[BreakEven]

    def crossings(self) -> list[BreakEven]:
        """The pairs whose lines cross, each told once, by the strategy that is cheaper from some
        number of questions on."""
        return [b for b in self.break_evens if b.kind == "from"]

    def largest_crossing(self) -> int:
        """The largest number of questions at which a pair crosses (1 where none does)."""
        return max((b.questions or 1 for b in self.crossings()), default=1)


def amortization(
    per_strategy: Mapping[str, Mapping[str, Any]], costs: Mapping[str, Mapping[str, Any]]
) -> Amortization | None:
    """The cost lines of a run's strategies (``score_run``'s ``per_strategy``; ``costs``:
    ``strategy_costs``'s), ``None`` when no strategy answered a question."""
    answered = {
        name: [r for r in data.get("rows", []) if r.get("status") == "ok"]
        for name, data in per_strategy.items()
    }
    answered = {name: rows for name, rows in answered.items() if rows}
    if not answered:
        return None
    priced = all(
        costs.get(n, {}).get("total_usd") is not None
        and costs.get(n, {}).get("index_usd") is not None
        for n in answered
    )
    unit: Literal["USD", "tokens"] = (
        "USD" if priced and any(costs[n]["total_usd"] > 0 for n in answered) else "tokens"
    )
    lines = [
        _usd_line(name, rows, costs[name]) if unit == "USD" else _token_line(name, rows)
        for name, rows in answered.items()
    ]
    return Amortization(unit, lines, break_evens(lines))


def _usage(row: Mapping[str, Any], *keys: str) -> float:
    usage = row.get("usage") or {}
    return float(sum(usage.get(k) or 0 for k in keys))


def _built_corpora(rows: Sequence[Mapping[str, Any]]) -> int:
    """How many corpora some answer paid index-time calls for (a row's ``corpus`` fingerprint, else
    its question)."""
    return len(
        {
            str(r.get("corpus") or r.get("sample_id"))
            for r in rows
            if _usage(r, "index_llm_calls") > 0
        }
    )


def _sd(values: Sequence[float]) -> float | None:
    return statistics.stdev(values) if len(values) > 1 else None


def _token_line(name: str, rows: Sequence[Mapping[str, Any]]) -> CostLine:
    """Tokens (prompt + completion): the index part per corpus built, the rest per answer."""
    index = sum(_usage(r, "index_prompt_tokens", "index_completion_tokens") for r in rows)
    each = [
        _usage(r, "prompt_tokens", "completion_tokens")
        - _usage(r, "index_prompt_tokens", "index_completion_tokens")
        for r in rows
    ]
    return CostLine(
        name, index / max(1, _built_corpora(rows)), sum(each) / len(rows), _sd(each), len(each)
    )


def _usd_line(name: str, rows: Sequence[Mapping[str, Any]], cost: Mapping[str, Any]) -> CostLine:
    """USD: the strategy's index-time USD per corpus built, the rest of its total per answer."""
    index, total = float(cost["index_usd"]), float(cost["total_usd"])
    each = cost.get("question_usd") or []
    return CostLine(
        name,
        index / max(1, _built_corpora(rows)),
        (total - index) / len(rows),
        _sd(each),
        len(each),
    )


def shown_digits(a: Amortization) -> int:
    """Decimals the table gives its figures with: 6 for USD (1 for tokens), or more where fewer
    would move a break-even point, so the table's own index and per-question figures reproduce every
    one of them (two per-question costs a few millionths apart otherwise put a crossing at 403
    questions, not 360)."""
    digits = 6 if a.unit == "USD" else 1
    for digits in range(digits, MAX_DIGITS + 1):
        shown = [
            CostLine(x.strategy, round(x.index, digits), round(x.per_question, digits))
            for x in a.lines
        ]
        if break_evens(shown) == a.break_evens:
            break
    return digits


def amortized_rows(
    a: Amortization, questions: Sequence[int] = SHOWN_QUESTIONS
) -> list[dict[str, Any]]:
    """A row per strategy: its index cost per corpus, its cost per question beside it, and a
    question's cost at each of ``questions``, at :func:`shown_digits` decimals."""
    digits = shown_digits(a)
    return [
        {
            "strategy": line.strategy,
            "unit": a.unit,
            "index_per_corpus": round(line.index, digits),
            "per_question": round(line.per_question, digits),
            **{f"at_{n}": round(line.at(n), digits) for n in questions},
        }
        for line in a.lines
    ]


def crossing_text(a: Amortization, b: BreakEven) -> str:
    """A crossing's sentence with where the lines cross and how sure that is:
    ``raptor is cheaper than memagent from 360 questions on (the lines cross at n = 359.43; 95%
    interval 181 to never: the per-question gap, 3.0% of memagent's, is a mean over 8 and 8
    answers)``."""
    if b.crossing is None:
        return b.sentence()
    lines = {line.strategy: line for line in a.lines}
    mine, other = lines[b.strategy], lines[b.other]
    text = f"{b.sentence()} (the lines cross at n = {b.crossing:,.2f}"
    interval = crossing_interval(mine, other)
    if interval is None:
        return text + ")"
    dearer = max(mine, other, key=lambda x: x.per_question)
    share = abs(mine.per_question - other.per_question) / dearer.per_question
    over = f"a mean over {mine.answers} and {other.answers} answers"
    if interval[0] == interval[1]:
        return (
            f"{text}; each per-question cost is the same on all its answers, {mine.answers} and "
            f"{other.answers})"
        )
    high = "never" if interval[1] == math.inf else _questions(interval[1])
    return (
        f"{text}; 95% interval {_questions(interval[0])} to {high}: the per-question gap, "
        f"{share:.1%} of {dearer.strategy}'s, is {over})"
    )


def _questions(n: float) -> str:
    """A number of questions for a sentence: two decimals below 100, whole above."""
    return f"{n:,.2f}" if n < 100 else f"{n:,.0f}"


def break_even_cell(b: BreakEven) -> str:
    """A matrix cell: ``from 14``, ``up to 13``, ``always``, ``never`` or ``same``."""
    return {"from": f"from {b.questions}", "until": f"up to {b.questions}"}.get(b.kind, b.kind)


def break_even_matrix(a: Amortization) -> list[dict[str, str]]:
    """A row per strategy: when it is cheaper per question than each other (its cell in that
    one's column)."""
    cells = {(b.strategy, b.other): break_even_cell(b) for b in a.break_evens}
    names = [line.strategy for line in a.lines]
    return [{"cheaper": x, **{y: ("" if x == y else cells[(x, y)]) for y in names}} for x in names]


def write_amortized(stem: Path, a: Amortization) -> None:
    """``stem.csv`` (the rows of :func:`amortized_rows`) and ``stem.md``: those rows, the break-even
    sentences and matrix, and how to read them."""
    rows = amortized_rows(a)
    with open(stem.with_suffix(".csv"), "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    stem.with_suffix(".md").write_text("\n".join(markdown_lines(a, rows)) + "\n", encoding="utf-8")


def markdown_lines(a: Amortization, rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The markdown of :func:`write_amortized`."""
    lines = [
        "# Cost per question over one corpus",
        "",
        f"A question's cost ({a.unit}) when n questions are asked over the same corpus: (index + "
        "n x per question) / n, the",
        "index-time work (usage.index_*) paid once per corpus and shared out. A strategy that "
        "built nothing in this run",
        "(or reused a cached index) has index 0. The figures have the decimals that reproduce "
        "every break-even point below:",
        "the lines cross at n* = (index_a - index_b) / (per_question_b - per_question_a).",
        "",
    ]
    lines += _table(rows, shown_digits(a))
    crossing = a.crossings()
    lines += ["", "## Break-even", ""]
    lines += [f"- {crossing_text(a, b)}." for b in crossing] or [
        "- No two strategies' lines cross: the cheaper one is cheaper at any number of questions."
    ]
    lines += [
        "",
        "When the strategy of each row is cheaper per question than the strategy of each column:",
        "",
    ]
    lines += _table(break_even_matrix(a))
    return lines


def _table(rows: Sequence[Mapping[str, Any]], digits: int | None = None) -> list[str]:
    """A markdown table; floats at ``digits`` decimals (never in exponent form) when given."""

    def cell(value: Any) -> str:
        return (
            f"{value:.{digits}f}" if digits is not None and isinstance(value, float) else str(value)
        )

    columns = list(rows[0])
    return ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)] + [
        "| " + " | ".join(cell(r[c]) for c in columns) + " |" for r in rows
    ]
