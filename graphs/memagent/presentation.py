"""How reports, plots and the demo show MemAgent: its memory after each chunk, as one table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.graphs.plugin.api import Markup, StrategyPresentation, join, tag, text

#: Memory rows shown per answer (the first and last halves when there are more).
MAX_MEMORY_ROWS = 200


def memory_table(steps: Sequence[Mapping[str, Any]]) -> Markup:
    """The memory after each chunk; a run of unchanged memory is one row."""
    rows: list[tuple[int, int, Mapping[str, Any]]] = []  # (first chunk, last chunk, step)
    for s in steps:
        chunk = s.get("chunk", len(rows))
        if rows and rows[-1][2].get("memory") == s.get("memory"):
            rows[-1] = (rows[-1][0], chunk, rows[-1][2])
        else:
            rows.append((chunk, chunk, s))
    shown, hidden = rows, 0
    if len(rows) > MAX_MEMORY_ROWS:
        half = MAX_MEMORY_ROWS // 2
        shown, hidden = rows[:half] + rows[-half:], len(rows) - MAX_MEMORY_ROWS
    body = []
    for k, (first, last, s) in enumerate(shown):
        if hidden and k == MAX_MEMORY_ROWS // 2:
            body.append(
                Markup(
                    f'<tr><td colspan="3" class="na">… {hidden:,} more memory versions …</td></tr>'
                )
            )
        chunks = f"{first}" if first == last else f"{first}–{last} (unchanged)"
        tokens = s.get("tokens")
        cut_note = " · cut to budget" if s.get("cut") else ""
        body.append(
            tag(
                "tr",
                tag("td", chunks, cls="num"),
                tag(
                    "td", f"{tokens:,}" if isinstance(tokens, int) else tokens, cut_note, cls="num"
                ),
                tag("td", tag("pre", text(s.get("memory")), cls="memory")),
            )
        )
    head = Markup("<thead><tr><th>after chunk</th><th>tokens</th><th>memory</th></tr></thead>")
    return join(
        tag("p", f"Memory after each chunk ({len(steps)} chunks read)", cls="what"),
        tag("table", head, tag("tbody", *body), cls="memory"),
    )


PRESENTATION = StrategyPresentation(
    color="#2ca02c",
    demo_options={"chunk_tokens": 500, "max_new_tokens": 96, "temperature": 0.0},
    demo_default=True,
    run_views={"update_memory": memory_table},
)
