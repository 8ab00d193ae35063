"""Single-flight extraction: questions with one schema started together read each document
once (threads, asyncio tasks, both at once, and separate processes); a leader's failure is
retried or raised by the waiters, never passed on as empty records."""

from __future__ import annotations

import asyncio
import collections
import multiprocessing
import re
import threading
import time
import urllib.request
from concurrent.futures import Future
from pathlib import Path

import pytest

from benchmarks.stub_server import stub_server
from longctx import aanswer_many, answer, answer_many, make_chat_model
from longctx.graphs import STRATEGIES
from longctx.graphs.runtime.run import run_strategy
from longctx.graphs.structured.flight import FLIGHTS, Flights, await_flight
from longctx.retrieval import Corpus
from longctx.retrieval.contract import as_question
from tests.scripted_tools import (
    AsyncToolScriptedChatModel,
    ToolScriptedChatModel,
    malformed_tool_call,
)

SCHEMA = {
    "entity": "company",
    "time": {"name": "fiscal_year", "type": "year"},
    "attributes": [{"name": "revenue", "type": "number", "unit": "USD million"}],
}
N_DOCS = 12
QUESTIONS = [f"Question {i}: how many companies reported revenue?" for i in range(8)]


def corpus() -> Corpus:
    return Corpus.from_texts(
        [
            f"Company {i} reported revenue of USD {10 * (i + 1)} million in FY2023."
            for i in range(N_DOCS)
        ],
        titles=[f"Company {i}" for i in range(N_DOCS)],
    )


class Script:
    """Replies of a scripted model; counts extraction calls per document (thread-safe).
    ``fail``: ``{title: "raise" | "malformed"}`` for the first extraction call of a document."""

    def __init__(
        self, delay: float = 0.03, fail: dict[str, str] | None = None, fail_delay: float = 0.3
    ):
        self.delay, self.fail, self.fail_delay = delay, dict(fail or {}), fail_delay
        self.calls: collections.Counter = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, prompt: str, tools):
        if prompt.startswith("Extract rows"):
            title = re.search(r"^Document: (.+?)$", prompt, re.M).group(1)
            with self.lock:
                self.calls[title] += 1
                first = self.calls[title] == 1
            how = self.fail.get(title) if first else None
            try:
                asyncio.get_running_loop()  # the async model waits its own delay
            except RuntimeError:
                time.sleep(self.fail_delay if how else self.delay)
            if how == "raise":
                raise RuntimeError(f"leader failed on {title}")
            if how == "malformed":
                return malformed_tool_call()
            n = int(title.split()[1])
            value = f"USD {10 * (n + 1)} million"
            return [
                {
                    "records": [
                        {
                            "entity": title,
                            "period": "FY2023",
                            "values": {"revenue": {"value": value, "quote": value}},
                        }
                    ]
                }
            ]
        if prompt.startswith("Every document"):
            return "SELECT COUNT(*) FROM facts"
        return "The answer is: " + (
            re.search(r"<result>\n(.*?)\n</result>", prompt, re.S).group(1)
            if "<result>" in prompt
            else "none"
        )

    @property
    def extraction_calls(self) -> int:
        return sum(self.calls.values())


def reduce_step(a) -> dict:
    return next(s for s in a.steps if s["node"] == "reduce")


def rows(a) -> list:
    return next(s for s in a.steps if s["node"] == "query")["rows"]


def check_shared(answers, script: Script) -> None:
    assert script.extraction_calls == N_DOCS and set(script.calls.values()) == {1}
    extraction = [reduce_step(a)["extraction"] for a in answers]
    assert sum(e["calls"] for e in extraction) == N_DOCS
    assert sum(e["extracted"] for e in extraction) == N_DOCS
    assert all(e["extracted"] + e["shared"] + e["cached"] == N_DOCS for e in extraction)
    assert all(rows(a) == [[N_DOCS]] for a in answers)
    assert len(FLIGHTS) == 0


