"""Nodes shared by several strategy graphs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.context import StrategyContext
from graphs.llm import complete


def generate(state: dict[str, Any], runtime: Runtime[StrategyContext]) -> dict:
    """One call on the filled prompt; the reply is the answer (benchmarks extract their format)."""
    cfg = runtime.context.config
    raw = complete(runtime.context.llm, state["prompt"], max_tokens=cfg.max_new_tokens, temperature=cfg.temperature)
    return {"raw": raw, "answer": raw.strip(), "steps": [{"node": "generate", "chars": len(raw)}]}


def linear_graph(name: str, state_schema: type, *nodes: tuple[str, Callable]):
    """Compile START -> nodes[0] -> ... -> nodes[-1] -> END with the shared run context."""
    graph = StateGraph(state_schema, context_schema=StrategyContext)
    previous = START
    for node_name, fn in nodes:
        graph.add_node(node_name, fn)
        graph.add_edge(previous, node_name)
        previous = node_name
    graph.add_edge(previous, END)
    return graph.compile(name=name)
