"""The page's sections that the Markdown report has as files of their own: BABILong's accuracy per
task x length (``by_task_length.md``) and the cost per context and per question
(``per_context.md``), each column of the latter with its one-line legend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.experiments.planning.context_costs import COLUMNS
from longctx.experiments.reports.html_report.cells import e, number, swatch
from longctx.experiments.reports.task_length_table import NOTE, PLAIN_NOTE, task_length_grid


def task_length_section(official: Mapping[str, Mapping[str, Any]]) -> str:
    """A task x length table per strategy whose score has one (BABILong's official layout); nothing
    when none has (``official``: strategy -> its score)."""
    tables = []
    for strategy, scores in official.items():
        grid = task_length_grid(scores)
        if grid is None:
            continue
        lengths, rows = grid
        head = "".join(f"<th>{e(n)}</th>" for n in lengths)
        body = "".join(
            f"<tr><th>{e(task)}</th>"
            + "".join(f'<td class="num">{"-" if v is None else e(number(v))}</td>' for v in values)
            + "</tr>"
            for task, values in rows
        )
        tables.append(
            f'<h3>{swatch(strategy)}</h3><table class="task-length" data-strategy="{e(strategy)}">'
            f"<thead><tr><th>task</th>{head}</tr></thead><tbody>{body}</tbody></table>"
        )
    if not tables:
        return ""
    babilong = any(isinstance(s.get("avg_qa1_qa5"), Mapping) for s in official.values())
    what, note = ("Accuracy", NOTE) if babilong else ("Score", PLAIN_NOTE)  # OOLONG: score x 100
    return (
        f'<section id="by-task-length"><h2>{what} per task x length</h2><p class="note">{what} '
        f"&times; 100. {e(note)} Also in <code>by_task_length.md</code>.</p>{''.join(tables)}"
        "</section>"
    )


def per_context_section(rows: Sequence[Mapping[str, Any]]) -> str:
    """The cost per context and per question
    (:func:`longctx.experiments.planning.context_costs.per_context_table`'s rows) with a legend line
    per column; nothing when no context was asked two questions or more."""
    if not rows:
        return ""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    head = "".join(f"<th>{e(c)}</th>" for c in columns)
    body = "".join(
        f'<tr data-strategy="{e(row["strategy"])}"><td>{swatch(row["strategy"])}</td>'
        + "".join(f'<td class="num">{e(number(row.get(c), 3))}</td>' for c in columns[1:])
        + "</tr>"
        for row in rows
    )
    legend = "".join(
        f'<li data-column="{e(c)}"><code>{e(c)}</code>: {e(COLUMNS[c])}</li>'
        for c in columns
        if c in COLUMNS
    )
    return (
        '<section id="per-context"><h2>Cost per context and per question</h2><p class="note">Many '
        "questions over one context: what a context costs before its first question (its index) "
        "and what each question adds. Also in <code>per_context.md</code>.</p>"
        f'<div class="wide"><table class="per-context"><thead><tr>{head}</tr></thead>'
        f'<tbody>{body}</tbody></table></div><ul class="legend">{legend}</ul></section>'
    )
