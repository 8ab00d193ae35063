"""A sync function and its async twin from one body.

The body is written once, as a coroutine function that does its waiting (a model call, a
pause) through callables it is given. The async twin awaits it with async callables; the
sync twin passes blocking ones wrapped by :func:`blocking` and runs it with
:func:`run_blocking`, in the calling thread, without an event loop. So the policy (prompts,
validation, retries, bookkeeping) lives in one place and the twins differ only in how they
wait: a fix to one is a fix to both.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def blocking(fn: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``fn`` as a coroutine function that calls it (blocking this thread) and returns without
    suspending."""

    async def call(*args: P.args, **kwargs: P.kwargs) -> T:
        return fn(*args, **kwargs)

    return call


def run_blocking(coro: Coroutine[Any, Any, T]) -> T:
    """The result of ``coro``, run to its end in this thread with no event loop.

    ``coro`` must never suspend: everything it awaits is a :func:`blocking` call (or another
    coroutine that only awaits those). An await of a real future (``asyncio.sleep``, a
    socket) is a bug of the caller and raises ``RuntimeError``.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError(
        "run_blocking: the coroutine suspended; a sync twin may only await blocking(...) calls"
    )


__all__ = ["blocking", "run_blocking"]
