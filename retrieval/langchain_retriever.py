"""A cached index as a LangChain retriever (and a LlamaIndex one), for chains and agents that
already have their own prompt and model: ``index.as_retriever(k=5)`` or ``corpus.as_retriever()``.

Only retrieval: no chat model is called. Each hit becomes a document whose text is the chunk
and whose metadata says where it came from (document id and title, chunk id, score, rank).
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document as LCDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from longctx.retrieval.base import Hit
from longctx.retrieval.extras import require


def hit_metadata(hit: Hit) -> dict[str, Any]:
    """Where a retrieved chunk came from, as document metadata."""
    c = hit.chunk
    return {
        "doc_id": c.doc_id,
        "title": c.title,
        "chunk_id": c.chunk_id,
        "position": c.position,
        "score": float(hit.score),
        "rank": hit.rank,
        "num_tokens": c.num_tokens,
    }


class IndexRetriever(BaseRetriever):
    """The top ``k`` chunks of a longctx :class:`~retrieval.index.Index` for a query, as
    LangChain documents.

    Runs inside LCEL chains
    (``{"context": retriever | format, "question": RunnablePassthrough()} | prompt | model``) and as
    an agent's retrieval tool; searches are traced as LangChain retriever runs.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any = Field(description="a retrieval.index.Index (built or loaded from the cache)")
    k: int = Field(default=7, ge=1, description="chunks per query (default: LongBench v1's top-7)")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        return [
            LCDocument(page_content=h.chunk.text, metadata=hit_metadata(h))
            for h in self.index.search(query, self.k)
        ]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[LCDocument]:
        return self._get_relevant_documents(
            query, run_manager=run_manager.get_sync()
        )  # an in-memory search: no I/O to await


def llama_index_retriever(index: Any, k: int = 7) -> Any:
    """The same search as a LlamaIndex ``BaseRetriever`` (``NodeWithScore`` results), for
    query engines."""
    require("llama_index.core", extra="llamaindex", feature="the LlamaIndex retriever")
    from llama_index.core.retrievers import (
        BaseRetriever as LlamaRetriever,
    )  # LlamaIndex's core is heavy: only when asked
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    # LlamaIndex is not analysed (follow_imports = skip): Any
    class _IndexLlamaRetriever(LlamaRetriever):  # type: ignore[misc]
        def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
            return [
                NodeWithScore(
                    node=TextNode(
                        text=h.chunk.text,
                        id_=f"{h.chunk.doc_id}:{h.chunk.chunk_id}",
                        metadata=hit_metadata(h),
                    ),
                    score=float(h.score),
                )
                for h in index.search(query_bundle.query_str, k)
            ]

    return _IndexLlamaRetriever()
