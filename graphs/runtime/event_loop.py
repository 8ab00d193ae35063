"""The library's own event loop: sync callers drive async graphs on it, and fan-outs gather on it.

One long-lived loop rather than ``asyncio.run`` per call: async HTTP clients keep connection pools
that belong to the loop that opened them (LangChain's OpenAI client is shared per server), so every
sync call drives its graphs on the same loop (:func:`run_sync`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


async def gather_or_cancel(coros: Sequence[Awaitable[T]]) -> list[T]:
    """The results of ``coros`` run as tasks, in order; if one fails or the caller is
    cancelled, the others are cancelled (and awaited) before the error propagates."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def private_loop() -> asyncio.AbstractEventLoop:
    """The library's own event loop, running in a daemon thread (started on first use).

    Its default executor, where sync nodes run under ``ainvoke``, has room for wide fan-outs.
    """
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            loop.set_default_executor(
                ThreadPoolExecutor(max_workers=64, thread_name_prefix="longctx-node")
            )
            threading.Thread(
                target=loop.run_forever, name="longctx-event-loop", daemon=True
            ).start()
            _LOOP = loop
        return _LOOP


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, in a plain script or inside a running
    event loop (Jupyter): it runs on :func:`private_loop` while this thread waits. An
    interrupt (Ctrl-C) while waiting cancels it, which stops its model calls."""
    loop = private_loop()
    try:
        # called from the private loop's own thread: it cannot wait on itself
        if asyncio.get_running_loop() is loop:
            with ThreadPoolExecutor(max_workers=1) as pool:
                return pool.submit(asyncio.run, coro).result()
    except RuntimeError:
        pass  # no loop runs in this thread
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise
