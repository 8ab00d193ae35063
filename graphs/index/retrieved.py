"""Reading retrieved chunks, shared by the retrieval strategies (RAG, Self-Ask's reader,
Self-Route, RAPTOR, HippoRAG): the answer prompt, the order the hits are laid out in, and the
drill-down's view of a retrieval step. Here rather than in ``longctx.graphs.rag`` so that a strategy
reuses them through ``longctx.graphs.plugin.api`` without importing another strategy.
``RAG_TEMPLATE`` is versioned as ``longctx.graphs.rag.prompts.PROMPTS_VERSION`` (its golden copy is
that module's): bump that on any edit."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from longctx.graphs.plugin.presentation import Shown, join, tag, text

if TYPE_CHECKING:
    from longctx.retrieval import Hit

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
