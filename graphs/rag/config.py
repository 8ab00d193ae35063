"""RAG's settings: the retrieval settings every retrieving strategy shares, and ``RagConfig``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from graphs import rerank_stage
from graphs.config import ConfigError, StrategyConfig, option
from retrieval import RETRIEVERS, ChunkingConfig, Hit, Index, build_index
from retrieval.contract import Corpus
from retrieval.rerank import RERANKERS


@dataclass(frozen=True, kw_only=True)
class RetrievalSettings(StrategyConfig):
    """Chunking and retrieval settings shared by every strategy that retrieves.

    ``top_k`` chunks are retrieved, ``min(top_k, chunks)`` of them, whatever their scores
    (rank_bm25's ``get_top_n`` and FlashRAG do the same); ``drop_zero_scores`` keeps only
    those scoring above zero (for BM25, sharing a word with the query).
    """

    retriever: str = option("bm25", source="LongBench v1 retrievers: E (ada-002), C (Contriever), B (BM25)")
    retriever_options: Mapping[str, Any] = option({}, help="e.g. {'model': PATH}")
    chunk_unit: Literal["words", "tokens"] = option("words", source="LongBench v1: word chunks")
    chunk_size: int = option(200, min=1, source="LongBench v1 Table 5: 200 x 7")
    chunk_overlap: int = option(0, min=0)
    top_k: int = option(7, min=1, source="LongBench v1 Table 5: 200 x 7")
    drop_zero_scores: bool = option(False, source="rank_bm25 get_top_n (LongBench v1) and FlashRAG keep all top_k chunks")
    rerank: str | None = option(None, help="a second stage: 'cross-encoder' ({'model': PATH}) or 'server' ({'base_url': URL, 'model': NAME})")
    rerank_options: Mapping[str, Any] = option({}, help="e.g. {'model': PATH} or {'base_url': 'http://HOST:PORT/v1', 'model': NAME}")
    rerank_candidates: int = option(50, min=1, source="ours: the first stage's top 50 reranked, the best top_k kept (common practice: 20-100)")

    def check(self) -> None:
        """The retriever (and reranker) must exist and the overlap must leave each chunk new text."""
        if self.retriever not in RETRIEVERS:
            raise ConfigError(f"Option 'retriever' must be one of {', '.join(RETRIEVERS.names())}, got {self.retriever!r}")
        if self.rerank is not None and self.rerank not in RERANKERS:
            raise ConfigError(f"Option 'rerank' must be one of {', '.join(RERANKERS.names())}, got {self.rerank!r}")
        if self.chunk_overlap >= self.chunk_size:
            raise ConfigError(f"Option 'chunk_overlap' ({self.chunk_overlap}) must be smaller than 'chunk_size' ({self.chunk_size})")

    def chunking(self) -> ChunkingConfig:
        """The :class:`ChunkingConfig` these settings describe."""
        return ChunkingConfig(unit=self.chunk_unit, size=self.chunk_size, overlap=self.chunk_overlap)

    def retrieve(self, index: Index, query: str) -> list[Hit]:
        """The ``top_k`` best chunks for ``query`` (``min(top_k, chunks)`` of them, as the official
        retrievers return); with ``drop_zero_scores``, only those scoring above zero (for BM25:
        sharing a word with the query).

        With ``rerank``, the first stage's ``max(top_k, rerank_candidates)`` best go to the reranker,
        whose ``top_k`` best are kept (each hit's ``components`` keeps its first-stage rank and score)."""
        hits = index.search(query, self.top_k if self.rerank is None else max(self.top_k, self.rerank_candidates))
        hits = [h for h in hits if h.score > 0] if self.drop_zero_scores else hits
        if self.rerank is None:
            return hits
        return rerank_stage.rerank(hits, query, name=self.rerank, options=self.rerank_options, top_n=self.top_k, stage=index.retriever.name)

    def build_index(self, corpus: Corpus, *, cache_dir: str | Path | None = None, show_progress: bool = False) -> Index:
        """The (cached) index these settings describe over ``corpus``."""
        return build_index(
            corpus,
            self.retriever,
            chunking=self.chunking(),
            cache_dir=cache_dir,
            show_progress=show_progress,
            **dict(self.retriever_options),
        )


@dataclass(frozen=True, kw_only=True)
class RagConfig(RetrievalSettings):
    """Chunked top-N RAG.

    Attributes:
        order: ``"rank"`` (LongBench v1, the default) or ``"document"`` (corpus order, LongBench v2's
            RAG and the stronger DOS-RAG baseline; preset ``longbench-v2``).
        assembly: ``"benchmark"``: when the question carries a benchmark protocol, the chunks fill
            the benchmark's official prompt in its official order where it has one (LongBench v2's
            RAG prompt with "Retrieved chunk {i}: ", chunks in document order as ``0shot_rag``;
            elsewhere the full-context prompt around the chunks joined, as LongBench v1's
            ``retrieval/pred.py``); ``"ours"``: our labelled-chunk template always.
        max_new_tokens: Answer budget (LongBench v2 ``pred.py``: 128).
        temperature: 0 = greedy, as LongBench v1.
    """

    order: Literal["document", "rank"] = option("rank", source="LongBench v1 retrieval/pred.py: chunks in rank order")
    assembly: Literal["benchmark", "ours"] = option("benchmark", source="LongBench v1: retrieved chunks joined into the dataset's own prompt")
    max_new_tokens: int = option(128, min=1, source="LongBench v2 pred.py max_tokens=128")
    temperature: float = option(0.0, min=0.0)
