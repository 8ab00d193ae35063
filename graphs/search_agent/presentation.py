"""How reports, plots and the demo show the search agent: each tool call (the query searched or
the document opened), and at the end every query and document of the conversation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, bullets, join, tag, text


def tool_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """One tool call: ``search "<query>"`` or ``get_document <docid>``, and whether it failed."""
    args = step.get("args")
    args = args if isinstance(args, Mapping) else {"arguments": args}
    shown = args.get("query", args.get("docid", args.get("arguments", "")))
    status = " (error)" if step.get("status") == "error" else ""
    line = tag("p", f"{step.get('tool')} ", tag("span", text(shown, 500), cls="follow"), status)
    return Shown(join(line), frozenset({"tool", "args", "status"}))


def finish_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The queries searched and the documents opened, in order, and how the conversation ended."""
    searched = step.get("searched") or []
    opened = step.get("opened") or []
    return Shown(
        join(
            tag("p", f"{step.get('status')} after {step.get('turns')} model calls", cls="what"),
            tag("p", f"{len(searched)} searches:"),
            bullets(searched),
            tag("p", f"documents opened: {', '.join(map(str, opened)) or 'none'}"),
        ),
        frozenset({"status", "turns", "searched", "opened"}),
    )


PRESENTATION = StrategyPresentation(
    color="#393b79",
    # the embedded model writes ~20 tokens/s on 2 cores: 384 output tokens keep a run under 30 s
    demo_options={"k": 3, "snippet_max_tokens": 64, "max_iterations": 4, "max_tokens": 384},
    step_views={"tools": tool_view, "finish": finish_view},
)
