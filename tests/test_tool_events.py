"""Tool events and records (issue #47, item 3): a tool-loop strategy built here streams a
``tool_call`` and a ``tool_result`` event per call, in order, through ``stream_answer`` and the SSE
example; streamed tool-call chunks reach ``TokenEvent``; the drill-down shows the calls and the
results; ``ToolNode``'s tool runs are traced as tool runs under the answer's run, with
its metadata."""

from __future__ import annotations

import json
import operator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Annotated, Any, TypedDict
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AnyMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph, add_messages

from longctx import (
    AnswerEvent,
    StepEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
    answer,
    stream_answer,
)
from longctx.experiments.benchmarks.base import Sample
from longctx.experiments.reports.html_report.drilldown import answer_details
from longctx.experiments.runner.rows import base_row, ok_row
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.calls.tool_events import EVENT_RESULT_CHARS
from longctx.graphs.calls.tool_loop import ToolLoop, final_text
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.retrieval.contract import Corpus, Question, Step
from tests.scripted_tools import ToolScriptedChatModel, named_call

QUESTION = "What is the capital of France?"
CORPUS = Corpus.from_texts(["Paris is the capital of France.", "Lyon is a city in France."])
DOCS = {"d1": "Paris is the capital of France. " + "More about Paris. " * 200}


@tool
def search(query: str) -> str:
    """Search the corpus; returns the ids of the matching documents."""
    return "d1" if "capital" in query else "none"


@tool
def get_document(doc_id: str) -> str:
    """The text of one document."""
    return DOCS[doc_id]  # KeyError for an unknown id: a tool error


class AgentState(TypedDict, total=False):
    """A tool-loop strategy's state: the question, the loop's conversation, steps and answer."""

    question: Question
    messages: Annotated[list[AnyMessage], add_messages]
    steps: Annotated[list, operator.add]
    answer: str
    raw: str


def _ask(state: AgentState) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=state["question"].render())]}


def _finish(state: AgentState) -> dict[str, Any]:
    text = final_text(state)
    return {"answer": text, "raw": text, "steps": [Step("finish", chars=len(text))]}


def build_agent(config: Any = None) -> Any:
    """``ask -> loop (search, get_document) -> finish``, the loop being :class:`ToolLoop`."""
    graph: Any = StateGraph(AgentState, context_schema=StrategyContext)
    graph.add_node("ask", _ask)
    graph.add_node("loop", ToolLoop([search, get_document], max_turns=4).build())
    graph.add_node("finish", _finish)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", "loop")
    graph.add_edge("loop", "finish")
    graph.add_edge("finish", END)
    return graph.compile(name="tool_agent")


@dataclass(frozen=True, kw_only=True)
class AgentConfig(StrategyConfig):
    """No options."""


