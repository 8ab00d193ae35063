"""Hybrid retrieval: BM25 plus a dense retriever, their rankings fused (RRF or normalised scores).

Practitioners' strong RAG baseline (LlamaIndex's ``QueryFusionRetriever``, LangChain's
``EnsembleRetriever``): lexical matching finds rare names and numbers, dense finds
paraphrases; fused, each covers the other's misses. Each component retrieves its top
``candidates`` chunks (BM25's scoring 0, sharing no word with the query, are no match and left
out), and :mod:`longctx.retrieval.fusion` merges the lists; every fused chunk keeps
each component's rank and score (``Hit.components``, then ``Evidence.components``).

Through :func:`longctx.retrieval.index.build_index` a hybrid index is made of its components' own
cached indexes (:meth:`HybridRetriever.with_components`): a corpus already indexed by BM25
and by MiniLM costs nothing more, and a grown corpus grows each component by segments.
The components fuse chunk ids, so they index the same chunks: those fitted to the dense
component's limit (:func:`fitted_components`, :mod:`longctx.retrieval.fitted`), BM25's included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from longctx.retrieval.base import Retriever
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.fit import TokenLimit
from longctx.retrieval.fitted import FittedRetriever, limits_chunks, strictest_limit
from longctx.retrieval.fusion import RRF_K, Fused, reciprocal_rank_fusion, score_fusion

Fusion = Literal["rrf", "score"]


class HybridRetriever:
    """Several retrievers over the same chunks, one fused ranking.

    Args:
        components: Name -> retriever, lexical first (``{"bm25": ..., "dense": ...}``).
        fusion: ``"rrf"`` (reciprocal rank fusion) or ``"score"`` (weighted min-max
            normalised scores).
        rrf_k: RRF's constant (Cormack et al. 2009: 60).
        weight: Score fusion only: the weight of the last (dense) component; the first gets
            ``1 - weight``.
        candidates: Chunks each component retrieves before fusion (at least the ``k`` asked for).
        name: Registry name, recorded in the cache key.
    """

    def __init__(
        self,
        components: Mapping[str, Retriever],
        *,
        fusion: Fusion = "rrf",
        rrf_k: int = RRF_K,
        weight: float = 0.5,
        candidates: int = 100,
        name: str = "hybrid",
    ):
        if len(components) != 2:
            raise ValueError(
                f"a hybrid retriever fuses two components (lexical, dense), got {list(components)}"
            )
        if fusion not in ("rrf", "score"):
            raise ValueError(f"fusion must be 'rrf' or 'score', got {fusion!r}")
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f"weight must be within [0, 1], got {weight}")
        if rrf_k < 0 or candidates < 1:
            raise ValueError(
                f"rrf_k must be >= 0 and candidates >= 1, got {rrf_k} and {candidates}"
            )
        self.components = fitted_components(components)
        self.fusion = fusion
        self.rrf_k = rrf_k
        self.weight = weight
        self.candidates = candidates
        self.name = name

    @property
    def limits_chunks(self) -> bool:
        """Whether a component fits its chunks to a limit (then every component indexes chunks
        fitted to it)."""
        return any(limits_chunks(r) for r in self.components.values())

    def chunk_limit(self) -> TokenLimit | None:
        """The strictest limit of the components' (their models load): every component indexes
        chunks fitted to it."""
        return strictest_limit(list(self.components.values()))

    def cache_params(self) -> dict[str, Any]:
        """Each component's parameters and the fusion settings (they change what a
        search returns)."""
        return {
            "retriever": self.name,
            "components": {name: r.cache_params() for name, r in self.components.items()},
            "fusion": self.fusion,
            **({"rrf_k": self.rrf_k} if self.fusion == "rrf" else {"weight": self.weight}),
            "candidates": self.candidates,
        }

    def weights(self) -> dict[str, float]:
        """Score fusion's weight per component: ``1 - weight`` for the first, ``weight``
        for the second."""
        first, second = self.components
        return {first: 1.0 - self.weight, second: self.weight}

    def fuse(self, query: str, k: int) -> list[Fused]:
        """The ``k`` best chunks of the fused ranking, with every component's rank and score."""
        depth = max(k, self.candidates)
        rankings = {name: r.search(query, depth) for name, r in self.components.items()}
        lexical = next(
            iter(rankings)
        )  # BM25 ranks every chunk; one scoring 0 shares no word with the query: not a match
        rankings[lexical] = [(cid, score) for cid, score in rankings[lexical] if score > 0]
        fused = (
            reciprocal_rank_fusion(rankings, self.rrf_k)
            if self.fusion == "rrf"
            else score_fusion(rankings, self.weights())
        )
        return fused[:k]

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(chunk_id, fused score)`` pairs, best first."""
        return [(f.chunk_id, f.score) for f in self.fuse(query, k)]

    def search_components(
        self, query: str, k: int
    ) -> list[tuple[int, float, dict[str, dict[str, Any]]]]:
        """As :meth:`search`, each pair with its components' ``{"rank", "score"}`` (``None`` where a
        component missed it)."""
        return [
            (f.chunk_id, f.score, {name: c.as_dict() for name, c in f.components.items()})
            for f in self.fuse(query, k)
        ]

    def build(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Build each component over ``chunks`` (work in ``work_dir/<component>``)."""
        for name, r in self.components.items():
            r.build(chunks, work_dir=work_dir / name, show_progress=show_progress)

    def save(self, folder: Path) -> None:
        """Each component's index in ``folder/<component>``."""
        for name, r in self.components.items():
            (folder / name).mkdir(parents=True, exist_ok=True)
            r.save(folder / name)

    def load(self, folder: Path) -> None:
        """Read what :meth:`save` wrote."""
        for name, r in self.components.items():
            r.load(folder / name)

    @property
    def num_chunks(self) -> int | None:
        """Chunks indexed (the first component's count), None when it cannot tell."""
        count = getattr(next(iter(self.components.values())), "num_chunks", None)
        return count if isinstance(count, int) else None

    def with_components(self, components: Mapping[str, Retriever]) -> HybridRetriever:
        """This hybrid's fusion over other (built or loaded) component retrievers of
        the same names."""
        if list(components) != list(self.components):
            raise ValueError(
                f"components {list(components)} are not this hybrid's {list(self.components)}"
            )
        return HybridRetriever(
            components,
            fusion=self.fusion,
            rrf_k=self.rrf_k,
            weight=self.weight,
            candidates=self.candidates,
            name=self.name,
        )


def fitted_components(components: Mapping[str, Retriever]) -> dict[str, Retriever]:
    """``components``, each indexing the chunks fitted to the strictest limit among them
    (:mod:`longctx.retrieval.fitted`).

    The components fuse chunk ids, so they must index the same chunks: one without a limit
    (BM25) is wrapped to index the chunks fitted to the one with a limit (dense), which keeps
    its own (and its cached index). Two with limits are both wrapped, fitted to the stricter.
    """
    plain = {
        name: r.retriever if isinstance(r, FittedRetriever) else r for name, r in components.items()
    }
    sources = {name: r for name, r in plain.items() if limits_chunks(r)}
    if not sources:
        return plain
    return {
        name: r if len(sources) == 1 and name in sources else FittedRetriever(r, sources)
        for name, r in plain.items()
    }
