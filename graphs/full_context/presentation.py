"""How reports, plots and the demo show full context (the report's context-cut line reads the
``truncated`` facts of its ``build_prompt`` step, as for any strategy that records them)."""

from __future__ import annotations

from longctx.graphs.plugin.api import StrategyPresentation

PRESENTATION = StrategyPresentation(
    color="#ff7f0e", demo_options={"max_new_tokens": 32}, demo_default=True
)
