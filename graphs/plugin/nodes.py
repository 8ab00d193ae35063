"""Nodes shared by several strategy graphs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from longctx.graphs.calls.llm import complete
from longctx.graphs.plugin.answer_state import PromptState
from longctx.graphs.plugin.context import StrategyContext
from longctx.retrieval.contract import Step

#: A strategy's compiled graph (its state, run context and input/output schemas are the strategy's
#: own).
CompiledGraph = CompiledStateGraph[Any, Any, Any, Any]


class AnswerSettings(Protocol):
    """What :func:`generate` reads from a strategy's config (RAG, full context and Self-Route have
    it)."""

    @property
    def max_new_tokens(self) -> int: ...

    @property
    def temperature(self) -> float: ...


def generate(
    state: PromptState, runtime: Runtime[StrategyContext[AnswerSettings]]
) -> dict[str, Any]:
    """The final call on the filled prompt, with the benchmark's answer budget, temperature and
    stop sequences when the question carries a protocol; the reply is the answer (benchmarks
    extract their format).

    When the prompt is the benchmark's own (``state["official_prompt"]``) and its protocol has
    an ``answer_prompt`` (LongBench v2 CoT), this is the official two-call setting: the prompt
    gets ``reasoning_max_new_tokens``, then the answer prompt around that reply gets the
    answer budget, and its reply is the answer. The protocol's ``system`` turn goes before the
    benchmark's own prompt only (MemoryAgentBench's agents send one).
    """
    cfg, question, llm = runtime.context.config, state["question"], runtime.context.llm
    max_tokens, temperature = (
        question.answer_budget(cfg.max_new_tokens),
        question.answer_temperature(cfg.temperature),
    )
    stop = question.answer_stop()
    protocol, prompt, facts = question.protocol, state["prompt"], {}
    system = protocol.system if protocol is not None and state.get("official_prompt") else None
    if protocol is not None and protocol.answer_prompt is not None and state.get("official_prompt"):
        reasoning_budget = protocol.reasoning_max_new_tokens or max_tokens
        reasoning = complete(
            llm, prompt, max_tokens=reasoning_budget, temperature=temperature, system=system
        )
        prompt = protocol.answer_prompt(reasoning.strip())
        facts = {"reasoning": reasoning, "reasoning_max_new_tokens": reasoning_budget}
    raw = complete(
        llm, prompt, max_tokens=max_tokens, temperature=temperature, stop=stop, system=system
    )
    step = Step(
        "generate",
        chars=len(raw),
        max_new_tokens=max_tokens,
        temperature=temperature,
        **({"stop": stop} if stop else {}),
        **facts,
    )
    return {"raw": raw, "answer": raw.strip(), "steps": [step]}


def linear_graph(
    name: str, state_schema: type, *nodes: tuple[str, Callable[..., Any]]
) -> CompiledGraph:
    """Compile START -> nodes[0] -> ... -> nodes[-1] -> END with the shared run context."""
    graph: StateGraph[Any, StrategyContext[Any], Any, Any] = StateGraph(
        state_schema, context_schema=StrategyContext
    )
    previous = START
    for node_name, fn in nodes:
        graph.add_node(node_name, fn)
        graph.add_edge(previous, node_name)
        previous = node_name
    graph.add_edge(previous, END)
    return graph.compile(name=name)
