"""Checkpointed single runs (issue #47, item 2): a tool loop killed with SIGKILL at turn 4 of 6
resumes at turn 5, sending no request the stub had already answered, and answers as an
uninterrupted run.

The loop is a plug-in strategy of the test fixtures (:mod:`tests.loop_strategy`: ``ToolLoop`` over
two deterministic tools) run in a child process with ``checkpoint=True`` against the recording
stub, which scripts its tool calls. The stub holds the 5th request (turn 5: turns 1-4 answered and
their tools run) and sets an event; the test then kills the child, and runs it again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from longctx.graphs import STRATEGIES
from longctx.graphs.metering.budget import Budget
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.run_checkpoint import single_folder
from longctx.graphs.runtime.run_config import with_budget
from longctx.graphs.runtime.run_single import run_single
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.loop_strategy import NAME, TURNS, LoopConfig, build_graph, scripted_reply
from tests.recording_server import RecordingServer
from tests.scripted_tools import ToolScriptedChatModel, named_call

ROOT = Path(__file__).resolve().parents[1]


class HoldingStub:
    """The scripted loop's replies; with ``hold_at`` set, that request (1-based) is held unanswered
    and ``held`` is set. ``answered``: the body of every request answered."""

    def __init__(self) -> None:
        self.hold_at: int | None = None
        self.seen = 0
        self.answered: list[str] = []
        self.held = threading.Event()
        self.gate = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, request: dict[str, Any]) -> str | dict[str, Any]:
        with self.lock:
            self.seen += 1
            hold = self.seen == self.hold_at
        if hold:
            self.held.set()
            self.gate.wait(120)
            return "held: its caller was killed"  # never counted as answered
        with self.lock:
            self.answered.append(json.dumps(request, sort_keys=True))
        return scripted_reply(request)


def child(
    tmp_path: Path, name: str, url: str, cache: Path, *, use_async: bool = False
) -> subprocess.Popen[bytes]:
    """``python -m tests.loop_strategy`` answering one question into ``<name>.out.json``."""
    job = {
        "async": use_async,
        "url": url,
        "question": "Sum the cities.",
        "cache": str(cache),
        "out": str(tmp_path / f"{name}.out.json"),
    }
    (tmp_path / f"{name}.json").write_text(json.dumps(job))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    with open(tmp_path / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.loop_strategy", str(tmp_path / f"{name}.json")],
            env=env,
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def finished(tmp_path: Path, name: str, proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """The child's answer once it exits 0 (its log in the failure otherwise)."""
    rc = proc.wait(120)
    assert rc == 0, (tmp_path / f"{name}.log").read_text()[-3000:]
    answer: dict[str, Any] = json.loads((tmp_path / f"{name}.out.json").read_text())
    return answer


def test_a_tool_loop_killed_at_turn_4_of_6_resumes_at_turn_5_sending_no_answered_request(tmp_path):
    stub = HoldingStub()
    with RecordingServer(stub) as server:
        whole = finished(tmp_path, "whole", child(tmp_path, "whole", server.url, tmp_path / "a"))
        reference = list(stub.answered)
        assert len(reference) == TURNS and whole["usage"]["llm_calls"] == TURNS

        stub.answered, stub.seen, stub.hold_at = [], 0, 5
        cache = tmp_path / "b"
        killed = child(tmp_path, "killed", server.url, cache)
        if not stub.held.wait(120):
            killed.kill()
            pytest.fail((tmp_path / "killed.log").read_text()[-3000:])
        killed.send_signal(signal.SIGKILL)
        assert killed.wait(60) == -signal.SIGKILL
        answered_before = list(stub.answered)
        assert answered_before == reference[:4]  # turns 1-4 answered; turn 5's request held
        assert (cache / NAME).is_dir()  # the checkpoint is kept

        stub.hold_at, stub.answered = None, []
        stub.gate.set()
        # resumed through the async twin (aanswer: the checkpointed run in a worker thread)
        again = child(tmp_path, "resumed", server.url, cache, use_async=True)
        resumed = finished(tmp_path, "resumed", again)

    # it resumed at turn 5: the only requests sent are turns 5 and 6, as the whole run sent them
    # (turn 4's tool result and every earlier turn in them), and none was answered before
    assert stub.answered == reference[4:]
    assert not set(stub.answered) & set(answered_before)
    assert resumed["answer"] == whole["answer"] and resumed["answer"].startswith("The total is")
    assert [s["node"] for s in resumed["steps"]] == [s["node"] for s in whole["steps"]]
    usage = resumed["usage"]  # this call's two calls; the four paid before as earlier_*
    assert (usage["llm_calls"], usage["earlier_llm_calls"], usage["run_llm_calls"]) == (2, 4, 6)
    assert usage["run_prompt_tokens"] == whole["usage"]["prompt_tokens"]
    assert not list((cache / NAME).iterdir())  # finished: its checkpoint deleted


def test_the_single_run_key_holds_the_question_config_and_every_request_setting(tmp_path):

    spec, corpus = STRATEGIES.get("rag"), Corpus.from_texts(["one", "two"])

    def folder(question: str = "q?", turns: int = 6, **model: Any) -> Any:
        model.setdefault("api_key", "k")
        llm = ChatOpenAI(model="m", base_url="http://127.0.0.1:9/v1", **model)
        context = StrategyContext(
            llm=llm, config=LoopConfig(max_turns=turns), corpus=corpus, cache_dir=tmp_path
        )
        return single_folder(spec, context, Question(text=question))

    base = folder()
    assert base == folder() and base.parent == tmp_path / "rag"
    others = [
        folder("other?"),
        folder(turns=7),
        folder(temperature=0.7),
        folder(seed=3),
        folder(extra_body={"top_k": 5}),
        folder(default_headers={"X-Route": "b"}),
    ]
    assert len({base, *others}) == 1 + len(others)
    assert folder(api_key="rotated") == base  # a credential is not a request setting


