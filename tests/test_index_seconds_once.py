"""An index build is counted once (#46 item 16): two questions over one corpus asked at once (a work
unit each, the runner's default) give the same index seconds per context as asked together in one
call (``--inject-once``): the question that waits for the other's build counts its wait as queued,
not as index time.

The clock is virtual (it moves only while the build runs) and the build waits, by a count of the
clock's reads, until the other question is at its lock, so every figure is exact however loaded."""

from __future__ import annotations

import threading
import uuid

import pytest

from longctx import STRATEGIES, Corpus, answer, answer_many
from longctx.experiments.planning.context_costs import context_costs
from longctx.graphs.metering import usage
from longctx.graphs.runtime import run_setup, run_single
from longctx.retrieval.contract import Document
from longctx.retrieval.index import build as index_build
from longctx.retrieval.index import waits
from tests.scripted import ScriptedChatModel
from tests.virtual_clock import VirtualClock

BUILD_SECONDS = 0.5
REAL_BUILD = index_build._build
QUESTIONS = ["Where is site 1?", "What is the code of site 2?"]


class CountedClock:
    """``time`` for the build-wait meter: the run path's virtual clock, counting its reads, so a
    build can wait until another caller has read it to time its wait for the lock."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.reads = 0
        self.read = threading.Condition()

    def perf_counter(self) -> float:
        with self.read:
            self.reads += 1
            self.read.notify_all()
        return self.clock.perf_counter()

    def wait_reads(self, n: int) -> None:
        with self.read:
            assert self.read.wait_for(lambda: self.reads >= n, timeout=60), (
                f"{self.reads} of {n} reads"
            )


@pytest.fixture
def clocks(monkeypatch):
    """The run path's clock, and the build-wait meter's (counted) reading the same time."""
    run_clock = VirtualClock()
    for module in (run_setup, run_single, usage):
        monkeypatch.setattr(module, "time", run_clock)
    wait_clock = CountedClock(run_clock)
    monkeypatch.setattr(waits, "time", wait_clock)
    return run_clock, wait_clock


def _slow_build(
    monkeypatch, run_clock: VirtualClock, wait_clock: CountedClock, *, waiter: bool
) -> None:
    """The real BM25 build, taking BUILD_SECONDS of the virtual clock; with ``waiter``, it starts
    once the other question has read the clock to time its wait for the lock (the builder read it
    twice: before and after taking the lock)."""

    def build(*args, **kwargs):
        if waiter:
            wait_clock.wait_reads(3)
        run_clock.advance(BUILD_SECONDS)
        return REAL_BUILD(*args, **kwargs)

    monkeypatch.setattr(index_build, "_build", build)


def _corpus() -> Corpus:
    salt = uuid.uuid4().hex  # a corpus no earlier test indexed in this process
    return Corpus(
        [
            Document(doc_id=f"site{i}", text=f"Site {i} is in town {i}. Its code is 100{i}. {salt}")
            for i in range(3)
        ]
    )


def _per_context(answers) -> float:
    rows = [
        {"status": "ok", "corpus": "c", "seconds": a.usage.seconds, "usage": a.usage.to_dict()}
        for a in answers
    ]
    return context_costs("rag", rows)["index_seconds_per_context"]


def test_a_build_waited_for_is_counted_once_as_when_the_questions_are_asked_together(
    isolated_cache, clocks, monkeypatch
):
    run_clock, wait_clock = clocks
    llm = ScriptedChatModel(reply_fn=lambda prompt: "town 1")
    # default: a unit per question, both at once; one builds, the other waits at the lock and
    # loads it
    _slow_build(monkeypatch, run_clock, wait_clock, waiter=True)
    corpus = _corpus()
    STRATEGIES.get(
        "rag"
    )  # loaded before two threads ask for it at once (the lazy registry races there)
    apart: list = [None, None]

    def ask(i: int) -> None:
        apart[i] = answer(corpus, QUESTIONS[i], strategy="rag", llm=llm, top_k=1)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    index = sorted(a.usage.index_seconds for a in apart)
    queued = sorted(a.usage.queued_seconds for a in apart)
    assert index == pytest.approx([0.0, BUILD_SECONDS]) and queued == pytest.approx(
        [0.0, BUILD_SECONDS]
    )
    # --inject-once: both questions in one call over another corpus; the index built once,
    # shared out
    run_clock.now = 0.0
    _slow_build(monkeypatch, run_clock, wait_clock, waiter=False)
    together = answer_many(_corpus(), QUESTIONS, strategy="rag", llm=llm, top_k=1)
    assert [a.usage.index_seconds for a in together] == pytest.approx([BUILD_SECONDS / 2] * 2)
    assert _per_context(apart) == _per_context(together) == BUILD_SECONDS
