"""How reports, plots and the demo show RAG, and the retrieval view the strategies built on it
share."""

from __future__ import annotations

from longctx.graphs.plugin.api import StrategyPresentation, retrieval_view

PRESENTATION = StrategyPresentation(
    color="#1f77b4",
    demo_options={"chunk_size": 60, "top_k": 3},
    demo_default=True,
    step_views={"retrieve": retrieval_view},
)
