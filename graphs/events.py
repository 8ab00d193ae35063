"""What a running graph reports as it goes: steps that are not node outputs, and fan-out progress.

A node calls :func:`report_step` or :func:`report_progress`; the reports go to the sink the
caller installed with :func:`reporting_to` (``agents.astream_answer`` turns them into events)
and are dropped when there is none. The sink lives in a context variable, which follows the
run into its tasks, worker threads and LangGraph's executor, so a report costs a lookup when
nobody listens (PAI reports once per judge call; LangChain's ``dispatch_custom_event`` would
build a callback manager for each).

Progress is per ``stage`` (``read``: MemAgent's chunks, ``judge``: PAI's judge calls,
``extract``: the structured strategy's documents): a report sets the stage's ``total`` (and
``done`` when it knows it) or ``advance``-s its ``done`` count; the sink adds them up.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

#: A report: ``{"type": "step", "step": Step, "question": int}`` or
#: ``{"type": "progress", "stage": str, "advance": int, "done": int | None, "total": int | None}``.
Report = dict[str, Any]
Sink = Callable[[Report], None]

_SINK: ContextVar[Sink | None] = ContextVar("longctx_report_sink", default=None)


@contextlib.contextmanager
def reporting_to(sink: Sink) -> Iterator[None]:
    """Send the reports of runs started in this block (and their tasks and threads) to ``sink``.

    ``sink`` may be called from any thread of the run; it must be thread-safe and quick.
    """
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def listening() -> bool:
    """Whether a sink is installed (skip building a costly report when not)."""
    return _SINK.get() is not None


def report_step(step: Any, *, question: int = 0) -> None:
    """A step the node wrote somewhere other than its output's ``steps`` (MemAgent's memory
    updates, which live in the trace rather than the checkpointed state)."""
    sink = _SINK.get()
    if sink is not None:
        sink({"type": "step", "step": step, "question": question})


def report_progress(
    stage: str, *, advance: int = 0, done: int | None = None, total: int | None = None
) -> None:
    """Progress of ``stage``: ``advance`` more units done, or the absolute ``done`` and/or ``total``."""
    sink = _SINK.get()
    if sink is not None:
        sink({"type": "progress", "stage": stage, "advance": advance, "done": done, "total": total})


__all__ = ["Report", "Sink", "listening", "report_progress", "report_step", "reporting_to"]
