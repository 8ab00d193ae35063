"""Streaming answers: ``astream_answer`` / ``stream_answer`` events, through a real FastAPI app with
server-sent events (``examples/sse_app.py`` under uvicorn on 127.0.0.1, read by an httpx client)."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import math
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import uvicorn
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from examples.sse_app import make_app
from longctx import (
    AnswerEvent,
    ProgressEvent,
    StepEvent,
    TokenEvent,
    Workspace,
    aanswer,
    answer,
    astream_answer,
    stream_answer,
)
from longctx.agents.chat_models import ChatModelError
from longctx.graphs.runtime import run_batched
from longctx.retrieval.contract import Corpus
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel
from tests.test_async import RecordedCancelGuard
from tests.test_memagent import corpus_of, echo_model, section_in, stream_tokens
from tests.test_pai import CHUNK, company_corpus, world
from tests.test_pai import model as pai_model
from tests.test_structured import SCHEMA, scripted, small_corpus

FACTS = Corpus.from_texts(
    ["Paris is the capital of France.", "Berlin is the capital of Germany.", "Rome is in Italy."]
)


class StartedServer(uvicorn.Server):
    """uvicorn's server, setting ``started_event`` once it listens (or gave up starting)."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.started_event = threading.Event()

    async def startup(self, sockets: Any = None) -> None:
        try:
            await super().startup(sockets=sockets)
        finally:
            self.started_event.set()


