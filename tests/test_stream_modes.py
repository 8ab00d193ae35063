"""Single runs' events come from LangGraph's own stream (issue #47, item 3): ``messages`` for
tokens and streamed tool-call chunks, ``custom`` for what a node writes, ``updates`` for steps,
rather than guesses from LangChain callbacks. Each test shows what the callback path missed: a
node's custom writes, a step a node writes through a ``Command``, a token of a nested graph's
model call tagged with that graph's node, in the order the graph produced them."""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from longctx import (
    AnswerEvent,
    ProgressEvent,
    StepEvent,
    TokenEvent,
    ToolCallEvent,
    ToolResultEvent,
    stream_answer,
)
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.retrieval.contract import Corpus, Question, Step
from tests.scripted import ScriptedChatModel
from tests.test_streaming import StreamingScriptedChatModel

CORPUS = Corpus.from_texts(["Paris is the capital of France."])
QUESTION = "What is the capital of France?"


class State(TypedDict, total=False):
    """A strategy's state: the question, its steps and its answer."""

    question: Question
    steps: Annotated[list, operator.add]
    answer: str
    raw: str


@dataclass(frozen=True, kw_only=True)
class NoConfig(StrategyConfig):
    """No options."""


def _register(monkeypatch: pytest.MonkeyPatch, name: str, build: Any) -> str:
    monkeypatch.setitem(
        STRATEGIES._entries, name, Strategy(name=name, build_graph=build, config_cls=NoConfig)
    )
    return name


def _work(state: State) -> dict[str, Any]:
    """Writes a progress, a tool call and its result to LangGraph's custom stream, then a step."""
    write = get_stream_writer()
    write({"kind": "progress", "stage": "rerank", "done": 1, "total": 2})
    write({"kind": "tool_call", "name": "search", "arguments": {"q": "x"}, "call_id": "c1"})
    write({"kind": "tool_result", "call_id": "c1", "name": "search", "result": "d1", "chars": 2})
    write({"unrelated": True})  # not an event's form: not sent
    return {"steps": [Step("work")]}


def _route(state: State) -> Command[Any]:
    """A node that writes its step through a ``Command`` (a routing node)."""
    return Command(update={"steps": [Step("route", to="finish")]}, goto="finish")


def _finish(state: State) -> dict[str, Any]:
    return {"answer": "Paris", "raw": "Paris", "steps": [Step("finish")]}


def build_custom(config: Any = None) -> Any:
    """``work -> route -(Command)-> finish``."""
    graph: Any = StateGraph(State, context_schema=StrategyContext)
    graph.add_node("work", _work)
    graph.add_node("route", _route)
    graph.add_node("finish", _finish)
    graph.add_edge(START, "work")
    graph.add_edge("work", "route")
    graph.add_edge("finish", END)
    return graph.compile(name="custom_writes")


def test_a_nodes_custom_writes_become_events_in_order_before_its_step(monkeypatch):
    name = _register(monkeypatch, "custom_writes", build_custom)
    events = list(stream_answer(CORPUS, QUESTION, strategy=name, llm=ScriptedChatModel(replies=[])))
    assert [e.kind for e in events] == [
        *["progress", "tool_call", "tool_result", "step"],  # work's writes, then its step
        *["step", "step", "answer"],
    ]
    progress, call, result = events[:3]
    assert isinstance(progress, ProgressEvent)
    assert (progress.stage, progress.done, progress.total) == ("rerank", 1, 2)
    assert isinstance(call, ToolCallEvent) and (call.name, call.arguments) == ("search", {"q": "x"})
    assert isinstance(result, ToolResultEvent) and (result.call_id, result.status) == ("c1", "ok")


def test_a_step_written_through_a_command_is_sent_live_as_its_node_finishes(monkeypatch):
    name = _register(monkeypatch, "custom_writes", build_custom)
    events = list(stream_answer(CORPUS, QUESTION, strategy=name, llm=ScriptedChatModel(replies=[])))
    steps = [(e.step["node"], e.live) for e in events if isinstance(e, StepEvent)]
    assert steps == [("work", True), ("route", True), ("finish", True)]
    assert isinstance(events[-1], AnswerEvent) and events[-1].answer.answer == "Paris"


class Inner(TypedDict, total=False):
    """The nested graph's state."""

    text: str


def build_nested(config: Any = None) -> Any:
    """``draft`` (a node that runs a graph of its own, ``write``, which calls the model), then
    ``finish``: the model's tokens are ``write``'s, in its namespace."""

    def write(state: Inner, runtime: Any) -> dict[str, Any]:
        return {"text": runtime.context.llm.invoke("Say it.").text}

    inner: Any = StateGraph(Inner, context_schema=StrategyContext)
    inner.add_node("write", write)
    inner.add_edge(START, "write")
    nested = inner.compile(name="inner")

    def draft(state: State, runtime: Any) -> dict[str, Any]:
        text = nested.invoke({}, context=runtime.context)["text"]
        return {"answer": text, "raw": text, "steps": [Step("draft", chars=len(text))]}

    graph: Any = StateGraph(State, context_schema=StrategyContext)
    graph.add_node("draft", draft)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", END)
    return graph.compile(name="nested_tokens")