@pytest.fixture
def tool_agent(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(
        STRATEGIES._entries,
        "tool_agent",
        Strategy(name="tool_agent", build_graph=build_agent, config_cls=AgentConfig),
    )
    return "tool_agent"


def agent_reply(prompt: str, tools: Any) -> Any:
    """Search, then read the document found (and an unknown one), then answer."""
    if "d1" not in prompt:
        return [named_call("search", query="capital of France")]
    if "More about Paris" not in prompt:
        return [named_call("get_document", doc_id="d1"), named_call("get_document", doc_id="d9")]
    return "The capital is Paris."


class StreamingToolModel(ToolScriptedChatModel):
    """The scripted tool model with LangChain's ``streaming``
    switch (``stream_answer(streaming=True)``)."""

    streaming: bool = False
    disable_streaming: bool = False


def _kinds(events: list[Any]) -> list[str]:
    return [e.kind for e in events if not isinstance(e, TokenEvent)]


def test_tool_calls_and_results_stream_in_order_then_the_steps_and_the_answer(tool_agent):
    llm = ToolScriptedChatModel(reply_fn=agent_reply)
    events = list(stream_answer(CORPUS, QUESTION, strategy=tool_agent, llm=llm))
    tool_events = [e for e in events if isinstance(e, (ToolCallEvent, ToolResultEvent))]
    assert [(e.kind, e.name, e.call_id) for e in tool_events] == [
        ("tool_call", "search", "call_0"),
        ("tool_result", "search", "call_0"),
        ("tool_call", "get_document", "call_0"),
        ("tool_call", "get_document", "call_1"),
        ("tool_result", "get_document", "call_0"),
        ("tool_result", "get_document", "call_1"),
    ]
    call, result = tool_events[0], tool_events[1]
    assert (call.arguments, call.node, result.result, result.status, result.node) == (
        {"query": "capital of France"},
        "agent",
        "d1",
        "ok",
        "tools",
    )
    long, missing = tool_events[4], tool_events[5]
    assert long.chars == len(DOCS["d1"]) > EVENT_RESULT_CHARS >= len(long.result) - 60
    assert "characters cut" in long.result and long.result.startswith("Paris is the capital")
    assert missing.status == "error" and "KeyError" in missing.result
    # every call before its result, all of them before the loop's steps, the answer last
    assert _kinds(events) == [
        *["tool_call", "tool_result", "tool_call", "tool_call", "tool_result", "tool_result"],
        *["step"] * 7,  # the loop's steps as it finishes, then finish's
        "answer",
    ]
    steps = [e.step["node"] for e in events if isinstance(e, StepEvent)]
    assert steps == ["agent", "tools", "agent", "tools", "tools", "agent", "finish"]
    final = events[-1]
    assert isinstance(final, AnswerEvent) and final.answer.answer == "The capital is Paris."
    for e in events:
        assert json.loads(json.dumps(e.to_dict()))["kind"] == e.kind


def test_streamed_tool_call_chunks_reach_token_events_before_their_call(tool_agent):
    llm = StreamingToolModel(reply_fn=agent_reply)
    events = list(stream_answer(CORPUS, QUESTION, strategy=tool_agent, llm=llm, streaming=True))
    first_call = next(i for i, e in enumerate(events) if isinstance(e, ToolCallEvent))
    pieces = [
        c for e in events[:first_call] if isinstance(e, TokenEvent) for c in e.tool_call_chunks
    ]
    assert pieces[0]["name"] == "search" and pieces[0]["id"] == "call_0"
    assert json.loads("".join(p["args"] or "" for p in pieces)) == events[first_call].arguments
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(t.text for t in tokens) == "The capital is Paris."
    assert {t.node for t in tokens} == {"agent"}
    assert tokens[0].to_dict()["tool_call_chunks"][0]["name"] == "search"
    # the text API is unchanged: a text token carries no pieces
    assert [t.to_dict() for t in tokens if t.text][0] == {
        "kind": "token",
        "text": "The",
        "node": "agent",
        "tool_call_chunks": [],
    }


def test_a_loop_streamed_by_hand_writes_the_events_to_langgraphs_custom_stream():
    llm = ToolScriptedChatModel(reply_fn=agent_reply)
    loop = ToolLoop([search, get_document], llm=llm).build()
    custom = list(loop.stream({"messages": [HumanMessage(content=QUESTION)]}, stream_mode="custom"))
    assert [(c["kind"], c["call_id"]) for c in custom] == [
        ("tool_call", "call_0"),
        ("tool_result", "call_0"),
        ("tool_call", "call_0"),
        ("tool_call", "call_1"),
        ("tool_result", "call_0"),
        ("tool_result", "call_1"),
    ]


def test_a_model_without_tools_sends_the_same_events_an_unreadable_call_with_its_text():
    def reply(prompt: str, tools: Any) -> str:
        if "Result of tool search" in prompt:
            return "Paris"
        if "Error" in prompt:
            return '```json\n{"tool": "search", "arguments": {"query": "capital"}}\n```'
        return '```json\n{"tool": "search", "arguments": {"query": \n```'  # malformed

    llm = ToolScriptedChatModel(reply_fn=reply, supports_tools=False)
    loop = ToolLoop([search, get_document], llm=llm).build()
    custom = list(loop.stream({"messages": [HumanMessage(content=QUESTION)]}, stream_mode="custom"))
    assert [(c["kind"], c["name"], c.get("status")) for c in custom] == [
        ("tool_call", None, None),
        ("tool_result", "unknown", "error"),
        ("tool_call", "search", None),
        ("tool_result", "search", "ok"),
    ]
    assert isinstance(custom[0]["arguments"], str) and '"query"' in custom[0]["arguments"]
    assert custom[0]["call_id"] == custom[1]["call_id"]


class _Drilldown(HTMLParser):
    """The tool calls (``li.tool-call``) and the message roles of a drill-down block."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []
        self.roles: list[str] = []
        self._into: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        cls = dict(attrs).get("class")
        if tag == "li" and cls == "tool-call":
            self.calls.append("")
            self._into = self.calls
        elif tag == "div" and cls == "role":
            self.roles.append("")
            self._into = self.roles

    def handle_endtag(self, tag: str) -> None:
        if tag in ("li", "div"):
            self._into = None

    def handle_data(self, data: str) -> None:
        if self._into is not None:
            self._into[-1] += data


def test_the_drilldown_shows_the_tool_calls_and_the_results_read(tool_agent):
    llm = ToolScriptedChatModel(reply_fn=agent_reply)
    result = answer(CORPUS, QUESTION, strategy=tool_agent, llm=llm)
    assert [m["role"] for m in result.messages] == ["human", "ai", "tool", "ai", "tool", "tool"]
    assert result.messages[1]["tool_calls"] == [
        {"id": "call_0", "name": "search", "args": {"query": "capital of France"}}
    ]
    sample = Sample(
        sample_id="q0",
        benchmark="own",
        dataset="toy",
        corpus=CORPUS,
        question=Question(text=QUESTION),
        answers=("Paris",),
    )
    row = ok_row(base_row(sample, tool_agent), result)
    page = _Drilldown()
    page.feed(answer_details(tool_agent, row, None, {"prices": {}}, {"model": "m"}))
    assert page.calls == [
        'search [call_0] {"query": "capital of France"}',
        'get_document [call_0] {"doc_id": "d1"}',
        'get_document [call_1] {"doc_id": "d9"}',
    ]
    assert page.roles[:6] == [
        "human",
        "ai",
        "tool result: search [call_0]",
        "ai",
        "tool result: get_document [call_0]",
        "tool result: get_document [call_1] (error)",
    ]


class RunTree(BaseCallbackHandler):
    """Records every run's name, kind, parent and metadata (what LangSmith's tracer is given)."""

    def __init__(self) -> None:
        self.runs: dict[UUID, dict[str, Any]] = {}

    def _add(
        self, kind: str, serialized: Any, run_id: UUID, parent: UUID | None, **kw: Any
    ) -> None:
        name = kw.get("name") or (serialized or {}).get("name")
        self.runs[run_id] = {
            "kind": kind,
            "name": name,
            "parent": parent,
            "metadata": dict(kw.get("metadata") or {}),
        }

    def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kw: Any,
    ) -> None:
        self._add("chain", serialized, run_id, parent_run_id, **kw)

    def on_tool_start(
        self,
        serialized: Any,
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kw: Any,
    ) -> None:
        self._add("tool", serialized, run_id, parent_run_id, **kw)

    def root_of(self, run_id: UUID) -> dict[str, Any]:
        run = self.runs[run_id]
        while run["parent"] in self.runs:
            run = self.runs[run["parent"]]
        return run


def test_toolnode_runs_are_traced_as_tool_runs_under_the_answers_run(tool_agent):
    tree = RunTree()
    llm = ToolScriptedChatModel(reply_fn=agent_reply)
    answer(CORPUS, QUESTION, strategy=tool_agent, llm=llm, callbacks=[tree])
    tools = {rid: r for rid, r in tree.runs.items() if r["kind"] == "tool"}
    assert sorted(r["name"] for r in tools.values()) == ["get_document", "get_document", "search"]
    for rid, run in tools.items():
        assert tree.root_of(rid)["name"] == "longctx.tool_agent"
        assert run["metadata"]["strategy"] == "tool_agent"
        assert run["metadata"]["langgraph_node"] == "tools"
        assert tree.runs[run["parent"]]["name"] == "tools"  # the loop's node, then its graph


def test_the_sse_app_streams_the_tool_events_in_order(tool_agent):
    from examples.sse_app import make_app
    from tests.test_streaming import get_events, serving

    llm = StreamingToolModel(reply_fn=agent_reply, streaming=True)
    with serving(make_app(CORPUS, llm=llm)) as base:
        events = get_events(base, q=QUESTION, strategy=tool_agent)
    names = [name for name, _ in events if name != "token"]
    assert names == [
        *["tool_call", "tool_result"],
        *["tool_call"] * 2,
        *["tool_result"] * 2,
        *["step"] * 7,
        "answer",
    ]
    calls = [data for name, data in events if name == "tool_call"]
    assert [(c["name"], c["arguments"], c["node"]) for c in calls] == [
        ("search", {"query": "capital of France"}, "agent"),
        ("get_document", {"doc_id": "d1"}, "agent"),
        ("get_document", {"doc_id": "d9"}, "agent"),
    ]
    results = [data for name, data in events if name == "tool_result"]
    assert [(r["call_id"], r["status"]) for r in results] == [
        ("call_0", "ok"),
        ("call_0", "ok"),
        ("call_1", "error"),
    ]
    pieces = [c for name, d in events if name == "token" for c in d["tool_call_chunks"]]
    assert [p["name"] for p in pieces if p["name"]] == ["search", "get_document", "get_document"]
    assert events[-1][1]["answer"]["answer"] == "The capital is Paris."
