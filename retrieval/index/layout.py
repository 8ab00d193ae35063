"""Where an index lives in the cache, what keys it, and the folders and lock around it.

Layout under ``<cache>/indexes/`` (see :mod:`longctx.retrieval.index`): ``<key>/`` the finished
index, ``<key>.lock`` its builder's lock, ``<key>.partial/`` an unfinished build's resumable work,
``<key>.build-<pid>-<id>/`` a builder's private output; ``meta.json`` lists the segments.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from longctx.retrieval.base import Retriever
from longctx.retrieval.chunking import ChunkingConfig
from longctx.retrieval.contract.document import IndexableCorpus
from longctx.retrieval.locks import exclusive_lock
from longctx.retrieval.paths import default_cache_dir

#: Bump when chunking, tokenization or the on-disk layout changes: old indexes are then rebuilt.
INDEX_FORMAT_VERSION = 1
CHUNKS_FILE = "chunks.jsonl"


def index_key(corpus: IndexableCorpus, chunking: ChunkingConfig, retriever: Retriever) -> str:
    """Hash of everything that determines the index's contents."""
    spec = {
        "format": INDEX_FORMAT_VERSION,
        "corpus": corpus.fingerprint,
        "chunking": chunking.as_dict(),
        "retriever": retriever.cache_params(),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def index_folder(cache_dir: str | Path | None, key: str) -> Path:
    """Where the finished index of ``key`` lives: ``<cache_dir>/indexes/<key>/``."""
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / "indexes" / key


def partial_folder(folder: Path) -> Path:
    """``<key>.partial/``: the resumable work of an unfinished build (its embedding shards).

    Owned by whoever holds :func:`build_lock`; it survives a crash so the next build
    resumes, and is deleted once the index is in place.
    """
    return folder.with_name(folder.name + ".partial")


def shards_folder(folder: Path) -> Path:
    """The embedding shards of an unfinished dense build of ``folder`` (see
    :mod:`longctx.retrieval.dense`)."""
    return partial_folder(folder) / "shards"


def lock_file(folder: Path) -> Path:
    """``<key>.lock`` beside the index: held by its one builder (never deleted)."""
    return folder.with_name(folder.name + ".lock")


def build_lock(folder: Path) -> AbstractContextManager[Path]:
    """Context manager: the exclusive right to build (or repair) the index at ``folder``.

    Other threads and processes wait on it, then load what the holder built. Re-entrant
    in the holding thread, so a caller may hold it around :func:`~retrieval.index.build_index`.
    """
    return exclusive_lock(lock_file(folder), wait=True, what=f"index {folder.name}")


def segment_paths(meta: dict[str, Any]) -> list[str]:
    """The segment folders of an index, relative to it (``"."``: the index folder itself)."""
    segments = meta.get("segments") or [{"path": "."}]
    paths = [s.get("path") if isinstance(s, dict) else None for s in segments]
    for path in paths:
        if not isinstance(path, str) or Path(path).is_absolute() or ".." in Path(path).parts:
            raise ValueError(f"meta.json names a segment outside the index: {path!r}")
    return [str(p) for p in paths]  # each checked to be a relative path above