@contextlib.contextmanager
def serving(app: Any, disconnected: threading.Event | None = None) -> Iterator[str]:
    """``app`` under uvicorn on a free loopback port, in a thread; ``disconnected`` is set when a
    client's disconnect reaches the app."""

    async def watched(scope: dict, receive: Any, send: Any) -> None:
        async def recv() -> dict:
            message = await receive()
            if message["type"] == "http.disconnect" and disconnected is not None:
                disconnected.set()
            return message

        await app(scope, recv, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = StartedServer(uvicorn.Config(watched, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    assert server.started_event.wait(60), "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def sse_events(response: httpx.Response) -> Iterator[tuple[str, dict]]:
    """``(event name, JSON data)`` of each server-sent event of ``response``."""
    name, data = "message", []
    for line in response.iter_lines():
        if line.startswith(":"):
            continue
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].strip())


def get_events(base: str, **params: str) -> list[tuple[str, dict]]:
    with (
        httpx.Client(base_url=base, timeout=30) as client,
        client.stream("GET", "/answer", params=params) as response,
    ):
        assert response.status_code == 200 and response.headers["content-type"].startswith(
            "text/event-stream"
        )
        return list(sse_events(response))


def test_rag_steps_arrive_over_sse_in_order_then_the_answer(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Paris")
    with serving(make_app(FACTS, llm=llm, cache_dir=tmp_path, show_progress=False)) as base:
        events = get_events(base, q="What is the capital of France?", strategy="rag")
    names = [name for name, _ in events]
    assert names == ["step", "step", "step", "answer"]
    assert [data["step"]["node"] for _, data in events[:-1]] == [
        "retrieve",
        "build_prompt",
        "generate",
    ]
    assert all(data["live"] for _, data in events[:-1])
    final = events[-1][1]["answer"]
    assert final["answer"] == "Paris" and final["steps"] == [
        data["step"] for _, data in events[:-1]
    ]
    # the same answer and usage as aanswer's
    direct = asyncio.run(
        aanswer(
            FACTS,
            "What is the capital of France?",
            strategy="rag",
            llm=ScriptedChatModel(reply_fn=lambda p: "Paris"),
            cache_dir=tmp_path,
        )
    )
    assert final["steps"] == direct.to_dict()["steps"]
    assert {k: v for k, v in final["usage"].items() if "seconds" not in k} == {
        k: v for k, v in direct.usage.to_dict().items() if "seconds" not in k
    }


def test_memagent_memory_per_chunk_arrives_over_sse_as_each_chunk_is_read(tmp_path):
    corpus = corpus_of([12000, 9000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    llm = echo_model()
    with serving(make_app(corpus, llm=llm, cache_dir=tmp_path, show_progress=False)) as base:
        events = get_events(base, q="What is the answer?", strategy="memagent")
    steps = [data for name, data in events if name == "step"]
    progress = [data for name, data in events if name == "progress"]
    assert [s["step"]["chunk"] for s in steps if s["step"]["node"] == "update_memory"] == list(
        range(n)
    )
    assert [s["step"]["memory"] for s in steps[:n]] == [
        f"mem after {section_in(c['prompt'])[:20]}" for c in llm.calls[:n]
    ]
    assert (
        all(s["live"] for s in steps[:n])
        and steps[-1]["step"]["node"] == "final_answer"
        and not steps[-1]["live"]
    )
    assert [(p["stage"], p["done"], p["total"]) for p in progress] == [
        ("read", k, n) for k in range(1, n + 1)
    ]
    # each chunk's memory arrives before the next chunk's progress: the order is the reading order
    order = [
        (name, data.get("step", {}).get("chunk", data.get("done")))
        for name, data in events[: 2 * n]
    ]
    assert order == [item for k in range(n) for item in (("step", k), ("progress", k + 1))]
    assert events[-1][0] == "answer"
    final = events[-1][1]["answer"]
    assert final["steps"] == [s["step"] for s in steps] and final["answer"] == "42"
    assert final["usage"]["llm_calls"] == n + 1 == len(llm.calls)


class RunEnd(BaseCallbackHandler):
    """Sets ``ended`` when the root run (the strategy's graph) ends or fails."""

    def __init__(self) -> None:
        self.ended = threading.Event()

    def on_chain_end(
        self, outputs: Any, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        if parent_run_id is None:
            self.ended.set()

    def on_chain_error(
        self, error: BaseException, *, run_id: Any, parent_run_id: Any = None, **kwargs: Any
    ) -> None:
        if parent_run_id is None:
            self.ended.set()


def test_a_client_that_disconnects_mid_stream_stops_the_model_calls(tmp_path, monkeypatch):
    """Chunks 0 and 1 are read, chunk 2's call is in flight (held), the client goes away: once the
    held call is let go, no other call starts, and the run ends."""
    corpus = corpus_of([40000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    gate, third_started, calls = threading.Semaphore(2), threading.Event(), [0]
    inner = echo_model()

    def held(prompt: str) -> str:
        calls[0] += 1
        if calls[0] == 3:
            third_started.set()
        assert gate.acquire(timeout=30), "the test never let the call go"
        return inner.reply_fn(prompt)

    monkeypatch.setattr(RecordedCancelGuard, "made", [])
    monkeypatch.setattr(run_batched, "CancelGuard", RecordedCancelGuard)
    llm, run_end, disconnected = ScriptedChatModel(reply_fn=held), RunEnd(), threading.Event()
    app = make_app(corpus, llm=llm, cache_dir=tmp_path, show_progress=False, callbacks=[run_end])
    with serving(app, disconnected) as base, httpx.Client(base_url=base, timeout=30) as client:
        with client.stream(
            "GET", "/answer", params={"q": "What is the answer?", "strategy": "memagent"}
        ) as response:
            received, memories = sse_events(response), 0
            for name, _ in received:  # (held open: closing it would close the response)
                memories += name == "step"
                if memories == 2:
                    break
            assert third_started.wait(30)  # chunk 2's call has started and waits for the gate
            received.close()
        assert disconnected.wait(30)
        assert RecordedCancelGuard.made and RecordedCancelGuard.made[0].cancel.wait(
            30
        )  # the app cancelled the run on the disconnect
        gate.release(n + 1)  # enough for a run that was not stopped to finish
        assert run_end.ended.wait(30)
    assert len(llm.calls) == 3 < n + 1  # the held call finished; none started after it


def test_stream_answer_gives_the_same_events_and_answer_in_sync_code(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Paris")
    events = list(
        stream_answer(
            FACTS,
            "What is the capital of France?",
            strategy="rag",
            llm=llm,
            cache_dir=tmp_path,
            show_progress=False,
        )
    )
    assert [type(e) for e in events] == [StepEvent, StepEvent, StepEvent, AnswerEvent]
    assert [e.step for e in events[:-1]] == events[-1].answer.steps
    assert (
        events[-1].answer.answer
        == answer(
            FACTS, "What is the capital of France?", strategy="rag", llm=llm, cache_dir=tmp_path
        ).answer
    )
    for e in events:
        assert json.loads(json.dumps(e.to_dict()))["kind"] == e.kind


def test_pai_reports_judge_progress_up_to_every_pair(tmp_path):
    events = list(
        stream_answer(
            company_corpus(),
            "Which company had the highest revenue?",
            strategy="pai",
            llm=pai_model(world),
            chunk_size=CHUNK,
            cache_dir=tmp_path,
            concurrency=3,
        )
    )
    result = events[-1].answer
    pairs = next(s for s in result.steps if s["node"] == "plan_judging")["pairs"]
    progress = [(e.done, e.total) for e in events if isinstance(e, ProgressEvent)]
    assert all(e.stage == "judge" for e in events if isinstance(e, ProgressEvent))
    assert progress == [
        (k, pairs) for k in range(pairs + 1)
    ]  # the plan (0 of N), then one per judged pair
    assert [e.step for e in events if isinstance(e, StepEvent)] == result.steps
    assert result.answer.endswith("Gamma Inc")


def test_structured_reports_documents_extracted(tmp_path):
    llm = scripted(["SELECT company, revenue FROM facts ORDER BY company"])
    events = list(
        stream_answer(
            small_corpus(),
            "What was the revenue of each company?",
            strategy="structured",
            llm=llm,
            cache_dir=tmp_path,
            schema=SCHEMA,
        )
    )
    documents = len(small_corpus())
    assert [(e.stage, e.done, e.total) for e in events if isinstance(e, ProgressEvent)] == [
        ("extract", k, documents) for k in range(documents + 1)
    ]
    assert isinstance(events[-1], AnswerEvent) and "ACME CORP" in events[-1].answer.answer


def test_callbacks_still_see_the_run_and_a_failed_run_raises_after_its_events(tmp_path):
    class Calls(BaseCallbackHandler):
        def __init__(self) -> None:
            self.ended = 0

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            self.ended += 1

    calls = Calls()
    list(
        stream_answer(
            FACTS,
            "Capital of France?",
            strategy="rag",
            llm=ScriptedChatModel(reply_fn=lambda p: "Paris"),
            cache_dir=tmp_path,
            callbacks=[calls],
        )
    )
    assert calls.ended == 1

    def broken(prompt: str) -> str:
        raise RuntimeError("the model fell over")

    async def main() -> list[str]:
        seen = []
        with pytest.raises(RuntimeError, match="fell over"):
            async for event in astream_answer(
                FACTS,
                "Capital of France?",
                strategy="rag",
                llm=ScriptedChatModel(reply_fn=broken),
                cache_dir=tmp_path,
            ):
                seen.append(event.step.node)
        return seen

    assert asyncio.run(main()) == ["retrieve", "build_prompt"]


def test_the_app_sends_an_error_event_for_a_bad_strategy(tmp_path):
    with serving(
        make_app(FACTS, llm=ScriptedChatModel(reply_fn=lambda p: "x"), cache_dir=tmp_path)
    ) as base:
        events = get_events(base, q="Capital of France?", strategy="nope")
    assert [name for name, _ in events] == ["error"] and "nope" in events[0][1]["error"]


def held_echo_model(monkeypatch) -> ScriptedChatModel:
    """MemAgent's echo model whose calls after the first return only once the run is cancelled
    (its own cancel guard, recorded): a run that was not stopped would wait on its second call."""
    monkeypatch.setattr(RecordedCancelGuard, "made", [])
    monkeypatch.setattr(run_batched, "CancelGuard", RecordedCancelGuard)
    inner, calls = echo_model(), [0]

    def held(prompt: str) -> str:
        calls[0] += 1
        if calls[0] > 1:
            assert RecordedCancelGuard.made[0].cancel.wait(60), "the run was never cancelled"
        return inner.reply_fn(prompt)

    return ScriptedChatModel(reply_fn=held)


def test_leaving_a_sync_stream_early_stops_the_run(tmp_path, monkeypatch):
    corpus = corpus_of([40000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    llm = held_echo_model(monkeypatch)
    for event in stream_answer(
        corpus,
        "What is the answer?",
        strategy="memagent",
        llm=llm,
        cache_dir=tmp_path,
        show_progress=False,
    ):
        if isinstance(event, StepEvent):
            break  # the run has stopped when the loop is left: its worker returned
    assert RecordedCancelGuard.made[
        0
    ].cancel.is_set()  # leaving the loop cancelled the run: its guard refuses any later call
    assert len(llm.calls) <= 2 < n + 1  # chunk 0's call, and chunk 1's if it had started


class StreamingScriptedChatModel(ScriptedChatModel):
    """:class:`ScriptedChatModel` whose replies stream word by word (usage on the last piece)."""

    streaming: bool = False

    def _stream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        message = self._generate(messages, stop=stop, **kwargs).generations[0].message
        words = message.content.split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            last = i == len(words) - 1
            chunk = ChatGenerationChunk(
                message=AIMessageChunk(
                    content=piece, usage_metadata=message.usage_metadata if last else None
                )
            )
            if run_manager is not None:
                run_manager.on_llm_new_token(piece, chunk=chunk)
            yield chunk


def test_the_answers_tokens_stream_when_the_model_streams_with_the_same_usage(tmp_path):
    reply = "The capital of France is Paris."
    streaming = StreamingScriptedChatModel(reply_fn=lambda p: reply, streaming=True)
    events = list(
        stream_answer(
            FACTS,
            "What is the capital of France?",
            strategy="rag",
            llm=streaming,
            cache_dir=tmp_path,
        )
    )
    kinds = [e.kind if e.kind != "step" else e.step.node for e in events]
    assert kinds == [
        "retrieve",
        "build_prompt",
        *["token"] * len(reply.split(" ")),
        "generate",
        "answer",
    ]
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(t.text for t in tokens) == reply == events[-1].answer.raw and {
        t.node for t in tokens
    } == {"generate"}
    plain = answer(
        FACTS,
        "What is the capital of France?",
        strategy="rag",
        llm=ScriptedChatModel(reply_fn=lambda p: reply),
        cache_dir=tmp_path,
    )
    streamed = events[-1].answer.usage
    assert (streamed.llm_calls, streamed.prompt_tokens, streamed.completion_tokens) == (
        plain.usage.llm_calls,
        plain.usage.prompt_tokens,
        plain.usage.completion_tokens,
    )
    # a model that does not stream sends no token event
    assert not [
        e
        for e in stream_answer(
            FACTS,
            "What is the capital of France?",
            strategy="rag",
            llm=StreamingScriptedChatModel(reply_fn=lambda p: reply),
            cache_dir=tmp_path,
        )
        if isinstance(e, TokenEvent)
    ]


def test_streaming_true_turns_token_events_on_for_a_spec_string(tmp_path, monkeypatch):
    """``stream_answer(..., llm="openai:MODEL", streaming=True)`` (#35 item 20: it failed with
    "Unknown option(s) for strategy 'rag': 'streaming'"): the server gets streamed requests, the app
    token events, and the usage is the server's, as without streaming."""
    reply = "The capital of France is Paris."
    monkeypatch.setenv("LONGCTX_TOKENIZER", "cl100k")  # no tokenize probe of the stub
    with RecordingServer(reply=lambda request: reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        events = list(
            stream_answer(
                FACTS,
                "What is the capital of France?",
                strategy="rag",
                llm="openai:rec",
                streaming=True,
                cache_dir=tmp_path,
            )
        )
        plain = list(
            stream_answer(
                FACTS,
                "What is the capital of France?",
                strategy="rag",
                llm="openai:rec",
                cache_dir=tmp_path,
            )
        )
        (streamed_request, plain_request) = server.requests
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert [t.text for t in tokens] == ["The", " capital", " of", " France", " is", " Paris."] and {
        t.node for t in tokens
    } == {"generate"}
    assert events[-1].answer.answer == plain[-1].answer.answer == reply
    assert streamed_request["stream"] is True and streamed_request["stream_options"] == {
        "include_usage": True
    }
    assert not plain_request.get("stream") and not [e for e in plain if isinstance(e, TokenEvent)]
    usage, plain_usage = events[-1].answer.usage, plain[-1].answer.usage
    assert not usage.estimated and (
        usage.llm_calls,
        usage.prompt_tokens,
        usage.completion_tokens,
    ) == (plain_usage.llm_calls, plain_usage.prompt_tokens, plain_usage.completion_tokens)


def test_streaming_true_against_a_server_that_does_not_stream_is_a_model_error_naming_it(
    tmp_path, monkeypatch
):
    """A server that answers ``stream: true`` with one JSON body (no server-sent events) left
    LangChain's bare "No generations found in stream"; the error names the server and says what to
    do, and the one request it answered is not sent again (a fallback would pay for the
    reply twice)."""
    from longctx import LongctxError, ModelError

    monkeypatch.setenv("LONGCTX_TOKENIZER", "cl100k")
    with RecordingServer(reply=lambda request: "Paris", streams=False) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "x")
        with pytest.raises(ModelError) as caught:
            list(
                stream_answer(
                    FACTS,
                    "What is the capital of France?",
                    strategy="rag",
                    llm="openai:rec",
                    streaming=True,
                    cache_dir=tmp_path,
                )
            )
        assert len(server.requests) == 1 and server.requests[0]["stream"] is True
    assert isinstance(caught.value, LongctxError) and server.url in str(caught.value)
    assert "does not stream" in str(caught.value) and "streaming=False" in str(caught.value)


def test_a_step_event_names_its_node_as_a_token_event_does(tmp_path):
    events = list(
        stream_answer(
            FACTS,
            "What is the capital of France?",
            strategy="rag",
            llm=ScriptedChatModel(reply_fn=lambda p: "Paris"),
            cache_dir=tmp_path,
        )
    )
    steps = [e for e in events if isinstance(e, StepEvent)]
    assert steps and all(e.node == e.step.node == e.step["node"] for e in steps)
    assert "retrieve" in {e.node for e in steps}


def test_streaming_true_streams_a_model_object_without_changing_it_and_refuses_one_that_cannot(
    tmp_path,
):
    model = StreamingScriptedChatModel(reply_fn=lambda p: "Paris is.")
    events = list(
        stream_answer(
            FACTS,
            "Capital of France?",
            strategy="rag",
            llm=model,
            streaming=True,
            cache_dir=tmp_path,
        )
    )
    assert [e.text for e in events if isinstance(e, TokenEvent)] == [
        "Paris",
        " is.",
    ] and model.streaming is False
    with pytest.raises(ChatModelError, match="cannot stream"):
        next(
            iter(
                stream_answer(
                    FACTS,
                    "Capital of France?",
                    strategy="rag",
                    llm=ScriptedChatModel(reply_fn=lambda p: "Paris"),
                    streaming=True,
                )
            )
        )
    ws = Workspace(
        FACTS, llm=StreamingScriptedChatModel(reply_fn=lambda p: "Paris is."), cache_dir=tmp_path
    )
    assert [
        e.text
        for e in ws.stream_answer("Capital of France?", streaming=True)
        if isinstance(e, TokenEvent)
    ] == ["Paris", " is."]


def test_the_sse_example_says_what_to_install_when_sse_starlette_is_missing(monkeypatch):
    monkeypatch.setitem(
        sys.modules, "sse_starlette", None
    )  # as in an install without the app extra
    monkeypatch.delitem(sys.modules, "examples.sse_app", raising=False)
    with pytest.raises(
        ImportError, match=r"needs fastapi, sse-starlette and uvicorn: pip install '\.\[app\]'"
    ):
        importlib.import_module("examples.sse_app")


def test_closing_the_async_stream_early_stops_the_run(tmp_path, monkeypatch):
    corpus = corpus_of([40000])
    n = math.ceil(stream_tokens(corpus) / 5000)
    llm = held_echo_model(monkeypatch)

    async def main() -> int:
        async with contextlib.aclosing(
            astream_answer(
                corpus, "q", strategy="memagent", llm=llm, cache_dir=tmp_path, show_progress=False
            )
        ) as events:
            async for event in events:
                if isinstance(event, StepEvent):
                    break
        return len(llm.calls)  # aclose() returned: the run's worker has returned too

    made = asyncio.run(
        main()
    )  # returns once the loop's worker threads have ended: any later call is counted
    assert len(llm.calls) == made <= 2 < n + 1 and RecordedCancelGuard.made[0].cancel.is_set()
