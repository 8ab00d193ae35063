"""Keep Python's cyclic garbage collector off the heap that existed before a run, while runs last.

Why: a run's fan-out allocates many short-lived containers (messages, callbacks, LangGraph
tasks), which trigger full collections; a full collection walks every tracked object of the
process, and the imports alone (LangChain, LangGraph, pydantic, numpy, faiss, scipy) leave
~130,000 of them. On the 2-core benchmark machine one full collection took 130-150 ms in the
middle of the structured strategy's extraction, in most runs, against a makespan of ~0.5 s
(``benchmarks/bench_structured.py``: answer() 0.69-0.87 s with them, 0.52-0.65 s without).

:func:`frozen_heap` moves every object that exists when the first run starts into the
collector's permanent generation (``gc.freeze()``) and back when the last run in the process
ends (``gc.unfreeze()``); both are constant-time list splices. Nothing changes for what the
run allocates itself: its garbage is collected as usual. What existed before only waits:
cyclic garbage among it is found at the first full collection after the run, as it would have
been during it. A process that froze its heap itself (``gc.get_freeze_count() > 0`` at the
first run) is left alone. ``LONGCTX_GC_FREEZE=0`` turns this off.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

_LOCK = threading.Lock()
_ACTIVE = 0
_OWNED = False


def enabled() -> bool:
    """Whether runs freeze the pre-existing heap (``$LONGCTX_GC_FREEZE``, default on)."""
    return os.environ.get("LONGCTX_GC_FREEZE", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """Hold the heap that existed before the first of the process's active runs out of the
    collector's reach until the last of them ends (re-entrant, thread-safe)."""
    global _ACTIVE, _OWNED
    if not enabled():
        yield
        return
    with _LOCK:
        _ACTIVE += 1
        if _ACTIVE == 1 and gc.get_freeze_count() == 0:
            gc.freeze()
            _OWNED = True
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE -= 1
            if _ACTIVE == 0 and _OWNED:
                gc.unfreeze()
                _OWNED = False


def during_runs(fn: F) -> F:
    """Decorate a sync or async run function so it runs under :func:`frozen_heap`."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def arun(*args: Any, **kwargs: Any) -> Any:
            with frozen_heap():
                return await fn(*args, **kwargs)

        return arun  # type: ignore[return-value]

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with frozen_heap():
            return fn(*args, **kwargs)

    return run  # type: ignore[return-value]


__all__ = ["during_runs", "enabled", "frozen_heap"]
