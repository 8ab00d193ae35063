"""Nodes shared by several strategy graphs."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.llm import complete
from graphs.types import StrategyContext


def generate(state: dict[str, Any], runtime: Runtime[StrategyContext]) -> dict:
    """One call on the filled prompt; the reply is the answer (benchmarks extract their format)."""
    cfg = runtime.context.config
    raw = complete(runtime.context.llm, state["prompt"], max_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
    return {"raw": raw, "answer": raw.strip(), "steps": [{"node": "generate", "chars": len(raw)}]}
