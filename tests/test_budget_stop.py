"""A budget stop keeps the partial state and lets the strategy finish with it; the budget handle
in the run context (issue #47, item 1): a tool-loop strategy built here, at the recording stub."""

from __future__ import annotations

import asyncio
import threading
from typing import Annotated, Any

import pytest
from langchain_core.messages import AnyMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, StateGraph, add_messages
from langgraph.runtime import Runtime

from longctx import Budget, answer, make_chat_model
from longctx.graphs.calls.llm import complete
from longctx.graphs.calls.tool_loop import ToolLoop, answer_so_far, final_text
from longctx.graphs.plugin.answer_state import AnswerState
from longctx.graphs.plugin.config import StrategyConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import SingleRun, Strategy
from longctx.graphs.runtime.run import arun_strategy, run_strategy
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question, Step
from tests.corpus_tools import DOCS, get_document, search
from tests.recording_server import RecordingServer, tool_call, tool_reply
from tests.scripted import ScriptedChatModel


class AgentState(AnswerState, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def _left(runtime: Runtime[StrategyContext[Any]]) -> dict[str, Any]:
    b = runtime.context.budget
    return {
        "calls_left": b.calls_left,
        "prompt_tokens_left": b.prompt_tokens_left,
        "completion_tokens_left": b.completion_tokens_left,
        "usd_left": b.usd_left,
    }


def plan(state: AgentState, runtime: Runtime[StrategyContext[Any]]) -> dict[str, Any]:
    """One model call before the loop (a search query), recording the budget left around it."""
    before = _left(runtime)
    query = complete(
        runtime.context.llm, f"Search query for: {state['question'].text}", max_tokens=16
    )
    step = Step("plan", query=query, before=before, after=_left(runtime))
    return {"messages": [HumanMessage(content=state["question"].text)], "steps": [step]}


def finish(state: AgentState) -> dict[str, Any]:
    text = final_text(state)
    return {"answer": text.strip(), "raw": text}


def build_graph(config: Any = None, max_concurrency: int | None = None) -> Any:
    graph: Any = StateGraph(AgentState, context_schema=StrategyContext)
    graph.add_node("plan", plan)
    graph.add_node("loop", ToolLoop([search, get_document], max_turns=4, max_tokens=32).build())
    graph.add_node("finish", finish)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "loop")
    graph.add_edge("loop", "finish")
    graph.add_edge("finish", END)
    compiled = graph.compile()
    return compiled.with_config(max_concurrency=max_concurrency) if max_concurrency else compiled


def last_tool_result(state: dict[str, Any]) -> dict[str, Any]:
    """A final node made of what the loop found: the last tool result, no model call."""
    results = [m.text for m in state.get("messages", []) if isinstance(m, ToolMessage)]
    return {"answer": results[-1] if results else "", "steps": [Step("on_stop", seen=len(results))]}


def _spec(on_stop: Any = None) -> Strategy[Any]:
    return Strategy("agent_test", build_graph, StrategyConfig, run_mode=SingleRun(on_stop=on_stop))


def _stub_agent(request: dict) -> Any:
    """Without tools: the plan's query; with them: search, read d1, then answer."""
    if not request.get("tools"):
        return "capital France"
    seen = [m for m in request["messages"] if m["role"] == "tool"]
    if not seen:
        return tool_reply(tool_call("search", {"query": "capital"}))
    if len(seen) == 1:
        return tool_reply(tool_call("get_document", {"doc_id": "d1"}))
    return "Paris"


def _run(server: RecordingServer, budget: Budget, on_stop: Any = None, *, use_async: bool = False):
    llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
    spec, corpus = _spec(on_stop), Corpus.from_texts(list(DOCS.values()))
    options: dict[str, Any] = {"llm": llm, "corpus": corpus, "budget": budget}
    questions = [Question(text="What is the capital of France?")]
    if use_async:
        return asyncio.run(arun_strategy(spec, StrategyConfig(), questions, **options))[0]
    return run_strategy(spec, StrategyConfig(), questions, use_async=False, **options)[0]


def _nodes(result: Any) -> list[tuple[str, Any]]:
    return [(s["node"], s.get("tool")) for s in result.steps]