def test_a_run_stopped_by_its_budget_keeps_its_checkpoint_and_a_larger_budget_resumes_it(tmp_path):
    """In process, with the scripted tool model: 3 calls allowed of 6, stopped; rerun without a
    budget, 3 more calls (turns 4-6), 3 earlier, the whole run's answer; then the folder is gone."""
    spec = Strategy(name=NAME, build_graph=build_graph, config_cls=LoopConfig)
    calls: list[int] = []

    def reply(prompt: str, tools: Any) -> Any:
        calls.append(1)
        turn = len(calls)  # the runs share this list: the resumed run's first call is turn 4
        if turn >= TURNS:
            return f"answer after {turn - 1} tool results"
        if turn % 2:
            return [named_call("population", city="Arden")]
        return [named_call("add", a=turn, b=1)]

    llm = ToolScriptedChatModel(reply_fn=reply)
    context = StrategyContext(
        llm=llm, config=LoopConfig(), corpus=Corpus.from_texts(["x"]), cache_dir=tmp_path
    )
    question = Question(text="Sum the cities.")
    graph = build_graph(LoopConfig())
    callbacks = with_budget(None, Budget(max_llm_calls=3), llm)
    stopped = run_single(spec, graph, context, question, callbacks, {}, checkpoint=True)
    assert stopped.stopped == "budget" and len(calls) == 3
    assert single_folder(spec, context, question).is_dir()
    done = run_single(spec, graph, context, question, None, {}, checkpoint=True)
    assert len(calls) == TURNS and done.stopped is None
    assert (done.usage.llm_calls, done.usage.earlier_llm_calls) == (3, 3)
    assert [s.node for s in done.steps].count("agent") == TURNS  # the stopped run's turns kept
    assert done.answer == f"answer after {TURNS - 1} tool results"
    assert not single_folder(spec, context, question).exists()


def _six_calls(cfg: Any, corpus: Any, questions: Any, llm: Any) -> Any:
    """A plan of exactly :data:`TURNS` calls a question (the test loop's scripted run)."""
    from longctx.graphs.metering.costs import per_question_plan

    return per_question_plan(
        PLANNED,
        questions,
        calls=TURNS,
        max_calls=TURNS,
        prompt_tokens=0,
        max_prompt_tokens=None,
        completion_tokens=0,
        formula="6 turns",
    )


#: The test loop registered with a cost plan, so a budget is checked against it up front.
PLANNED = "test_loop_planned"


def test_a_budget_plan_counts_only_what_a_single_runs_checkpoint_has_not_paid(tmp_path):
    """6 calls planned, 3 paid by a run its budget stopped: ``answer(checkpoint=True)`` with a
    3-call budget is not refused up front (the plan less the 3 its checkpoint holds) and finishes
    the run."""
    if PLANNED not in STRATEGIES:
        STRATEGIES.register(PLANNED, build_graph, config_cls=LoopConfig, cost_plan=_six_calls)
    spec = STRATEGIES.get(PLANNED)
    calls: list[int] = []

    def reply(prompt: str, tools: Any) -> Any:
        calls.append(1)
        turn = len(calls)
        if turn >= TURNS:
            return f"answer after {turn - 1} tool results"
        return (
            [named_call("population", city="Arden")]
            if turn % 2
            else [named_call("add", a=turn, b=1)]
        )

    from longctx import answer, estimate
    from longctx.graphs.metering.budget import BudgetExceeded

    llm = ToolScriptedChatModel(reply_fn=reply)
    corpus, question = Corpus.from_texts(["x"]), Question(text="Sum the cities.")
    with pytest.raises(BudgetExceeded, match="6 calls > 3"):  # nothing paid yet: refused up front
        answer(
            corpus,
            question,
            strategy=PLANNED,
            llm=llm,
            cache_dir=tmp_path,
            checkpoint=True,
            budget=Budget(max_llm_calls=3),
        )
    assert calls == []
    cfg = spec.make_config(None)  # as answer() makes it: the checkpoint's key holds the config
    context = StrategyContext(llm=llm, config=cfg, corpus=corpus, cache_dir=tmp_path)
    callbacks = with_budget(None, Budget(max_llm_calls=3), llm)
    stopped = run_single(spec, build_graph(cfg), context, question, callbacks, {}, checkpoint=True)
    assert stopped.stopped == "budget" and len(calls) == 3
    assert estimate(corpus, question, strategy=PLANNED, llm=llm, cache_dir=tmp_path).calls == TURNS
    plan = estimate(
        corpus, question, strategy=PLANNED, llm=llm, cache_dir=tmp_path, checkpoint=True
    )
    assert (plan.calls, plan.details["checkpointed_calls"]) == (TURNS - 3, 3)
    done = answer(
        corpus,
        question,
        strategy=PLANNED,
        llm=llm,
        cache_dir=tmp_path,
        checkpoint=True,
        budget=Budget(max_llm_calls=3),
    )
    assert done.stopped is None and len(calls) == TURNS
    assert (done.usage.llm_calls, done.usage.earlier_llm_calls) == (3, 3)
