"""The official BABILong table: accuracy x 100 per task (rows ``qa1`` ... ``qa20``) and
length (columns).

``longctx report`` writes it to ``report/by_task_length.md``, one table per strategy, from the
``tasks`` aggregation a benchmark's score holds (``{task: {length: accuracy x 100}}``, BABILong's),
laid out as the official ``collect_results.py`` tables are, with their ``avg`` row (qa1-qa5).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: The report file holding the tables.
FILE = "by_task_length.md"
#: The label of the official tables' average row (the mean of qa1-qa5 where all five have a score).
AVG_ROW = "avg (qa1-qa5)"
#: What the tables show, for the file's head and the page's note.
NOTE = (
    "Rows: tasks; columns: context lengths; avg: the mean of qa1-qa5 where all five have a score "
    "(the official avg row)."
)


def _cell(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def task_length_grid(
    scores: Mapping[str, Any],
) -> tuple[list[str], list[tuple[str, list[Any]]]] | None:
    """One strategy's table as data: the lengths (columns) and a ``(task, values)`` row per task,
    then the ``avg (qa1-qa5)`` row where the score has it; ``None`` without a task x length
    aggregation."""
    tasks = scores.get("tasks")
    if (
        not isinstance(tasks, Mapping)
        or not tasks
        or not all(isinstance(row, Mapping) for row in tasks.values())
    ):
        return None
    lengths = list(scores.get("lengths") or dict.fromkeys(n for row in tasks.values() for n in row))
    rows = [(str(t), [row.get(n) for n in lengths]) for t, row in tasks.items()]
    avg = scores.get("avg_qa1_qa5")
    if isinstance(avg, Mapping):
        rows.append((AVG_ROW, [avg.get(n) for n in lengths]))
    return lengths, rows


def task_length_table(scores: Mapping[str, Any]) -> list[str] | None:
    """One strategy's table as Markdown lines, or ``None`` when its score has no task x length
    aggregation."""
    grid = task_length_grid(scores)
    if grid is None:
        return None
    lengths, rows = grid
    lines = ["| task | " + " | ".join(lengths) + " |", "|---|" + "---|" * len(lengths)]
    return lines + [f"| {t} | " + " | ".join(_cell(v) for v in values) + " |" for t, values in rows]


#: The note of a benchmark without BABILong's avg row (OOLONG: task groups x context lengths).
PLAIN_NOTE = "Rows: tasks (task groups); columns: context lengths; score x 100."


def breakdown_tables(scores: Mapping[str, Any]) -> list[str]:
    """The one-column tables of a score's ``breakdowns`` (``{title: {row: value}}``, OOLONG's by
    task group, answer type, source dataset and length) and each variant's official overall
    (``variants.<name>.official``: the figures of the official ``overall.txt``)."""
    lines: list[str] = []
    variants = scores.get("variants")
    if isinstance(variants, Mapping):
        for name, v in variants.items():
            official = v.get("official") if isinstance(v, Mapping) else None
            if isinstance(official, Mapping) and official.get("n"):
                lines += [
                    f"Official overall ({name}, `overall.txt`): {official['correct']}/"
                    f"{official['n']} = {official['overall']}",
                    "",
                ]
    breakdowns = scores.get("breakdowns")
    if isinstance(breakdowns, Mapping):
        for title, rows in breakdowns.items():
            if isinstance(rows, Mapping) and rows:
                lines += [f"| {title} | score |", "|---|---|"]
                lines += [f"| {k} | {_cell(v)} |" for k, v in rows.items()] + [""]
    return lines


def task_length_markdown(benchmark: str, official: Mapping[str, Mapping[str, Any]]) -> str | None:
    """Every strategy's task x length table (``official``: strategy -> its score) with its
    breakdowns (:func:`breakdown_tables`), or ``None`` when none has one. A score's
    ``table_title`` and ``table_note`` replace the default ones (its rows are then what its
    ``tasks`` name, e.g. BrowseComp-Plus's metrics per corpus setting)."""
    parts: list[str] = []
    babilong = False
    title = note = None
    for strategy, scores in official.items():
        table = task_length_table(scores)
        if table is not None:
            babilong |= isinstance(scores.get("avg_qa1_qa5"), Mapping)
            parts += [f"## {strategy}", "", *table, "", *breakdown_tables(scores)]
            title = scores.get("table_title") or title
            note = scores.get("table_note") or note
    if not parts:
        return None
    what = "accuracy x 100" if babilong else "score x 100"
    title = str(title or f"{what} per task x length")
    note = str(note or (NOTE if babilong else PLAIN_NOTE))
    head = [f"# {benchmark}: {title}", "", note, ""]
    return "\n".join(head + parts)
