"""The shared tool loop (issue #47, item 1): routing, max_turns and the forced final turn, tool
errors returned to the model, the JSON-in-text adapter, with the scripted tool-calling model."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph, add_messages

from longctx import make_chat_model
from longctx.graphs.calls.tool_json import parse_json_calls, tools_prompt
from longctx.graphs.calls.tool_loop import FINAL_TURN_PROMPT, ToolLoop, final_text
from longctx.graphs.metering.budget import Budget, BudgetReached
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.graphs.metering.usage import UsageTracker
from longctx.graphs.plugin.context import StrategyContext
from tests.corpus_tools import get_document, search
from tests.recording_server import RecordingServer, counted_words, tool_call, tool_reply
from tests.scripted_tools import ToolScriptedChatModel, named_call


def _question() -> dict:
    return {"messages": [HumanMessage(content="What is the capital of France?")]}


def _nodes(steps: list) -> list[tuple]:
    return [(s["node"], s["turn"], s.get("tool")) for s in steps]


def test_the_loop_routes_calls_to_the_tools_and_ends_on_an_answer() -> None:
    def reply(prompt: str, tools):
        if "Paris is the capital" in prompt:
            return "Paris"
        if "d1" in prompt:
            return [named_call("get_document", doc_id="d1")]
        return [named_call("search", query="capital")]

    llm = ToolScriptedChatModel(reply_fn=reply)
    out = (
        ToolLoop([search, get_document], max_turns=5, max_tokens=32, llm=llm)
        .build()
        .invoke(_question())
    )
    assert final_text(out) == "Paris" and out["turns"] == 3
    kinds = [type(m).__name__ for m in out["messages"]]
    assert kinds == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert _nodes(out["steps"]) == [
        ("agent", 1, None),
        ("tools", 1, "search"),
        ("agent", 2, None),
        ("tools", 2, "get_document"),
        ("agent", 3, None),
    ]
    assert out["steps"][3]["args"] == {"doc_id": "d1"} and out["steps"][3]["status"] == "success"
    assert [c["tools"][0]["function"]["name"] for c in llm.calls] == ["search"] * 3
    assert all(c["max_tokens"] == 32 for c in llm.calls)


def test_max_turns_ends_with_a_forced_final_turn_without_tools() -> None:
    def reply(prompt: str, tools):
        return "Probably Paris" if tools is None else [named_call("search", query="capital")]

    llm = ToolScriptedChatModel(reply_fn=reply)
    out = ToolLoop([search], max_turns=2, llm=llm).build().invoke(_question())
    assert len(llm.calls) == 3  # max_turns with tools, then one without
    assert [c.get("tools") is not None for c in llm.calls] == [True, True, False]
    assert FINAL_TURN_PROMPT in llm.calls[2]["prompt"]
    assert FINAL_TURN_PROMPT not in llm.calls[1]["prompt"]
    assert final_text(out) == "Probably Paris"
    assert [s["final"] for s in out["steps"] if s["node"] == "agent"] == [False, False, True]
    assert sum(s["node"] == "tools" for s in out["steps"]) == 2  # the last turn's calls ran too


def test_tool_errors_go_back_to_the_model_as_tool_messages() -> None:
    def reply(prompt: str, tools):
        if "Error" in prompt:
            return "I could not read it"
        return [
            named_call("get_document", doc_id="d9"),  # raises KeyError
            named_call("no_such_tool"),
            named_call("get_document", doc_id="d1"),  # over the bound of 2 a turn
        ]

    llm = ToolScriptedChatModel(reply_fn=reply)
    out = ToolLoop([get_document], max_calls_per_turn=2, llm=llm).build().invoke(_question())
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [r.status for r in results] == ["error", "error", "error"]
    assert "KeyError" in results[0].text and "d9" in results[0].text
    assert "not a valid tool" in results[1].text
    assert "at most 2 tool calls" in results[2].text
    assert "KeyError" in llm.calls[1]["prompt"]  # the model saw the error
    assert final_text(out) == "I could not read it"
    assert [s["status"] for s in out["steps"] if s["node"] == "tools"] == ["error"] * 3


def test_a_budget_stop_inside_a_tool_is_not_a_tool_error() -> None:
    @tool
    def spend(x: str) -> str:
        """A tool that calls a model and meets the budget."""
        raise BudgetReached("budget reached: 3 calls")

    llm = ToolScriptedChatModel(reply_fn=lambda prompt, tools: [named_call("spend", x="a")])
    with pytest.raises(BudgetReached):
        ToolLoop([spend], llm=llm).build().invoke(_question())


def test_the_json_adapter_round_trips_through_a_model_without_tools() -> None:
    def reply(prompt: str, tools):
        assert tools is None  # nothing bound: the tools are in the system text
        if "Result of tool get_document" in prompt:
            return "Paris"
        if "Result of tool search" in prompt:
            return (
                'Reading it.\n```json\n{"tool": "get_document", "arguments": {"doc_id": "d1"}}\n```'
            )
        if "Error" in prompt:
            return '```json\n{"tool": "search", "arguments": {"query": "capital"}}\n```'
        return '```json\n{"tool": "search", "arguments": {"query": \n```'  # malformed

    llm = ToolScriptedChatModel(reply_fn=reply, supports_tools=False)
    out = ToolLoop([search, get_document], llm=llm).build().invoke(_question())
    assert final_text(out) == "Paris"
    assert "get_document: The text of one document." in llm.calls[0]["prompt"]
    calls = [
        m.tool_calls or m.invalid_tool_calls for m in out["messages"] if isinstance(m, AIMessage)
    ]
    assert [c[0]["name"] for c in calls[:3]] == [None, "search", "get_document"]
    assert calls[2][0]["args"] == {"doc_id": "d1"}
    assert [s["mode"] for s in out["steps"] if s["node"] == "agent"] == ["json"] * 4
    tool_steps = [(s["tool"], s["status"]) for s in out["steps"] if s["node"] == "tools"]
    assert tool_steps == [(None, "error"), ("search", "success"), ("get_document", "success")]


def test_the_tools_prompt_block_parses_back_into_the_call() -> None:
    prompt = tools_prompt([search])
    assert "search:" in prompt and '"query"' in prompt and '{"tool":' in prompt
    text = 'I will look.\n```json\n{"tool": "search", "arguments": {"query": "Lyon"}}\n```'
    calls, invalid = parse_json_calls(text, turn=4)
    assert calls == [
        {"name": "search", "args": {"query": "Lyon"}, "id": "json_4_0", "type": "tool_call"}
    ]
    assert invalid == []
    assert parse_json_calls('```json\n{"answer": 3}\n```', 1) == ([], [])  # JSON, not a call
    _, bad = parse_json_calls('```json\n{"tool": "search", "arguments": "Lyon"}\n```', 1)
    assert bad[0]["error"] == "arguments must be a JSON object"


class Outer(TypedDict, total=False):
    """A strategy's state around the loop: its messages and steps, and the answer."""

    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list, operator.add]
    answer: str


