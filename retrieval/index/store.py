"""An index's folder on disk: written with a checksum of every file, published whole, loaded
only when sound.

A builder writes into its own ``<key>.build-<pid>-<id>/`` folder, hashing each file as it is written
(:mod:`longctx.retrieval.checksums`), writes ``meta.json`` last, flushes everything and renames the
folder into place (:func:`publish`): readers see no index or a whole one. A load
(:func:`load_index`) verifies every file against ``meta.json`` before anything is parsed; a damaged
index is moved aside (:func:`move_aside`) and rebuilt. Nothing is pickled: chunks are JSON lines,
vectors FAISS's format, BM25 matrices ``.npy`` loaded with pickles off.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from longctx.retrieval.base import Retriever
from longctx.retrieval.checksums import ChecksumMismatch, Checksums, verify_folder
from longctx.retrieval.chunking import Chunk, ChunkingConfig
from longctx.retrieval.contract.document import IndexableCorpus
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.extras import MissingExtraError
from longctx.retrieval.index.layout import (
    CHUNKS_FILE,
    INDEX_FORMAT_VERSION,
    partial_folder,
    segment_paths,
)
from longctx.retrieval.index.types import Index, live_chunks

log = logging.getLogger(
    "longctx.retrieval.index"
)  # the index package's one logger: what users and tests filter on


def write_shards(
    folder: Path, retriever: DenseRetriever, texts: Sequence[str], vectors: np.ndarray
) -> None:
    """``vectors`` of the chunk ``texts`` as the finished shards (checksummed, with their source)
    that a dense build of ``folder`` with ``retriever`` resumes from (hold
    :func:`~retrieval.index.build_lock`)."""
    retriever.write_shards(texts, vectors, work_dir=partial_folder(folder))


def private_build_folder(folder: Path) -> Path:
    """A new, empty ``<key>.build-<pid>-<id>/`` beside ``folder``, this builder's own, after
    deleting the ones killed builders left (the caller holds the build lock)."""
    for stale in folder.parent.glob(f"{folder.name}.build-*"):
        shutil.rmtree(stale, ignore_errors=True)
    tmp = folder.with_name(f"{folder.name}.build-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    return tmp


def write_chunks(path: Path, chunks: Sequence[Chunk], checksums: Checksums) -> None:
    """``chunks`` as ``chunks.jsonl`` at ``path``, one JSON object a line (hashed into ``checksums``
    as written)."""
    with checksums.open(path, text=True) as f:
        f.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in chunks)


def read_chunks(path: Path) -> list[Chunk]:
    """The chunks of a ``chunks.jsonl``, one JSON object a line."""
    with open(path, encoding="utf-8") as f:
        return [Chunk(**json.loads(line)) for line in f]


def save_retriever(retriever: Retriever, folder: Path, checksums: Checksums) -> None:
    """``retriever.save(folder)``, handing it ``checksums`` when its ``save`` takes them (ours do)
    so that its files are hashed as they are written; the files of any other retriever are
    hashed from disk afterwards."""
    if "checksums" in inspect.signature(retriever.save).parameters:
        # the base signature lacks it; checked above
        retriever.save(folder, checksums=checksums)  # type: ignore[call-arg]
    else:
        retriever.save(folder)


def index_meta(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig,
    retriever: Retriever,
    key: str,
    *,
    num_chunks: int,
    started: float,
    **details: Any,
) -> dict[str, Any]:
    """The ``meta.json`` of a new index: what keys and describes it (``started``: its build's
    ``perf_counter``), then ``details`` (segments, file checksums, what it grew from)."""
    return {
        "format": INDEX_FORMAT_VERSION,
        "key": key,
        "corpus_fingerprint": corpus.fingerprint,
        "num_documents": len(corpus),
        "num_chunks": num_chunks,
        "chunking": chunking.as_dict(),
        "retriever": retriever.cache_params(),
        "build_seconds": round(time.perf_counter() - started, 3),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
        **details,
    }


def publish(tmp: Path, folder: Path, meta: dict[str, Any]) -> None:
    """Write ``meta.json`` into the finished ``tmp`` (last: its presence means complete), flush it
    all to disk and rename it to ``folder`` (atomic: readers see no index or a whole one)."""
    (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
    fsync_tree(tmp)
    tmp.rename(folder)


def fsync_tree(folder: Path) -> None:
    """Flush a finished index to disk before it is renamed into place (a power cut leaves no
    torn index)."""
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())


def move_aside(folder: Path) -> None:
    """Take a damaged or stale index out of the way (renamed, then deleted)."""
    aside = folder.with_name(
        f"{folder.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    )
    try:
        folder.rename(aside)
    except OSError:
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def record_checksums(folder: Path, meta: dict[str, Any]) -> None:
    """Add the checksums of the files of an index written before them to its ``meta.json``
    (replaced atomically; the caller holds the build lock)."""
    checksums = Checksums(folder)
    checksums.add_unrecorded(skip_prefix="meta.json")
    meta = {**meta, "files": checksums.as_dict()}
    tmp = folder / f"meta.json.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(json.dumps(meta, indent=2))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, folder / "meta.json")
    log.info("Recorded the checksums of the index at %s (written before checksums existed)", folder)


def retriever_size(retriever: Retriever) -> int | None:
    """Vectors / documents the loaded retriever holds, when it can tell."""
    num_chunks = getattr(retriever, "num_chunks", None)
    if isinstance(num_chunks, int):
        return num_chunks
    for attr in ("_index",):  # dense: the FAISS index
        inner = getattr(retriever, attr, None)
        if inner is not None and hasattr(inner, "__len__"):
            return len(inner)
    model = getattr(retriever, "_model", None)
    scores = getattr(model, "scores", None)
    if isinstance(scores, dict) and "num_docs" in scores:  # bm25s
        return int(scores["num_docs"])
    tokens = getattr(retriever, "_tokens", None)
    return len(tokens) if isinstance(tokens, list) else None


def load_index(
    folder: Path,
    key: str,
    chunking: ChunkingConfig,
    retriever: Retriever,
    *,
    quiet: bool = False,
    verify: bool = True,
    upgrade: bool = False,
) -> Index | None:
    """The validated index at ``folder``, or None (with a warning naming it unless ``quiet``).

    Checks: meta present and for this key and format; every file of the size and digest
    recorded in the meta (each hashed straight from its memory map, before anything is
    parsed or loaded); ``chunks.jsonl`` parses and holds ``num_chunks`` chunks numbered in
    order; the retriever's files load; the retriever holds as many vectors (documents) as
    there are chunks. ``verify=False`` skips the digests (for measuring what they cost).

    An index written before checksums existed (no ``files`` in its meta) is refused,
    unless ``upgrade`` (the caller holds :func:`~retrieval.index.build_lock`): then, once every
    other check passes, its files' checksums are recorded in its meta, so an hour of embedding
    is not redone for want of them.
    """
    try:
        meta = _checked_meta(folder, key, verify=verify, upgrade=upgrade)
        legacy = "files" not in meta
        segments = [folder / path for path in segment_paths(meta)]
        stored = [c for segment in segments for c in read_chunks(segment / CHUNKS_FILE)]
        if any(c.chunk_id != i for i, c in enumerate(stored)):
            raise ValueError("chunks.jsonl is out of order")
        deleted = set(meta.get("deleted_documents") or [])
        chunks = live_chunks(stored, deleted)
        if len(chunks) != meta.get("num_chunks"):
            raise ValueError(
                f"chunks.jsonl holds {len(chunks)} live chunks, meta.json says "
                f"{meta.get('num_chunks')}"
            )
        _load_retriever(retriever, folder, segments)
        if deleted:
            # only indexes of retrievers that delete have any
            gone = [c.chunk_id for c in stored if c.doc_index in deleted]
            retriever.delete(gone)  # type: ignore[attr-defined]
        size = retriever_size(retriever)
        if size is not None and size != len(chunks):
            raise ValueError(
                f"the {retriever.name} index holds {size} entries for {len(chunks)} chunks"
            )
        if legacy:
            record_checksums(folder, meta)
    except MissingExtraError:  # the index is sound; this environment cannot read it: keep it
        raise
    except Exception as exc:  # noqa: BLE001 - anything unreadable means: never trusted, rebuilt
        if not quiet:
            log.warning(
                "Cached index at %s is damaged or stale (%s: %s); moving it aside and rebuilding",
                folder,
                type(exc).__name__,
                exc,
            )
        return None
    return Index(chunks, retriever, chunking, key, folder, stored=stored)


def _checked_meta(folder: Path, key: str, *, verify: bool, upgrade: bool) -> dict[str, Any]:
    """The meta of the index at ``folder``, checked for ``key``, the format and (``verify``) every
    file's size and digest; one with no checksums is refused unless ``upgrade``."""
    meta: dict[str, Any] = json.loads((folder / "meta.json").read_text())
    if meta.get("key") != key or meta.get("format") != INDEX_FORMAT_VERSION:
        raise ValueError(f"meta.json is for key {meta.get('key')!r}, format {meta.get('format')!r}")
    legacy = "files" not in meta
    if legacy and not upgrade:
        raise ChecksumMismatch("meta.json records no file checksums (written before they existed)")
    if verify and not legacy:
        verify_folder(folder, meta.get("files"))  # before anything is parsed or loaded
    return meta


def _load_retriever(retriever: Retriever, folder: Path, segments: list[Path]) -> None:
    """Load ``retriever``'s files: one segment's at ``folder``, several segments' through
    ``load_segments``."""
    if len(segments) == 1:
        retriever.load(folder)
    elif callable(getattr(retriever, "load_segments", None)):
        retriever.load_segments(segments)  # type: ignore[attr-defined]  # optional part of the contract
    else:
        raise ValueError(
            f"the {retriever.name} retriever cannot read an index of {len(segments)} segments"
        )
