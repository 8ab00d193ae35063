"""RAPTOR's summaries of a layer as Ray tasks (``map_executor="ray"``), through the shared map
(:mod:`graphs.ray_map`).

The clusters whose summary the log lacks go out in batches of ``ray_batch_clusters``, at most
``ray_max_in_flight`` tasks at once; a task asks its batch's summaries on ``concurrency``
threads with the caller's model rebuilt on the worker, so each request is the one the local
build sends. Each finished summary is appended to the caller's :class:`~graphs.raptor.tree.SummaryLog`
as its task returns, so a killed build asks again only what no returned task held.

Failures: a summary call that fails on a worker stops that task's batch (its finished summaries
come back and are logged) and the map (no new task), and its error is raised once the tasks in
flight have returned, as the local build raises; a task Ray lost (its worker died) is an error
naming it. Either way a rerun asks only the summaries the log lacks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from graphs.context import StrategyContext
from graphs.raptor.config import RaptorConfig
from graphs.raptor.tree import LayerMap, Summarize, SummaryLog
from graphs.ray_map import ModelRecipe, counted_model, map_on_ray, run_batch
from retrieval.checksums import digest_texts

log = logging.getLogger(__name__)

#: ``context -> summary`` made from a run context (:func:`graphs.raptor.graph.summarizer`).
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
    summarize = make(StrategyContext(llm=llm, config=cfg, corpus=None))  # type: ignore[arg-type]  # the contexts come with the task
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
        n = cfg.ray_batch_clusters
        batches = [[(i, contexts[i]) for i in todo[j : j + n]] for j in range(0, len(todo), n)]
        errors: list[BaseException] = []

        def on_result(batch: Batch, out: dict[str, Any]) -> bool:
            for i, summary in out["summaries"]:
                summary_log.put(keys[i], summary)
            if out["error"] is not None:
                log.warning("A RAPTOR summary failed on a Ray worker:\n%s", out["traceback"])
                errors.append(out["error"])
            return not errors

        def on_lost(batch: Batch, exc: BaseException) -> bool:
            errors.append(RuntimeError(f"a Ray task of {len(batch)} RAPTOR summaries was lost: {type(exc).__name__}: {str(exc)[:1000]}"))  # fmt: skip
            return False

        map_on_ray(summarize_batch, (make, cfg), batches, ctx.llm, cfg, on_result, on_lost)
        if errors:
            raise errors[0]
        return [summary_log.done[k] for k in keys], len(todo)

    return layer_map
