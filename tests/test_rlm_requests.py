"""RLM's requests against the official code's own (``tests/rlm_official.py`` ran
alexzhang13/rlm @ 72d6940 and, for the ``paper`` preset, @ a30805b, unchanged, against the
recording stub with a scripted root model and wrote the fixture): every request body identical,
field for field (the official client sends ``model`` and ``messages`` only: no answer budget, no
temperature, no ``stream``), in the same order (one ``llm_query_batched``'s requests as a set),
the same final answer and the same number of root turns."""

from __future__ import annotations

import importlib.util
import itertools
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from langchain_openai import ChatOpenAI

from longctx import answer
from longctx.graphs.rlm.engine import Runner, Session, Settings
from longctx.graphs.sandbox.unsafe_inprocess import open_unsafe_inprocess_repl
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Document
from tests import rlm_official as official
from tests.recording_server import RecordingServer, counted_words

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "rlm" / "official_requests.json").read_text(
        encoding="utf-8"
    )
)

#: Fields our bodies may carry that the official ones do not, at the defaults: none. An answer
#: budget or a temperature is sent only when asked (``max_new_tokens``, ``sub_max_new_tokens``,
#: ``temperature``: docs/protocols.md, rlm's request fields).
DECLARED_DIFFERENCES: frozenset[str] = frozenset()

SETTINGS = {
    "default": Settings(max_iterations=official.MAX_ITERATIONS, max_depth=official.MAX_DEPTH),
    "paper": Settings(protocol="final", max_iterations=official.MAX_ITERATIONS),
}


def _model(url: str, name: str) -> ChatOpenAI:
    return ChatOpenAI(model=name, base_url=url, api_key="x", max_retries=0)  # type: ignore[arg-type]


def run_ours(name: str) -> dict[str, Any]:
    """Our engine on the official script, at the recording stub."""
    with RecordingServer(official.reply, streams=False) as server:
        sub = _model(server.url, official.SUB_MODEL) if name == "default" else None
        runner = Runner(
            _model(server.url, official.ROOT_MODEL),
            SETTINGS[name],
            open_unsafe_inprocess_repl,
            sub_llm=sub,
        )
        session = Session(runner, list(official.CONTEXT), official.QUESTION)
        try:
            answer = session.run()
        finally:
            session.close()
        requests = list(server.requests)
    return {
        "requests": official.canonical(requests),
        "answer": answer,
        "turns": sum(1 for r in requests if official.is_root_turn(r)),
    }


@pytest.mark.parametrize("name", ["default", "paper"])
def test_requests_answer_and_turns_equal_the_official_ones(name):
    """Whole bodies, root turns and sub-calls: no field more or less than the official ones (less
    the declared differences, none at the defaults)."""
    ours, theirs = run_ours(name), FIXTURE[name]
    assert len(ours["requests"]) == len(theirs["requests"])
    for i, (a, b) in enumerate(zip(ours["requests"], theirs["requests"], strict=True)):
        assert set(a) - set(b) <= DECLARED_DIFFERENCES, f"request {i}: {sorted(set(a) - set(b))}"
        assert a == b, f"request {i} differs"
    assert ours["answer"] == theirs["answer"]
    assert ours["turns"] == theirs["turns"]


#: The jailed REPL (``graphs/sandbox/jail.py``) where this tree has it: the scaffold must behave
#: the same in it (the same feedback, so the same requests).
HAS_JAIL = importlib.util.find_spec("longctx.graphs.sandbox.jail") is not None
KINDS = [
    "unsafe_inprocess",
    pytest.param("sandbox", marks=pytest.mark.skipif(not HAS_JAIL, reason="no jailed REPL here")),
]