KEPT = [("plan", None), ("agent", None), ("tools", "search"), ("agent", None)]
KEPT += [("tools", "get_document")]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_tool_loop_stopped_at_turn_3_keeps_turns_1_and_2_and_finishes_with_them(use_async):
    with RecordingServer(_stub_agent) as server:
        whole = _run(server, Budget(max_llm_calls=10))
        assert whole.answer == "Paris" and whole.stopped is None and len(server.requests) == 4
        assert _nodes(whole) == [*KEPT, ("agent", None)]  # the plan's step once, not twice
        server.requests.clear()
        result = _run(server, Budget(max_llm_calls=3), last_tool_result, use_async=use_async)
        assert len(server.requests) == 3  # plan, turns 1 and 2; nothing after the stop
    assert result.stopped == "budget"
    assert _nodes(result) == [*KEPT, ("on_stop", None), ("stopped", None)]
    assert result.steps[-1]["reason"].startswith("budget reached: 3 calls")
    assert result.answer == DOCS["d1"]  # the final node's answer, made of turn 2's tool result
    assert result.usage.llm_calls == 3


def test_a_final_node_calling_the_model_sends_nothing_and_a_strategy_without_one_keeps_its_steps():
    def greedy(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": complete(llm, "one more call, please", max_tokens=8)}

    with RecordingServer(_stub_agent) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        result = _run(server, Budget(max_llm_calls=3), greedy)
        assert len(server.requests) == 3  # the guard refused the final node's call
        assert result.stopped == "budget" and result.answer == ""
        assert _nodes(result) == [*KEPT, ("stopped", None)]
        server.requests.clear()
        plain = _run(server, Budget(max_llm_calls=3))  # no final node declared
        assert len(server.requests) == 3
    assert plain.stopped == "budget" and plain.answer == ""
    assert _nodes(plain) == [*KEPT, ("stopped", None)]
    assert answer_so_far({"messages": []}) == {"answer": "", "raw": ""}


def test_the_budget_handle_reports_what_is_left_mid_run():
    budget = Budget(max_llm_calls=10, max_prompt_tokens=5_000, max_cost_usd=1.0, price=(10, 20))
    with RecordingServer(_stub_agent) as server:
        result = _run(server, budget)
    plan_step = result.steps[0]
    before, after = plan_step["before"], plan_step["after"]
    assert before["calls_left"] == 10 and after["calls_left"] == 9
    assert before["prompt_tokens_left"] == 5_000 > after["prompt_tokens_left"] > 4_900
    assert before["usd_left"] == 1.0 > after["usd_left"] > 0.99
    assert after["completion_tokens_left"] is None  # a budget limits no completion tokens
    with RecordingServer(_stub_agent) as server:
        unlimited = _run(server, Budget())
    assert set(unlimited.steps[0]["after"].values()) == {None}


def _pai_reply(prompt: str) -> str:
    """Two sub-questions when asked to decompose, "yes" to every judge."""
    asked = "sub-question" in prompt.lower() or "decompos" in prompt.lower()
    return "1. What is the code?\n2. Which fact holds it?" if asked else "yes"


def test_pai_stopped_by_its_budget_keeps_its_steps_so_far():
    """PAI's least run fits 8 calls; with two sub-questions its judges pass them."""
    corpus = Corpus.from_texts([f"Fact {i}: the code is {i}. " * 20 for i in range(6)])
    model = ScriptedChatModel(reply_fn=_pai_reply)
    budget = Budget(max_llm_calls=8)
    result = answer(corpus, "What is the code?", strategy="pai", llm=model, budget=budget)
    assert result.stopped == "budget" and len(model.calls) == 8
    nodes = [s["node"] for s in result.steps]
    assert nodes == ["extract_properties", "plan_judging", "stopped"]  # today: ["stopped"]


def test_a_tool_loop_graph_limited_to_one_task_at_a_time_still_runs():
    """Streaming subgraphs, LangGraph's waiter holds a slot of ``max_concurrency``: with 1, the
    run would wait forever for its only task without the slot the run path adds."""
    spec = Strategy("agent_one", lambda config=None: build_graph(max_concurrency=1), StrategyConfig)
    results: list[Any] = []
    with RecordingServer(_stub_agent) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        question = Question(text="What is the capital of France?")
        corpus = Corpus.from_texts(list(DOCS.values()))
        run = threading.Thread(
            target=lambda: results.extend(
                run_strategy(spec, StrategyConfig(), [question], llm=llm, corpus=corpus)
            ),
            daemon=True,
        )
        run.start()
        run.join(120)  # a deadline, not a measure: without the slot it never ends
        assert not run.is_alive(), "the run waits for a slot its own stream holds"
    assert results[0].answer == "Paris"
