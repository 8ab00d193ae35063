"""How reports, plots and the demo show Self-Route: the route it took and why (the steps of its
fallback's run carry the fallback's name and are shown with the fallback's own views)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, join, retrieval_view, tag, text


def route_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The route (or that RAG declined) and the reason."""
    route = (
        join("Route: ", tag("b", step["route"]), " · ")
        if step.get("route")
        else ("RAG declined · " if step.get("declined") else "")
    )
    return Shown(
        tag(
            "p",
            route,
            "reason: ",
            tag("span", text(step.get("reason"), 1000), cls="reason"),
            cls="route",
        ),
        frozenset({"route", "reason"}),
    )


PRESENTATION = StrategyPresentation(
    color="#e377c2",
    demo_options={"chunk_size": 60, "top_k": 3},
    demo_default=True,
    step_views={
        "retrieve": retrieval_view,
        "check_answer": route_view,
        "measure_context": route_view,
    },
)
