"""What a resumed checkpoint may rebuild (issue #47, item 2's follow-up): our checkpointers read
back only the types named in :data:`longctx.memory.checkpoints.CHECKPOINT_TYPES` (and the types a
plug-in's state declares), so a resume logs no "Deserializing unregistered type" warning and works
under ``LANGGRAPH_STRICT_MSGPACK=true``.

Each checkpointing run path is stopped part-way and resumed with LangGraph's serde event listener
on, in the default and the strict mode; a type that reaches a checkpoint unlisted (a state key typed
``Any`` holding a new class) shows up here as a ``msgpack_blocked`` event.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, TypedDict

import pytest
from langgraph._internal import _serde as graph_serde
from langgraph.checkpoint.serde import _msgpack
from langgraph.checkpoint.serde.event_hooks import register_serde_event_listener
from langgraph.graph import END, START, StateGraph

from longctx import answer
from longctx.graphs import STRATEGIES
from longctx.graphs.metering.budget import Budget
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.run_config import with_budget
from longctx.graphs.runtime.run_single import run_single
from longctx.memory.checkpoints import (
    CHECKPOINT_TYPES,
    checkpoint_serde,
    declared_types,
    open_checkpointer,
    with_state_types,
)
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.loop_strategy import NAME, TURNS, LoopConfig, build_graph
from tests.scripted import ScriptedChatModel
from tests.scripted_tools import ToolScriptedChatModel, named_call
from tests.test_memagent import Crash, corpus_of, crashing_model, echo_model


@pytest.fixture(params=["default", "strict"])
def serde_events(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[list]:
    """LangGraph's allow-list events of the test (``LANGGRAPH_STRICT_MSGPACK`` off, then on: it is
    read once at import, so the flag it set is patched)."""
    strict = request.param == "strict"
    monkeypatch.setattr(_msgpack, "STRICT_MSGPACK_ENABLED", strict)
    monkeypatch.setattr(graph_serde, "STRICT_MSGPACK_ENABLED", strict)
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(events.append)
    try:
        yield events
    finally:
        unregister()


def test_a_single_runs_checkpoint_resumes_reading_only_allowed_types(tmp_path, serde_events):
    """The test tool loop (a plug-in), stopped by its budget after 3 of 6 turns and resumed."""
    spec = Strategy(name=NAME, build_graph=build_graph, config_cls=LoopConfig)
    calls: list[int] = []

    def reply(prompt: str, tools: Any) -> Any:
        calls.append(1)
        if len(calls) >= TURNS:
            return "the total"
        return [named_call("population", city="Arden")]

    llm = ToolScriptedChatModel(reply_fn=reply)
    context = StrategyContext(
        llm=llm, config=LoopConfig(), corpus=Corpus.from_texts(["x"]), cache_dir=tmp_path
    )
    question, graph = Question(text="Sum the cities."), build_graph(LoopConfig())
    callbacks = with_budget(None, Budget(max_llm_calls=3), llm)
    stopped = run_single(spec, graph, context, question, callbacks, {}, checkpoint=True)
    assert stopped.stopped == "budget"
    done = run_single(spec, graph, context, question, None, {}, checkpoint=True)
    assert (done.answer, done.usage.earlier_llm_calls) == ("the total", 3)
    assert serde_events == []


def _pai_reply(prompt: str) -> str:
    asked = "sub-question" in prompt.lower() or "decompos" in prompt.lower()
    return "1. What is the code?\n2. Which fact holds it?" if asked else "yes"


def test_pai_resumed_after_a_budget_stop_reads_only_allowed_types(isolated_cache, serde_events):
    """PAI stopped among its judges: the checkpoint holds hits, chunks and ``Send`` tasks."""
    corpus = Corpus.from_texts([f"Fact {i}: the code is {i}. " * 20 for i in range(6)])
    model = ScriptedChatModel(reply_fn=_pai_reply)
    budget = Budget(max_llm_calls=8)
    first = answer(
        corpus, "What is the code?", strategy="pai", llm=model, checkpoint=True, budget=budget
    )
    assert first.stopped == "budget"
    done = answer(corpus, "What is the code?", strategy="pai", llm=model, checkpoint=True)
    assert serde_events == []
    # the checkpoint was read: its 8 calls are not sent again, the refused judges are
    assert done.usage.earlier_llm_calls == 8 and done.stopped is None
    assert len(model.calls) == 8 + done.usage.llm_calls


def test_memagents_batched_run_resumes_reading_only_allowed_types(isolated_cache, serde_events):
    """MemAgent crashed at its 4th call and resumed: its state holds plain values only."""
    corpus = corpus_of([16000])
    with pytest.raises(Crash):
        answer(corpus, "q", strategy="memagent", llm=crashing_model(crash_at=4))
    done = answer(corpus, "q", strategy="memagent", llm=echo_model())
    assert done.steps[-1]["resumed_from"] == 3
    assert serde_events == []


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_type_a_built_in_state_declares_is_listed(name):
    """A type added to a built-in state (or to a ``Send`` task) must join the list (LangGraph's own
    safe types, e.g. the messages of a tool loop's state, are read back anyway)."""
    spec = STRATEGIES.get(name)
    graph = spec.build_graph(spec.make_config(None))
    assert declared_types(graph) <= CHECKPOINT_TYPES | _msgpack.SAFE_MSGPACK_TYPES


@dataclasses.dataclass
class Unlisted:
    """A class no state declares."""

    value: int


def test_a_type_no_state_declares_is_blocked_even_outside_strict_mode():
    """The list is what is read back, whatever ``LANGGRAPH_STRICT_MSGPACK`` says: an unlisted class
    comes back as its fields, with a ``msgpack_blocked`` event (what the tests above catch)."""
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(events.append)
    try:
        serde = checkpoint_serde()
        back = serde.loads_typed(serde.dumps_typed(Unlisted(3)))
        listed = serde.loads_typed(serde.dumps_typed(Question(text="q")))
    finally:
        unregister()
    assert back == {"value": 3} and listed == Question(text="q")
    assert [(e["kind"], e["name"]) for e in events] == [("msgpack_blocked", "Unlisted")]


@dataclasses.dataclass
class PluginFact:
    """A class a plug-in's state declares."""

    text: str


class PluginState(TypedDict, total=False):
    """A plug-in's state holding its own class."""

    facts: list[PluginFact]


def test_a_class_a_plugin_state_declares_is_read_back(tmp_path):
    """Not in :data:`CHECKPOINT_TYPES`, yet declared by the graph's state: read back as itself."""
    graph_builder = StateGraph(PluginState)
    graph_builder.add_node("find", lambda state: {"facts": [PluginFact("x")]})
    graph_builder.add_edge(START, "find")
    graph_builder.add_edge("find", END)
    config: Any = {"configurable": {"thread_id": "t"}}
    saver = open_checkpointer(tmp_path / "c.sqlite")
    graph_builder.compile(checkpointer=saver).invoke({"facts": []}, config)
    saver.conn.close()
    events: list[dict[str, Any]] = []
    unregister = register_serde_event_listener(events.append)
    try:
        saver = open_checkpointer(tmp_path / "c.sqlite")
        graph = graph_builder.compile(checkpointer=saver)
        read = graph.copy(update={"checkpointer": with_state_types(saver, graph)}).get_state(config)
        saver.conn.close()
    finally:
        unregister()
    assert ("tests.test_checkpoint_serde", "PluginFact") in declared_types(graph)
    assert read.values["facts"] == [PluginFact("x")] and events == []
