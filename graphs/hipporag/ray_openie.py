"""HippoRAG's OpenIE as Ray tasks (``map_executor="ray"``), through the shared map
(:mod:`longctx.graphs.runtime.ray_map`).

The caller first reads each passage's calls from its :class:`~graphs.hipporag.openie.OpenIELog`;
the passages that still need one (NER, or triples after a NER already logged) go out in batches
of ``ray_batch_passages``, at most ``ray_max_in_flight`` tasks at once, each with the calls the
log already holds for it. A task runs :func:`~graphs.hipporag.openie.extract_passage` (NER
then triples) for its passages on ``concurrency`` threads with the caller's model rebuilt on
the worker, so each request is the one the local map sends; every call it finished comes back
and is appended to the caller's log as the task returns. The extractions are then read from
the log, in passage order, exactly as the local map reads them.

Failures: a call that fails on a worker stops that task's batch (the calls it finished, a NER
whose triple call failed included, come back and are logged) and the map (no new task), and
its error is raised once the tasks in flight have returned, as the local map raises; a task
Ray lost (its worker died) is an error naming it. A rerun asks only what the log lacks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from typing import Any

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.openie import Ask, Extraction, OpenIELog, extract_passage
from longctx.graphs.hipporag.requests import Messages
from longctx.graphs.plugin.api import (
    ModelRecipe,
    StrategyContext,
    counted_model,
    map_or_raise,
    report_progress,
    run_batch,
)

#: ``ask`` made from a run context (:func:`longctx.graphs.hipporag.build.asker`).
MakeAsk = Callable[[StrategyContext[HippoRAGConfig]], Ask]
#: A finished call as the log stores it: ``(which, key, record)``.
Call = tuple[str, str, dict[str, Any]]
#: One task's passages: ``(position, passage, the calls the caller's log holds for it)``.
Batch = list[tuple[int, str, list[Call]]]


class _NeedsCall(Exception):
    """A passage needs a call its log does not hold."""


def _refuse(messages: Messages) -> tuple[str, bool]:
    raise _NeedsCall


class CallTap(OpenIELog):
    """An in-memory log around ``inner`` (or none) that remembers every call it hands out
    (``seen``) or takes in (also appended to ``made``)."""

    def __init__(
        self, inner: OpenIELog | None, known: Iterable[Call] = (), made: list[Call] | None = None
    ):
        super().__init__(None, "", "")
        self.inner = inner
        self.seen: dict[tuple[str, str], dict[str, Any]] = {(w, k): r for w, k, r in known}
        self.made = made if made is not None else []

    def get(self, which: str, key: str) -> dict[str, Any] | None:
        """The call from what this log has seen, else from ``inner``."""
        if (which, key) not in self.seen and self.inner is not None:
            if (found := self.inner.get(which, key)) is not None:
                self.seen[which, key] = found
        return self.seen.get((which, key))

    def put(self, which: str, key: str, record: dict[str, Any]) -> None:
        """Keep a finished call (``made``)."""
        self.seen[which, key] = record
        self.made.append((which, key, record))


def extract_batch(
    recipe: ModelRecipe, make: MakeAsk, cfg: HippoRAGConfig, batch: Batch
) -> dict[str, Any]:
    """One Ray task: NER then triples for each passage of ``batch`` on ``cfg.concurrency`` threads.

    Returns ``{"calls": [(which, key, record)], "error", "traceback", "usage"}``.
    """
    llm, tracker = counted_model(recipe)
    # No corpus: the passages come with the task.
    ask = make(StrategyContext(llm=llm, config=cfg, corpus=None))  # type: ignore[arg-type]
    made: list[Call] = []

    def one(item: tuple[int, str, list[Call]]) -> Any:
        return extract_passage(item[1], ask, CallTap(None, item[2], made), cfg.openie_max_tokens)

    _, error, trace = run_batch(batch, one, cfg.concurrency)
    return {"calls": made, "error": error, "traceback": trace, "usage": asdict(tracker.usage)}


def _pending(passage: str, openie_log: OpenIELog, most: int) -> list[Call] | None:
    """``None`` when the log holds every call of ``passage``; else the calls it holds."""
    tap = CallTap(openie_log)
    try:
        extract_passage(passage, _refuse, tap, most)
    except _NeedsCall:
        return [(w, k, r) for (w, k), r in tap.seen.items()]
    return None


def extract_on_ray(
    passages: Sequence[str],
    ctx: StrategyContext[HippoRAGConfig],
    make: MakeAsk,
    openie_log: OpenIELog,
) -> tuple[list[Extraction], int]:
    """Every passage's extraction, in order, its missing calls asked by Ray tasks; and the calls
    asked."""
    cfg = ctx.config
    most = cfg.openie_max_tokens
    todo = [
        (i, p, known)
        for i, p in enumerate(passages)
        if (known := _pending(p, openie_log, most)) is not None
    ]
    asked = 0
    if passages:  # a passage is done when its triple call is: then one event per returned batch
        report_progress("openie", done=len(passages) - len(todo), total=len(passages))

    def keep(out: dict[str, Any]) -> None:
        nonlocal asked
        for which, key, record in out["calls"]:
            openie_log.put(which, key, record)
        asked += len(out["calls"])
        report_progress(
            "openie", advance=sum(1 for which, _, _ in out["calls"] if which == "triples")
        )

    map_or_raise(
        extract_batch,
        (make, cfg),
        todo,
        cfg.ray_batch_passages,
        ctx.llm,
        cfg,
        keep,
        "HippoRAG OpenIE passages",
    )
    return [extract_passage(p, _refuse, openie_log, most)[0] for p in passages], asked
