"""The run path of a batched strategy (:class:`~graphs.plugin.registry.BatchRun`: MemAgent): all
questions in one checkpointed run (:mod:`longctx.graphs.runtime.batched`), each answer's usage from
the state, the batch's wall time shared out."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.metering.usage import UsageTracker, metering_queue
from longctx.graphs.plugin.config import ConfigT
from longctx.graphs.plugin.registry import BatchRun, Strategy
from longctx.graphs.runtime.batched import (
    BatchedRun,
    Checkpointed,
    checkpointed,
    distinct_questions,
    run_batched_graph,
)
from longctx.graphs.runtime.cancel import CancelGuard, RunCancelled, cancel_point
from longctx.graphs.runtime.run_checkpoint import spread
from longctx.graphs.runtime.run_config import model_name, trace_tags, with_handler
from longctx.graphs.runtime.run_setup import RunSetup
from longctx.retrieval import default_cache_dir
from longctx.retrieval.contract import Answer, Corpus, Question, Step, Usage


def run_batch(
    run: RunSetup[ConfigT], mode: BatchRun, cancel: threading.Event | None = None
) -> list[Answer]:
    """The batched run of ``run``'s questions, as ``mode`` declares; ``cancel``: stop before the
    next model call or step once set."""
    started = time.perf_counter()
    spec, llm, corpus = run.spec, run.llm, run.corpus
    # a question repeated in a checkpointed run is read once, its answer given at every position
    questions, where = distinct_questions(mode, run.cfg, run.questions)
    # failure accounting; per-answer usage comes from the state
    tracker = UsageTracker(count=tokenizer_for(llm).count)
    progress = ChunkProgress(run.show_progress, f"{spec.name}: reading the corpus")
    callbacks = (
        run.callbacks if cancel is None else with_handler(run.callbacks, CancelGuard(cancel))
    )

    def on_advance(step: int) -> None:
        progress.advance(step)
        if cancel is not None:
            cancel_point(cancel)

    tags = trace_tags(spec.name, run.questions[0] if len(run.questions) == 1 else None, llm)
    with metering_queue() as queue:
        try:
            batched = run_batched_graph(
                spec,
                mode,
                run.cfg,
                questions,
                llm,
                corpus,
                folder=batch_folder(spec, run.cache),
                key_prefix=run.key_prefix,
                callbacks=with_handler(callbacks, tracker),
                run_name=f"longctx.{spec.name}",
                tags=tags,
                metadata={
                    "strategy": spec.name,
                    "model": model_name(llm),
                    "corpus": corpus.fingerprint[:16],
                    "questions": len(questions),
                    **(
                        {"run_id": questions[0].metadata["run_id"]}
                        if questions[0].metadata.get("run_id")
                        else {}
                    ),
                },
                on_start=progress.start,
                on_advance=on_advance,
            )
        finally:
            progress.close()
    queued = queue.seconds / len(questions)
    share = (time.perf_counter() - started) / len(questions) - queued
    answers = [
        _batch_answer(spec, mode, batched, i, q, share, queued, run.effective)
        for i, q in enumerate(questions)
    ]
    return spread(answers, where, run.questions)


def batch_folder(spec: Strategy[Any], cache_dir: str | Path | None) -> Path:
    """Where a batched strategy's runs keep their checkpoints: ``<cache>/<strategy>/``."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / spec.name


def checkpoint_held(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel,
    corpus: Corpus,
    cache_dir: str | Path | None = None,
) -> Checkpointed:
    """What the checkpoint of ``spec``'s run over these questions (as
    :func:`~graphs.runtime.run.run_strategy` would run it) already holds: the calls that run would
    not make again and the steps it finished (:func:`longctx.graphs.runtime.batched.checkpointed`);
    nothing for a single-question strategy, which keeps no checkpoint."""
    if spec.batch is None:
        return Checkpointed(Usage())
    return checkpointed(
        spec, spec.batch, cfg, list(questions), llm, corpus, folder=batch_folder(spec, cache_dir)
    )


async def arun_batch(run: RunSetup[ConfigT], mode: BatchRun) -> list[Answer]:
    """:func:`run_batch` in a worker thread; cancelling the caller stops it before its next
    model call and waits for the calls in flight, so the checkpoint holds all finished work."""
    cancel = threading.Event()
    call = functools.partial(run_batch, run, mode, cancel)
    worker = asyncio.get_running_loop().run_in_executor(
        None, functools.partial(contextvars.copy_context().run, call)
    )
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        cancel.set()
        with contextlib.suppress(RunCancelled):
            await worker  # the run's lock is released and its checkpoint closed when this returns
        raise


def _batch_answer(
    spec: Strategy[Any],
    mode: BatchRun,
    run: BatchedRun,
    i: int,
    question: Question,
    seconds: float,
    queued: float,
    effective: dict[str, Any],
) -> Answer:
    fields = mode.collect(run.final, i)
    # this call's calls; the checkpoint's earlier ones apart
    usage = Usage.from_dict(fields.get("usage")).since(run.earlier[i])
    usage.seconds = seconds
    usage.queued_seconds = queued
    # resumed_from: the step an interrupted run continued from; replayed: finished earlier,
    # answered from the checkpoint with no call made now
    last = Step(
        "final_answer",
        **fields.get(
            "final_step", {}
        ),  # the strategy's own facts (MemAgent: stream layout, whole reply, memory cuts)
        chunks=run.n_steps,
        resumed_from=run.resumed_from,
        replayed=run.replayed,
    )
    steps = [*run.steps[i], last]
    return Answer(
        answer=fields["answer"],
        raw=fields["raw"],
        evidence=[],
        usage=usage,
        steps=steps,
        strategy=spec.name,
        question=question,
        config=dict(effective),
        stopped=run.stopped,
    )


class ChunkProgress:
    """A progress bar over a batched run's chunks, with tokens per second and the ETA."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled
        self.label = label
        self.bar: Any = None

    def start(self, sizes: Sequence[int], start_chunk: int) -> None:
        """Open the bar over steps of ``sizes`` tokens at ``start_chunk`` (a resumed run starts
        part-way)."""
        self.sizes = sizes
        self.start_chunk = start_chunk
        self.began = time.perf_counter()
        self.bar = tqdm(
            total=len(sizes),
            initial=start_chunk,
            desc=self.label,
            unit="chunk",
            disable=not self.enabled,
        )

    def advance(self, chunk_index: int) -> None:
        """All questions have read chunk ``chunk_index - 1``."""
        done = sum(self.sizes[self.start_chunk : chunk_index])
        rate = done / max(time.perf_counter() - self.began, 1e-9)
        self.bar.set_postfix(
            tokens_per_s=f"{rate:,.0f}",
            tokens=f"{sum(self.sizes[:chunk_index]):,}/{sum(self.sizes):,}",
        )
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar if it was opened."""
        if self.bar is not None:
            self.bar.close()
