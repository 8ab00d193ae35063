"""One run path: any registered strategy over one or many questions.

``run_strategy`` is what ``longctx.agents.answer`` / ``answer_many``, the experiment runner and
Self-Route's fallback leg call. How a strategy runs is declared on its registry entry
(:class:`~graphs.plugin.registry.SingleRun` or :class:`~graphs.plugin.registry.BatchRun`), never
guessed here. Every answer's usage is its own: single runs count each question's calls
with their own tracker; batched runs keep per-question usage in the checkpointed state,
and share out the batch's wall time, so sums over answers add up to the run.

The parts live beside it: :mod:`longctx.graphs.runtime.run_setup` (options and what both twins
share), :mod:`longctx.graphs.runtime.run_single` and :mod:`longctx.graphs.runtime.run_batched` (the
two run modes), :mod:`longctx.graphs.runtime.run_config` (callbacks, tags, the effective config) and
:mod:`longctx.graphs.runtime.event_loop` (the private event loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Unpack

from longctx.graphs.calls.llm import run_client
from longctx.graphs.plugin.config import ConfigT
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.event_loop import gather_or_cancel, run_sync
from longctx.graphs.runtime.heap import during_runs
from longctx.graphs.runtime.run_batched import arun_batch, run_batch
from longctx.graphs.runtime.run_checkpoint import repeats, spread
from longctx.graphs.runtime.run_setup import RunOptions, RunSetup
from longctx.graphs.runtime.run_single import arun_single, run_single
from longctx.retrieval.contract import Answer, Question


@during_runs
def run_strategy(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    questions: Sequence[Question],
    *,
    use_async: bool | None = None,
    **options: Unpack[RunOptions],
) -> list[Answer]:
    """Answer ``questions`` over ``corpus`` with ``spec`` and its (validated) ``cfg``, answers in
    the order of ``questions``.

    Args:
        spec: The registered strategy.
        cfg: Its config (``spec.make_config(...)``).
        questions: One or many.
        use_async: Drive single-question graphs with ``ainvoke`` on the library's private
            event loop (:func:`~graphs.runtime.event_loop.run_sync`; native async nodes such as
            PAI's judges await the model) instead of ``invoke`` in threads (their sync twins).
            ``None`` (default): async for a strategy whose run mode declares ``async_fan_out`` (PAI)
            when the model has its own async client (1.14x against 1.33x of the ideal judge makespan
            at 32 calls in flight, docs/pai.md), threads otherwise (sync-only models, and graphs of
            sync nodes, which the loop would squeeze into its small default executor). Async
            services use :func:`arun_strategy` (``aanswer``). Batched strategies run as before.
        **options: :class:`RunOptions`: ``llm``, ``corpus``, ``index``, ``budget`` ...
    """
    run = RunSetup(spec, cfg, list(questions), options)
    if run.awaits(use_async):
        return run_sync(_arun(run))
    run.indexed(run.build_index() if run.needs_index else run.index)
    if run.batch is not None:
        answers = run_batch(run, run.batch)
    else:
        graph, context = spec.build_graph(cfg), run.context(run.llm)
        runs, where = _runs(run, context)
        with ThreadPoolExecutor(max_workers=max(1, min(run.concurrency, len(runs)))) as pool:
            answers = list(
                pool.map(
                    lambda q: run_single(
                        spec, graph, context, q, run.callbacks, run.effective, run.checkpoint
                    ),
                    runs,
                )
            )
        answers = spread(answers, where, run.questions)
    return run.finish(answers)


def _runs(run: RunSetup[ConfigT], context: Any) -> tuple[list[Question], list[int]]:
    """The single runs to make and each position's run: checkpointed, a question asked twice is one
    run (:func:`~graphs.runtime.run_checkpoint.repeats`); otherwise each position is its own."""
    if run.checkpoint:
        return repeats(run.spec, context, run.questions)
    return list(run.questions), list(range(len(run.questions)))


@during_runs
async def arun_strategy(
    spec: Strategy[ConfigT],
    cfg: ConfigT,
    questions: Sequence[Question],
    **options: Unpack[RunOptions],
) -> list[Answer]:
    """:func:`run_strategy` for an event loop: the same answers, with the graphs' ``ainvoke``.

    Single-question strategies run each question's graph with ``ainvoke`` (native async
    nodes await the model; sync nodes run in the loop's executor), at most ``concurrency``
    questions at once. A batched strategy (MemAgent: a sync SQLite checkpointer) runs in a
    worker thread. Cancelling the awaiting task stops issuing model calls: single runs are
    cancelled where they wait; a batched run stops before its next call, waits for the calls
    in flight, and keeps its checkpoint, so the next identical call resumes where it stopped.
    Building the index runs in a worker thread too, so the loop stays responsive.
    """
    return await _arun(RunSetup(spec, cfg, list(questions), options))


async def _arun(run: RunSetup[ConfigT]) -> list[Answer]:
    """The awaiting twin of :func:`run_strategy`'s body (the setup and policy are
    :class:`~graphs.runtime.run_setup.RunSetup`'s)."""
    run.indexed(await asyncio.to_thread(run.build_index) if run.needs_index else run.index)
    if run.batch is not None:
        answers = await arun_batch(run, run.batch)
    else:
        graph, gate = run.spec.build_graph(run.cfg), asyncio.Semaphore(max(1, run.concurrency))
        async with run_client(run.llm) as run_llm:
            context = run.context(run_llm)

            async def one(question: Question) -> Answer:
                async with gate:
                    return await arun_single(
                        run.spec,
                        graph,
                        context,
                        question,
                        run.callbacks,
                        run.effective,
                        run.checkpoint,
                    )

            runs, where = _runs(run, context)
            answers = spread(await gather_or_cancel([one(q) for q in runs]), where, run.questions)
    return run.finish(answers)


__all__ = ["RunOptions", "arun_strategy", "run_strategy"]
