"""PAI's property-based retrieval (Fig. 4 bottom): which chunks each sub-question's judges read, one
``judge`` task per chunk with its (sub-question, chunk) pairs, each a boolean ``keep_context`` call,
and the kept chunks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langgraph.runtime import Runtime
from langgraph.types import Send

from longctx.graphs.pai import prompts as P
from longctx.graphs.pai.calls import CallOutcome, KeepContextArgs, acall_structured, call_structured
from longctx.graphs.pai.config import PaiConfig
from longctx.graphs.pai.state import JudgedPair, JudgeTask, PaiState
from longctx.graphs.plugin.api import (
    BudgetReached,
    Chunk,
    Hit,
    RetrievalService,
    StrategyContext,
    chunk_corpus,
    gather_or_cancel,
    report_progress,
)
from longctx.retrieval.contract import Step


def choose_mode(cfg: PaiConfig, corpus_tokens: int) -> Literal["exhaustive", "prefilter"]:
    """The judge mode that runs: the configured one, or by corpus size under ``"auto"``."""
    if cfg.judge_mode != "auto":
        return cfg.judge_mode
    return "exhaustive" if corpus_tokens <= cfg.exhaustive_max_tokens else "prefilter"


def all_chunks(ctx: StrategyContext[PaiConfig]) -> list[Chunk]:
    """The index's chunks (built by ``answer()`` with the config's chunking), else chunk now."""
    if ctx.index is not None:
        return list(ctx.index.chunks)
    return chunk_corpus(ctx.corpus, ctx.config.chunking())


def plan_judging(state: PaiState, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """Candidate chunks per sub-question: all of them (exhaustive) or the retriever's top-K."""
    ctx, cfg = runtime.context, runtime.context.config
    mode = choose_mode(cfg, ctx.corpus.num_tokens)
    retriever = None
    if mode == "exhaustive":
        everything = [Hit(c, 1.0, i) for i, c in enumerate(all_chunks(ctx))]
        candidates = [everything for _ in state["sub_questions"]]
    elif ctx.index is None:
        raise ValueError(
            "PAI's prefilter needs a retrieval index: run it through agents.answer(), which "
            "builds one."
        )
    else:
        candidates = [
            RetrievalService.of(ctx).retrieve(ctx.index, sq["text"])
            for sq in state["sub_questions"]
        ]
        retriever = ctx.index.retriever.name
    step = Step(
        "plan_judging",
        mode=mode,
        corpus_tokens=ctx.corpus.num_tokens,
        exhaustive_max_tokens=cfg.exhaustive_max_tokens,
        retriever=retriever,
        top_k=cfg.top_k if mode == "prefilter" else None,
        pairs=sum(len(c) for c in candidates),
    )
    report_progress("judge", done=0, total=sum(len(c) for c in candidates))
    return {"mode": mode, "candidates": candidates, "steps": [step]}


def route_judges(state: PaiState) -> list[Send] | Literal["gather"]:
    """One ``judge`` task per candidate chunk, carrying its (sub-question, chunk) pairs.

    A task per chunk rather than per pair: LangGraph's own cost per task (~0.3 ms of CPU)
    would otherwise rival the client's per call in a wide fan-out (``bench_pai``).
    """
    by_chunk: dict[int, JudgeTask] = {}
    for i, sq in enumerate(state["sub_questions"]):
        for hit in state["candidates"][i]:
            task = by_chunk.setdefault(
                hit.chunk.chunk_id, JudgeTask(hit=hit, pairs=[], tool_mode=state["tool_mode"])
            )
            task["pairs"].append(JudgedPair(sq=i, sub_question=sq["text"]))
    return [Send("judge", task) for task in by_chunk.values()] or "gather"


