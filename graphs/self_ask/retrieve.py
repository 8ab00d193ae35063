"""Self-Ask's retrievals, shared by both variants: the question's top-k, then each follow-up's."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import Hit, RetrievalService, StrategyContext
from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.state import SelfAskState
from longctx.retrieval.contract import Step


def _retrieval_facts(
    ctx: StrategyContext[SelfAskConfig], query: str, hits: list[Hit]
) -> dict[str, Any]:
    return {
        "query": query,
        "retriever": ctx.require_index().retriever.name,
        "top_k": ctx.config.top_k,
        "chunk_ids": [h.chunk.chunk_id for h in hits],
        "scores": [round(h.score, 6) for h in hits],
    }


def _new_hits(state: SelfAskState, hits: list[Hit]) -> list[Hit]:
    """Hits not yet in the answer's evidence (evidence lists each chunk once)."""
    seen = {h.chunk.chunk_id for h in state.get("hits", [])}
    return [h for h in hits if h.chunk.chunk_id not in seen]


def pending_follow_up(state: SelfAskState) -> str:
    """The pending follow-up question (the graph routes here only when the generator asked one)."""
    follow_up = state.get("follow_up")
    if follow_up is None:
        raise ValueError("Self-Ask: no follow-up question is pending")
    return follow_up


def retrieve(
    state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]
) -> dict[str, Any]:
    """The initial retrieval: top-k for the question, which become the first prompt's contexts."""
    ctx = runtime.context
    query = state["question"].render()
    hits = RetrievalService.of(ctx).retrieve(ctx.require_index(), query)
    return {
        "contexts": hits,
        "hits": hits,
        "steps": [Step("retrieve", **_retrieval_facts(ctx, query, hits))],
    }


def retrieve_follow_up(
    state: SelfAskState, runtime: Runtime[StrategyContext[SelfAskConfig]]
) -> dict[str, Any]:
    """Top-k chunks with the follow-up question as the query.

    ``flashrag``: they replace the prompt's contexts (or join them, ``contexts="accumulate"``);
    ``reader``: the reader answers the follow-up from them.
    """
    ctx = runtime.context
    query = pending_follow_up(state)
    hits = RetrievalService.of(ctx).retrieve(ctx.require_index(), query)
    contexts = hits
    if ctx.config.contexts == "accumulate":
        previous = state.get("contexts", [])
        ids = {h.chunk.chunk_id for h in previous}
        contexts = previous + [h for h in hits if h.chunk.chunk_id not in ids]
    step = Step("retrieve_follow_up", **_retrieval_facts(ctx, query, hits))
    if ctx.config.variant == "flashrag":
        step["contexts"] = [h.chunk.chunk_id for h in contexts]
    # the answer's evidence so far and this retrieval's new chunks (``hits`` is overwritten by each
    # write)
    return {
        "follow_up_hits": hits,
        "contexts": contexts,
        "hits": [*state.get("hits", []), *_new_hits(state, hits)],
        "steps": [step],
    }
