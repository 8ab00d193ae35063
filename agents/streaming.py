"""Running a batched, resumable strategy (MemAgent): checkpoints, resume, progress, answers.

A run is identified by (corpus fingerprint, questions, config, model). Every step is
checkpointed in SQLite under the cache directory; running the same call again after a
crash continues from the last finished step, and running it after it finished returns
the stored answers without a single model call.
"""

from __future__ import annotations

import dataclasses
import importlib
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from tqdm.auto import tqdm

from agents.chat_models import describe
from agents.api import trace_tags
from agents.types import Answer, Usage
from agents.usage import UsageTracker
from graphs import Question, Strategy, StrategyContext
from memory import MemoryTrace, open_checkpointer, thread_key
from retrieval import Corpus, default_cache_dir


def run_batched(
    spec: Strategy,
    corpus: Corpus,
    questions: list[Question],
    chat: BaseChatModel,
    cfg: Any,
    *,
    cache_dir: str | Path | None = None,
    show_progress: bool = True,
) -> list[Answer]:
    """Answer all ``questions`` in one resumable run of ``spec``'s graph."""
    started = time.perf_counter()
    module = importlib.import_module(spec.build_graph.__module__)
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    config_dict = dataclasses.asdict(cfg)
    thread = thread_key(
        strategy=spec.name,
        corpus=corpus.fingerprint,
        questions=[(q.render(), q.instruction) for q in questions],
        config={k: v for k, v in config_dict.items() if k not in ("concurrency", "resume", "trace_chars")},
        model=describe(chat),
    )
    folder = root / spec.name
    trace = MemoryTrace(folder / "trace.sqlite" if cfg.resume else ":memory:")
    saver = open_checkpointer(folder / "checkpoints.sqlite") if cfg.resume else InMemorySaver()
    ctx = module.prepare_context(StrategyContext(llm=chat, config=cfg, corpus=corpus), trace=trace, thread=thread)
    graph = spec.build_graph(cfg, checkpointer=saver)
    tracker = UsageTracker()
    run_config = {
        "configurable": {"thread_id": thread},
        "recursion_limit": 2 * len(ctx.chunks) + 10,
        "max_concurrency": cfg.concurrency,
        "callbacks": [tracker],
        "run_name": f"longctx.{spec.name}",
        "tags": trace_tags(spec.name, questions[0]) if len(questions) == 1 else [f"strategy:{spec.name}"],
        "metadata": {"strategy": spec.name, "corpus": corpus.fingerprint[:16], "questions": len(questions)},
    }
    snapshot = graph.get_state(run_config)
    resumed_from = snapshot.values.get("chunk_index") if snapshot.next else None
    if snapshot.values and not snapshot.next:
        final = snapshot.values  # finished earlier: replay from the checkpoint, no calls
    else:
        payload = None if snapshot.next else module.initial_state(questions, ctx)
        _stream(graph, payload, run_config, ctx, resumed_from or 0, show_progress)
        final = graph.get_state(run_config).values
    seconds = time.perf_counter() - started
    answers = [_answer(spec, module, final, i, q, trace, thread, cfg, chat, seconds, resumed_from) for i, q in enumerate(questions)]
    trace.close()
    if tracker.usage.failed_calls:
        for a in answers:
            a.usage.failed_calls = tracker.usage.failed_calls
    return answers


def _stream(graph, payload, run_config, ctx, start_chunk: int, show_progress: bool) -> None:
    """Run (or resume) the graph, advancing a progress bar per chunk with tokens/s and ETA."""
    total_tokens = sum(ctx.chunk_sizes)
    done_tokens = sum(ctx.chunk_sizes[:start_chunk])
    began = time.perf_counter()
    with tqdm(
        total=len(ctx.chunks), initial=start_chunk, desc="Reading corpus", unit="chunk", disable=not show_progress
    ) as bar:
        # durability="sync": a step's checkpoint is on disk before the next step starts, so a
        # kill -9 loses at most the calls in flight (the default "async" can lose finished ones).
        for update in graph.stream(payload, run_config, context=ctx, stream_mode="updates", durability="sync"):
            if "advance" not in update:
                continue
            k = update["advance"]["chunk_index"]
            done_tokens += ctx.chunk_sizes[k - 1]
            rate = (done_tokens - sum(ctx.chunk_sizes[:start_chunk])) / max(time.perf_counter() - began, 1e-9)
            bar.set_postfix(tokens_per_s=f"{rate:,.0f}", tokens=f"{done_tokens:,}/{total_tokens:,}")
            bar.update(1)


def _answer(spec, module, final, i, question, trace, thread, cfg, chat, seconds, resumed_from) -> Answer:
    fields = module.collect(final, i)
    u = fields["usage"]
    usage = Usage(
        llm_calls=u.get("calls", 0),
        prompt_tokens=u.get("prompt_tokens", 0),
        completion_tokens=u.get("completion_tokens", 0),
        seconds=seconds,
        estimated=u.get("estimated", False),
        cached_calls=u.get("cached_calls", 0),
    )
    steps: list[dict[str, Any]] = []
    if resumed_from:
        steps.append({"node": "resume", "from_chunk": resumed_from})
    for snap in trace.snapshots(thread, i):
        memory = snap["memory"] if cfg.trace_chars is None else snap["memory"][: cfg.trace_chars]
        steps.append({"node": "update_memory", "chunk": snap["chunk"], "memory": memory, "tokens": snap["tokens"], "cut": snap["cut"]})
    steps.append({"node": "final_answer", "memory_cuts": fields["memory_cuts"], "chunks": final.get("n_chunks")})
    return Answer(
        answer=fields["answer"],
        raw=fields["raw"],
        evidence=[],
        usage=usage,
        steps=steps,
        strategy=spec.name,
        question=question,
        config={"strategy": spec.name, "llm": describe(chat), **dataclasses.asdict(cfg)},
    )
