"""The embedded model's lock runs calls that share a prompt start back to back (issue #40 item 2):
llama.cpp keeps one prompt in context, so concurrent answers over two texts that took turns in
arrival order would re-read each text whole."""

from __future__ import annotations

import threading
import time

import pytest
from langchain_core.messages import HumanMessage

from longctx.agents.chat_models import make_chat_model
from longctx.agents.embedded_chat import _load_llama
from longctx.graphs.calls.llm import reply_usage
from longctx.graphs.calls.prefix_lock import MAX_PASSED, PrefixAffinityLock, shared_start


def wait_for(condition) -> None:
    """Poll until ``condition()`` holds (a thread has reached its wait); not a timing assertion."""
    while not condition():
        time.sleep(0.005)


def run_in_turns(
    lock: PrefixAffinityLock, held: str | None, keys: list[str | None]
) -> list[str | None]:
    """Hold ``lock`` with ``held``, queue ``keys`` in this order, release, and return the order they
    got it in."""
    order: list[str | None] = []
    lock.acquire(held)
    threads = []
    for i, key in enumerate(keys):

        def take(key=key) -> None:
            with_key = lock.acquire(key)
            assert with_key
            order.append(key)
            lock.release()

        threads.append(threading.Thread(target=take))
        threads[-1].start()
        wait_for(lambda i=i: lock.waiting == i + 1)
    lock.release()
    for t in threads:
        t.join()
    return order


def test_waiting_calls_sharing_the_held_prompts_start_go_first_and_a_tokenize_call_before_all():
    order = run_in_turns(
        PrefixAffinityLock(),
        "CORPUS A q0",
        ["OTHER q1", "CORPUS A q1", None, "CORPUS A q2", "OTHER q2"],
    )
    assert order == [None, "CORPUS A q1", "CORPUS A q2", "OTHER q1", "OTHER q2"]


def test_ties_keep_arrival_order():
    assert run_in_turns(PrefixAffinityLock(), "x", ["c1", "b1", "d1"]) == ["c1", "b1", "d1"]
    assert run_in_turns(PrefixAffinityLock(), "x", ["b1", "c1", "b2"]) == [
        "b1",
        "b2",
        "c1",
    ]  # b2 shares "b" with b1, just run
    assert run_in_turns(PrefixAffinityLock(), None, ["b1"]) == ["b1"]


def test_a_call_passed_over_too_often_goes_next():
    keys = ["OTHER"] + [f"CORPUS {i}" for i in range(MAX_PASSED + 3)]
    order = run_in_turns(PrefixAffinityLock(), "CORPUS", keys)
    assert order.index("OTHER") == MAX_PASSED


def test_shared_start():
    assert (
        shared_start("", "abc") == 0
        and shared_start("abc", "abc") == 3
        and shared_start("abd", "abc") == 2
    )
    long = "word " * 2_000
    assert shared_start(long + "x", long + "y") == len(long)


def test_the_lock_is_handed_on_when_a_waiting_call_is_interrupted():
    lock = PrefixAffinityLock()
    lock.acquire("a")

    class Stop(Exception):
        pass

    failed = threading.Event()

    def interrupted() -> None:
        original = lock._cond.wait

        def wait(*args):
            raise Stop

        lock._cond.wait = wait  # type: ignore[method-assign]
        try:
            lock.acquire("b")
        except Stop:
            failed.set()
        finally:
            lock._cond.wait = original  # type: ignore[method-assign]

    t = threading.Thread(target=interrupted)
    t.start()
    t.join()
    assert failed.is_set() and lock.waiting == 0
    lock.release()
    assert lock.acquire("c")
    lock.release()


# four calls on the embedded model: seconds quiet, over half a minute at load 10 on 2 cores
@pytest.mark.slow
def test_concurrent_calls_over_two_texts_on_the_embedded_model_read_each_text_once():
    """Four calls queued in the order text 1, text 2, text 1, text 2: the model runs both calls over
    one text back to back, so the second of each reads its text from the kept context."""
    llm = make_chat_model("embedded")
    texts = [
        "The red fox lives in the northern forest near the lake. " * 10,
        "Copper wire conducts heat and electricity very well. " * 10,
    ]
    prompts = [f"{texts[i % 2]}\nQuestion {i}: what is this about?" for i in range(4)]
    llama, lock = _load_llama(llm._resolved, llm.n_ctx, llm.settings, llm.seed)
    usages: dict[int, dict] = {}
    lock.acquire("an unrelated prompt")
    threads = []
    for i, prompt in enumerate(prompts):

        def call(i=i, prompt=prompt) -> None:
            message = llm.invoke([HumanMessage(content=prompt)], max_tokens=2)
            usages[i] = reply_usage(message, prompt, str(message.content))

        threads.append(threading.Thread(target=call))
        threads[-1].start()
        wait_for(lambda i=i: lock.waiting == i + 1)
    lock.release()
    for t in threads:
        t.join()
    text_tokens = [len(llm.tokenize(t)) for t in texts]
    # one call of each text starts cold (the chat template's head aside); the other reads the whole
    # text from the context
    for first, second, n in ((0, 2, text_tokens[0]), (1, 3, text_tokens[1])):
        assert (
            max(usages[first]["cached_prompt_tokens"], usages[second]["cached_prompt_tokens"]) >= n
        )
        assert (
            min(usages[first]["cached_prompt_tokens"], usages[second]["cached_prompt_tokens"])
            < n / 2
        )


@pytest.mark.parametrize("n", [1, 3])
def test_a_plain_lock_still_works_with_shared_model_lock(n):
    from longctx.graphs.metering.usage import shared_model_lock

    plain = threading.Lock()
    for _ in range(n):
        with shared_model_lock(plain):
            assert plain.locked()
    assert not plain.locked()