def test_a_nested_graphs_tokens_are_tagged_with_its_node_then_the_outer_step(monkeypatch):
    name = _register(monkeypatch, "nested_tokens", build_nested)
    llm = StreamingScriptedChatModel(reply_fn=lambda p: "It is Paris.", streaming=True)
    events = list(stream_answer(CORPUS, QUESTION, strategy=name, llm=llm))
    assert [e.kind for e in events] == ["token"] * 3 + ["step", "answer"]
    assert [(e.text, e.node) for e in events[:3]] == [
        ("It", "write"),
        (" is", "write"),
        (" Paris.", "write"),
    ]


def build_quiet(config: Any = None) -> Any:
    """``judge`` (an internal call, tagged ``nostream`` as LangGraph users mark one), then
    ``generate`` (the answer's call)."""

    def judge(state: State, runtime: Any) -> dict[str, Any]:
        verdict = runtime.context.llm.with_config(tags=["nostream"]).invoke("Judge it.").text
        return {"steps": [Step("judge", verdict=verdict)]}

    def generate(state: State, runtime: Any) -> dict[str, Any]:
        text = runtime.context.llm.invoke("Say it.").text
        return {"answer": text, "raw": text, "steps": [Step("generate")]}

    graph: Any = StateGraph(State, context_schema=StrategyContext)
    graph.add_node("judge", judge)
    graph.add_node("generate", generate)
    graph.add_edge(START, "judge")
    graph.add_edge("judge", "generate")
    graph.add_edge("generate", END)
    return graph.compile(name="quiet_judge")


def test_a_call_tagged_nostream_sends_no_tokens_the_answers_call_does(monkeypatch):
    name = _register(monkeypatch, "quiet_judge", build_quiet)
    replies = {"Judge it.": "Relevant, keep it.", "Say it.": "It is Paris."}
    llm = StreamingScriptedChatModel(reply_fn=lambda p: replies[p], streaming=True)
    events = list(stream_answer(CORPUS, QUESTION, strategy=name, llm=llm))
    assert [e.kind if e.kind != "step" else e.step["node"] for e in events] == [
        *["judge", "token", "token", "token", "generate", "answer"]
    ]
    assert "".join(e.text for e in events if isinstance(e, TokenEvent)) == "It is Paris."
    assert events[0].step["verdict"] == "Relevant, keep it."


@pytest.mark.parametrize("checkpoint", [False, True], ids=["astream", "stream"])
def test_a_tool_loop_streams_the_same_events_sync_and_async_in_the_graphs_order(
    monkeypatch, tmp_path, checkpoint
):
    """``checkpoint=True`` runs the graph's sync ``stream`` in a worker thread, the other its
    ``astream``: the same events, a reply's tokens before its calls, its calls before their
    results, the loop's steps as its node finishes."""
    from tests.test_tool_events import AgentConfig, StreamingToolModel, agent_reply, build_agent

    monkeypatch.setitem(
        STRATEGIES._entries,
        "tool_agent",
        Strategy(name="tool_agent", build_graph=build_agent, config_cls=AgentConfig),
    )
    llm = StreamingToolModel(reply_fn=agent_reply, streaming=True)
    events = list(
        stream_answer(
            CORPUS,
            QUESTION,
            strategy="tool_agent",
            llm=llm,
            checkpoint=checkpoint,
            cache_dir=tmp_path,
        )
    )
    collapsed: list[str] = []
    for e in events:  # runs of tokens as one "token"
        if not (e.kind == "token" and collapsed and collapsed[-1] == "token"):
            collapsed.append(e.kind)
    assert collapsed == [
        *["token", "tool_call", "tool_result"],
        *["token", "tool_call", "tool_call", "tool_result", "tool_result"],
        *["token", *["step"] * 7, "answer"],
    ]
    assert all(e.live for e in events if isinstance(e, StepEvent))
    assert events[-1].answer.answer == "The capital is Paris."


def test_a_streamed_run_stopped_by_its_budget_keeps_its_steps_and_sends_them_before_the_answer(
    monkeypatch,
):
    from longctx import Budget
    from tests.scripted_tools import ToolScriptedChatModel
    from tests.test_tool_events import AgentConfig, agent_reply, build_agent

    monkeypatch.setitem(
        STRATEGIES._entries,
        "tool_agent",
        Strategy(name="tool_agent", build_graph=build_agent, config_cls=AgentConfig),
    )
    llm = ToolScriptedChatModel(reply_fn=agent_reply)
    events = list(
        stream_answer(
            CORPUS, QUESTION, strategy="tool_agent", llm=llm, budget=Budget(max_llm_calls=2)
        )
    )
    result = events[-1].answer
    assert result.stopped == "budget"
    assert [e.kind for e in events if e.kind.startswith("tool")] == [
        *["tool_call", "tool_result", "tool_call", "tool_call", "tool_result", "tool_result"]
    ]
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert [e.step for e in steps] == result.steps  # the loop's, kept, then "stopped"
    assert [e.step["node"] for e in steps][:4] == ["agent", "tools", "agent", "tools"]
    assert not any(e.live for e in steps)  # the loop's node never finished