def test_the_loop_is_a_node_of_a_strategy_graph_and_uses_the_runs_model() -> None:
    def answer(state: Outer) -> dict[str, Any]:
        return {"answer": final_text(state)}

    graph: Any = StateGraph(Outer, context_schema=StrategyContext)
    graph.add_node("loop", ToolLoop([search], max_turns=1).build())
    graph.add_node("answer", answer)
    graph.add_edge(START, "loop")
    graph.add_edge("loop", "answer")
    graph.add_edge("answer", END)
    llm = ToolScriptedChatModel(
        reply_fn=lambda p, t: "Paris" if "d1" in p else [named_call("search", query="capital")]
    )
    context = StrategyContext(llm=llm, config=None, corpus=None)  # type: ignore[arg-type]
    out = graph.compile().invoke(_question(), context=context)
    assert out["answer"] == "Paris" and len(llm.calls) == 2
    assert [s["node"] for s in out["steps"]] == ["agent", "tools", "agent"]


def _stub_agent(request: dict) -> Any:
    """The stub as an agent: search until a result is in its prompt, then answer."""
    seen = [m for m in request["messages"] if m["role"] == "tool"]
    if not request.get("tools"):
        return "Paris, I think"
    return tool_reply(tool_call("search", {"query": f"capital {len(seen)}"}))


def test_a_tool_loop_at_the_stub_never_passes_a_prompt_budget_and_counts_what_it_read() -> None:
    words = lambda text: len(text.split())  # noqa: E731 - the stub's token unit
    with RecordingServer(_stub_agent) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
        tracker = UsageTracker(count=words)
        loop = ToolLoop([search], max_turns=3, llm=llm).build()
        out = loop.invoke(_question(), {"callbacks": [tracker]})
        everything = [len(counted_words(r)) for r in server.requests]
        assert final_text(out) == "Paris, I think" and len(everything) == 4
        assert tracker.usage.prompt_tokens == sum(everything)  # schemas and call arguments included
        limit = sum(everything[:2]) + everything[2] - 1  # the third request would pass it
        server.requests.clear()
        guard = BudgetGuard(Budget(max_prompt_tokens=limit), count=words)
        with pytest.raises(BudgetReached):
            loop.invoke(_question(), {"callbacks": [guard]})
        assert len(server.requests) == 2
        assert sum(len(counted_words(r)) for r in server.requests) <= limit