def test_eight_threaded_questions_extract_each_document_once(tmp_path):
    script = Script()
    llm = ToolScriptedChatModel(reply_fn=script)
    answers = answer_many(
        corpus(),
        QUESTIONS,
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=8,
    )
    check_shared(answers, script)
    assert (
        sum(reduce_step(a)["extraction"]["shared"] for a in answers) > 0
    )  # they overlapped: some waited


def test_eight_async_questions_extract_each_document_once(tmp_path):
    script = Script()
    llm = AsyncToolScriptedChatModel(reply_fn=script, delay=0.03)
    answers = asyncio.run(
        aanswer_many(
            corpus(),
            QUESTIONS,
            strategy="structured",
            llm=llm,
            cache_dir=tmp_path,
            schema=SCHEMA,
            concurrency=8,
        )
    )
    check_shared(answers, script)
    assert llm.max_in_flight > 1


def test_without_the_cache_overlapping_questions_still_share(tmp_path):
    script = Script(delay=0.05)
    llm = ToolScriptedChatModel(reply_fn=script)
    answers = answer_many(
        corpus(),
        QUESTIONS[:4],
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=4,
        cache=False,
    )
    # no cache to read a finished document from: only extractions that overlap are shared
    assert N_DOCS <= script.extraction_calls < 4 * N_DOCS
    assert all(rows(a) == [[N_DOCS]] for a in answers)
    assert not (tmp_path / "structured" / "records").exists()


def test_threads_and_asyncio_tasks_share_one_flight(tmp_path):
    script = Script(delay=0.03)
    llm = AsyncToolScriptedChatModel(reply_fn=script, delay=0.03)
    threaded: list = []
    spec = STRATEGIES.get("structured")
    cfg = spec.make_config(schema=SCHEMA, concurrency=4)
    questions = [as_question(q) for q in QUESTIONS[:4]]
    worker = threading.Thread(
        target=lambda: threaded.extend(  # the sync twin in LangGraph's threads
            run_strategy(
                spec,
                cfg,
                questions,
                llm=llm,
                corpus=corpus(),
                cache_dir=tmp_path,
                concurrency=4,
                use_async=False,
            )
        )
    )
    worker.start()
    awaited = asyncio.run(
        aanswer_many(
            corpus(),
            QUESTIONS[4:],
            strategy="structured",
            llm=llm,
            cache_dir=tmp_path,
            schema=SCHEMA,
            concurrency=4,
        )
    )
    worker.join()
    check_shared(threaded + awaited, script)


def test_a_malformed_leader_is_shared_as_degraded_unless_retry_degraded(tmp_path):
    """By default a degraded extraction is final: every question sees it, marked, and nobody pays
    for it again."""
    script = Script(fail={"Company 3": "malformed"})
    llm = ToolScriptedChatModel(reply_fn=script)
    answers = answer_many(
        corpus(),
        QUESTIONS[:4],
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=4,
        retries=0,
    )
    assert all(rows(a) == [[N_DOCS - 1]] for a in answers)
    assert all(
        any(s.get("degraded") for s in a.steps) for a in answers
    )  # each answer says it read a degraded document
    assert script.calls["Company 3"] == 1 and script.extraction_calls == N_DOCS


def test_with_retry_degraded_a_malformed_leader_is_not_reused_as_empty_records(tmp_path):
    script = Script(fail={"Company 3": "malformed"})
    llm = ToolScriptedChatModel(reply_fn=script)
    answers = answer_many(
        corpus(),
        QUESTIONS[:4],
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=4,
        retries=0,
        retry_degraded=True,
    )
    degraded = [a for a in answers if any(s["node"] == "extract" for s in a.steps)]
    assert len(degraded) == 1 and rows(degraded[0]) == [
        [N_DOCS - 1]
    ]  # the leader's own answer says so
    others = [a for a in answers if a not in degraded]
    assert all(rows(a) == [[N_DOCS]] for a in others)  # the waiters extracted it again, once
    assert script.calls["Company 3"] == 2 and script.extraction_calls == N_DOCS + 1
    assert reduce_step(degraded[0])["extraction"]["degraded_documents"] == ["3"]


