"""RAPTOR's summaries of a layer as Ray tasks (``map_executor="ray"``), through the shared map
(:mod:`longctx.graphs.runtime.ray_map`).

The clusters whose summary the log lacks go out in batches of ``ray_batch_clusters``, at most
``ray_max_in_flight`` tasks at once; a task asks its batch's summaries on ``concurrency``
threads with the caller's model rebuilt on the worker, so each request is the one the local
build sends. Each finished summary is appended to the caller's
:class:`~graphs.raptor.tree.SummaryLog` as its task returns, so a killed build asks again only what
no returned task held.

Failures: a summary call that fails on a worker stops that task's batch (its finished summaries
come back and are logged) and the map (no new task), and its error is raised once the tasks in
flight have returned, as the local build raises; a task Ray lost (its worker died) is an error
naming it. Either way a rerun asks only the summaries the log lacks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from longctx.graphs.plugin.api import (
    ModelRecipe,
    StrategyContext,
    counted_model,
    digest_texts,
    map_or_raise,
    report_progress,
    run_batch,
)
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.tree import LayerMap, Summarize, SummaryLog

#: ``context -> summary`` made from a run context (:func:`longctx.graphs.raptor.graph.summarizer`).
MakeSummarizer = Callable[[StrategyContext[RaptorConfig]], Summarize]
#: One task's clusters: ``(position in the layer, context)``.
Batch = list[tuple[int, str]]


def summarize_batch(
    recipe: ModelRecipe, make: MakeSummarizer, cfg: RaptorConfig, batch: Batch
) -> dict[str, Any]:
    """One Ray task: the summary of each context of ``batch`` on ``cfg.concurrency`` threads.

    Returns ``{"summaries": [[position, summary]], "error", "traceback", "usage"}``.
    """
    llm, tracker = counted_model(recipe)
    # No corpus: the contexts come with the task.
    summarize = make(StrategyContext(llm=llm, config=cfg, corpus=None))  # type: ignore[arg-type]
    done, error, trace = run_batch(
        batch, lambda item: (item[0], summarize(item[1])), cfg.concurrency
    )
    return {"summaries": done, "error": error, "traceback": trace, "usage": asdict(tracker.usage)}


def summaries_on_ray(ctx: StrategyContext[RaptorConfig], make: MakeSummarizer) -> LayerMap:
    """The :data:`~graphs.raptor.tree.LayerMap` asking a layer's missing summaries as Ray tasks."""
    cfg = ctx.config

    def layer_map(contexts: list[str], summary_log: SummaryLog) -> tuple[list[str], int]:
        keys = [digest_texts([c]) for c in contexts]
        todo = [i for i, k in enumerate(keys) if k not in summary_log.done]

        def keep(out: dict[str, Any]) -> None:
            for i, summary in out["summaries"]:
                summary_log.put(keys[i], summary)
            report_progress("summarize", advance=len(out["summaries"]))

        work = [(i, contexts[i]) for i in todo]
        map_or_raise(
            summarize_batch,
            (make, cfg),
            work,
            cfg.ray_batch_clusters,
            ctx.llm,
            cfg,
            keep,
            "RAPTOR summaries",
        )
        return [summary_log.done[k] for k in keys], len(todo)

    return layer_map