def judge(task: JudgeTask, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """One ``keep_context`` verdict per pair of the chunk; a reply still malformed after the retries
    is recorded.

    A pair whose call the budget refuses is marked ``stopped`` instead of raising here: the other
    judges' calls already sent then finish and are counted, and :func:`gather` stops the run once
    all are in.
    """
    ctx = runtime.context

    def one(pair: JudgedPair) -> dict[str, Any]:
        try:
            out = call_structured(
                ctx.llm, _judge_prompt(pair, task, ctx.config), **_judge_call(task, ctx.config)
            )
        except BudgetReached as exc:
            return _stopped_verdict(pair, task, exc)
        report_progress("judge", advance=1)
        return _verdict(pair, task, ctx.config, out)

    return {"judgments": [one(pair) for pair in task["pairs"]]}


async def ajudge(task: JudgeTask, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """:func:`judge` through the model's async interface (what ``ainvoke`` / ``astream`` of the
    graph run): the chunk's pairs as coroutines, each holding the run's call gate (``concurrency``
    calls in flight), with the same retries and the same budget stop. Any other failure cancels the
    chunk's other pairs and waits for them before it propagates (none is left running after the
    answer returns)."""
    ctx = runtime.context
    gate = ctx.call_gate(ctx.config.concurrency)

    async def one(pair: JudgedPair) -> dict[str, Any]:
        try:
            async with gate:
                out = await acall_structured(
                    ctx.llm, _judge_prompt(pair, task, ctx.config), **_judge_call(task, ctx.config)
                )
        except BudgetReached as exc:
            return _stopped_verdict(pair, task, exc)
        report_progress("judge", advance=1)
        return _verdict(pair, task, ctx.config, out)

    return {"judgments": await gather_or_cancel([one(pair) for pair in task["pairs"]])}


def _stopped_verdict(pair: JudgedPair, task: JudgeTask, exc: BudgetReached) -> dict[str, Any]:
    """The verdict of a pair whose call the budget refused (no request was sent for it)."""
    return {
        "sq": pair["sq"],
        "chunk_id": task["hit"].chunk.chunk_id,
        "keep": False,
        "attempts": 0,
        "stopped": str(exc),
    }


def stop_if_refused(records: Sequence[dict[str, Any]]) -> None:
    """Raise the budget's stop recorded by a fan-out's tasks, once all of them have finished.

    Raises:
        BudgetReached: Some task's call was refused by the budget.
    """
    for record in records:
        if "stopped" in record:
            raise BudgetReached(record["stopped"])


#: Judge templates by ``(PaiConfig.judge_order, tool mode)``.
JUDGE_TEMPLATES = {
    ("query_first", "tools"): P.JUDGE_PROMPT,
    ("query_first", "json"): P.JUDGE_JSON_PROMPT,
    ("chunk_first", "tools"): P.JUDGE_CHUNK_FIRST_PROMPT,
    ("chunk_first", "json"): P.JUDGE_CHUNK_FIRST_JSON_PROMPT,
}


def _judge_prompt(pair: JudgedPair, task: JudgeTask, cfg: PaiConfig) -> str:
    chunk = task["hit"].chunk
    template = JUDGE_TEMPLATES[cfg.judge_order, "tools" if task["tool_mode"] == "tools" else "json"]
    return template.format(
        sub_question=pair["sub_question"], title=chunk.title, chunk=chunk.text.strip()
    )


def _judge_call(task: JudgeTask, cfg: PaiConfig) -> dict[str, Any]:
    return {
        "item_model": KeepContextArgs,
        "mode": task["tool_mode"],
        "function": P.KEEP_CONTEXT_FUNCTION,
        "tool_choice": "Query",
        "retries": cfg.judge_retries,
        "max_tokens": cfg.judge_max_tokens,
        "temperature": cfg.temperature,
    }


def _verdict(pair: JudgedPair, task: JudgeTask, cfg: PaiConfig, out: CallOutcome) -> dict[str, Any]:
    keep = bool(out.items[0]["keep_context"]) if out.ok else cfg.on_malformed_judgment == "keep"
    verdict: dict[str, Any] = {
        "sq": pair["sq"],
        "chunk_id": task["hit"].chunk.chunk_id,
        "keep": keep,
        "attempts": out.attempts,
    }
    if not out.ok:
        verdict["error"] = out.errors[-1]
    return verdict


def latest_verdicts(state: PaiState) -> dict[tuple[int, int], dict[str, Any]]:
    """Each (sub-question, chunk) pair's last verdict: a pair re-asked after a refusal
    (:func:`reask_refused`) has its answer recorded after the refusal."""
    return {(v["sq"], v["chunk_id"]): v for v in state.get("judgments", [])}


def reask_refused(state: PaiState) -> list[Send]:
    """A ``judge`` task per chunk with the pairs whose last verdict is a budget refusal (nothing
    when none is): what a resumed run asks before it gathers, and only that (no answered pair is
    paid twice)."""
    refused = [v for v in latest_verdicts(state).values() if "stopped" in v]
    by_chunk: dict[int, JudgeTask] = {}
    for verdict in sorted(refused, key=lambda v: v["sq"]):
        i = verdict["sq"]
        hit = next(h for h in state["candidates"][i] if h.chunk.chunk_id == verdict["chunk_id"])
        task = by_chunk.setdefault(
            hit.chunk.chunk_id, JudgeTask(hit=hit, pairs=[], tool_mode=state["tool_mode"])
        )
        task["pairs"].append(JudgedPair(sq=i, sub_question=state["sub_questions"][i]["text"]))
    return [Send("judge", task) for task in by_chunk.values()]


def gather(state: PaiState, runtime: Runtime[StrategyContext[PaiConfig]]) -> dict[str, Any]:
    """Kept chunks per sub-question in document order (the evidence), and the verdict counts.

    A pair the budget refused stops the run when this call's budget refused it; one refused by an
    earlier call (a checkpointed run resumed, :mod:`longctx.graphs.runtime.run_checkpoint`) is
    left to :func:`reask_refused`, and the gathering waits for its verdict.

    Raises:
        BudgetReached: This call's budget refused a judge's call.
    """
    verdicts = latest_verdicts(state)
    if any("stopped" in v for v in verdicts.values()):
        if runtime.context.budget.reached is not None:
            stop_if_refused(list(verdicts.values()))
        return {}
    hits: list[Hit] = []
    per_sq, malformed, kept_chunks = [], [], []
    for i, sq in enumerate(state["sub_questions"]):
        judged = [(h, verdicts[(i, h.chunk.chunk_id)]) for h in state["candidates"][i]]
        kept = sorted(
            (h for h, v in judged if v["keep"]), key=lambda h: (h.chunk.doc_index, h.chunk.position)
        )
        hits.extend(kept)
        kept_chunks.append([h.chunk for h in kept])
        bad = [
            {"sub_question": i, "chunk_id": h.chunk.chunk_id, "error": v["error"]}
            for h, v in judged
            if "error" in v
        ]
        malformed.extend(bad)
        per_sq.append(
            {
                "sub_question": sq["text"],
                "judged": len(judged),
                "kept": len(kept),
                "malformed": len(bad),
                "kept_chunk_ids": [h.chunk.chunk_id for h in kept],
            }
        )
    step = Step(
        "judge",
        mode=state["mode"],
        calls=sum(v["attempts"] for v in verdicts.values()),
        per_sub_question=per_sq,
        malformed=malformed,
    )
    return {"hits": hits, "kept": kept_chunks, "steps": [step]}
