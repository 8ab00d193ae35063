"""The retriever contract shared by BM25 and the dense retrievers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeGuard, runtime_checkable

from longctx.retrieval.checksums import Checksums
from longctx.retrieval.chunking import Chunk


@dataclass(frozen=True)
class Hit:
    """A retrieved chunk with its score and its rank (0 = best).

    ``components``: for a fused (hybrid) or reranked hit, each stage's view of it, name ->
    ``{"rank", "score"}`` (``None`` where that stage did not return it); ``None`` for a
    plain retriever.
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

    Optional, for indexes that grow and change without a rebuild (:mod:`longctx.retrieval.index`;
    ours have them): ``extensible()``, ``extend(chunks, work_dir=...)``, ``save_segment``,
    ``load_segments``, ``compact()``, and ``delete(chunk_ids)`` (tombstones: searches then
    return live chunks only, numbered by their place among them): :class:`SegmentedRetriever`.
    A retriever without them is rebuilt whole when its corpus grows or changes.
    """

    name: str

    def cache_params(self) -> dict[str, Any]:
        """Everything that changes the index (engine, model, ...); part of the cache key."""
        ...

    def build(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Index ``chunks``; ``work_dir`` may hold partial work to resume."""
        ...

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Up to ``k`` ``(chunk_id, score)`` pairs, best first."""
        ...

    def save(self, folder: Path) -> None:
        """Write the index into ``folder`` (no pickles).

        A ``save`` that also takes ``checksums`` (a :class:`longctx.retrieval.checksums.Checksums`)
        gets one and should write through ``checksums.open(path)``, so each file is hashed as
        it is written; files written otherwise are hashed from disk afterwards.
        """
        ...

    def load(self, folder: Path) -> None:
        """Read an index written by :meth:`save` with the same parameters."""
        ...


class SegmentedRetriever(Retriever, Protocol):
    """A retriever with the optional methods of :class:`Retriever` (ours): its index grows and
    changes without a rebuild."""

    def extensible(self) -> bool:
        """Whether the loaded index can take new chunks as a segment."""
        ...

    def extend(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Index ``chunks`` (numbered after the loaded ones) as a new segment."""
        ...

    def save_segment(self, folder: Path, start: int, checksums: Checksums | None = None) -> None:
        """Write the segment of the chunks from ``start`` on into ``folder``."""
        ...

    def load_segments(self, folders: Sequence[Path]) -> None:
        """Read an index of several segments, in order."""
        ...

    def compact(self) -> None:
        """Fold the segments (without the deleted chunks) into one, as a fresh build holds them."""
        ...

    def delete(self, chunk_ids: Sequence[int]) -> None:
        """Mark the stored chunks ``chunk_ids`` deleted: searches return live chunks only."""
        ...


def grows(retriever: Retriever) -> TypeGuard[SegmentedRetriever]:
    """Whether ``retriever`` has the optional methods of an index that grows (its
    ``extend`` tells)."""
    return callable(getattr(retriever, "extend", None))
