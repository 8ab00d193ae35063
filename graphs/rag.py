"""Chunked top-N RAG: retrieve, order the chunks, generate.

Defaults are LongBench v1's best retrieval setting (200-word chunks x top-7, about 1,400
words of context; seed 001, Table 5); ``longbench-500x3`` is its other preset. Chunks go
into the prompt in document order by default (LongBench v2 ``--rag`` re-sorts by chunk
index, the stronger DOS-RAG baseline); ``order="rank"`` reproduces LongBench v1.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from pathlib import Path
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypedDict

from langgraph.runtime import Runtime

from graphs.nodes import generate, linear_graph
from graphs.prompts import RAG_TEMPLATE, fill, format_chunks
from graphs.registry import Strategy, register_strategy
from graphs.types import Question, StrategyContext
from retrieval import ChunkingConfig, Corpus, Hit, Index, build_index


@dataclass(frozen=True, kw_only=True)
class RetrievalSettings:
    """Chunking and retrieval settings shared by every strategy that retrieves."""

    retriever: str = field(default="bm25", metadata={"source": "LongBench v1 retrievers: E (ada-002), C (Contriever), B (BM25)"})
    retriever_options: Mapping[str, Any] = field(default_factory=dict, metadata={"help": "e.g. {'model': PATH}"})
    chunk_unit: Literal["words", "tokens"] = field(default="words", metadata={"source": "LongBench v1: word chunks"})
    chunk_size: int = field(default=200, metadata={"source": "LongBench v1 Table 5: 200 x 7"})
    chunk_overlap: int = 0
    top_k: int = field(default=7, metadata={"source": "LongBench v1 Table 5: 200 x 7"})

    def chunking(self) -> ChunkingConfig:
        """The :class:`ChunkingConfig` these settings describe."""
        return ChunkingConfig(unit=self.chunk_unit, size=self.chunk_size, overlap=self.chunk_overlap)

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
        order: ``"document"`` (corpus order, LongBench v2) or ``"rank"`` (LongBench v1).
        max_new_tokens: Answer budget (LongBench v2 ``pred.py``: 128).
        temperature: 0 = greedy, as LongBench v1.
    """

    order: Literal["document", "rank"] = field(default="document", metadata={"source": "LongBench v2 pred.py --rag: sort by c_idx"})
    max_new_tokens: int = field(default=128, metadata={"source": "LongBench v2 pred.py max_tokens=128"})
    temperature: float = 0.0


class RagState(TypedDict, total=False):
    """What evolves during one RAG answer."""

    question: Question
    hits: list[Hit]
    prompt: str
    raw: str
    answer: str
    steps: Annotated[list[dict], operator.add]


def order_hits(hits: list[Hit], order: Literal["document", "rank"]) -> list[Hit]:
    """Hits in corpus order (document, then position) or as ranked."""
    if order == "rank":
        return sorted(hits, key=lambda h: h.rank)
    if order == "document":
        return sorted(hits, key=lambda h: (h.chunk.doc_index, h.chunk.position))
    raise ValueError(f"order must be 'document' or 'rank', got {order!r}")


def retrieve(state: RagState, runtime: Runtime[StrategyContext]) -> dict:
    """Top-k chunks for the question and its choices (LongBench v2: query = question + choices)."""
    ctx = runtime.context
    query = state["question"].render()
    hits = ctx.index.search(query, ctx.config.top_k)
    step = {
        "node": "retrieve",
        "retriever": ctx.index.retriever.name,
        "top_k": ctx.config.top_k,
        "chunk_ids": [h.chunk.chunk_id for h in hits],
        "scores": [round(h.score, 6) for h in hits],
        "distinct_documents": len({h.chunk.doc_id for h in hits}),
    }
    return {"hits": hits, "steps": [step]}


def build_prompt(state: RagState, runtime: Runtime[StrategyContext]) -> dict:
    """Fill the RAG template with the hits in the configured order."""
    ordered = order_hits(state["hits"], runtime.context.config.order)
    return {"prompt": fill(RAG_TEMPLATE, format_chunks([h.chunk for h in ordered]), state["question"])}


def build_graph(config: RagConfig | None = None):
    """START -> retrieve -> build_prompt -> generate -> END."""
    return linear_graph("rag", RagState, ("retrieve", retrieve), ("build_prompt", build_prompt), ("generate", generate))


register_strategy(
    Strategy(
        name="rag",
        config_cls=RagConfig,
        build_graph=build_graph,
        uses_index=True,
        presets={
            "longbench-200x7": RagConfig(),
            "longbench-500x3": RagConfig(chunk_size=500, top_k=3),
        },
        description="Chunked top-N retrieval, then one answer call (LongBench v1: 200 words x 7).",
    )
)
