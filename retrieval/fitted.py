"""A retriever that indexes chunks fitted to other retrievers' limits (a hybrid's components share
one chunking).

A dense retriever splits a chunk longer than its embedder reads (:mod:`longctx.retrieval.fit`); BM25
has no limit and indexes the chunks as chunked. Fused by a hybrid, both must index the same
chunks, so the hybrid wraps BM25 in :class:`FittedRetriever`: it indexes the chunks fitted to
the dense component's :meth:`chunk_limit`, and its cache key names that component, so its
index is cached apart from plain BM25's (which holds other chunks).
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longctx.retrieval.base import Retriever
from longctx.retrieval.checksums import Checksums
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.fit import TokenLimit


def limits_chunks(retriever: Retriever) -> bool:
    """Whether ``retriever`` fits its chunks to a limit, told without loading its model."""
    return bool(getattr(retriever, "limits_chunks", False))


def strictest_limit(retrievers: Sequence[Retriever]) -> TokenLimit | None:
    """The smallest :class:`~retrieval.fit.TokenLimit` (fewest tokens of text) of ``retrievers``'
    ``chunk_limit()``, None when none has one."""
    limits = []
    for r in retrievers:
        limit_of = getattr(r, "chunk_limit", None)
        limit = limit_of() if callable(limit_of) else None
        if isinstance(limit, TokenLimit):
            limits.append(limit)
    return min(limits, key=lambda limit: limit.budget, default=None)


def _limit_params(retriever: Retriever) -> dict[str, Any]:
    """What decides ``retriever``'s chunk limit, for a cache key (a dense retriever's
    backend does not)."""
    params_of = getattr(retriever, "chunk_limit_params", None)
    params = params_of() if callable(params_of) else retriever.cache_params()
    return dict(params)


class FittedRetriever:
    """``retriever`` indexing the chunks fitted to the strictest limit of ``sources`` (every other
    method its own).

    Args:
        retriever: The retriever that indexes the chunks (BM25 in a hybrid).
        sources: Name -> the retrievers whose limits the chunks fit (the hybrid's dense component).
    """

    def __init__(self, retriever: Retriever, sources: dict[str, Retriever]):
        self.retriever = retriever
        self.sources = dict(sources)
        self.name = retriever.name

    def chunk_limit(self) -> TokenLimit | None:
        """The strictest of the sources' limits (their models load): what
        :func:`longctx.retrieval.fit.chunks_for` fits to."""
        return strictest_limit(list(self.sources.values()))

    def cache_params(self) -> dict[str, Any]:
        """The retriever's parameters and, under ``fitted_to``, what decides each source's limit
        (its ``chunk_limit_params()``, else its cache parameters): other limits, other chunks."""
        return {
            **self.retriever.cache_params(),
            "fitted_to": {name: _limit_params(r) for name, r in self.sources.items()},
        }

    def build(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Index ``chunks`` (already fitted by the caller,
        :func:`longctx.retrieval.fit.chunks_for`)."""
        self.retriever.build(chunks, work_dir=work_dir, show_progress=show_progress)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The retriever's own search."""
        return self.retriever.search(query, k)

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """The retriever's own save (handing on ``checksums`` when its save takes them)."""
        if (
            checksums is not None
            and "checksums" in inspect.signature(self.retriever.save).parameters
        ):
            # checked above
            self.retriever.save(folder, checksums=checksums)  # type: ignore[call-arg]
        else:
            self.retriever.save(folder)

    def load(self, folder: Path) -> None:
        """The retriever's own load."""
        self.retriever.load(folder)

    def __getattr__(self, attr: str) -> Any:
        """The optional parts of the contract (``extend``, ``delete``, ``num_chunks``...) are the
        retriever's own."""
        if attr.startswith("__") or "retriever" not in self.__dict__:  # copies and pickles
            raise AttributeError(attr)
        return getattr(self.__dict__["retriever"], attr)
