"""A budget stop inside one of Self-Route's legs keeps the steps the leg made before it (issue #47):
the answer is marked stopped and ends with what it has, as a single-graph strategy's does
(:mod:`longctx.graphs.metering.budget_stop`), at the scripted model and the recording stub."""

from __future__ import annotations

import asyncio
import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from longctx import Budget, aanswer, answer, make_chat_model
from longctx.graphs.metering.plan_check import BudgetMayStopWarning
from longctx.graphs.plugin.api import (
    STRATEGIES,
    Calls,
    CostPlan,
    Costs,
    ExpectedCost,
    SingleRun,
    StrategyConfig,
    StrategyCosts,
)
from longctx.retrieval import Corpus
from tests.corpus_tools import DOCS
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel
from tests.test_budget_stop import KEPT, _stub_agent, build_graph, last_tool_result
from tests.test_self_route import QUESTION, memagent_model

#: Self-Route's own steps up to a declined question's fallback.
ROUTED = [("retrieve", None), ("check_answer", None), ("measure_context", None)]


def _nodes(result) -> list[tuple[str, str | None]]:
    return [(s["node"], s.get("leg")) for s in result.steps if s["node"] != "generate"]


def _answer(corpus, llm, budget: Budget, *, use_async: bool = False, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetMayStopWarning)  # the plan's most passes the budget
        if use_async:
            return asyncio.run(
                aanswer(corpus, QUESTION, strategy="self_route", llm=llm, budget=budget, **options)
            )
        return answer(corpus, QUESTION, strategy="self_route", llm=llm, budget=budget, **options)


def test_a_stop_in_the_memagent_leg_keeps_the_chunks_it_read(planted_corpus, isolated_cache):
    """RAG declines (call 1), memagent reads two chunks (calls 2 and 3) and is refused the third:
    the two ``update_memory`` steps stay, under the leg's ``fallback`` head, before ``stopped``."""
    llm = memagent_model()
    options = {"chunk_tokens": 1000, "resume": False}
    result = _answer(
        planted_corpus, llm, Budget(max_llm_calls=3), fallback="memagent", fallback_options=options
    )
    assert len(llm.calls) == 3 and result.stopped == "budget" and result.answer == ""
    memagent = [("fallback", "memagent"), ("update_memory", "memagent")]
    assert _nodes(result)[:5] == [*ROUTED, *memagent]
    assert _nodes(result)[5:] == [*memagent[1:], ("final_answer", "memagent"), ("stopped", None)]
    assert "memagent fallback" in result.steps[-1]["reason"]
    assert result.usage.llm_calls == 3  # the leg's two calls counted with RAG's


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_stop_in_the_full_context_leg_keeps_its_prompt_step(planted_corpus, use_async):
    """RAG declines (call 1); the full-context leg builds its prompt and is refused its call: its
    ``build_prompt`` step (the truncation it made) stays, marked with the leg."""
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    result = _answer(
        planted_corpus,
        llm,
        Budget(max_llm_calls=1),
        use_async=use_async,
        fallback="full_context",
    )
    assert len(llm.calls) == 1 and result.stopped == "budget" and result.answer == ""
    leg = [("fallback", "full_context"), ("build_prompt", "full_context")]
    assert _nodes(result) == [*ROUTED, *leg, ("stopped", None)]
    assert next(s for s in result.steps if s["node"] == "build_prompt")["truncated"]
    assert "full_context fallback" in result.steps[-1]["reason"]
    assert result.usage.llm_calls == 1


def _agent_costs(cfg: Any, shape: Any, questions: Any, *, llm: Any = None, window: Any = None):
    """The test agent's plan: one planning call and up to four tool turns a question."""
    n = max(1, len(questions))
    bounds = CostPlan(
        strategy="agent_leg",
        questions=n,
        calls=n,
        max_calls=5 * n,
        prompt_tokens=10 * n,
        max_prompt_tokens=10_000 * n,
        completion_tokens=32 * n,
        formula="a planning call + up to 4 tool turns",
    )
    return Costs(bounds, ExpectedCost(Calls(4, 400, 64)))


def _declining_agent(request: dict) -> Any:
    """RAG's leg declines; the agent leg plans, searches, reads d1 and answers."""
    first = request["messages"][0]["content"]
    if isinstance(first, str) and first.startswith("Please read the following retrieved text"):
        return "unanswerable"
    return _stub_agent(request)


