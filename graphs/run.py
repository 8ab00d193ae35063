"""One run path: any registered strategy over one or many questions.

``run_strategy`` is what ``agents.answer`` / ``answer_many``, the experiment runner and
Self-Route's fallback leg call. How a strategy runs is declared on its registry entry
(:class:`~graphs.registry.SingleRun` or :class:`~graphs.registry.BatchRun`), never
guessed here. Every answer's usage is its own: single runs count each question's calls
with their own tracker; batched runs keep per-question usage in the checkpointed state,
and share out the batch's wall time, so sums over answers add up to the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import functools
import threading
import time
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Required, TypedDict, TypeVar, Unpack

from langchain_core.callbacks import BaseCallbackManager
from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from graphs.batched import BatchedRun, Checkpointed, checkpointed, run_batched_graph
from graphs.budget import Budget, BudgetGuard, BudgetReached
from graphs.cancel import CancelGuard, RunCancelled, cancel_point
from graphs.config import redact_secrets
from graphs.context import StrategyContext
from graphs.heap import during_runs
from graphs.llm import has_native_async, model_id, run_client, tokenizer_for, tokenizer_id
from graphs.prompts import PROMPTS_VERSION as SHARED_PROMPTS_VERSION
from graphs.registry import BatchRun, Strategy
from graphs.request_settings import settings_digest
from graphs.retrieval_service import RetrievalService
from graphs.usage import UsageTracker, metering_queue
from retrieval import Hit, Index, default_cache_dir
from retrieval.contract import Answer, Corpus, Evidence, Question, Step, Usage

T = TypeVar("T")


class RunOptions(TypedDict, total=False):
    """How :func:`run_strategy` / :func:`arun_strategy` run (``llm`` and ``corpus`` required).

    Attributes:
        llm: The chat model.
        corpus: The documents.
        index: A prebuilt index; built (or loaded from the cache) when the strategy needs one.
        preset: The preset the config came from, recorded with each answer.
        cache_dir: Root of the index cache and of batched runs' checkpoints.
        callbacks: Extra LangChain callbacks (a list, or a parent run's callback manager).
        concurrency: Questions in flight at once for single-question strategies (default 1; a
            batched strategy's own concurrency option bounds its calls instead).
        show_progress: Progress bars (index build, a batched run's steps); default off.
        key_prefix: Separates a batched run made for another purpose (Self-Route's leg).
        budget: Limits of the whole call (all questions together): the run stops issuing
            model calls before one would pass it, and the answers say ``stopped="budget"``.
    """

    llm: Required[BaseChatModel]
    corpus: Required[Corpus]
    index: Index | None
    preset: str | None
    cache_dir: str | Path | None
    callbacks: Any
    concurrency: int
    show_progress: bool
    key_prefix: str | None
    budget: Budget | None


@during_runs
def run_strategy(spec: Strategy, cfg: Any, questions: Sequence[Question], *, use_async: bool | None = None, **options: Unpack[RunOptions]) -> list[Answer]:
    """Answer ``questions`` over ``corpus`` with ``spec`` and its (validated) ``cfg``, answers in the order of ``questions``.

    Args:
        spec: The registered strategy.
        cfg: Its config (``spec.make_config(...)``).
        questions: One or many.
        use_async: Drive single-question graphs with ``ainvoke`` on the library's private
            event loop (:func:`run_sync`; native async nodes such as PAI's judges await the
            model) instead of ``invoke`` in threads (their sync twins). ``None`` (default):
            async for a strategy whose run mode declares ``async_fan_out`` (PAI) when the
            model has its own async client (1.14x against 1.33x of the ideal judge makespan
            at 32 calls in flight, docs/pai.md), threads otherwise (sync-only models, and
            graphs of sync nodes, which the loop would squeeze into its small default
            executor). Async services use :func:`arun_strategy` (``aanswer``). Batched
            strategies run as before.
        **options: :class:`RunOptions`: ``llm``, ``corpus``, ``index``, ``budget`` ...
    """
    run = _Run(spec, cfg, list(questions), options)
    if run.awaits(use_async):
        return run_sync(_arun(run))
    run.indexed(run.build_index() if run.needs_index else run.index)
    if run.batch is not None:
        answers = _run_batch(run, run.batch)
    else:
        graph, context = spec.build_graph(cfg), run.context(run.llm)
        with ThreadPoolExecutor(max_workers=max(1, min(run.concurrency, len(run.questions)))) as pool:
            answers = list(pool.map(lambda q: _run_single(spec, graph, context, q, run.callbacks, run.effective), run.questions))
    return run.finish(answers)


@during_runs
async def arun_strategy(spec: Strategy, cfg: Any, questions: Sequence[Question], **options: Unpack[RunOptions]) -> list[Answer]:
    """:func:`run_strategy` for an event loop: the same answers, with the graphs' ``ainvoke``.

    Single-question strategies run each question's graph with ``ainvoke`` (native async
    nodes await the model; sync nodes run in the loop's executor), at most ``concurrency``
    questions at once. A batched strategy (MemAgent: a sync SQLite checkpointer) runs in a
    worker thread. Cancelling the awaiting task stops issuing model calls: single runs are
    cancelled where they wait; a batched run stops before its next call, waits for the calls
    in flight, and keeps its checkpoint, so the next identical call resumes where it stopped.
    Building the index runs in a worker thread too, so the loop stays responsive.
    """
    return await _arun(_Run(spec, cfg, list(questions), options))


async def _arun(run: _Run) -> list[Answer]:
    """The awaiting twin of :func:`run_strategy`'s body (the setup and policy are :class:`_Run`'s)."""
    run.indexed(await asyncio.to_thread(run.build_index) if run.needs_index else run.index)
    if run.batch is not None:
        answers = await _arun_batch(run, run.batch)
    else:
        graph, gate = run.spec.build_graph(run.cfg), asyncio.Semaphore(max(1, run.concurrency))
        async with run_client(run.llm) as run_llm:
            context = run.context(run_llm)

            async def one(question: Question) -> Answer:
                async with gate:
                    return await _arun_single(run.spec, graph, context, question, run.callbacks, run.effective)

            answers = await gather_or_cancel([one(q) for q in run.questions])
    return run.finish(answers)


class _Run:
    """One call of :func:`run_strategy` / :func:`arun_strategy`: what both twins share (the run
    mode, the budget guard, the cache, the index and its time, the effective config); they
    differ only in how they wait."""

    def __init__(self, spec: Strategy, cfg: Any, questions: list[Question], options: RunOptions) -> None:
        self.started = time.perf_counter()
        self.spec, self.cfg, self.questions = spec, cfg, questions
        self.llm, self.corpus = options["llm"], options["corpus"]
        self.batch = spec.batch
        self.index = options.get("index")
        self.preset = options.get("preset")
        self.concurrency = options.get("concurrency", 1)
        self.show_progress = options.get("show_progress", False)
        self.key_prefix = options.get("key_prefix")
        self.callbacks = with_budget(options.get("callbacks"), options.get("budget"), self.llm)  # one guard for the whole call
        cache_dir = options.get("cache_dir")
        self.cache = Path(cache_dir) if cache_dir else None
        self.index_seconds = 0.0
        self.effective: dict[str, Any] = {}

    def awaits(self, use_async: bool | None) -> bool:
        """Whether the sync entry point drives this run on the event loop (see ``run_strategy``'s ``use_async``)."""
        if self.batch is not None:
            return False
        return self.spec.run_mode.async_fan_out and has_native_async(self.llm) if use_async is None else use_async

    @property
    def needs_index(self) -> bool:
        """The strategy retrieves and no index was given."""
        return self.spec.uses_index and self.index is None

    def build_index(self) -> Index:
        """Build (or load from the cache) the index the config asks for."""
        return RetrievalService(settings=self.cfg, cache_dir=self.cache, show_progress=self.show_progress).build_index(self.corpus)

    def indexed(self, index: Index | None) -> None:
        """Record the run's index and the time it took, then what the answers will record as run."""
        self.index = index
        self.index_seconds = time.perf_counter() - self.started
        self.effective = effective_config(self.spec, self.cfg, self.llm, self.preset)

    def context(self, llm: BaseChatModel) -> StrategyContext:
        """The run context of a single-question graph."""
        return StrategyContext(llm=llm, config=self.cfg, corpus=self.corpus, index=self.index, cache_dir=self.cache)

    def finish(self, answers: list[Answer]) -> list[Answer]:
        """``answers`` with the index time shared out."""
        for a in answers:
            a.usage.index_seconds = self.index_seconds / len(answers)
            a.usage.seconds += self.index_seconds / len(answers)
        return answers


async def gather_or_cancel(coros: Sequence[Any]) -> list[Any]:
    """The results of ``coros`` run as tasks, in order; if one fails or the caller is
    cancelled, the others are cancelled (and awaited) before the error propagates."""
    tasks = [asyncio.ensure_future(c) for c in coros]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def effective_config(spec: Strategy, cfg: Any, llm: BaseChatModel, preset: str | None) -> dict[str, Any]:
    """What ran, as recorded with each answer: strategy, preset, model, a digest of every setting its
    requests carry (``llm_settings``, :func:`graphs.request_settings.settings_digest`), tokenizer, prompt
    versions and every config field (secrets redacted)."""
    return {
        "strategy": spec.name,
        "preset": preset,
        "llm": model_id(llm),
        "llm_settings": settings_digest(llm),
        "tokenizer": tokenizer_id(llm),
        "prompts_version": {spec.name: spec.prompts_version, "shared": SHARED_PROMPTS_VERSION},
        **redact_secrets(dataclasses.asdict(cfg)),
    }


def model_name(llm: Any) -> str:
    """The model's name without its server address (which may carry credentials): for tags and
    trace metadata, which LangGraph also stores in checkpoints."""
    return model_id(llm).split(" @ ")[0]


def trace_tags(strategy: str, question: Question | None, llm: Any = None) -> list[str]:
    """LangSmith tags of a root run: the strategy, the model, and the benchmark, sample and run
    (``run_id`` in the question's metadata, set by the experiment runner) when known."""
    tags = [f"strategy:{strategy}"]
    if llm is not None:
        tags.append(f"model:{model_name(llm)}")
    for key, prefix in (("benchmark", "benchmark"), ("sample_id", "sample"), ("run_id", "run")):
        if question is not None and question.metadata.get(key) is not None:
            tags.append(f"{prefix}:{question.metadata[key]}")
    return tags


def with_handler(callbacks: Any, handler: Any) -> Any:
    """``callbacks`` (None, a list, or a parent's callback manager) plus ``handler``."""
    if callbacks is None:
        return [handler]
    if isinstance(callbacks, BaseCallbackManager):
        manager = callbacks.copy()
        manager.add_handler(handler, inherit=True)
        return manager
    return [*callbacks, handler]


def with_budget(callbacks: Any, budget: Budget | None, llm: BaseChatModel) -> Any:
    """``callbacks`` plus a :class:`~graphs.budget.BudgetGuard` of ``budget`` (one for the whole call) when it sets a limit."""
    if budget is None or not budget.limited:
        return callbacks
    return with_handler(callbacks, BudgetGuard(budget, tokenizer_for(llm).count))


def evidence(hit: Hit) -> Evidence:
    """A retrieved chunk as answer evidence."""
    c = hit.chunk
    components = {name: dict(view) for name, view in hit.components.items()} if hit.components else None
    return Evidence(doc_id=c.doc_id, title=c.title, text=c.text, score=hit.score, chunk_id=c.chunk_id, rank=hit.rank, components=components)


def _run_single(spec: Strategy, graph: Any, context: StrategyContext, question: Question, callbacks: Any, effective: dict) -> Answer:
    started = time.perf_counter()
    tracker, run_config = _single_run_config(spec, context, question, callbacks)
    with metering_queue() as queue:
        try:
            final = graph.invoke({"question": question, "steps": []}, context=context, config=run_config)
        except BudgetReached as exc:
            final = _budget_stop(exc)
    return _single_answer(spec, final, tracker, started, queue.seconds, question, effective)


async def _arun_single(spec: Strategy, graph: Any, context: StrategyContext, question: Question, callbacks: Any, effective: dict) -> Answer:
    started = time.perf_counter()
    tracker, run_config = _single_run_config(spec, context, question, callbacks)
    tracker.run_inline = True  # thread-safe and cheap: called on the loop, not through its executor
    with metering_queue() as queue:  # this task's context: its executor calls copy it
        try:
            final = await graph.ainvoke({"question": question, "steps": []}, context=context, config=run_config)
        except BudgetReached as exc:
            final = _budget_stop(exc)
    return _single_answer(spec, final, tracker, started, queue.seconds, question, effective)


def _budget_stop(exc: BudgetReached) -> dict:
    """The final fields of a single run stopped by its budget: no answer, a step saying why."""
    return {"answer": "", "raw": "", "steps": [Step("stopped", reason=str(exc))], "stopped": "budget"}


def _single_run_config(spec: Strategy, context: StrategyContext, question: Question, callbacks: Any) -> tuple[UsageTracker, dict]:
    tracker = UsageTracker(count=tokenizer_for(context.llm).count)
    run_config = {
        "callbacks": with_handler(callbacks, tracker),
        "run_name": f"longctx.{spec.name}",
        "tags": trace_tags(spec.name, question, context.llm),
        "metadata": {"strategy": spec.name, "model": model_name(context.llm), "corpus": context.corpus.fingerprint[:16], **dict(question.metadata)},
    }
    return tracker, run_config


def _single_answer(spec: Strategy, final: dict, tracker: UsageTracker, started: float, queued: float, question: Question, effective: dict) -> Answer:
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


def _run_batch(run: _Run, mode: BatchRun, cancel: threading.Event | None = None) -> list[Answer]:
    """The batched run of ``run``'s questions, as ``mode`` declares; ``cancel``: stop before the next model call or step once set."""
    started = time.perf_counter()
    spec, questions, llm, corpus = run.spec, run.questions, run.llm, run.corpus
    tracker = UsageTracker(count=tokenizer_for(llm).count)  # failure accounting; per-answer usage comes from the state
    progress = ChunkProgress(run.show_progress, f"{spec.name}: reading the corpus")
    callbacks = run.callbacks if cancel is None else with_handler(run.callbacks, CancelGuard(cancel))

    def on_advance(step: int) -> None:
        progress.advance(step)
        if cancel is not None:
            cancel_point(cancel)

    tags = trace_tags(spec.name, questions[0] if len(questions) == 1 else None, llm)
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
                metadata={"strategy": spec.name, "model": model_name(llm), "corpus": corpus.fingerprint[:16], "questions": len(questions),
                          **({"run_id": questions[0].metadata["run_id"]} if questions[0].metadata.get("run_id") else {})},
                on_start=progress.start,
                on_advance=on_advance,
            )
        finally:
            progress.close()
    queued = queue.seconds / len(questions)
    share = (time.perf_counter() - started) / len(questions) - queued
    return [_batch_answer(spec, mode, batched, i, q, share, queued, run.effective) for i, q in enumerate(questions)]


def batch_folder(spec: Strategy, cache_dir: str | Path | None) -> Path:
    """Where a batched strategy's runs keep their checkpoints: ``<cache>/<strategy>/``."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / spec.name


def checkpoint_held(spec: Strategy, cfg: Any, questions: Sequence[Question], *, llm: BaseChatModel, corpus: Corpus,
                    cache_dir: str | Path | None = None) -> Checkpointed:  # fmt: skip
    """What the checkpoint of ``spec``'s run over these questions (as :func:`run_strategy` would run it) already holds:
    the calls that run would not make again and the steps it finished (:func:`graphs.batched.checkpointed`); nothing
    for a single-question strategy, which keeps no checkpoint."""
    if spec.batch is None:
        return Checkpointed(Usage())
    return checkpointed(spec, spec.batch, cfg, list(questions), llm, corpus, folder=batch_folder(spec, cache_dir))


async def _arun_batch(run: _Run, mode: BatchRun) -> list[Answer]:
    """:func:`_run_batch` in a worker thread; cancelling the caller stops it before its next
    model call and waits for the calls in flight, so the checkpoint holds all finished work."""
    cancel = threading.Event()
    call = functools.partial(_run_batch, run, mode, cancel)
    worker = asyncio.get_running_loop().run_in_executor(None, functools.partial(contextvars.copy_context().run, call))
    try:
        return await asyncio.shield(worker)
    except asyncio.CancelledError:
        cancel.set()
        with contextlib.suppress(RunCancelled):
            await worker  # the run's lock is released and its checkpoint closed when this returns
        raise


def _batch_answer(spec: Strategy, mode: BatchRun, run: BatchedRun, i: int, question: Question, seconds: float, queued: float, effective: dict) -> Answer:
    fields = mode.collect(run.final, i)
    usage = Usage.from_dict(fields.get("usage")).since(run.earlier[i])  # this call's calls; the checkpoint's earlier ones apart
    usage.seconds = seconds
    usage.queued_seconds = queued
    # resumed_from: the step an interrupted run continued from; replayed: finished earlier,
    # answered from the checkpoint with no call made now
    last = Step(
        "final_answer",
        **fields.get("final_step", {}),  # the strategy's own facts (MemAgent: stream layout, whole reply, memory cuts)
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


_LOOP: asyncio.AbstractEventLoop | None = None
_LOOP_LOCK = threading.Lock()


def private_loop() -> asyncio.AbstractEventLoop:
    """The library's own event loop, running in a daemon thread (started on first use).

    One long-lived loop rather than ``asyncio.run`` per call: async HTTP clients keep
    connection pools that belong to the loop that opened them (LangChain's OpenAI client is
    shared per server), so every sync call drives its graphs on the same loop. Its default
    executor, where sync nodes run under ``ainvoke``, has room for wide fan-outs.
    """
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or _LOOP.is_closed():
            loop = asyncio.new_event_loop()
            loop.set_default_executor(ThreadPoolExecutor(max_workers=64, thread_name_prefix="longctx-node"))
            threading.Thread(target=loop.run_forever, name="longctx-event-loop", daemon=True).start()
            _LOOP = loop
        return _LOOP


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, in a plain script or inside a running
    event loop (Jupyter): it runs on :func:`private_loop` while this thread waits. An
    interrupt (Ctrl-C) while waiting cancels it, which stops its model calls."""
    loop = private_loop()
    try:
        if asyncio.get_running_loop() is loop:  # called from the private loop's own thread: it cannot wait on itself
            with ThreadPoolExecutor(max_workers=1) as pool:
                return pool.submit(asyncio.run, coro).result()
    except RuntimeError:
        pass  # no loop runs in this thread
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


class ChunkProgress:
    """A progress bar over a batched run's chunks, with tokens per second and the ETA."""

    def __init__(self, enabled: bool, label: str):
        self.enabled = enabled
        self.label = label
        self.bar: Any = None

    def start(self, sizes: Sequence[int], start_chunk: int) -> None:
        """Open the bar over steps of ``sizes`` tokens at ``start_chunk`` (a resumed run starts part-way)."""
        self.sizes = sizes
        self.start_chunk = start_chunk
        self.began = time.perf_counter()
        self.bar = tqdm(total=len(sizes), initial=start_chunk, desc=self.label, unit="chunk", disable=not self.enabled)

    def advance(self, chunk_index: int) -> None:
        """All questions have read chunk ``chunk_index - 1``."""
        done = sum(self.sizes[self.start_chunk : chunk_index])
        rate = done / max(time.perf_counter() - self.began, 1e-9)
        self.bar.set_postfix(tokens_per_s=f"{rate:,.0f}", tokens=f"{sum(self.sizes[:chunk_index]):,}/{sum(self.sizes):,}")
        self.bar.update(1)

    def close(self) -> None:
        """Close the bar if it was opened."""
        if self.bar is not None:
            self.bar.close()


__all__ = [
    "CancelGuard",
    "ChunkProgress",
    "RunCancelled",
    "RunOptions",
    "arun_strategy",
    "batch_folder",
    "checkpoint_held",
    "effective_config",
    "evidence",
    "private_loop",
    "run_strategy",
    "run_sync",
    "trace_tags",
    "with_handler",
]
