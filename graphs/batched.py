"""Running a batched, checkpointed strategy graph (MemAgent) to completion, resuming if it can.

One implementation serves ``answer()`` / ``answer_many()`` and Self-Route's fallback leg:
the run is keyed by (strategy, corpus fingerprint, questions, config, model); every step
is checkpointed in SQLite (``durability="sync"``: a step is on disk before the next
starts) in the run's own folder ``<folder>/<key>/`` (see :mod:`memory.checkpoints`),
superseded checkpoints dropped every ``PRUNE_EVERY_CHUNKS`` chunks; an interrupted run
continues from its last step; a finished one is pruned to its final checkpoint and replayed from it with no model call. The run key is locked while it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver

from graphs.budget import BudgetReached
from graphs.context import StrategyContext
from graphs.llm import model_id
from graphs.registry import Strategy
from memory import CHECKPOINTS_FILE, TRACE_FILE, MemoryTrace, lock_run, open_checkpointer, prune_checkpoints, run_folder, thread_key
from retrieval.contract import Corpus, Question, Step

#: Config fields that change how a run executes, not what it computes (kept out of its key).
RUNTIME_FIELDS = ("concurrency", "resume", "trace_chars")
#: A running run drops its superseded checkpoints every this many chunks. Resuming reads only
#: the latest, so storage stays a few dozen steps instead of growing with the corpus (a
#: 10M-token corpus is 2,000 steps: ~190 MB of checkpoints for 8 questions before this).
PRUNE_EVERY_CHUNKS = 50


@dataclass
class BatchedRun:
    """What a batched run left: final state, per-question memory steps, and how it ran."""

    final: dict[str, Any]
    steps: list[list[Step]]
    resumed_from: int | None
    replayed: bool
    #: ``"budget"`` when the run reached its budget before finishing (its checkpoint is kept), else ``None``.
    stopped: str | None = None


def run_batched_graph(
    spec: Strategy,
    cfg: Any,
    questions: list[Question],
    llm: BaseChatModel,
    corpus: Corpus,
    *,
    folder: Path,
    key_prefix: str | None = None,
    callbacks: Any = None,
    run_name: str | None = None,
    tags: list[str] | None = None,
    metadata: dict[str, Any] | None = None,
    on_start: Callable[[Any, int], None] | None = None,
    on_advance: Callable[[int], None] | None = None,
) -> BatchedRun:
    """Run (or resume, or replay) ``spec``'s graph for ``questions``; checkpoints go under ``folder``.

    ``on_start(context, start_chunk)`` and ``on_advance(chunk_index)`` let a caller drive
    a progress bar; ``key_prefix`` separates runs of the same strategy made for another
    purpose (Self-Route's fallback leg).
    """
    mode = spec.batch_mode
    thread = run_key(spec, cfg, questions, llm, corpus.fingerprint, key_prefix)
    run_dir = run_folder(folder, thread)  # one checkpoint + trace database per run key
    held = contextlib.ExitStack()
    if cfg.resume:
        held.enter_context(lock_run(run_dir))  # a second identical run at once: RunInUse, naming this one
    trace = MemoryTrace(run_dir / TRACE_FILE if cfg.resume else ":memory:")
    on_disk = open_checkpointer(run_dir / CHECKPOINTS_FILE) if cfg.resume else None  # None: in memory, nothing to prune
    saver = on_disk if on_disk is not None else InMemorySaver()
    try:
        ctx = mode.prepare_context(StrategyContext(llm=llm, config=cfg, corpus=corpus), trace=trace, thread=thread, questions=questions)
        graph = spec.build_graph(cfg, checkpointer=saver)
        run_config: dict[str, Any] = {
            "configurable": {"thread_id": thread},
            "recursion_limit": 2 * len(ctx.chunks) + 10,
            "max_concurrency": cfg.concurrency,
            "callbacks": callbacks,
        }
        run_config.update({k: v for k, v in (("run_name", run_name), ("tags", tags), ("metadata", metadata)) if v})
        snapshot = graph.get_state(run_config)
        resumed_from = snapshot.values.get("chunk_index") if snapshot.next else None
        replayed = bool(snapshot.values) and not snapshot.next
        stopped = None
        continued = None
        start = snapshot.values.get("continued_from") if snapshot.values else None  # a continued run resumed or replayed
        if not snapshot.values and getattr(cfg, "continue_from_prefix", False):
            continued = finished_prefix_run(spec, cfg, questions, llm, corpus, folder, key_prefix)
            start = continued[0] if continued is not None else None
        if start:  # read only the documents added since the earlier run
            ctx = mode.prepare_context(StrategyContext(llm=llm, config=cfg, corpus=corpus), trace=trace, thread=thread,
                                       questions=questions, start_document=start)  # fmt: skip
            run_config["recursion_limit"] = 2 * len(ctx.chunks) + 10
        if not replayed:
            if on_start:
                on_start(ctx, resumed_from or 0)
            payload = None if snapshot.next else dict(mode.initial_state(questions, ctx))
            if payload is not None and continued is not None:
                payload["memories"] = dict(continued[1])
                payload["continued_from"] = continued[0]
            try:
                for update in graph.stream(payload, run_config, context=ctx, stream_mode="updates", durability="sync"):
                    if "advance" in update:
                        k = update["advance"]["chunk_index"]
                        if on_advance:
                            on_advance(k)
                        if on_disk is not None and k % PRUNE_EVERY_CHUNKS == 0:
                            prune_checkpoints(on_disk, thread, compact=False)
            except BudgetReached:
                stopped = "budget"  # the checkpoint holds every finished step: a larger budget resumes from it
        final = graph.get_state(run_config).values
        if not replayed and on_disk is not None and stopped is None:
            prune_checkpoints(on_disk, thread)  # finished: keep only the final state replay reads
        steps = [trace_steps(trace.snapshots(thread, i), cfg.trace_chars) for i in range(len(questions))]
    finally:
        trace.close()
        if on_disk is not None:
            on_disk.conn.close()
        held.close()
    return BatchedRun(final=final, steps=steps, resumed_from=resumed_from, replayed=replayed, stopped=stopped)


def run_key(spec: Strategy, cfg: Any, questions: list[Question], llm: BaseChatModel, corpus_fingerprint: str, key_prefix: str | None) -> str:
    """The key of one run: strategy, corpus, questions, config (runtime fields and an unset
    ``continue_from_prefix`` left out, so keys made before that option existed still hold) and model."""
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in RUNTIME_FIELDS}
    if not config.get("continue_from_prefix", True):
        config.pop("continue_from_prefix")
    return thread_key(
        strategy=key_prefix or spec.name,
        corpus=corpus_fingerprint,
        questions=[(q.render(), q.instruction, q.answer_budget(cfg.max_new_tokens)) for q in questions],
        config=config,
        model=model_id(llm),
    )


def finished_prefix_run(
    spec: Strategy, cfg: Any, questions: list[Question], llm: BaseChatModel, corpus: Corpus, folder: Path, key_prefix: str | None
) -> tuple[int, dict[str, str]] | None:
    """``(documents, final memories)`` of the finished run over the longest proper prefix of
    ``corpus`` (same questions, config and model; run with or without ``continue_from_prefix``),
    or None when there is none."""
    plain = dataclasses.replace(cfg, continue_from_prefix=False)
    prefixes = list(corpus.prefix_fingerprints())[:-1]
    for n in range(len(prefixes), 0, -1):
        for variant in (cfg, plain):
            path = run_folder(folder, run_key(spec, variant, questions, llm, prefixes[n - 1], key_prefix)) / CHECKPOINTS_FILE
            if not path.exists():
                continue
            saver = open_checkpointer(path)
            try:
                thread = path.parent.name
                state = spec.build_graph(cfg, checkpointer=saver).get_state({"configurable": {"thread_id": thread}})
            finally:
                saver.conn.close()
            if state.values and not state.next and state.values.get("memories"):
                return n, dict(state.values["memories"])
    return None


def trace_steps(snapshots: list[dict[str, Any]], trace_chars: int | None) -> list[Step]:
    """Memory snapshots as ``Answer.steps`` entries, each memory cut to ``trace_chars``."""
    return [
        Step(
            "update_memory",
            chunk=s["chunk"],
            memory=s["memory"] if trace_chars is None else s["memory"][:trace_chars],
            tokens=s["tokens"],
            cut=s["cut"],
        )
        for s in snapshots
    ]
