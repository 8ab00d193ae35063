"""Nodes shared by several strategy graphs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from graphs.context import StrategyContext
from graphs.llm import complete
from retrieval.contract import Step


def generate(state: dict[str, Any], runtime: Runtime[StrategyContext]) -> dict:
    """The final call on the filled prompt, with the benchmark's answer budget and temperature
    when the question carries a protocol; the reply is the answer (benchmarks extract their format)."""
    cfg, question = runtime.context.config, state["question"]
    max_tokens, temperature = question.answer_budget(cfg.max_new_tokens), question.answer_temperature(cfg.temperature)
    raw = complete(runtime.context.llm, state["prompt"], max_tokens=max_tokens, temperature=temperature)
    return {"raw": raw, "answer": raw.strip(), "steps": [Step("generate", chars=len(raw), max_new_tokens=max_tokens, temperature=temperature)]}


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
