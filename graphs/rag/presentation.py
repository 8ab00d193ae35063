"""How reports, plots and the demo show RAG, and the retrieval view the strategies built on it share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphs.api import Shown, StrategyPresentation, join, tag, text


def retrieval_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The query (where the step has its own, e.g. a follow-up question) and the chunks retrieved."""
    query = (
        tag("p", "Query: ", tag("span", text(step["query"], 500), cls="follow"), cls="what")
        if step.get("query")
        else ""
    )
    ids = ", ".join(str(c) for c in step.get("chunk_ids") or [])
    return Shown(
        join(query, tag("p", f"chunks {ids or 'none'}")), frozenset({"query", "chunk_ids"})
    )


PRESENTATION = StrategyPresentation(
    color="#1f77b4",
    demo_options={"chunk_size": 60, "top_k": 3},
    demo_default=True,
    step_views={"retrieve": retrieval_view},
)
