"""An answer's ``seconds`` is its own time: waiting for a model shared with concurrent answers
(the embedded model's lock) is ``queued_seconds`` instead (#31 item 5)."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path

from agents import Corpus, aanswer_many, answer_many
from graphs.usage import QueueMeter, metering_queue, shared_model_lock
from tests.scripted import ScriptedChatModel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"
CALL_SECONDS = 0.3
QUESTIONS = ["What was Halvorsen Maritime's revenue in 2023?", "Where is Kestrel based?", "Who audits Sorrento?", "How many vessels?"]


def _one_at_a_time_model() -> ScriptedChatModel:
    """A model that serves one call at a time, as the embedded model does, behind the same lock helper."""
    lock = threading.Lock()

    def reply(prompt: str) -> str:
        with shared_model_lock(lock):
            time.sleep(CALL_SECONDS)
        return "Kestrel"

    return ScriptedChatModel(reply_fn=reply)


def _check(answers, wall: float) -> None:
    own = [a.usage.seconds for a in answers]
    queued = [a.usage.queued_seconds for a in answers]
    assert sum(own) <= wall + 0.5, (own, wall)  # own times of concurrent answers add up to the wall time at most
    assert all(s >= CALL_SECONDS * 0.9 for s in own)  # each answer's own call is its own time
    # the rest of what each answer's clock saw is queueing: ideally 0 + 1 + 2 + 3 calls of the others (half of it at least,
    # however the four answers' starts are staggered), and the calls of the others only
    assert sum(queued) >= CALL_SECONDS * 3, queued
    assert all(q <= wall - CALL_SECONDS for q in queued), (queued, wall)


def test_concurrent_answers_own_seconds_add_up_to_the_wall_time(isolated_cache):
    corpus = Corpus.from_path(EXAMPLES)
    answer_many(corpus, QUESTIONS[:1], strategy="rag", llm=_one_at_a_time_model(), top_k=1)  # index built and cached first
    started = time.perf_counter()
    answers = answer_many(corpus, QUESTIONS, strategy="rag", llm=_one_at_a_time_model(), top_k=1, concurrency=4)
    _check(answers, time.perf_counter() - started)


def test_async_answers_meter_their_queueing_too(isolated_cache):
    corpus = Corpus.from_path(EXAMPLES)
    answer_many(corpus, QUESTIONS[:1], strategy="rag", llm=_one_at_a_time_model(), top_k=1)

    async def main():
        started = time.perf_counter()
        answers = await aanswer_many(corpus, QUESTIONS, strategy="rag", llm=_one_at_a_time_model(), top_k=1, concurrency=4)
        return answers, time.perf_counter() - started

    _check(*asyncio.run(main()))


def test_parallel_calls_of_one_answer_waiting_on_each_other_are_not_queueing():
    lock = threading.Lock()

    def call() -> None:
        with shared_model_lock(lock):
            time.sleep(0.1)

    with metering_queue() as meter:
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(call,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert meter.seconds < 0.1  # counted call by call, the waits would add up to 0.1 + 0.2


def test_waiting_while_another_answer_holds_the_model_is_queueing():
    lock = threading.Lock()
    holding = threading.Event()

    def other() -> None:
        with lock:
            holding.set()
            time.sleep(0.3)

    t = threading.Thread(target=other)
    t.start()
    holding.wait()
    started = time.perf_counter()
    with metering_queue() as meter, shared_model_lock(lock):
        waited = time.perf_counter() - started
    t.join()
    assert 0 < meter.seconds <= waited
    assert QueueMeter().seconds == 0.0
