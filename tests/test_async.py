"""The async run path: PAI's judges through ``ainvoke``, ``aanswer`` /
``aanswer_many``, cancellation."""

from __future__ import annotations

import asyncio
import inspect
import json
import math
import threading

import pytest

from longctx import STRATEGIES, Corpus, aanswer, aanswer_many, answer, answer_many
from longctx.graphs.pai import graph as pai_graph
from longctx.graphs.pai.judging import route_judges
from longctx.graphs.prompts import format_documents
from longctx.graphs.runtime import run_batched
from longctx.graphs.runtime.cancel import CancelGuard
from longctx.graphs.runtime.run import arun_strategy, run_strategy
from longctx.retrieval import Chunk, Hit
from longctx.retrieval.contract import as_question
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted import ScriptedChatModel
from tests.scripted_tools import AsyncToolScriptedChatModel, ToolScriptedChatModel
from tests.test_memagent import corpus_of, echo_model, section_in, stream_tokens
from tests.test_pai import CHUNK, calls_of, company_corpus, n_chunks, world

QUESTION = "Which company had the highest revenue?"


def judge_step(result) -> dict:
    return next(s for s in result.steps if s["node"] == "judge")


def flaky_world(prompt: str, tools):
    """``world``, but every verdict for Beta's sub-question is malformed (retried,
    then recorded)."""
    if prompt.startswith("Query: ") and "Beta Ltd" in prompt.split("\n", 1)[0]:
        return "no JSON here"
    return world(prompt, tools)


@pytest.mark.parametrize("reply_fn", [world, flaky_world])
def test_async_judges_give_the_sync_paths_answer_steps_and_usage(reply_fn):
    spec = STRATEGIES.get("pai")
    cfg = spec.make_config(None, chunk_size=CHUNK, concurrency=4, judge_retries=1)
    q = as_question(QUESTION)
    sync_llm, async_llm = (
        ToolScriptedChatModel(reply_fn=reply_fn),
        AsyncToolScriptedChatModel(reply_fn=reply_fn),
    )
    (before,) = run_strategy(spec, cfg, [q], llm=sync_llm, corpus=company_corpus())
    (after,) = asyncio.run(arun_strategy(spec, cfg, [q], llm=async_llm, corpus=company_corpus()))
    assert after.answer == before.answer and after.raw == before.raw
    assert [e.chunk_id for e in after.evidence] == [e.chunk_id for e in before.evidence]
    assert judge_step(after) == judge_step(before)
    assert after.usage.llm_calls == before.usage.llm_calls == len(async_llm.calls)
    if (
        reply_fn is flaky_world
    ):  # retries: every Beta verdict made 1 + judge_retries calls, then was recorded
        malformed = judge_step(after)["malformed"]
        assert malformed and all("no JSON object" in m["error"] for m in malformed)
        assert judge_step(after)["calls"] == 3 * n_chunks(company_corpus()) + len(malformed)


def test_the_judge_node_has_a_sync_and_an_async_twin():
    node = pai_graph.build_graph().builder.nodes["judge"].runnable
    assert node.func is pai_graph.judge and node.afunc is pai_graph.ajudge


def test_async_judges_await_the_model_under_the_concurrency_bound():
    llm = AsyncToolScriptedChatModel(reply_fn=world, delay=0.01)
    result = asyncio.run(
        aanswer(
            company_corpus(), QUESTION, strategy="pai", llm=llm, chunk_size=CHUNK, concurrency=3
        )
    )
    assert llm.max_in_flight == 3  # the judges really overlap, and never beyond the bound
    assert len(calls_of(llm, "Query: ")) == 3 * n_chunks(company_corpus())
    assert result.answer.endswith("Gamma Inc")


def server_world(request: dict) -> str:
    """``world`` over HTTP: the recording server replies with text, so structured replies
    are JSON."""
    reply = world(prompt_of(request), request.get("tools"))
    return (
        reply
        if isinstance(reply, str)
        else json.dumps({"items": reply} if len(reply) > 1 else reply[0])
    )


def test_the_async_fan_out_never_exceeds_concurrency_against_a_real_server(monkeypatch, tmp_path):
    with RecordingServer(server_world, latency=0.02) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        result = asyncio.run(
            aanswer(
                company_corpus(),
                QUESTION,
                strategy="pai",
                llm="openai:rec",
                chunk_size=CHUNK,
                concurrency=4,
                cache_dir=tmp_path,
            )
        )
    judged = 3 * n_chunks(company_corpus())
    assert judge_step(result)["calls"] == judged and not judge_step(result)["malformed"]
    assert server.max_in_flight == 4
    assert len(server.requests) == 1 + judged + 3 + 1


