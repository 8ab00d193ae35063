"""Running a batched, checkpointed strategy graph (a :class:`~graphs.plugin.registry.BatchRun`:
MemAgent) to completion, resuming if it can.

One implementation serves ``answer()`` / ``answer_many()`` and Self-Route's fallback leg:
the run is keyed by (strategy, corpus fingerprint, questions, config, model and every
setting its requests carry, tokenizer); every step
is checkpointed in SQLite (``durability="sync"``: a step is on disk before the next
starts) in the run's own folder ``<folder>/<key>/`` (see :mod:`longctx.memory.checkpoints`),
superseded checkpoints dropped every ``PRUNE_EVERY_CHUNKS`` chunks; an interrupted run
continues from its last step; a finished one is pruned to its final checkpoint and replayed from it
with no model call. The run key is locked while it runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver

from longctx.graphs.calls.llm import model_id, tokenizer_id
from longctx.graphs.calls.request_settings import request_settings
from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.metering.budget_left import budget_left
from longctx.graphs.plugin.config import StrategyConfig
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import BatchRun, BatchSettings, Strategy
from longctx.memory import (
    CHECKPOINTS_FILE,
    TRACE_FILE,
    MemoryTrace,
    lock_run,
    open_checkpointer,
    prune_checkpoints,
    run_folder,
    thread_key,
)
from longctx.memory.checkpoints import with_state_types
from longctx.retrieval.contract import Corpus, Question, Step, Usage

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
    #: ``"budget"`` when the run reached its budget before finishing (its checkpoint is kept), else
    #: ``None``.
    stopped: str | None = None
    #: Steps of the run (MemAgent: the chunks it read).
    n_steps: int = 0
    #: Per question, the usage the checkpoint held when this call began (earlier calls' work, which
    #: it did not redo).
    earlier: list[Usage] = field(default_factory=list)


def run_batched_graph(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
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
    on_start: Callable[[Sequence[int], int], None] | None = None,
    on_advance: Callable[[int], None] | None = None,
) -> BatchedRun:
    """Run (or resume, or replay) ``spec``'s graph, run as its ``mode`` declares, for ``questions``;
    checkpoints go under ``folder``.

    ``on_start(step_sizes, start_step)`` and ``on_advance(step_index)`` let a caller drive
    a progress bar; ``key_prefix`` separates runs of the same strategy made for another
    purpose (Self-Route's fallback leg).
    """
    settings = mode.settings(cfg)
    thread = run_key(spec, mode, cfg, questions, llm, corpus.fingerprint, key_prefix)
    run_dir = run_folder(folder, thread)  # one checkpoint + trace database per run key
    held = contextlib.ExitStack()
    if settings.resume:
        # a second identical run at once: RunInUse, naming this one
        held.enter_context(lock_run(run_dir))
    trace = MemoryTrace(run_dir / TRACE_FILE if settings.resume else ":memory:")
    # None: in memory, nothing to prune
    on_disk = open_checkpointer(run_dir / CHECKPOINTS_FILE) if settings.resume else None
    saver = on_disk if on_disk is not None else InMemorySaver()

    def prepare(start_document: int = 0) -> tuple[Any, Sequence[int]]:
        ctx = mode.prepare_context(
            StrategyContext(llm=llm, config=cfg, corpus=corpus),
            trace=trace,
            thread=thread,
            questions=questions,
            **({"start_document": start_document} if start_document else {}),
        )
        # whatever the mode's context copied
        ctx = dataclasses.replace(ctx, budget=budget_left(callbacks))
        return ctx, mode.step_sizes(ctx)

    try:
        ctx, sizes = prepare()
        graph = spec.build_graph(cfg, checkpointer=saver)
        if on_disk is not None:  # a plug-in state's own classes are read back too
            graph = graph.copy(update={"checkpointer": with_state_types(on_disk, graph)})
        run_config: dict[str, Any] = {
            "configurable": {"thread_id": thread},
            "max_concurrency": settings.concurrency,
            "callbacks": callbacks,
            **{
                k: v
                for k, v in (("run_name", run_name), ("tags", tags), ("metadata", metadata))
                if v
            },
        }
        snapshot = graph.get_state(
            run_config
        )  # its values include the finished tasks of an interrupted step
        earlier = recorded_usage(mode, snapshot.values, len(questions))
        resumed_from = snapshot.values.get(mode.progress_key) if snapshot.next else None
        replayed = bool(snapshot.values) and not snapshot.next
        stopped = None
        start, payload = _continued(
            spec, mode, cfg, questions, llm, corpus, folder, key_prefix, snapshot.values, settings
        )
        if start:  # read only the documents added since the earlier run
            ctx, sizes = prepare(start)
        run_config["recursion_limit"] = 2 * len(sizes) + 10  # two supersteps a step, and the ends
        if not replayed:
            if on_start:
                on_start(sizes, resumed_from or 0)
            if not snapshot.next:
                payload = {**mode.initial_state(questions, ctx), **payload}
            stopped = _follow(
                graph.stream(
                    None if snapshot.next else payload,
                    run_config,
                    context=ctx,
                    stream_mode="updates",
                    durability="sync",
                ),
                mode,
                on_advance,
                on_disk,
                thread,
            )
        final = graph.get_state(run_config).values
        if not replayed and on_disk is not None and stopped is None:
            prune_checkpoints(on_disk, thread)  # finished: keep only the final state replay reads
        steps = [
            trace_steps(trace.snapshots(thread, i), settings.trace_chars, mode.trace_step)
            for i in range(len(questions))
        ]
    finally:
        trace.close()
        if on_disk is not None:
            on_disk.conn.close()
        held.close()
    return BatchedRun(
        final=final,
        steps=steps,
        resumed_from=resumed_from,
        replayed=replayed,
        stopped=stopped,
        n_steps=len(sizes),
        earlier=earlier,
    )


def _follow(
    updates: Generator[dict[str, Any], None, None],
    mode: BatchRun,
    on_advance: Callable[[int], None] | None,
    on_disk: Any,
    thread: str,
) -> str | None:
    """Run a graph's stream of ``updates`` to its end, reporting each step and pruning the
    checkpoints on disk every :data:`PRUNE_EVERY_CHUNKS` steps: ``"budget"`` when the budget
    stopped it (the checkpoint holds every finished step: a larger budget resumes from it).

    The stream is closed on the way out, whatever ends it: an error's traceback keeps this frame,
    and a stream left open would not end its run (a cancelled run's callbacks never hear of it).
    """
    try:
        for update in updates:
            if mode.advance_node in update:
                k = update[mode.advance_node][mode.progress_key]
                if on_advance:
                    on_advance(k)
                if on_disk is not None and k % PRUNE_EVERY_CHUNKS == 0:
                    prune_checkpoints(on_disk, thread, compact=False)
    except BudgetReached:
        return "budget"
    finally:
        updates.close()
    return None


def recorded_usage(mode: BatchRun, values: Mapping[str, Any], questions: int) -> list[Usage]:
    """Per question, the usage a run's state records (``mode.collect``'s ``usage``; none for an
    empty state)."""
    if not values:
        return [Usage() for _ in range(questions)]
    return [Usage.from_dict(mode.collect(values, i).get("usage")) for i in range(questions)]


def _continued(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
    questions: list[Question],
    llm: BaseChatModel,
    corpus: Corpus,
    folder: Path,
    key_prefix: str | None,
    values: Mapping[str, Any],
    settings: BatchSettings,
) -> tuple[int | None, dict[str, Any]]:
    """``(documents continued from, state a fresh run starts with beyond its initial state)``: a run
    already under way (or finished) continued from what its state records; a fresh one with
    ``continue_from_prefix`` from the finished run over the longest earlier prefix, when there is
    one."""
    how = mode.continuation
    if how is None:
        return None, {}
    if values:
        return values.get(how.documents_key), {}
    if not settings.continue_from_prefix:
        return None, {}
    earlier = finished_prefix_run(spec, mode, cfg, questions, llm, corpus, folder, key_prefix)
    if earlier is None:
        return None, {}
    documents, carried = earlier
    return documents, {**carried, how.documents_key: documents}


def run_key(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
    questions: list[Question],
    llm: BaseChatModel,
    corpus_fingerprint: str,
    key_prefix: str | None,
    *,
    model: Mapping[str, Any] | None = None,
) -> str:
    """The key of one run: strategy, corpus, questions (with the final call's sampling where their
    protocol sets it), config (its runtime fields and an unset continuation option left out, so
    keys made before that option existed still hold) and :func:`model_key` (``model``: already
    made)."""
    config = {k: v for k, v in dataclasses.asdict(cfg).items() if k not in mode.runtime_fields}
    if mode.continuation is not None and not config.get(mode.continuation.option, True):
        config.pop(mode.continuation.option)
    budget = mode.settings(cfg).answer_budget
    return thread_key(
        strategy=key_prefix or spec.name,
        corpus=corpus_fingerprint,
        questions=[question_key(q, budget) for q in questions],
        config=config,
        **(model if model is not None else model_key(llm)),
    )


def distinct_questions(
    mode: BatchRun, cfg: StrategyConfig, questions: Sequence[Question]
) -> tuple[list[Question], list[int]]:
    """The questions a batched run reads, each :func:`question_key` once, and for each position of
    ``questions`` the index of its question there: in a checkpointed run (``resume``) a question
    asked twice is read once (its answer given back at both by
    :func:`~graphs.runtime.run_checkpoint.spread`), as a checkpointed single run's repeat is; a run
    in memory reads every position (to sample a question twice). A batch without repeats is
    unchanged, and so is its run key."""
    settings = mode.settings(cfg)
    if not settings.resume:
        return list(questions), list(range(len(questions)))
    return once_each(
        questions, lambda q: json.dumps(question_key(q, settings.answer_budget), default=str)
    )


def once_each(
    questions: Sequence[Question], key: Callable[[Question], str]
) -> tuple[list[Question], list[int]]:
    """``questions`` with each ``key`` kept once (its first position), and for each position the
    index of its question there: how a checkpointed run, batched or single, reads a repeat once."""
    runs: list[Question] = []
    first: dict[str, int] = {}
    where: list[int] = []
    for question in questions:
        k = key(question)
        if k not in first:
            first[k] = len(runs)
            runs.append(question)
        where.append(first[k])
    return runs, where


def model_key(llm: BaseChatModel) -> dict[str, Any]:
    """The model's part of a run key: name and server, every setting its requests carry
    (:func:`longctx.graphs.calls.request_settings.request_settings`) and the tokenizer that cuts the
    windows."""
    return {
        "model": model_id(llm),
        "requests": request_settings(llm),
        "tokenizer": tokenizer_id(llm),
    }


def question_key(question: Question, budget: int) -> tuple[Any, ...]:
    """A question's part of a run key: its text, instruction and answer budget, and the
    protocol's temperature and stop sequences of the final call where it sets them."""
    protocol = question.protocol
    sampling = (
        {"temperature": protocol.temperature, "stop": protocol.stop} if protocol is not None else {}
    )
    sampling = {k: v for k, v in sampling.items() if v is not None}
    return (
        question.render(),
        question.instruction,
        question.answer_budget(budget),
        *([sampling] if sampling else []),
    )


def finished_prefix_run(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
    questions: list[Question],
    llm: BaseChatModel,
    corpus: Corpus,
    folder: Path,
    key_prefix: str | None,
) -> tuple[int, Mapping[str, Any]] | None:
    """``(documents, state carried on)`` of the finished run over the longest proper prefix of
    ``corpus`` (same questions, config and model; run with or without its continuation option),
    or None when there is none (or it left nothing to carry)."""
    found = _finished_prefix_state(spec, mode, cfg, questions, llm, corpus, folder, key_prefix)
    return None if found is None else (found[0], found[2])


def _finished_prefix_state(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
    questions: list[Question],
    llm: BaseChatModel,
    corpus: Corpus,
    folder: Path,
    key_prefix: str | None,
) -> tuple[int, Mapping[str, Any], Mapping[str, Any]] | None:
    """``(documents, final state, state carried on)`` of :func:`finished_prefix_run`'s earlier
    run."""
    how = mode.continuation
    if how is None:
        return None
    plain = dataclasses.replace(cfg, **{how.option: False})
    prefixes = list(corpus.prefix_fingerprints())[:-1]
    model = model_key(llm)
    for n in range(len(prefixes), 0, -1):
        for variant in (cfg, plain):
            path = (
                run_folder(
                    folder,
                    run_key(
                        spec,
                        mode,
                        variant,
                        questions,
                        llm,
                        prefixes[n - 1],
                        key_prefix,
                        model=model,
                    ),
                )
                / CHECKPOINTS_FILE
            )
            state = _stored_state(spec, cfg, path)
            carried = (
                how.carry(state.values)
                if state is not None and state.values and not state.next
                else None
            )
            if state is not None and carried is not None:
                return n, state.values, carried
    return None


def _stored_state(spec: Strategy[Any], cfg: StrategyConfig, path: Path) -> Any:
    """The latest state snapshot in the checkpoint database at ``path`` (its run key is its folder's
    name), or None without one."""
    if not path.exists():
        return None
    saver = open_checkpointer(path)
    try:
        graph = spec.build_graph(cfg, checkpointer=saver)
        return graph.copy(update={"checkpointer": with_state_types(saver, graph)}).get_state(
            {"configurable": {"thread_id": path.parent.name}}
        )
    finally:
        saver.conn.close()


@dataclass(frozen=True)
class Checkpointed:
    """What a run's checkpoint already holds, all questions together (:func:`checkpointed`).

    Attributes:
        usage: Its calls and tokens, which an identical call does not make again.
        step: The steps it finished (its progress key), ``None`` when they are another run's (a run
            continued from an earlier corpus's, whose steps are not this run's).
    """

    usage: Usage
    step: int | None = 0

    @property
    def calls(self) -> int:
        """Its calls as a budget counts them (cache replays included)."""
        return self.usage.llm_calls + self.usage.cached_calls


def checkpointed(
    spec: Strategy[Any],
    mode: BatchRun,
    cfg: StrategyConfig,
    questions: list[Question],
    llm: BaseChatModel,
    corpus: Corpus,
    *,
    folder: Path,
    key_prefix: str | None = None,
) -> Checkpointed:
    """What the checkpoint of the run an identical call would make holds: its own (the finished
    tasks of an interrupted step included); for a fresh run continued from an earlier corpus
    (``continue_from_prefix``), the finished earlier run's, whose work it reads on from; nothing
    without a checkpoint or ``resume``."""
    settings = mode.settings(cfg)
    if not settings.resume:
        return Checkpointed(Usage())
    questions = distinct_questions(mode, cfg, questions)[0]  # the questions the run reads
    thread = run_key(spec, mode, cfg, questions, llm, corpus.fingerprint, key_prefix)
    state = _stored_state(spec, cfg, run_folder(folder, thread) / CHECKPOINTS_FILE)
    if state is not None and state.values:
        return Checkpointed(
            sum(recorded_usage(mode, state.values, len(questions)), Usage()),
            int(state.values.get(mode.progress_key) or 0),
        )
    earlier = (
        _finished_prefix_state(spec, mode, cfg, questions, llm, corpus, folder, key_prefix)
        if settings.continue_from_prefix
        else None
    )
    if earlier is None:
        return Checkpointed(Usage())
    return Checkpointed(sum(recorded_usage(mode, earlier[1], len(questions)), Usage()), None)


def trace_steps(snapshots: list[dict[str, Any]], trace_chars: int | None, node: str) -> list[Step]:
    """Trace snapshots as ``Answer.steps`` entries named ``node``, each memory cut to
    ``trace_chars``."""
    return [
        Step(
            node,
            chunk=s["chunk"],
            memory=s["memory"] if trace_chars is None else s["memory"][:trace_chars],
            tokens=s["tokens"],
            cut=s["cut"],
        )
        for s in snapshots
    ]
