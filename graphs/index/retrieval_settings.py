"""The chunking and retrieval settings every retrieving strategy's config extends.

A neutral home: RAG, Self-Route, Self-Ask and PAI configs extend :class:`RetrievalSettings`,
and the agents' workspace reads it, so it belongs to no one strategy. The settings only
describe; :class:`longctx.graphs.index.retrieval_service.RetrievalService` builds the index and
retrieves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from longctx.graphs.plugin.config import ConfigError, StrategyConfig, option
from longctx.retrieval import RETRIEVERS, ChunkingConfig
from longctx.retrieval.rerank import RERANKERS


@dataclass(frozen=True, kw_only=True)
class RetrievalSettings(StrategyConfig):
    """Chunking and retrieval settings shared by every strategy that retrieves.

    ``top_k`` chunks are retrieved, ``min(top_k, chunks)`` of them, whatever their scores
    (rank_bm25's ``get_top_n`` and FlashRAG do the same); ``drop_zero_scores`` keeps only
    those scoring above zero (for BM25, sharing a word with the query).
    """

    retriever: str = option(
        "bm25", source="LongBench v1 retrievers: E (ada-002), C (Contriever), B (BM25)"
    )
    retriever_options: Mapping[str, Any] = option({}, help="e.g. {'model': PATH}")
    chunk_unit: Literal["words", "tokens"] = option("words", source="LongBench v1: word chunks")
    chunk_size: int = option(200, min=1, source="LongBench v1 Table 5: 200 x 7")
    chunk_overlap: int = option(0, min=0)
    top_k: int = option(7, min=1, source="LongBench v1 Table 5: 200 x 7")
    drop_zero_scores: bool = option(
        False, source="rank_bm25 get_top_n (LongBench v1) and FlashRAG keep all top_k chunks"
    )
    rerank: str | None = option(
        None,
        help=(
            "a second stage: 'cross-encoder' ({'model': PATH}) or 'server' ({'base_url': URL, "
            "'model': NAME})"
        ),
    )
    rerank_options: Mapping[str, Any] = option(
        {}, help="e.g. {'model': PATH} or {'base_url': 'http://HOST:PORT/v1', 'model': NAME}"
    )
    rerank_candidates: int = option(
        50,
        min=1,
        source=(
            "ours: the first stage's top 50 reranked, the best top_k kept (common practice: 20-100)"
        ),
    )

    def check(self) -> None:
        """The retriever (and reranker) must exist and the overlap must leave each chunk new
        text."""
        if self.retriever not in RETRIEVERS:
            raise ConfigError(
                f"Option 'retriever' must be one of {', '.join(RETRIEVERS.names())}, got "
                f"{self.retriever!r}"
            )
        if self.rerank is not None and self.rerank not in RERANKERS:
            raise ConfigError(
                f"Option 'rerank' must be one of {', '.join(RERANKERS.names())}, got "
                f"{self.rerank!r}"
            )
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError(
                f"Option 'chunk_overlap' ({self.chunk_overlap}) must be smaller than "
                f"'chunk_size' ({self.chunk_size})"
            )

    def chunking(self) -> ChunkingConfig:
        """The :class:`ChunkingConfig` these settings describe."""
        return ChunkingConfig(
            unit=self.chunk_unit, size=self.chunk_size, overlap=self.chunk_overlap
        )


__all__ = ["RetrievalSettings"]