def test_aanswer_under_asyncio_run_again_and_answer_inside_a_running_loop(monkeypatch, tmp_path):
    """Two ``asyncio.run`` calls reuse no connection of a closed loop; the sync API works inside
    a loop."""
    with RecordingServer(server_world) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        kw = {"strategy": "pai", "chunk_size": CHUNK, "cache_dir": tmp_path}
        first = asyncio.run(aanswer(company_corpus(), QUESTION, llm="openai:rec", **kw))
        second = asyncio.run(
            aanswer_many(company_corpus(), [QUESTION, QUESTION], llm="openai:rec", **kw)
        )

        async def inside_a_loop():
            spec = STRATEGIES.get("pai")
            cfg = spec.make_config(None, chunk_size=CHUNK)
            sync_in_loop = answer(
                company_corpus(), QUESTION, llm="openai:rec", **kw
            )  # threads: the loop only waits
            (private,) = run_strategy(
                spec,
                cfg,
                [as_question(QUESTION)],
                llm=ToolScriptedChatModel(reply_fn=world),
                corpus=company_corpus(),
                use_async=True,
            )
            return sync_in_loop, private

        sync_in_loop, private = asyncio.run(inside_a_loop())
    assert {
        first.answer,
        second[0].answer,
        second[1].answer,
        sync_in_loop.answer,
        private.answer,
    } == {first.answer}
    assert first.answer.endswith("Gamma Inc")


