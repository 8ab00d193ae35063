"""Embeddings by text digest, one store per embedder and namespace, kept in the cache and shared
by every corpus: what makes a grown or edited corpus's index-time build embed only its new texts.

HippoRAG's official ``EmbeddingStore`` (``embedding_store.py`` @ c617143) keeps one store per
namespace (passages, entities, facts) keyed by the hash of each text, and ``insert_strings``
embeds only the texts it lacks; RAPTOR's official tree embeds every node each build. Here both
strategies embed through this store (HippoRAG's three namespaces, RAPTOR's tree nodes).

On disk: ``<cache>/embeddings/<embedder>/<namespace>/<digest>.npz``, each file a segment of
text digests and their vectors written once, atomically, and named by the digest of its bytes
(its checksum): a segment that fails it, or holds a NaN, infinite or zero vector (written before
replies were checked), is named in a warning, removed, and its texts are embedded again. A build
killed after a batch finds that batch's segment. Past
:data:`MAX_SEGMENTS` segments a load folds them into one.
"""

from __future__ import annotations

import io
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from longctx.graphs.index.index_artifact import digest_of
from longctx.retrieval.checksums import digest_bytes, digest_texts
from longctx.retrieval.embedder_base import (
    EmbedderError,
    checked_vectors,
    dimension_error,
    source_of,
)
from longctx.retrieval.embedders import openai_input
from longctx.retrieval.locks import exclusive_lock

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], np.ndarray]
#: Segments a store folds into one when it loads more (each build adds at most one per batch).
MAX_SEGMENTS = 32


def embedder_folder(
    root: Path, embedder: str, model_id: str, variant: dict[str, str] | None = None
) -> Path:
    """``<cache>/embeddings/<digest of the embedder's name and model>`` (and of ``variant``, how the
    texts are sent or the vectors kept, where it is not the default)."""
    parts = {"embedder": embedder, "model": model_id, **(variant or {})}
    return root / "embeddings" / digest_of(parts)[:32]


def text_key(text: str) -> str:
    """The key of a text's vector: the digest of its UTF-8 bytes."""
    return digest_texts([text])


@dataclass
class EmbeddingStore:
    """The vectors of one namespace by text digest; ``embed`` computes the missing ones.

    Attributes:
        folder: Where its segments live (``None``: this process only).
        embed: The embedder's ``embed_documents``.
        computed: Texts embedded by this store object (each distinct text once).
        reused: Texts found stored (each distinct text once per request).
        source: The embedder's server or model, named in an error.
    """

    folder: Path | None
    embed: Embed
    computed: int = 0
    reused: int = 0
    source: str = "the embedder"
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        if self.folder is not None:
            self._load(self.folder)

    def _load(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        segments = sorted(folder.glob("*.npz"))
        for path in segments:
            try:
                data = path.read_bytes()
            except FileNotFoundError:  # folded into one segment by another process meanwhile
                continue
            try:
                if digest_bytes(data) != path.stem:
                    raise ValueError(f"{path.name} fails its checksum")
                with np.load(io.BytesIO(data), allow_pickle=False) as npz:
                    keys, rows = npz["keys"], npz["vectors"]
                if len(keys) != len(rows):
                    raise ValueError(f"{len(keys)} keys for {len(rows)} vectors")
                checked_vectors(rows, len(keys), f"segment {path.name}")  # as written before checks
            except (ValueError, KeyError, EmbedderError) as exc:
                log.warning(
                    "embedding segment %s is unusable (%s): its texts are embedded again", path, exc
                )
                path.unlink(missing_ok=True)
                continue
            self.vectors.update(zip((str(k) for k in keys), rows))
        if len(segments) > MAX_SEGMENTS:
            self._fold(folder, segments)

    def _fold(self, folder: Path, segments: list[Path]) -> None:
        """Write every vector held as one segment, then remove the segments it replaces."""
        with exclusive_lock(folder / ".lock", what="an embedding store's compaction"):
            written = self._write(list(self.vectors), np.stack(list(self.vectors.values())))
            for path in segments:
                if path != written:
                    path.unlink(missing_ok=True)

    def _write(self, keys: list[str], rows: np.ndarray) -> Path | None:
        """One segment of ``keys`` and ``rows``, named by its bytes' digest (written atomically)."""
        if self.folder is None:
            return None
        buf = io.BytesIO()
        np.savez(buf, keys=np.asarray(keys, dtype=str), vectors=np.asarray(rows))
        data = buf.getvalue()
        path = self.folder / f"{digest_bytes(data)}.npz"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
        return path

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """One row per text: stored vectors where the store holds them, the rest embedded (each
        distinct text once) and stored before they are returned."""
        keys = [text_key(t) for t in texts]
        missing = {k: t for k, t in zip(keys, texts) if k not in self.vectors}
        if missing:
            rows = np.asarray(self.embed(list(missing.values())))
            held = next(iter(self.vectors.values()), None)
            if held is not None and rows.shape[1:] != held.shape:
                raise dimension_error(self.source, rows.shape[-1], held.shape[-1])
            self._write(list(missing), rows)
            with self._lock:
                self.vectors.update(zip(missing, rows))
        with self._lock:
            self.computed += len(missing)
            self.reused += len(set(keys)) - len(missing)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self.vectors[k] for k in keys])


def open_store(
    root: Path | None,
    name: str,
    embedder: Any,
    namespace: str,
    *,
    flatten: bool = False,
    raw: bool = False,
) -> EmbeddingStore:
    """The store of ``namespace`` for ``embedder`` (registered as ``name``; its ``model_id`` names
    its vectors) under the cache ``root`` (none: in this process only). ``flatten`` and ``raw``: as
    :func:`embed_function`; each gives the store another folder (its vectors differ)."""
    model = str(getattr(embedder, "model_id", type(embedder).__name__))
    variant = {"inputs": "newlines as spaces"} if flatten else {}
    variant |= {"vectors": "as returned"} if raw else {}
    folder = None if root is None else embedder_folder(root, name, model, variant) / namespace
    embed = embed_function(embedder, flatten=flatten, raw=raw)
    return EmbeddingStore(folder, embed, source=source_of(embedder))


def embed_function(embedder: Any, *, flatten: bool = False, raw: bool = False) -> Embed:
    """``embedder``'s ``embed_documents``; with ``raw``, its ``embed_raw`` (the server's vectors as
    returned, the official RAPTOR code's); with ``flatten``, every text sent as the official codes
    send it to an OpenAI embedding model (:func:`~retrieval.embedders.openai_input`)."""
    base: Embed = embedder.embed_raw if raw else embedder.embed_documents
    if not flatten:
        return base
    return lambda texts: base([openai_input(t) for t in texts])


def query_vector(
    embedder: Any, text: str, *, flatten: bool = False, raw: bool = False
) -> np.ndarray:
    """The vector of the query ``text``: ``embed_query``, or as :func:`embed_function` embeds a
    text."""
    if not (flatten or raw):
        return np.asarray(embedder.embed_query(text))
    vector: np.ndarray = embed_function(embedder, flatten=flatten, raw=raw)([text])[0]
    return vector
