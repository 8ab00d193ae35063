"""The embedder contract: what an embedder is, the error it raises, and the warning when it cuts inputs.

The embedders themselves (sentence-transformers, Contriever, OpenAI-compatible) are in
:mod:`retrieval.embedders`; the dense retriever (:mod:`retrieval.dense`) takes any
:class:`Embedder`.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from retrieval.errors import ModelError
from retrieval.fit import over_limit
from retrieval.redaction import redact


class EmbedderError(ModelError):
    """An embedding model cannot be loaded or an embedding endpoint does not answer (message redacted:
    a server's error body may echo the request's credentials)."""

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


def hub_error(model: str, exc: Exception) -> EmbedderError:
    """The error of a model that cannot be loaded, saying what to do offline."""
    return EmbedderError(
        f"Cannot load embedding model {model!r} ({type(exc).__name__}: {exc}). Without internet, "
        "download it elsewhere and pass its local folder as the model."
    )


def warn_if_truncated(embedder: Embedder, texts: Sequence[str]) -> None:
    """Warn, before embedding, which chunks the embedder will cut and by how much (all-MiniLM-L6-v2 reads 256 word pieces).

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
            f"{len(over)} of {len(texts)} chunks exceed the {limit.max_tokens} {limit.what} that {embedder.model_id} reads and are "
            f"cut when embedded ({sum(over):,} tokens dropped in all, {max(over):,} from the longest; first: chunk {cut.index(over[0])}); "
            "fit_chunks=True (the default) splits such chunks so that all text is embedded.",
            stacklevel=3,
        )
