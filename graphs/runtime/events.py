"""What a running graph reports as it goes: steps that are not node outputs, and fan-out progress.

A node calls :func:`report_step`, :func:`report_progress` or :func:`report_tool_event`; the reports
go to the sink the caller installed with :func:`reporting_to` (``longctx.agents.astream_answer``
turns them into events) and are dropped when there is none. A single run's graph stream comes the
same way (:func:`report_graph`, from :mod:`longctx.graphs.metering.budget_stop`): a sink that is
installed makes the run stream LangGraph's ``updates``, ``custom`` and ``messages`` modes too.
The sink lives in a context variable, which follows the run into its tasks, worker threads and
LangGraph's executor, so a report costs a lookup when nobody listens (PAI reports once per judge
call; LangChain's ``dispatch_custom_event`` would build a callback manager for each).

Progress is per ``stage`` (``read``: MemAgent's chunks, ``judge``: PAI's judge calls,
``extract``: the structured strategy's documents; while an index builds, ``summarize``: RAPTOR's
cluster summaries, ``openie``: HippoRAG's passages, ``embed``: the texts a tree or graph embeds
or reads from its embedding store): a report sets the stage's ``total`` (and ``done`` when it
knows it) or ``advance``-s its ``done`` count; the sink adds them up.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

#: A report: ``{"type": "step", "step": Step, "question": int}``,
#: ``{"type": "progress", "stage": str, "advance": int, "done": int | None, "total": int | None}``,
#: ``{"type": "tool", "event": {"kind": "tool_call" | "tool_result", ...}}`` (a tool loop's) or
#: ``{"type": "graph", "namespace": tuple, "mode": str, "data": Any}`` (a LangGraph stream chunk).
Report = dict[str, Any]
Sink = Callable[[Report], None]
R = TypeVar("R")

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


def report_tool_event(event: dict[str, Any]) -> None:
    """A tool loop's tool call or result (:mod:`longctx.graphs.calls.tool_events`), as its event's
    ``to_dict()``."""
    sink = _SINK.get()
    if sink is not None:
        sink({"type": "tool", "event": event})


def report_graph(namespace: tuple[str, ...], mode: str, data: Any) -> None:
    """A chunk of a single run's LangGraph stream (:mod:`longctx.graphs.metering.budget_stop`
    streams ``messages``, ``custom`` and ``updates`` when a sink listens): ``mode`` is the stream
    mode, or ``"start"`` (``data`` ``None``) before the first chunk, from then on the run's
    tokens, tool events and steps come from the stream rather than from callbacks."""
    sink = _SINK.get()
    if sink is not None:
        sink({"type": "graph", "namespace": namespace, "mode": mode, "data": data})


def report_progress(
    stage: str, *, advance: int = 0, done: int | None = None, total: int | None = None
) -> None:
    """Progress of ``stage``: ``advance`` more units done, or the absolute ``done`` and/or
    ``total``."""
    sink = _SINK.get()
    if sink is not None:
        sink({"type": "progress", "stage": stage, "advance": advance, "done": done, "total": total})


class GrowingStage:
    """A stage whose work is learnt as it goes (RAPTOR's layers, HippoRAG's embedding stores): each
    :meth:`add` grows its total, and :meth:`wrap` reports a function over a list as such work."""

    def __init__(self, stage: str) -> None:
        self.stage = stage
        self._lock = threading.Lock()
        self._total = 0

    def add(self, n: int, *, done: int = 0) -> None:
        """``n`` more units to do, ``done`` of them already done (found in a log)."""
        with self._lock:  # totals are reported in the order they grow
            self._total += n
            report_progress(self.stage, total=self._total, advance=done)

    def wrap(self, work: Callable[[Sequence[Any]], R]) -> Callable[[Sequence[Any]], R]:
        """``work`` over a list, its length added as the call starts and done as it returns."""

        def run(items: Sequence[Any]) -> R:
            if items:
                self.add(len(items))
            out = work(items)
            if items:
                report_progress(self.stage, advance=len(items))
            return out

        return run


__all__ = [
    "GrowingStage",
    "Report",
    "Sink",
    "listening",
    "report_graph",
    "report_progress",
    "report_step",
    "report_tool_event",
    "reporting_to",
]
