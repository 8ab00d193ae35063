"""The Map stage on Ray (``map_executor="ray"``): the documents missing from the record cache
are extracted by Ray tasks, a batch of documents per task, at most ``ray_max_in_flight``
tasks at once per answer, through the shared map (:mod:`longctx.graphs.runtime.ray_map`: the model's
recipe, bounded submission over the endpoints, the workers' usage).

A task runs on a worker what the local ``extract`` node runs
(:func:`~graphs.structured.mapping.extract_document`, its batch on ``concurrency`` threads): the
same single flight, the same per-document lock in the cache folder and the same record log (the
caller's cache folder, passed by path), so a document is extracted once whoever asks, ``reduce``
reads what the tasks stored, and a killed run resumes from the log.

Failures: a document whose extraction raised on the worker raises in the caller once the
tasks in flight have finished (as the local fan-out raises; what finished is cached); a task
that Ray itself lost (worker died, arguments that did not unpickle) makes each of its
documents an ``extract`` step marked ``degraded`` with no records, not cached, exactly as a
locally malformed document, so the answer goes on and a rerun extracts them.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig

from longctx.graphs.plugin.api import (
    ModelRecipe,
    RecordCache,
    StrategyContext,
    counted_model,
    map_on_ray,
    model_recipe,
    portable_error,
    report_progress,
)
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.mapping import extract_document, extraction_model
from longctx.graphs.structured.stores import store_root
from longctx.retrieval.contract import Document, Step

log = logging.getLogger(__name__)

#: One Ray task's work: ``(task, document)`` pairs of one schema key.
Batch = list[tuple[dict[str, Any], Document]]


def extract_batch(
    recipe: ModelRecipe,
    cfg: StructuredConfig,
    root: str | None,
    model: str,
    batch: Sequence[tuple[dict[str, Any], Document]],
) -> dict[str, Any]:
    """One Ray task: the documents of ``batch`` (``(task, document)`` pairs of one schema key)
    extracted on ``cfg.concurrency`` threads into the record log of (``root``, key, ``model``).

    Returns ``{"results": [node update or {"doc_index", "error"}], "usage": Usage fields}``.
    """
    llm, tracker = counted_model(recipe)  # this task's calls, counted
    ctx = StrategyContext(
        llm=llm,
        config=cfg,
        corpus=None,  # type: ignore[arg-type]  # the documents come with the tasks
        cache_dir=Path(root) if root else None,
    )
    # the caller's model id: the caller's log
    cache = RecordCache(store_root(root), batch[0][0]["cache_key"], model) if root else None

    def one(item: tuple[dict[str, Any], Document]) -> dict[str, Any]:
        task, doc = item
        try:
            return extract_document(task, ctx, cache, doc)
        except Exception as exc:  # noqa: BLE001 - raised in the caller, after the other documents
            # an OpenAI-client model already raises ChatModelError (server, status, retries)
            return {
                "doc_index": task["doc_index"],
                "error": portable_error(exc),
                "traceback": traceback.format_exc(limit=6)[-3000:],
            }

    with ThreadPoolExecutor(max_workers=max(1, min(cfg.concurrency, len(batch)))) as pool:
        results = list(pool.map(one, batch))
    return {"results": results, "usage": asdict(tracker.usage)}


def lost_document(task: dict[str, Any], doc: Document, why: str) -> dict[str, Any]:
    """The node update of a document whose Ray task was lost: no records, one failed window,
    degraded."""
    extraction = {
        "doc_index": task["doc_index"],
        "records": [],
        "calls": 0,
        "windows": 1,
        "failed_windows": 1,
        "errors": [why],
        "unverified_quotes": 0,
    }
    step = Step(
        "extract",
        doc_id=doc.doc_id,
        title=doc.title,
        windows=1,
        failed_windows=1,
        calls=0,
        errors=[why],
        executor="ray",
        degraded="its Ray task failed: no records (not cached; a rerun extracts it)",
    )
    return {"extractions": [extraction], "steps": [step]}


def cached_document(task: dict[str, Any], hit: dict[str, Any]) -> dict[str, Any]:
    """The node update of a document found in the record log (stored by a task lost after it)."""
    return {
        "extractions": [
            {
                "doc_index": task["doc_index"],
                "records": hit["records"],
                "calls": 0,
                "windows": hit.get("windows", 1),
                "failed_windows": 0,
                "errors": [],
                "unverified_quotes": hit.get("unverified_quotes", 0),
                "shared": True,
            }
        ]
    }


def run_on_ray(
    tasks: list[dict[str, Any]],
    ctx: StrategyContext[StructuredConfig],
    cache: RecordCache | None,
    root: Path | None,
    config: RunnableConfig | None = None,
) -> dict[str, Any]:
    """The ``extract`` updates of ``tasks`` (the local node's task dicts), made by Ray tasks.

    ``cache``: the caller's record cache under the cache folder ``root`` (both ``None`` with
    ``cache=False``); the tasks write into the same log, and a complete record that is not in
    it afterwards (its task ran on another node, with its own disk) is appended here.
    ``config``: the node's run config, whose callbacks get the workers' usage.
    """
    cfg: StructuredConfig = ctx.config
    where = str(Path(root).resolve()) if cache is not None and root is not None else None
    model = cache.model if cache is not None else extraction_model(ctx.llm)
    docs = ctx.corpus.documents
    n = cfg.ray_batch_documents
    batches: list[Batch] = [
        [(t, docs[t["doc_index"]]) for t in tasks[i : i + n]] for i in range(0, len(tasks), n)
    ]
    extractions: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def on_result(batch: Batch, out: dict[str, Any]) -> bool:
        report_progress("extract", advance=len(batch))
        for result in out["results"]:
            if "error" in result:
                log.warning(
                    "Extraction of document %s failed on a Ray worker:\n%s",
                    docs[result["doc_index"]].doc_id,
                    result["traceback"],
                )
                errors.append(result["error"])
                continue
            extractions.extend(result["extractions"])
            steps.extend(result.get("steps", []))
        return not errors

    def on_lost(batch: Batch, exc: BaseException) -> bool:  # the batch's documents degrade
        report_progress("extract", advance=len(batch))
        why = f"Ray task failed: {type(exc).__name__}: {str(exc)[:1000]}"
        if cache is not None:
            cache.refresh()  # what the task stored before it was lost
        for task, doc in batch:
            hit = cache.get(task["fingerprint"], refresh=False) if cache is not None else None
            part = lost_document(task, doc, why) if hit is None else cached_document(task, hit)
            extractions.extend(part["extractions"])
            steps.extend(part.get("steps", []))
        return not errors

    run = map_on_ray(
        extract_batch, (cfg, where, model), batches, ctx.llm, cfg, on_result, on_lost, config
    )
    if cache is not None:
        _store_missing(
            cache,
            extractions,
            {t["doc_index"]: (t["fingerprint"], docs[t["doc_index"]].doc_id) for t in tasks},
        )
    if errors:
        raise errors[0]
    summary = Step(
        "extract_ray",
        documents=len(tasks),
        tasks=run.tasks,
        failed_tasks=run.failed_tasks,
        batch_documents=n,
        endpoints=run.endpoints,
        max_in_flight=cfg.ray_max_in_flight,
        task_cpus=run.task_cpus,
        calls=run.usage.llm_calls,
        seconds=run.seconds,
    )
    return {"extractions": extractions, "steps": [summary, *steps]}


def _store_missing(
    cache: RecordCache, extractions: list[dict[str, Any]], keys: dict[int, tuple[str, str]]
) -> None:
    """Append the complete extractions the caller's log lacks (their task ran on another node's
    disk)."""
    cache.refresh()
    for e in extractions:
        fingerprint, doc_id = keys[e["doc_index"]]
        if not e["failed_windows"] and cache.get(fingerprint, refresh=False) is None:
            cache.put(
                fingerprint,
                e["records"],
                windows=e["windows"],
                calls=e["calls"],
                doc_id=doc_id,
                unverified_quotes=e["unverified_quotes"],
            )


__all__ = [
    "ModelRecipe",
    "cached_document",
    "extract_batch",
    "lost_document",
    "model_recipe",
    "run_on_ray",
]
