"""The run path of a single-question strategy (:class:`~graphs.plugin.registry.SingleRun`): one
graph run per question, with its own usage tracker, read back through
:class:`~graphs.plugin.answer_state.AnswerState`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from langchain_core.callbacks import Callbacks
from langchain_core.runnables import RunnableConfig

from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.metering.budget_stop import ainvoke_keeping, invoke_keeping
from longctx.graphs.metering.usage import UsageTracker, metering_queue
from longctx.graphs.plugin.answer_state import AnswerState
from longctx.graphs.plugin.config import ConfigT
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.nodes import CompiledGraph
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.run_checkpoint import checkpointed_single
from longctx.graphs.runtime.run_config import model_name, trace_tags, with_handler
from longctx.retrieval import Hit
from longctx.retrieval.contract import Answer, Evidence, Question, Step


def run_single(
    spec: Strategy[ConfigT],
    graph: CompiledGraph,
    context: StrategyContext[ConfigT],
    question: Question,
    callbacks: Callbacks,
    effective: dict[str, Any],
    checkpoint: bool = False,
) -> Answer:
    """``question`` answered by one run of ``graph`` (a budget stop is an answer with
    ``stopped="budget"`` that keeps the steps, hits and evidence gathered so far:
    :mod:`longctx.graphs.metering.budget_stop`); ``checkpoint``: resumable
    (:mod:`longctx.graphs.runtime.run_checkpoint`; a stopped run keeps its checkpoint for a larger
    budget)."""
    started = time.perf_counter()
    tracker, run_config = _run_config(spec, context, question, callbacks)
    fresh = AnswerState(question=question, steps=[])
    resumable = checkpointed_single(spec, graph, context, question, tracker, run_config, checkpoint)
    with metering_queue() as queue, resumable as run:
        final = invoke_keeping(
            spec, run.graph, run.input(fresh), context, run.config, **run.invoke_options
        )
        run.finished = not final.get("stopped")
    done = single_answer(
        spec,
        final,
        tracker,
        started=started,
        queued=queue.seconds,
        question=question,
        effective=effective,
    )
    return run.settled(done)


async def arun_single(
    spec: Strategy[ConfigT],
    graph: CompiledGraph,
    context: StrategyContext[ConfigT],
    question: Question,
    callbacks: Callbacks,
    effective: dict[str, Any],
    checkpoint: bool = False,
) -> Answer:
    """:func:`run_single` with the graph's ``astream`` (checkpointed: in a worker thread, its
    checkpointer is sync SQLite)."""
    if checkpoint:
        return await asyncio.to_thread(
            run_single, spec, graph, context, question, callbacks, effective, True
        )
    started = time.perf_counter()
    tracker, run_config = _run_config(spec, context, question, callbacks)
    tracker.run_inline = True  # thread-safe and cheap: called on the loop, not through its executor
    with metering_queue() as queue:  # this task's context: its executor calls copy it
        start = AnswerState(question=question, steps=[])
        final = await ainvoke_keeping(spec, graph, start, context, run_config)
    return single_answer(
        spec,
        final,
        tracker,
        started=started,
        queued=queue.seconds,
        question=question,
        effective=effective,
    )


def _run_config(
    spec: Strategy[ConfigT],
    context: StrategyContext[ConfigT],
    question: Question,
    callbacks: Callbacks,
) -> tuple[UsageTracker, RunnableConfig]:
    tracker = UsageTracker(count=tokenizer_for(context.llm).count)
    run_config = RunnableConfig(
        callbacks=with_handler(callbacks, tracker),
        run_name=f"longctx.{spec.name}",
        tags=trace_tags(spec.name, question, context.llm),
        metadata={
            "strategy": spec.name,
            "model": model_name(context.llm),
            "corpus": context.corpus.fingerprint[:16],
            **dict(question.metadata),
        },
    )
    return tracker, run_config


def evidence(hit: Hit) -> Evidence:
    """A retrieved chunk as answer evidence."""
    c = hit.chunk
    components = (
        {name: dict(view) for name, view in hit.components.items()} if hit.components else None
    )
    return Evidence(
        doc_id=c.doc_id,
        title=c.title,
        text=c.text,
        score=hit.score,
        chunk_id=c.chunk_id,
        rank=hit.rank,
        components=components,
    )


def single_answer(
    spec: Strategy[ConfigT],
    final: AnswerState,
    tracker: UsageTracker,
    *,
    started: float,
    queued: float,
    question: Question,
    effective: dict[str, Any],
) -> Answer:
    """The :class:`Answer` of a final state: its answer fields, its hits and evidence, and the
    tracker's usage."""
    usage = tracker.usage
    usage.queued_seconds = queued
    usage.seconds = time.perf_counter() - started - queued
    return Answer(
        answer=final.get("answer", ""),
        raw=final.get("raw", ""),
        evidence=[evidence(h) for h in final.get("hits", [])] + list(final.get("evidence", [])),
        usage=usage,
        steps=[Step.coerce(s) for s in final.get("steps", [])],
        strategy=spec.name,
        question=question,
        config=dict(effective),
        messages=list(tracker.last_messages),
        stopped=final.get("stopped"),
    )
