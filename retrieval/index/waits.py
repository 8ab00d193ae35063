"""Seconds a caller of :func:`~retrieval.index.build_index` spent waiting for another caller's
build of the same index (its build lock held by another thread or process), so that a run counts
a build once.

Two questions over one corpus asked at once: the first builds the index, the second waits for the
build lock and then loads what the first built. The wait is the first's build, not the second's: a
run path that times its indexing subtracts it (:func:`counting_waits`) and counts it as time
queued, so the index seconds summed over a context's questions are one build's, however its
questions were grouped.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TypeVar

T = TypeVar("T")


class BuildWait:
    """Seconds waited for other builders, summed (one per :func:`counting_waits` block)."""

    def __init__(self) -> None:
        self.seconds = 0.0


_WAIT: contextvars.ContextVar[BuildWait | None] = contextvars.ContextVar(
    "longctx_index_build_wait", default=None
)


@contextlib.contextmanager
def counting_waits() -> Iterator[BuildWait]:
    """Sum the seconds the code run inside (this context and those that copy it) waits for
    another's build."""
    wait = BuildWait()
    token = _WAIT.set(wait)
    try:
        yield wait
    finally:
        _WAIT.reset(token)


@contextlib.contextmanager
def waited_for(lock: AbstractContextManager[T]) -> Iterator[T]:
    """Enter ``lock`` (a build lock), adding the time until it is held to the running
    :func:`counting_waits`."""
    started = time.perf_counter()
    with lock as held:
        waited = time.perf_counter() - started
        wait = _WAIT.get()
        if wait is not None:
            wait.seconds += waited
        yield held
