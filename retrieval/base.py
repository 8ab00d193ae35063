"""The retriever contract shared by BM25 and the dense retrievers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retrieval.chunking import Chunk


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its score and its rank (0 = best).

    ``components``: for a fused (hybrid) or reranked hit, each stage's view of it, name ->
    ``{"rank", "score"}`` (``None`` where that stage did not return it); ``None`` for a plain retriever.
    """

    chunk: Chunk
    score: float
    rank: int
    components: Mapping[str, Mapping[str, Any]] | None = None


@runtime_checkable
class Retriever(Protocol):
    """Scores the chunks of one corpus against a query.

    A retriever is built once over a chunk list, saved to a folder, and loaded back
    by a fresh instance constructed with the same parameters.

    Optional, for indexes that grow and change without a rebuild (:mod:`retrieval.index`;
    ours have them): ``extensible()``, ``extend(chunks, work_dir=...)``, ``save_segment``,
    ``load_segments``, ``compact()``, and ``delete(chunk_ids)`` (tombstones: searches then
    return live chunks only, numbered by their place among them). A retriever without
    them is rebuilt whole when its corpus grows or changes.
    """

    name: str

    def cache_params(self) -> dict[str, Any]:
        """Everything that changes the index (engine, model, ...); part of the cache key."""
        ...

    def build(self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False) -> None:
        """Index ``chunks``; ``work_dir`` may hold partial work to resume."""
        ...

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(chunk_id, score)`` pairs, best first."""
        ...

    def save(self, folder: Path) -> None:
        """Write the index into ``folder`` (no pickles).

        A ``save`` that also takes ``checksums`` (a :class:`retrieval.checksums.Checksums`)
        gets one and should write through ``checksums.open(path)``, so each file is hashed as
        it is written; files written otherwise are hashed from disk afterwards.
        """
        ...

    def load(self, folder: Path) -> None:
        """Read an index written by :meth:`save` with the same parameters."""
        ...
