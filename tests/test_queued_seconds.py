"""An answer's ``seconds`` is its own time: waiting for a model shared with concurrent answers
(the embedded model's lock) is ``queued_seconds`` instead (#31 item 5).

The clock these tests read is virtual (it moves only while a call holds the model) and the calls
wait for each other by events, so every figure is exact, however loaded the machine."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from pathlib import Path

import pytest

from longctx import Corpus, aanswer_many, answer_many
from longctx.graphs.metering import usage
from longctx.graphs.metering.usage import QueueMeter, metering_queue, shared_model_lock
from longctx.graphs.runtime import run_batched, run_setup, run_single
from tests.scripted import ScriptedChatModel
from tests.virtual_clock import VirtualClock, virtual_clock

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"
CALL_SECONDS = 0.3
QUESTIONS = [
    "What was Halvorsen Maritime's revenue in 2023?",
    "Where is Kestrel based?",
    "Who audits Sorrento?",
    "How many vessels?",
]


class ArrivalLock:
    """A model's lock that counts the calls that asked for it, so a call can hold it until the
    others queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._arrivals = threading.Condition()
        self.arrived = 0

    def acquire(self) -> bool:
        with self._arrivals:
            self.arrived += 1
            self._arrivals.notify_all()
        return self._lock.acquire()

    def release(self) -> None:
        self._lock.release()

    def wait_for(self, calls: int) -> None:
        with self._arrivals:
            assert self._arrivals.wait_for(lambda: self.arrived >= calls, timeout=60), (
                f"{self.arrived} of {calls} calls asked for the model"
            )


@pytest.fixture
def clock(monkeypatch) -> VirtualClock:
    return virtual_clock(
        monkeypatch,
        run_single,
        run_batched,
        run_setup,
        usage,
    )  # the answer's own time and the queue meter


def _one_at_a_time_model(clock: VirtualClock, callers: int) -> ScriptedChatModel:
    """A model that serves one call at a time, as the embedded model does, behind the same lock
    helper; its first call holds the model until ``callers`` calls have asked for it, then each
    takes CALL_SECONDS."""
    lock = ArrivalLock()

    def reply(prompt: str) -> str:
        with shared_model_lock(lock):
            lock.wait_for(callers)
            clock.advance(CALL_SECONDS)
        return "Kestrel"

    return ScriptedChatModel(reply_fn=reply)


def _check(answers, clock: VirtualClock) -> None:
    """Served one by one while the rest waited, the answers queued 0, 1, 2 and 3 calls; each one's
    own time holds its call and none of its queueing (an answer may read its end after later
    calls ran)."""
    queued = [a.usage.queued_seconds for a in answers]
    assert sorted(queued) == pytest.approx([CALL_SECONDS * k for k in range(len(QUESTIONS))])
    assert all(
        a.usage.seconds >= CALL_SECONDS - 1e-9
        and a.usage.seconds + a.usage.queued_seconds <= clock.now + 1e-9
        for a in answers
    )
    last = max(
        answers, key=lambda a: a.usage.queued_seconds
    )  # no call ran after its own: its own time is exactly that call
    assert last.usage.seconds == pytest.approx(CALL_SECONDS), (last.usage, clock.now)


def test_concurrent_answers_own_seconds_add_up_to_the_wall_time(isolated_cache, clock):
    corpus = Corpus.from_path(EXAMPLES)
    answer_many(
        corpus, QUESTIONS[:1], strategy="rag", llm=_one_at_a_time_model(clock, 1), top_k=1
    )  # index built and cached first
    clock.now = 0.0
    answers = answer_many(
        corpus,
        QUESTIONS,
        strategy="rag",
        llm=_one_at_a_time_model(clock, len(QUESTIONS)),
        top_k=1,
        concurrency=4,
    )
    _check(answers, clock)


def test_async_answers_meter_their_queueing_too(isolated_cache, clock):
    corpus = Corpus.from_path(EXAMPLES)
    answer_many(corpus, QUESTIONS[:1], strategy="rag", llm=_one_at_a_time_model(clock, 1), top_k=1)
    clock.now = 0.0
    answers = asyncio.run(
        aanswer_many(
            corpus,
            QUESTIONS,
            strategy="rag",
            llm=_one_at_a_time_model(clock, len(QUESTIONS)),
            top_k=1,
            concurrency=4,
        )
    )
    _check(answers, clock)


def test_parallel_calls_of_one_answer_waiting_on_each_other_are_not_queueing(clock):
    lock = ArrivalLock()

    def call() -> None:
        with shared_model_lock(lock):
            lock.wait_for(3)
            clock.advance(0.1)

    with metering_queue() as meter:
        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(call,)) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert (
        clock.now == pytest.approx(0.3) and meter.seconds == 0.0
    )  # counted call by call, the waits would add up to 0.1 + 0.2


def test_waiting_while_another_answer_holds_the_model_is_queueing(clock):
    lock, holding = ArrivalLock(), threading.Event()

    def other() -> None:
        with shared_model_lock(lock):  # another answer's call: no meter of this one's
            holding.set()
            lock.wait_for(2)
            clock.advance(0.3)

    t = threading.Thread(target=other)
    t.start()
    assert holding.wait(60)
    with metering_queue() as meter:
        with shared_model_lock(lock):
            clock.advance(0.1)  # this answer's own call
    t.join()
    assert lock.arrived == 2
    assert meter.seconds == pytest.approx(0.3)  # the other answer's call, and not this one's own
    assert QueueMeter().seconds == 0.0