@pytest.mark.parametrize("repl", KINDS)
@pytest.mark.parametrize("name", ["default", "paper"])
def test_answer_sends_the_official_requests_and_counts_what_the_stub_received(
    name, repl, isolated_cache
):
    """The whole strategy (graph, config, run path) on the same script, in each REPL kind: the
    same requests, answer and turns; usage is exactly the requests the stub answered, sub-calls at
    every depth included."""
    options: dict[str, Any] = {"repl": repl, "max_iterations": official.MAX_ITERATIONS}
    if name == "default":
        options |= {"max_depth": official.MAX_DEPTH, "sub_model": official.SUB_MODEL}
    corpus = Corpus([Document(str(i), text) for i, text in enumerate(official.CONTEXT)])
    with RecordingServer(official.reply, streams=False) as server:
        result = answer(
            corpus,
            official.QUESTION,
            strategy="rlm",
            llm=_model(server.url, official.ROOT_MODEL),
            preset="paper" if name == "paper" else None,
            show_progress=False,
            **options,
        )
        requests = list(server.requests)
    theirs = FIXTURE[name]
    for body in requests:  # what the error names before the whole comparison
        assert set(body) == {"model", "messages"} | (set(body) & DECLARED_DIFFERENCES)
    assert official.canonical(requests) == theirs["requests"]
    assert result.answer == theirs["answer"]
    assert sum(1 for r in requests if official.is_root_turn(r)) == theirs["turns"]
    assert result.usage.llm_calls == len(requests)
    assert result.usage.prompt_tokens == sum(len(counted_words(r)) for r in requests)


def test_an_answer_budget_and_a_temperature_are_sent_only_when_asked():
    """``max_new_tokens`` / ``sub_max_new_tokens`` / ``temperature`` set: root turns carry the
    first budget, sub-calls the second, every request the temperature; nothing else is added."""

    def reply(request: dict[str, Any]) -> str:
        if request["messages"][0]["role"] != "system":
            return "sub"
        if any(m["role"] == "assistant" for m in request["messages"]):
            return "```repl\nanswer['content'] = 'x'\nanswer['ready'] = True\n```"
        return "```repl\nprint(llm_query('hi'))\n```"

    settings = Settings(max_new_tokens=300, sub_max_new_tokens=40, temperature=0.5)
    with RecordingServer(reply, streams=False) as server:
        session = Session(
            Runner(_model(server.url, "m"), settings, open_unsafe_inprocess_repl), "ctx", "Q?"
        )
        try:
            assert session.run() == "x"
        finally:
            session.close()
        requests = list(server.requests)
    budgets = [r.pop("max_completion_tokens", None) or r.pop("max_tokens", None) for r in requests]
    assert budgets == [300, 40, 300]
    assert [r.pop("temperature") for r in requests] == [0.5] * 3
    assert all(set(r) == {"model", "messages"} for r in requests)


def test_batched_sub_calls_are_bounded_by_their_concurrency():
    """``llm_query_batched`` sends at most ``batch_concurrency`` requests at once (the first three
    wait for each other, so three are in flight together; never a fourth), replies in prompt
    order."""
    together = threading.Barrier(3)
    waited = itertools.count()

    def reply(request: dict[str, Any]) -> str:
        messages = request["messages"]
        if messages[0]["role"] != "system":
            if next(waited) < 3:
                together.wait(timeout=30)
            return "r:" + messages[-1]["content"]
        if any(m["role"] == "assistant" for m in messages):
            return "```repl\nanswer['content'] = 'x'\nanswer['ready'] = True\n```"
        return "```repl\nprint(llm_query_batched([str(i) for i in range(8)]))\n```"

    with RecordingServer(reply, streams=False) as server:
        runner = Runner(
            _model(server.url, "m"), Settings(batch_concurrency=3), open_unsafe_inprocess_repl
        )
        session = Session(runner, "ctx", "Q?")
        try:
            facts = session.step()
        finally:
            session.close()
        assert server.max_in_flight == 3
    assert facts["stdout"] == [str([f"r:{i}" for i in range(8)]) + "\n"]
