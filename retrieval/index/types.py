"""What a built index is: a corpus's live chunks plus a retriever over them, and the
chunks it stores."""

from __future__ import annotations

import bisect
from dataclasses import replace
from pathlib import Path
from typing import Any

from longctx.retrieval.base import Hit, Retriever
from longctx.retrieval.chunking import Chunk, ChunkingConfig


class Index:
    """A corpus's chunks plus a built retriever over them."""

    def __init__(
        self,
        chunks: list[Chunk],
        retriever: Retriever,
        chunking: ChunkingConfig,
        key: str,
        path: Path | None,
        *,
        stored: list[Chunk] | None = None,
    ):
        self.chunks = chunks
        self.retriever = retriever
        self.chunking = chunking
        self.key = key
        self.path = path
        #: Every chunk the index's files hold, deleted ones included, by stored id and document slot
        #: (``chunks`` are the live ones, numbered as a fresh build of the corpus numbers them).
        self.stored = stored if stored is not None else chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __repr__(self) -> str:
        return f"Index({self.retriever.name}, {len(self)} chunks, key={self.key[:12]})"

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first."""
        if not query.strip():
            raise ValueError("Cannot search with an empty query")
        detailed = getattr(
            self.retriever, "search_components", None
        )  # fused retrievers (hybrid) say what each component ranked
        if callable(detailed):
            return [
                Hit(self.chunks[i], score, rank, parts)
                for rank, (i, score, parts) in enumerate(detailed(query, k))
            ]
        return [
            Hit(self.chunks[i], score, rank)
            for rank, (i, score) in enumerate(self.retriever.search(query, k))
        ]

    def as_retriever(self, k: int = 7) -> Any:
        """This index as a LangChain ``BaseRetriever`` returning the top ``k`` chunks
        as documents."""
        from longctx.retrieval.langchain_retriever import (
            IndexRetriever,
        )  # langchain_core's retriever stack costs ~1 s to import

        return IndexRetriever(index=self, k=k)

    def as_llama_index_retriever(self, k: int = 7) -> Any:
        """This index as a LlamaIndex ``BaseRetriever`` (``NodeWithScore`` results)."""
        from longctx.retrieval.langchain_retriever import llama_index_retriever

        return llama_index_retriever(self, k)


def live_chunks(stored: list[Chunk], deleted: set[int]) -> list[Chunk]:
    """The chunks of the documents not ``deleted`` (slots), numbered as a fresh build of the edited
    corpus numbers them: chunk ids by place among the live chunks, document indexes by place among
    the live documents."""
    if not deleted:
        return stored
    gone = sorted(deleted)
    return [
        replace(c, chunk_id=i, doc_index=c.doc_index - bisect.bisect_left(gone, c.doc_index))
        for i, c in enumerate(c for c in stored if c.doc_index not in deleted)
    ]