@contextlib.contextmanager
def _agent_leg() -> Iterator[RecordingServer]:
    """The tool-loop agent of :mod:`tests.test_budget_stop` (with its final node) registered as
    ``agent_leg`` for the block, and a stub where RAG's leg declines."""
    spec = {"run_mode": SingleRun(on_stop=last_tool_result), "costs": StrategyCosts(_agent_costs)}
    with (
        STRATEGIES.scoped("agent_leg", build_graph, config_cls=StrategyConfig, **spec),
        RecordingServer(_declining_agent) as server,
    ):
        yield server


def _ask_agent_leg(server: RecordingServer, budget: Budget, *, use_async: bool = False, **run):
    """Self-Route over :data:`DOCS` with the agent as the fallback (the corpus exceeds the
    100-token window)."""
    llm = make_chat_model("openai:rec", base_url=server.url, api_key="x", max_retries=0)
    options = {"fallback": "agent_leg", "context_window": 100, "max_new_tokens": 16, **run}
    corpus, question = Corpus.from_texts(list(DOCS.values())), "What is the capital of France?"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the plan's most passes the budget
        ask = aanswer if use_async else answer
        reply = ask(corpus, question, strategy="self_route", llm=llm, budget=budget, **options)
        return asyncio.run(reply) if use_async else reply


def test_a_checkpointed_run_stopped_in_its_leg_resumes_inside_the_leg(isolated_cache):
    """Rerun with a larger budget, the stopped run resumes at the leg's refused turn: RAG's call
    and turns 1-2 are not sent again (on the first version of the kept stop, the leg's graph
    finished its run: the rerun sent 5 requests and answered nothing)."""
    with _agent_leg() as server:
        first = _ask_agent_leg(server, Budget(max_llm_calls=4), checkpoint=True)
        assert first.stopped == "budget" and len(server.requests) == 4
        server.requests.clear()
        again = _ask_agent_leg(server, Budget(max_llm_calls=10), checkpoint=True)
        assert len(server.requests) == 1  # turn 3 only
    assert again.stopped is None and again.answer == "Paris"
    assert (again.usage.llm_calls, again.usage.earlier_llm_calls) == (1, 4)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_stop_in_a_tool_loop_leg_keeps_its_turns_and_finishes_with_its_final_node(use_async):
    """A tool-loop strategy as the fallback (:mod:`tests.test_budget_stop`'s agent, with its final
    node): at 4 calls (RAG's, the plan's, turns 1 and 2) turn 3 is refused; the answer keeps the
    leg's turns and is the leg's final node's (turn 2's tool result); the stub got 4 requests."""
    with _agent_leg() as server:
        whole = _ask_agent_leg(server, Budget(max_llm_calls=10), use_async=use_async)
        assert len(server.requests) == 5 and whole.stopped is None and whole.answer == "Paris"
        leg = [(node, "agent_leg") for node, _ in [*KEPT, ("agent", None)]]
        assert _nodes(whole) == [*ROUTED, ("fallback", "agent_leg"), *leg]
        server.requests.clear()
        result = _ask_agent_leg(server, Budget(max_llm_calls=4), use_async=use_async)
        assert len(server.requests) == 4  # nothing after the stop
    assert result.stopped == "budget" and result.answer == DOCS["d1"]
    leg = [(node, "agent_leg") for node, _ in KEPT]
    assert _nodes(result) == [
        *ROUTED,
        ("fallback", "agent_leg"),
        *leg,
        ("on_stop", "agent_leg"),
        ("stopped", None),
    ]
    assert [s.get("tool") for s in result.steps if s["node"] == "tools"] == [
        "search",
        "get_document",
    ]
    assert result.steps[-1]["reason"].startswith(
        "budget reached in the agent_leg fallback: 4 calls"
    )
    assert result.usage.llm_calls == 4


def test_a_streamed_run_stopped_in_its_leg_answers_as_the_plain_call(planted_corpus):
    """Listened to (``stream_answer``: the stream's extra modes, every subgraph's chunks), a run
    stopped inside its full-context leg keeps the same steps and answer as ``answer()``, and its
    step events are sent before the answer."""
    from longctx import AnswerEvent, StepEvent, stream_answer

    def run(streamed: bool):
        llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
        options = {"strategy": "self_route", "llm": llm, "budget": Budget(max_llm_calls=1)}
        options["fallback"] = "full_context"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", BudgetMayStopWarning)
            if not streamed:
                return answer(planted_corpus, QUESTION, **options), []
            events = list(stream_answer(planted_corpus, QUESTION, **options))
        assert isinstance(events[-1], AnswerEvent)
        return events[-1].answer, [e.step["node"] for e in events if isinstance(e, StepEvent)]

    plain, _ = run(False)
    streamed, step_events = run(True)
    assert streamed.stopped == plain.stopped == "budget"
    assert _nodes(streamed) == _nodes(plain) and streamed.answer == plain.answer
    assert "retrieve" in step_events
