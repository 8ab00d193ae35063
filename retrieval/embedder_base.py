"""The embedder contract: what an embedder is, the error it raises, and the warning when it
cuts inputs.

The embedders themselves (sentence-transformers, Contriever, OpenAI-compatible) are in
:mod:`longctx.retrieval.embedders`; the dense retriever (:mod:`longctx.retrieval.dense`) takes any
:class:`Embedder`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from longctx.retrieval.contract.errors import ModelError
from longctx.retrieval.fit import over_limit
from longctx.retrieval.redaction import redact


class EmbedderError(ModelError):
    """An embedding model cannot be loaded or an embedding endpoint does not answer (message
    redacted: a server's error body may echo the request's credentials)."""

    def __init__(self, message: str):
        super().__init__(redact(message))


class Embedder(Protocol):
    """Turns texts into float32 vectors; queries and documents may be encoded differently."""

    model_id: str

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """One vector."""
        ...

    def unloaded(self) -> Embedder:
        """A copy without a loaded model, to ship to another process or node."""
        ...


def source_of(embedder: object) -> str:
    """Where an embedder's vectors come from, for an error: its server's URL or its model."""
    url = getattr(embedder, "base_url", None)
    model = getattr(embedder, "model_id", type(embedder).__name__)
    return (
        f"the embeddings server at {url} (model {model!r})" if url else f"embedding model {model!r}"
    )


def checked_vectors(
    vectors: np.ndarray, texts: int, source: str, dim: int | None = None
) -> np.ndarray:
    """``vectors`` if they are one finite, non-zero row per text (of ``dim`` columns when given),
    else an :class:`EmbedderError` naming ``source``: a NaN, infinite or zero vector indexed would
    rank every search wrongly and stay in the cache after the server recovers."""
    if texts == 0 and len(vectors) == 0:
        return vectors
    if vectors.ndim != 2 or len(vectors) != texts:
        raise EmbedderError(
            f"{source} returned {len(vectors)} vectors of shape {vectors.shape[1:]} for "
            f"{texts} texts"
        )
    if dim is not None and vectors.shape[1] != dim:
        raise dimension_error(source, vectors.shape[1], dim)
    bad = ~np.isfinite(vectors).all(axis=1) | ~np.any(vectors != 0, axis=1)
    if bad.any():
        row = int(np.argmax(bad))
        what = "an all-zero" if np.isfinite(vectors[row]).all() else "a NaN or infinite"
        raise EmbedderError(
            f"{source} returned {what} vector for text {row} of a batch of {texts} "
            f"({int(bad.sum())} unusable); nothing of this batch is kept"
        )
    return vectors


def dimension_error(source: str, got: int, expected: int) -> EmbedderError:
    """The error of vectors whose dimension is not the one stored under the same model name."""
    return EmbedderError(
        f"{source} returned {got}-dimensional vectors where {expected}-dimensional ones are stored "
        "under this model name: the model changed; give it another name or clear the cache"
    )


def hub_error(model: str, exc: Exception) -> EmbedderError:
    """The error of a model that cannot be loaded, saying what to do offline."""
    return EmbedderError(
        f"Cannot load embedding model {model!r} ({type(exc).__name__}: {exc}). Without internet, "
        "download it elsewhere and pass its local folder as the model."
    )


def warn_if_truncated(embedder: Embedder, texts: Sequence[str]) -> None:
    """Warn, before embedding, which chunks the embedder will cut and by how much (all-MiniLM-L6-v2
    reads 256 word pieces).

    Only chunks not fitted to the embedder (``fit_chunks=False``) can be over its limit.
    """
    limit_of = getattr(embedder, "token_limit", None)
    if limit_of is None or not texts:
        return
    limit = limit_of()
    cut = over_limit(texts, limit)
    over = [n for n in cut if n]
    if over:
        warnings.warn(
            f"{len(over)} of {len(texts)} chunks exceed the {limit.max_tokens} {limit.what} that "
            f"{embedder.model_id} reads and are "
            f"cut when embedded ({sum(over):,} tokens dropped in all, {max(over):,} from the "
            f"longest; first: chunk {cut.index(over[0])}); "
            "fit_chunks=True (the default) splits such chunks so that all text is embedded.",
            stacklevel=3,
        )