def test_a_leader_that_raises_is_retried_by_its_waiters(tmp_path):
    script = Script(fail={"Company 3": "raise"})
    llm = ToolScriptedChatModel(reply_fn=script)
    results: list = [None] * 4

    def one(i: int) -> None:
        try:
            results[i] = answer(
                corpus(),
                QUESTIONS[i],
                strategy="structured",
                llm=llm,
                cache_dir=tmp_path,
                schema=SCHEMA,
                concurrency=4,
            )
        except Exception as exc:  # noqa: BLE001 - the leader's question fails, visibly
            results[i] = exc

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    failed = [r for r in results if isinstance(r, Exception)]
    assert len(failed) == 1 and "leader failed on Company 3" in str(failed[0])
    assert all(rows(a) == [[N_DOCS]] for a in results if not isinstance(a, Exception))
    assert script.calls["Company 3"] == 2 and script.extraction_calls == N_DOCS + 1
    assert len(FLIGHTS) == 0


def test_flights_unit():
    flights = Flights()
    lead, fut = flights.join("k")
    assert lead and flights.join("k") == (False, fut)

    async def waiter_cancelled() -> None:
        task = asyncio.ensure_future(await_flight(fut))
        await asyncio.sleep(0)  # one turn of the loop: the waiter starts and awaits the flight
        assert not task.done()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(waiter_cancelled())
    assert not fut.cancelled()  # a cancelled waiter leaves the flight alone
    flights.land("k", fut, {"records": []})
    assert fut.result() == {"records": []} and len(flights) == 0
    lead2, fut2 = flights.join("k")
    assert lead2 and fut2 is not fut
    flights.land("k", Future(), None)  # landing a stale future leaves the live one
    assert len(flights) == 1


# -- across processes ------------------------------------------------------------------------
def _process_run(cache: str, barrier, out) -> None:
    script = Script(delay=0.05)
    llm = ToolScriptedChatModel(reply_fn=script)
    barrier.wait()
    answers = answer_many(
        corpus(),
        QUESTIONS[:2],
        strategy="structured",
        llm=llm,
        cache_dir=cache,
        schema=SCHEMA,
        concurrency=4,
    )
    out.put((script.extraction_calls, [rows(a) for a in answers]))


def test_processes_extract_each_document_once(tmp_path):
    ctx = multiprocessing.get_context("spawn")  # no fork of a process with threads
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_process_run, args=(str(tmp_path), barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    got = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert sum(calls for calls, _ in got) == N_DOCS
    assert all(r == [[N_DOCS]] for _, answer_rows in got for r in answer_rows)


# -- against an OpenAI-compatible server -------------------------------------------------------
def _stats(url: str) -> int:
    import json

    with urllib.request.urlopen(url + "/stats", timeout=5) as r:
        return json.loads(r.read())["chat_requests"]


@pytest.mark.parametrize("path", ["threads", "async"])
def test_stub_server_sees_one_extraction_per_document(tmp_path, path):
    docs = corpus()
    with stub_server(0.05, reply_tokens=5, tools=True) as url:
        llm = make_chat_model("openai:stub", base_url=url, max_retries=0)
        kwargs = {
            "strategy": "structured",
            "llm": llm,
            "cache_dir": tmp_path,
            "schema": SCHEMA,
            "concurrency": 8,
        }
        if path == "threads":
            answers = answer_many(docs, QUESTIONS, **kwargs)
        else:
            answers = asyncio.run(aanswer_many(docs, QUESTIONS, **kwargs))
        requests = _stats(url)
    extraction = [reduce_step(a)["extraction"] for a in answers]
    assert (
        sum(e["calls"] for e in extraction) == N_DOCS
    )  # the stub answers {"records": []}: one call each
    assert requests == sum(a.usage.llm_calls for a in answers)
    assert requests - N_DOCS == sum(
        a.usage.llm_calls - e["calls"] for a, e in zip(answers, extraction)
    )
    assert Path(tmp_path, "structured", "records").exists()
