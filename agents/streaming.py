"""Running a batched, resumable strategy (MemAgent): checkpoints, resume, progress, answers.

A run is identified by (corpus fingerprint, questions, config, model). Every step is
checkpointed in SQLite under the cache directory; running the same call again after a
crash continues from the last finished step, and running it after it finished returns
the stored answers without a single model call.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from tqdm.auto import tqdm

from agents.chat_models import describe
from agents.api import trace_tags
from agents.types import Answer, Usage
from agents.usage import UsageTracker
from graphs import Question, Strategy
from graphs.batched import BatchedRun, run_batched_graph
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
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    tracker = UsageTracker()
    progress = _Progress(show_progress)
    try:
        run = run_batched_graph(
            spec,
            cfg,
            questions,
            chat,
            corpus,
            folder=root / spec.name,
            callbacks=[tracker],
            run_name=f"longctx.{spec.name}",
            tags=trace_tags(spec.name, questions[0]) if len(questions) == 1 else [f"strategy:{spec.name}"],
            metadata={"strategy": spec.name, "corpus": corpus.fingerprint[:16], "questions": len(questions)},
            on_start=progress.start,
            on_advance=progress.advance,
        )
    finally:
        progress.close()
    seconds = time.perf_counter() - started
    answers = [_answer(spec, run, i, q, cfg, chat, seconds) for i, q in enumerate(questions)]
    for a in answers:
        a.usage.failed_calls = tracker.usage.failed_calls
    return answers


class _Progress:
    """A chunk progress bar with tokens per second and ETA (quiet when disabled)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar = None

    def start(self, ctx: Any, start_chunk: int) -> None:
        self.sizes = ctx.chunk_sizes
        self.start_chunk = start_chunk
        self.began = time.perf_counter()
        self.bar = tqdm(total=len(ctx.chunks), initial=start_chunk, desc="Reading corpus", unit="chunk", disable=not self.enabled)

    def advance(self, chunk_index: int) -> None:
        done = sum(self.sizes[self.start_chunk : chunk_index])
        rate = done / max(time.perf_counter() - self.began, 1e-9)
        self.bar.set_postfix(tokens_per_s=f"{rate:,.0f}", tokens=f"{sum(self.sizes[:chunk_index]):,}/{sum(self.sizes):,}")
        self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _answer(spec: Strategy, run: BatchedRun, i: int, question: Question, cfg: Any, chat: BaseChatModel, seconds: float) -> Answer:
    fields = run.module.collect(run.final, i)
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
    if run.resumed_from:
        steps.append({"node": "resume", "from_chunk": run.resumed_from})
    if run.replayed:  # finished earlier: answered from the checkpoint, no call made now
        steps.append({"node": "replay"})
    steps += run.steps[i]
    steps.append({"node": "final_answer", "memory_cuts": fields["memory_cuts"], "chunks": run.final.get("n_chunks")})
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
