"""RAG's evidence ceiling: the documents of the chunks its own ``retrieve`` node returns
(LLM-free)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Hit,
    Reach,
    cached_index,
    node_runtime,
    reach_in_chunks,
)


@dataclass(frozen=True, kw_only=True)
class RetrievedChunksCeiling(EvidenceCeiling):
    """The evidence documents among the chunks ``retrieve`` returns for the question, with the
    strategy's index (BM25 by default, built and cached by ``RetrievalService.build_index``);
    every retrieved chunk goes into the prompt, so packing drops nothing. With evidence
    sentences (BABILong), the supporting facts the retrieved chunks cover.

    Attributes:
        retrieve: RAG's ``retrieve`` node (passed in by its registration, which this module cannot
            import).
        order_hits: RAG's chunk ordering for the prompt.
        leg: Prefix of the description (Self-Route: ``"RAG leg: "``).
    """

    retrieve: Callable[..., dict[str, Any]]
    order_hits: Callable[..., list[Hit]]
    leg: str = ""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        index = cached_index(cfg, item.corpus, env)
        hits = self.retrieve({"question": item.question}, node_runtime(cfg, item.corpus, index))[
            "hits"
        ]
        packed = self.order_hits(hits, cfg.order)  # the prompt holds every hit: nothing is dropped
        return reach_in_chunks(item, (h.chunk for h in packed), index.chunks)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return (
            f"{self.leg}{env.evidence} in the top-{cfg.top_k} {cfg.retriever} chunks "
            f"({cfg.chunk_size} {cfg.chunk_unit}) for the question"
        )
