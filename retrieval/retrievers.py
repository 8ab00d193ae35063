"""The retriever registry: name -> factory taking the retriever's options."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Literal

from longctx.retrieval.base import Retriever
from longctx.retrieval.bm25 import BM25Retriever
from longctx.retrieval.contract.errors import OptionError
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import (
    OPENAI_EMBEDDING_MAX_TOKENS,
    ContrieverEmbedder,
    OpenAIEmbedder,
    SentenceTransformerEmbedder,
)
from longctx.retrieval.fusion import RRF_K
from longctx.retrieval.hybrid import Fusion, HybridRetriever
from longctx.retrieval.retriever_registry import (
    RETRIEVERS as RETRIEVERS,
)  # declared in retrieval/plugin.toml, registered here
from longctx.retrieval.static_embedder import StaticEmbedder


@RETRIEVERS.register("bm25")
def bm25(
    *, engine: Literal["bm25s", "rank_bm25"] = "bm25s", k1: float = 1.5, b: float = 0.75
) -> Retriever:
    """Okapi BM25 over word tokens (``engine``: bm25s or rank_bm25)."""
    return BM25Retriever(engine=engine, k1=k1, b=b)


@RETRIEVERS.register("dense")
def dense(
    *,
    model: str | None = None,
    batch_size: int = 32,
    backend: str | None = None,
    fit_chunks: bool = True,
) -> Retriever:
    """Any sentence-transformers model; default the offline all-MiniLM-L6-v2.

    ``fit_chunks``: split a chunk longer than the model reads (its max sequence length, in its own
    word pieces: 256 for MiniLM) into pieces that fit, so no text goes unembedded
    (:mod:`longctx.retrieval.fit`); ``False`` indexes the chunks as chunked and warns which are cut
    and by how much.

    ``backend``: ``torch``, ``torch-bf16`` (bfloat16 weights and activations), ``onnx`` or
    ``onnx-int8`` (ONNX Runtime, int8-quantised weights); default
    :func:`longctx.retrieval.embedding_backends.default_cpu_backend`: ``torch-bf16`` on a CPU with
    native bfloat16 (AMX or AVX-512 BF16), else ``torch``.
    """
    return DenseRetriever(
        SentenceTransformerEmbedder(model, batch_size=batch_size, backend=backend),
        name="dense",
        fit_chunks=fit_chunks,
    )


@RETRIEVERS.register("static")
def static(
    *,
    model: str | None = None,
    pca_dims: int = 256,
    batch_size: int = 1024,
    fit_chunks: bool = True,
) -> Retriever:
    """Static (model2vec) embeddings: distilled once from the packaged all-MiniLM-L6-v2 (or the
    local sentence-transformers folder ``model``; a model2vec folder loads as is) and cached;
    ~1,000x MiniLM's CPU throughput (docs/scale.md; ``fit_chunks``: as ``dense``, 512 tokens).
    ``pca_dims``: dimensions the distillation keeps (model2vec's default, 256)."""
    return DenseRetriever(
        StaticEmbedder(model, pca_dims=pca_dims, batch_size=batch_size),
        name="static",
        fit_chunks=fit_chunks,
    )


@RETRIEVERS.register("contriever")
def contriever(
    *, model: str | None = None, batch_size: int = 32, fit_chunks: bool = True
) -> Retriever:
    """Contriever (mean pooling); default facebook/contriever-msmarco, any local checkpoint
    (``fit_chunks``: as ``dense``, 512 tokens)."""
    return DenseRetriever(
        ContrieverEmbedder(model, batch_size=batch_size), name="contriever", fit_chunks=fit_chunks
    )


@RETRIEVERS.register("openai")
def openai_embeddings(
    *,
    model: str | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    batch_size: int = 128,
    fit_chunks: bool = True,
    max_input_tokens: int = OPENAI_EMBEDDING_MAX_TOKENS,
) -> Retriever:
    """OpenAI-compatible embeddings (default text-embedding-3-small).

    ``fit_chunks``: as ``dense``, to ``max_input_tokens`` cl100k tokens (OpenAI's models: 8,191;
    set a local server's own limit, e.g. its context size).

    ``batch_size=1`` for llama-cpp-python's server, which mis-embeds every input of a
    batch after the first (measured: cosine 0.03 against the same text sent alone).
    """
    embedder = OpenAIEmbedder(
        model,
        base_url=base_url,
        api_key=api_key,
        batch_size=batch_size,
        max_input_tokens=max_input_tokens,
    )
    return DenseRetriever(embedder, name="openai", fit_chunks=fit_chunks)


@RETRIEVERS.register("hybrid")
def hybrid(
    *,
    dense: str = "dense",
    dense_options: Mapping[str, Any] | None = None,
    bm25_options: Mapping[str, Any] | None = None,
    fusion: Fusion = "rrf",
    rrf_k: int = RRF_K,
    weight: float = 0.5,
    candidates: int = 100,
) -> Retriever:
    """BM25 plus the dense retriever ``dense`` (any registered one, with ``dense_options``), fused.

    ``fusion="rrf"``: reciprocal rank fusion, ``1 / (rrf_k + rank)`` summed (Cormack et al. 2009:
    k=60); ``fusion="score"``: min-max normalised scores, ``weight`` on dense and ``1 - weight``
    on BM25. Each component retrieves ``candidates`` chunks before fusion.
    """
    if dense in ("hybrid", "bm25"):
        raise ValueError(f"hybrid's dense component must be a dense retriever, got {dense!r}")
    components = {"bm25": make_retriever("bm25", **dict(bm25_options or {}))}
    semantic = make_retriever(dense, **dict(dense_options or {}))
    components[semantic.name] = semantic
    return HybridRetriever(
        components, fusion=fusion, rrf_k=rrf_k, weight=weight, candidates=candidates
    )


def make_retriever(name: str, **options: Any) -> Retriever:
    """Instantiate the retriever ``name``; unknown options raise a ``TypeError`` listing
    the valid ones."""
    factory = RETRIEVERS.get(name)
    params = inspect.signature(factory).parameters
    unknown = sorted(set(options) - set(params))
    if unknown:
        raise OptionError(f"Retriever {name!r} has no option(s) {unknown}; valid: {sorted(params)}")
    return factory(**options)
