"""How reports and the demo show RAPTOR: the layer and cluster of each retrieved node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, tag


def nodes_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """Each retrieved node as ``#index (layer L, cluster C)``: leaves are layer 0, with no
    cluster."""
    parts = [
        f"#{n['index']} (layer {n['layer']}"
        + (f", cluster {n['cluster']})" if n.get("cluster") is not None else ", leaf)")
        for n in step.get("nodes") or []
    ]
    return Shown(
        tag("p", f"{step.get('mode', 'collapsed')}: " + (", ".join(parts) or "no node")),
        frozenset({"nodes", "mode"}),
    )


PRESENTATION = StrategyPresentation(
    color="#bcbd22",
    demo_options={"reduction_dimension": 2},
    step_views={"retrieve": nodes_view},
)