@pytest.mark.filterwarnings(
    "ignore:coroutine 'arun_with_retry' was never awaited:RuntimeWarning"
)  # LangGraph's gated tasks never started
def test_cancelling_aanswer_stops_issuing_calls():
    judged, four_judged = [0], asyncio.Event()

    def reply(prompt, tools):
        if prompt.startswith("Query: "):
            judged[0] += 1
            if judged[0] == 4:
                four_judged.set()
        return world(prompt, tools)

    llm = AsyncToolScriptedChatModel(reply_fn=reply, delay=0.05)

    async def main():
        task = asyncio.create_task(
            aanswer(
                company_corpus(), QUESTION, strategy="pai", llm=llm, chunk_size=CHUNK, concurrency=2
            )
        )
        await asyncio.wait_for(four_judged.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        made = len(llm.calls)
        assert [
            t for t in asyncio.all_tasks() if t is not asyncio.current_task()
        ] == []  # nothing of the run is left to call
        return made

    made = asyncio.run(main())
    assert len(llm.calls) == made < 1 + 3 * n_chunks(company_corpus())


def held_echo_model(
    held_call: int, started: threading.Event, go: threading.Event
) -> ScriptedChatModel:
    """MemAgent's echo model whose call number ``held_call`` sets ``started`` and waits
    for ``go``."""
    inner = echo_model()
    calls = [0]

    def reply(prompt: str) -> str:
        calls[0] += 1
        if calls[0] == held_call:
            started.set()
            assert go.wait(60), "the test never let the held call go"
        return inner.reply_fn(prompt)

    return ScriptedChatModel(reply_fn=reply)


class RecordedCancelGuard(CancelGuard):
    """The run's own cancel guard, kept where the test can wait for its cancel event."""

    made: list[CancelGuard] = []

    def __init__(self, cancel: threading.Event) -> None:
        super().__init__(cancel)
        RecordedCancelGuard.made.append(self)


@pytest.mark.parametrize("k", [1, 3])
def test_a_cancelled_memagent_run_keeps_its_checkpoint_and_the_next_call_resumes_it(
    tmp_path, k, monkeypatch
):
    corpus = corpus_of([26000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    started, go = threading.Event(), threading.Event()
    first = held_echo_model(
        k + 1, started, go
    )  # chunks 0..k-1 done, chunk k's call in flight when the run is cancelled
    monkeypatch.setattr(RecordedCancelGuard, "made", [])
    monkeypatch.setattr(run_batched, "CancelGuard", RecordedCancelGuard)

    async def cancel_after_k_chunks():
        task = asyncio.create_task(
            aanswer(
                corpus, "q", strategy="memagent", llm=first, cache_dir=tmp_path, show_progress=False
            )
        )
        assert await asyncio.to_thread(started.wait, 60)
        task.cancel()
        assert await asyncio.to_thread(
            RecordedCancelGuard.made[0].cancel.wait, 60
        )  # the cancellation reached the run
        go.set()  # chunk k's call returns; the next one is refused
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(first.calls)

    made = asyncio.run(cancel_after_k_chunks())  # returns once the loop's worker threads have ended
    assert (
        made == len(first.calls) == k + 1 < n
    )  # nothing issued after chunk k's call, nor after the cancellation returned
    second = echo_model()
    result = asyncio.run(
        aanswer(
            corpus, "q", strategy="memagent", llm=second, cache_dir=tmp_path, show_progress=False
        )
    )
    sections_first = [section_in(c["prompt"]) for c in first.calls]
    sections_second = [section_in(c["prompt"]) for c in second.calls[:-1]]
    assert not set(sections_first) & set(sections_second)  # no completed chunk is called again
    assert "".join(sections_first + sections_second) == format_documents(corpus.documents)
    assert result.steps[-1]["resumed_from"] == made
    assert result.usage.run_llm_calls == n + 1 and result.usage.llm_calls == len(
        second.calls
    )  # the cancelled part's usage survives, apart
    assert [s["chunk"] for s in result.steps if s["node"] == "update_memory"] == list(range(n))


def test_answer_drives_pai_async_when_the_model_has_an_async_client(monkeypatch, tmp_path):
    """PAI declares an async fan-out: ``answer()`` awaits the judges over an async client, and
    keeps the threads (sync twins) for a model that only has a sync interface."""

    def no_sync_twin(task, runtime):  # the signature LangGraph inspects to inject the runtime
        raise AssertionError("the threaded judge ran")

    async def no_async_twin(task, runtime):
        raise AssertionError("the async judge ran")

    with RecordingServer(server_world) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        with monkeypatch.context() as m:
            m.setattr(pai_graph, "judge", no_sync_twin)
            remote = answer(
                company_corpus(),
                QUESTION,
                strategy="pai",
                llm="openai:rec",
                chunk_size=CHUNK,
                cache_dir=tmp_path,
            )
    monkeypatch.setattr(pai_graph, "ajudge", no_async_twin)
    local = answer(
        company_corpus(),
        QUESTION,
        strategy="pai",
        llm=ToolScriptedChatModel(reply_fn=world),
        chunk_size=CHUNK,
    )
    assert remote.answer == local.answer and remote.answer.endswith("Gamma Inc")
    assert (
        STRATEGIES.get("pai").run_mode.async_fan_out
        and not STRATEGIES.get("rag").run_mode.async_fan_out
    )


def test_judge_tasks_are_one_per_chunk_with_every_pair():
    chunks = [
        Chunk(
            chunk_id=i,
            doc_id=f"d{i}",
            doc_index=i,
            title=f"T{i}",
            text=f"text {i}",
            position=0,
            num_tokens=2,
        )
        for i in range(3)
    ]
    hits = [Hit(chunk=c, score=1.0, rank=r) for r, c in enumerate(chunks)]
    state = {
        "sub_questions": [{"text": "A?"}, {"text": "B?"}],
        "candidates": [hits, hits[1:]],
        "tool_mode": "tools",
    }
    sends = route_judges(state)
    assert [s.arg["hit"].chunk.chunk_id for s in sends] == [0, 1, 2]
    assert [[p["sq"] for p in s.arg["pairs"]] for s in sends] == [[0], [0, 1], [0, 1]]


def test_a_runs_connection_pool_is_its_own_and_closed_when_the_run_ends(monkeypatch):
    from longctx.agents.chat_models import make_chat_model
    from longctx.graphs.calls.llm import run_client

    with RecordingServer() as server:
        llm = make_chat_model("openai:rec", base_url=server.url)

        async def one_run():
            async with run_client(llm) as run_llm:
                assert run_llm is not llm and run_llm.root_async_client is not llm.root_async_client
                await run_llm.ainvoke("Hi")
                return run_llm.root_async_client._client

        pools = [
            asyncio.run(one_run()),
            asyncio.run(one_run()),
        ]  # two loops, two pools, both closed
    assert pools[0] is not pools[1] and all(p.is_closed for p in pools)
    assert len(server.requests) == 2


def test_answer_and_answer_many_and_their_async_twins_share_one_default_strategy_and_parameter_list(
    tmp_path,
):
    corpus, q = Corpus.from_texts(["The vault code is 7421."]), "What is the vault code?"
    many = answer_many(corpus, [q], llm=ScriptedChatModel(replies=["7421"]), cache_dir=tmp_path)
    amany = asyncio.run(
        aanswer_many(corpus, [q], llm=ScriptedChatModel(replies=["7421"]), cache_dir=tmp_path)
    )
    one = asyncio.run(
        aanswer(corpus, q, llm=ScriptedChatModel(replies=["7421"]), cache_dir=tmp_path)
    )
    assert many[0].strategy == amany[0].strategy == one.strategy == "rag" and one.answer == "7421"
    for sync, twin in ((answer, aanswer), (answer_many, aanswer_many)):
        assert inspect.signature(twin) == inspect.signature(sync) and inspect.iscoroutinefunction(
            twin
        )
    with pytest.raises(
        TypeError, match="Unknown option"
    ):  # answer() has no concurrency parameter: a config field rag lacks
        asyncio.run(
            aanswer(
                corpus,
                q,
                llm=ScriptedChatModel(replies=["7421"]),
                cache_dir=tmp_path,
                concurrency=2,
            )
        )
