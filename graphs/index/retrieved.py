"""Reading retrieved chunks, shared by the retrieval strategies (RAG, Self-Ask's reader,
Self-Route, RAPTOR, HippoRAG): RAG's ``retrieve`` node, the answer prompt, the order the hits are
laid out in, and the drill-down's view of a retrieval step. Here rather than in
``longctx.graphs.rag`` so that a strategy reuses them through ``longctx.graphs.plugin.api``
without importing another strategy. ``RAG_TEMPLATE`` is versioned as
``longctx.graphs.rag.prompts.PROMPTS_VERSION`` (its golden copy is that module's): bump that on
any edit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.plugin.presentation import Shown, join, tag, text
from longctx.retrieval.contract import Step

if TYPE_CHECKING:
    from langgraph.runtime import Runtime

    from longctx.graphs.plugin.context import StrategyContext
    from longctx.retrieval import Hit


def retrieve(state: Mapping[str, Any], runtime: Runtime[StrategyContext[Any]]) -> dict[str, Any]:
    """Top-k chunks for the question and its choices (LongBench v2: query = question + choices):
    RAG's node, which Self-Route's RAG leg runs too (a config with retrieval settings)."""
    ctx = runtime.context
    query = state["question"].render()
    index = ctx.require_index()
    hits = RetrievalService.of(ctx).retrieve(index, query)
    step = Step(
        "retrieve",
        retriever=index.retriever.name,
        top_k=ctx.config.top_k,
        chunk_ids=[h.chunk.chunk_id for h in hits],
        scores=[round(h.score, 6) for h in hits],
        distinct_documents=len({h.chunk.doc_id for h in hits}),
    )
    return {"hits": hits, "steps": [step]}


#: LongBench v2's ``0shot_rag.txt`` frame: instructions, the retrieved text in ``<text>`` tags,
#: then the question and the output-format instruction last.
RAG_TEMPLATE = """Please read the following retrieved text chunks and answer the question below.

<text>
{context}
</text>

Question: {question}

{instruction}"""


def order_hits(hits: list[Hit], order: Literal["document", "rank"]) -> list[Hit]:
    """Hits in corpus order (document, then position) or as ranked."""
    if order == "rank":
        return sorted(hits, key=lambda h: h.rank)
    if order == "document":
        return sorted(hits, key=lambda h: (h.chunk.doc_index, h.chunk.position))
    raise ValueError(f"order must be 'document' or 'rank', got {order!r}")


def retrieval_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The query (where the step has its own, e.g. a follow-up question) and the chunks
    retrieved."""
    query = (
        tag("p", "Query: ", tag("span", text(step["query"], 500), cls="follow"), cls="what")
        if step.get("query")
        else ""
    )
    ids = ", ".join(str(c) for c in step.get("chunk_ids") or [])
    return Shown(
        join(query, tag("p", f"chunks {ids or 'none'}")), frozenset({"query", "chunk_ids"})
    )
