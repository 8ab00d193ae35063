"""Runs keep the collector off the heap that existed before them, and give it back after
(graphs/runtime/heap.py): frozen while any run is active, unfrozen when the last ends, a process's
own freeze left alone, cyclic garbage from before the run collected once it ends."""

import gc
import threading
import weakref

import pytest

from longctx import answer
from longctx.graphs.runtime.heap import during_runs, frozen_heap
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel


@pytest.fixture(autouse=True)
def unfrozen(monkeypatch):
    monkeypatch.delenv("LONGCTX_GC_FREEZE", raising=False)
    assert gc.get_freeze_count() == 0
    yield
    gc.unfreeze()


def corpus() -> Corpus:
    return Corpus.from_texts(
        ["zebra stripes are black and white", "gardens and weather"], titles=["A", "B"]
    )


def test_a_run_freezes_the_heap_while_it_lasts_and_unfreezes_it_after():
    seen = []

    def reply(prompt: str) -> str:
        seen.append(gc.get_freeze_count())
        return "black and white"

    result = answer(
        corpus(),
        "What colour are zebra stripes?",
        llm=ScriptedChatModel(reply_fn=reply),
        strategy="full_context",
    )
    assert result.answer == "black and white"
    assert seen and all(n > 0 for n in seen)
    assert gc.get_freeze_count() == 0


def test_cyclic_garbage_from_before_the_run_is_collected_after_it():
    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a
    alive = weakref.ref(a)
    del a, b
    with frozen_heap():
        gc.collect()
        assert alive() is not None  # frozen: the old cycle waits
    gc.collect()
    assert alive() is None


def test_nested_and_concurrent_runs_unfreeze_only_when_the_last_ends():
    inside, release = threading.Event(), threading.Event()

    def long_run():
        with frozen_heap():
            inside.set()
            release.wait(10)

    worker = threading.Thread(target=long_run)
    worker.start()
    inside.wait(10)
    with frozen_heap():
        with frozen_heap():
            assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() > 0  # the worker's run still holds it
    release.set()
    worker.join(10)
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_its_heap_itself_is_left_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with frozen_heap():
            pass
        # still frozen (an unfreeze empties the permanent generation); a frozen object that another
        # thread lets go of meanwhile leaves it, so the count may only have shrunk by a few
        assert frozen - 100 < gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()  # the rest of the test process runs with the collector as it found it


def test_the_setting_turns_it_off(monkeypatch):
    monkeypatch.setenv("LONGCTX_GC_FREEZE", "0")
    with frozen_heap():
        assert gc.get_freeze_count() == 0


def test_the_decorator_covers_coroutines_and_errors():
    import asyncio

    @during_runs
    async def arun():
        return gc.get_freeze_count()

    @during_runs
    def fails():
        raise ValueError("boom")

    assert asyncio.run(arun()) > 0
    with pytest.raises(ValueError):
        fails()
    assert gc.get_freeze_count() == 0
