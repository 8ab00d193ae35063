"""The retrieval service: builds (or loads) the index a strategy's settings describe, and retrieves.

A config holds settings only; this small object does the work they describe, with what the
run supplies (the cache folder, whether to show progress). Nodes make one from their run
context (:meth:`RetrievalService.of`); the run path, the workspace and the ceilings make one
from a config and their cache folder.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from longctx.graphs.index.rerank_stage import rerank
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.plugin.context import StrategyContext
from longctx.retrieval import Hit, Index, build_index
from longctx.retrieval.contract import Corpus

SettingsT = TypeVar("SettingsT", bound=RetrievalSettings)


@dataclass(frozen=True, kw_only=True)
class RetrievalService:
    """Index building and top-k retrieval under one strategy's :class:`RetrievalSettings`.

    Attributes:
        settings: The strategy's config (any :class:`RetrievalSettings`).
        cache_dir: Root of the index cache (``None``: ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``).
        show_progress: A progress bar while an index is built.
    """

    settings: RetrievalSettings
    cache_dir: str | Path | None = None
    show_progress: bool = False

    @classmethod
    def of(cls, context: StrategyContext[SettingsT]) -> RetrievalService:
        """The service of a node's run context: its config's settings and its cache folder."""
        return cls(settings=context.config, cache_dir=context.cache_dir)

    def build_index(self, corpus: Corpus) -> Index:
        """The (cached) index the settings describe over ``corpus``."""
        s = self.settings
        options: dict[str, Any] = dict(s.retriever_options)
        return build_index(
            corpus,
            s.retriever,
            chunking=s.chunking(),
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
            **options,
        )

    def retrieve(self, index: Index, query: str) -> list[Hit]:
        """The ``top_k`` best chunks for ``query`` (``min(top_k, chunks)`` of them, as the official
        retrievers return); with ``drop_zero_scores``, only those scoring above zero (for BM25:
        sharing a word with the query).

        With ``rerank``, the first stage's ``max(top_k, rerank_candidates)`` best go to the
        reranker, whose ``top_k`` best are kept (each hit's ``components`` keeps its first-stage
        rank and score)."""
        s = self.settings
        hits = index.search(
            query, s.top_k if s.rerank is None else max(s.top_k, s.rerank_candidates)
        )
        hits = [h for h in hits if h.score > 0] if s.drop_zero_scores else hits
        if s.rerank is None:
            return hits
        return rerank(
            hits,
            query,
            name=s.rerank,
            options=s.rerank_options,
            top_n=s.top_k,
            stage=index.retriever.name,
        )


__all__ = ["RetrievalService"]
