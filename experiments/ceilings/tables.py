"""Evidence ceilings as tables: one :class:`Ceiling` per strategy, printed as Markdown or
stored as JSON.

Every table carries :data:`UPPER_BOUND_NOTE`: a ceiling is an upper bound on accuracy, not an
accuracy. Computed by :mod:`longctx.experiments.ceilings.measure`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Printed and stored with every ceiling table.
UPPER_BOUND_NOTE = (
    "A ceiling is an upper bound, not an accuracy: the share of questions whose complete evidence "
    "can reach the strategy's final model call, assuming the model does everything else perfectly."
)


@dataclass
class Ceiling:
    """A strategy's ceiling over a set of questions.

    Attributes:
        strategy: Registry name.
        config: The effective config (JSON-safe).
        rule: The rule applied, in words.
        unit: What evidence is counted in (``documents``, ``records``, or ``sentences`` for
            BABILong's supporting facts).
        questions: Questions measured.
        complete_share: Share of questions whose complete evidence can reach the final call.
        mean_share: Mean over questions of the share of their evidence that can.
        by_difficulty: ``complete_share`` per difficulty (synthetic corpora).
        by_task_length: ``complete_share`` per task, then length (BABILong).
        per_question: ``{sample_id, reached, total}`` per question.
        detail: Rule-specific extras (PAI's judge mode, Self-Route's routed ceiling, ...).
        skipped: Why no ceiling was computed (then the numbers are ``None``).
    """

    strategy: str
    config: dict[str, Any]
    rule: str
    unit: str = "documents"
    questions: int = 0
    complete_share: float | None = None
    mean_share: float | None = None
    by_difficulty: dict[str, float] = field(default_factory=dict)
    by_task_length: dict[str, dict[str, float]] = field(default_factory=dict)
    per_question: list[dict[str, Any]] = field(default_factory=list)
    detail: dict[str, Any] = field(default_factory=dict)
    skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


_DIFFICULTY_ORDER = ("easy", "medium", "hard", "needle")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_table(ceilings: Sequence[Ceiling], *, title: str | None = None) -> str:
    """A Markdown table of ceilings, with the upper-bound note."""
    lines = [
        f"# Evidence ceilings: {title}" if title else "# Evidence ceilings",
        "",
        UPPER_BOUND_NOTE,
        "",
    ]
    lines += [
        "| strategy | complete evidence | mean evidence share | questions | rule |",
        "|---|---|---|---|---|",
    ]
    for c in ceilings:
        if c.skipped:
            lines.append(f"| {c.strategy} | - | - | - | skipped: {c.skipped} |")
            continue
        extra = ""
        if "routed_complete_share" in c.detail:
            extra = (
                f"; with perfect routing to its fallback {_pct(c.detail['routed_complete_share'])}"
            )
        unit = f" ({c.unit})" if c.unit in ("records", "sentences") else ""
        lines.append(
            f"| {c.strategy} | {_pct(c.complete_share)} | {_pct(c.mean_share)}{unit} | "
            f"{c.questions} | {c.rule}{extra} |"
        )
    seen = {d for c in ceilings for d in c.by_difficulty}
    diffs = [d for d in _DIFFICULTY_ORDER if d in seen] + sorted(seen - set(_DIFFICULTY_ORDER))
    if diffs:
        lines += [
            "",
            "Complete-evidence share by difficulty:",
            "",
            "| strategy | " + " | ".join(diffs) + " |",
            "|---|" + "---|" * len(diffs),
        ]
        for c in ceilings:
            if not c.skipped:
                lines.append(
                    f"| {c.strategy} | "
                    + " | ".join(_pct(c.by_difficulty.get(d)) for d in diffs)
                    + " |"
                )
    return "\n".join(lines + _task_length_tables(ceilings)) + "\n"


def _task_length_tables(ceilings: Sequence[Ceiling]) -> list[str]:
    """Per strategy, the complete-evidence share per task (rows) x length (columns), as BABILong's
    tables lay out accuracy."""
    lines: list[str] = []
    for c in ceilings:
        if c.skipped or not c.by_task_length:
            continue
        lengths = list(dict.fromkeys(n for row in c.by_task_length.values() for n in row))
        lines += [
            "",
            f"Complete-evidence share by task x length, {c.strategy}:",
            "",
            "| task | " + " | ".join(lengths) + " |",
            "|---|" + "---|" * len(lengths),
        ]
        lines += [
            f"| {t} | " + " | ".join(_pct(row.get(n)) for n in lengths) + " |"
            for t, row in c.by_task_length.items()
        ]
    return lines


def ceilings_json(ceilings: Sequence[Ceiling], *, per_question: bool = True) -> dict[str, Any]:
    """The JSON form: the note and one object per strategy."""
    rows = []
    for c in ceilings:
        d = c.to_dict()
        if not per_question:
            d.pop("per_question")
        rows.append(d)
    return {"note": UPPER_BOUND_NOTE, "ceilings": rows}
