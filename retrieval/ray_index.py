"""Corpus indexing on Ray: chunk embedding as a Ray Data pipeline across a cluster.

The embedding of a dense index is the expensive part (about an hour per 10M tokens on two
CPU cores). Here it runs as ``map_batches`` over chunk batches on a pool of actors, each
holding the embedding model once. The vectors are then written (under the key's build
lock, with :func:`~retrieval.index.write_shards`) as the finished embedding shards of
the local build, and the ordinary
:func:`~retrieval.index.build_index` finishes the index from them: same cache key, same
folder, same files, so a later local ``build_index`` or ``answer()`` loads it unchanged.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from longctx.retrieval.base import Retriever
from longctx.retrieval.chunking import ChunkingConfig
from longctx.retrieval.contract import Corpus
from longctx.retrieval.contract.errors import OptionError
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedder_base import Embedder
from longctx.retrieval.fit import chunks_for
from longctx.retrieval.index import (
    Index,
    build_index,
    build_lock,
    index_folder,
    index_key,
    write_shards,
)
from longctx.retrieval.ray_support import ensure_ray, require_ray
from longctx.retrieval.retrievers import make_retriever
from longctx.retrieval.threads import apply_thread_policy

log = logging.getLogger(__name__)


class _EmbedActor:
    """A Ray Data actor: loads the embedder once, embeds one batch of chunk texts per call."""

    def __init__(self, embedder: Embedder, cpus: float = 1.0):
        apply_thread_policy(max(1, int(cpus)))  # the CPUs Ray reserved for it, in every pool
        self.embedder = _portable(embedder)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.embedder.embed_documents([str(t) for t in batch["text"]])
        return {"id": batch["id"], "vector": vectors}


def _portable(embedder: Embedder) -> Embedder:
    """An unloaded copy of ``embedder`` that finds its model on the node it runs on."""
    return embedder.unloaded()


def embed_on_ray(
    texts: Sequence[str],
    embedder: Embedder,
    *,
    workers: int = 2,
    batch_size: int = 64,
    cpus_per_worker: float = 1.0,
) -> np.ndarray:
    """Embed ``texts`` with a Ray Data pipeline; rows come back in the order of ``texts``.

    Args:
        texts: The chunk texts.
        embedder: The embedder (shipped unloaded; each actor loads its own model).
        workers: Actors in the pool (one model each).
        batch_size: Chunks per ``map_batches`` call.
        cpus_per_worker: CPUs reserved per actor (its torch threads).
    """
    ray = require_ray()
    if not texts:
        raise ValueError("Cannot build a dense index over zero chunks")
    items = [{"id": i, "text": t} for i, t in enumerate(texts)]
    ds = ray.data.from_items(
        items, override_num_blocks=max(1, min(len(items) // batch_size, 4 * workers))
    )
    ds = ds.map_batches(
        _EmbedActor,
        fn_constructor_args=(_portable(embedder), cpus_per_worker),
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=workers),
        num_cpus=cpus_per_worker,
    )
    vectors: np.ndarray | None = None
    seen = 0
    for batch in ds.iter_batches(batch_size=None, batch_format="numpy"):
        part = np.asarray(batch["vector"], dtype=np.float32)
        if vectors is None:
            vectors = np.zeros((len(texts), part.shape[1]), dtype=np.float32)
        vectors[np.asarray(batch["id"], dtype=np.int64)] = part
        seen += len(part)
    if vectors is None or seen != len(texts):
        raise RuntimeError(f"Ray embedding returned {seen} of {len(texts)} vectors")
    return vectors


def build_index_ray(
    corpus: Corpus,
    retriever: str | Retriever = "dense",  # a retriever without embeddings is built locally
    *,
    chunking: ChunkingConfig | None = None,
    cache_dir: str | Path | None = None,
    address: str | None = None,
    workers: int = 2,
    batch_size: int = 64,
    show_progress: bool = False,
    **retriever_options: Any,
) -> Index:
    """:func:`~retrieval.index.build_index` with the embedding done on Ray; same index on disk.

    A cached index is loaded as is. Retrievers without embeddings (BM25) have nothing to
    distribute and are built locally.

    Args:
        corpus: The corpus to index.
        retriever: A dense registry name (``dense``, ``contriever``, ``openai``) or a
            :class:`DenseRetriever`.
        chunking: How to chunk; default as in ``build_index``.
        cache_dir: Root of the on-disk cache (default :func:`~retrieval.index.default_cache_dir`).
        address: Ray cluster address (``auto``, ``HOST:6379``, ``ray://HOST:10001``); none: a
            local instance.
        workers: Embedding actors.
        batch_size: Chunks per actor call.
        show_progress: Progress bars of the local steps.
        **retriever_options: Options of the named retriever.
    """
    require_ray()
    chunking = chunking or ChunkingConfig()
    if isinstance(retriever, str):
        retriever = make_retriever(retriever, **retriever_options)
    elif retriever_options:
        raise OptionError("retriever options are only accepted with a retriever name")
    if not isinstance(retriever, DenseRetriever):
        log.info("%s has no embeddings to distribute; building it locally", retriever.name)
        return build_index(
            corpus, retriever, chunking=chunking, cache_dir=cache_dir, show_progress=show_progress
        )
    folder = index_folder(cache_dir, index_key(corpus, chunking, retriever))
    with build_lock(folder):  # the shards are the lock holder's; build_index re-enters the lock
        if not (folder / "meta.json").exists():
            ensure_ray(address)
            chunks = chunks_for(corpus, chunking, retriever, show_progress=show_progress)
            vectors = embed_on_ray(
                [c.text for c in chunks], retriever.embedder, workers=workers, batch_size=batch_size
            )
            write_shards(folder, retriever, [c.text for c in chunks], vectors)
        return build_index(
            corpus, retriever, chunking=chunking, cache_dir=cache_dir, show_progress=show_progress
        )
