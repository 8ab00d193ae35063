"""Growing and editing an index by segments, and compacting the segments back into one.

A grown or edited corpus starts from the cached index that holds the most of its first
documents, live and in order (:func:`cached_base`, :mod:`longctx.retrieval.lineage`): that index's
files are hard-linked into the new one, the documents the corpus dropped or replaced are
deleted (tombstones) and one segment holds the documents after them (:func:`grow_index`).
Past :class:`CompactionPolicy`'s limits the new index is written as one segment instead
(:func:`write_compacted`), as a log-structured merge does; see :mod:`longctx.retrieval.index`.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from longctx.retrieval.base import Retriever, SegmentedRetriever, grows
from longctx.retrieval.checksums import Checksums
from longctx.retrieval.chunking import Chunk, ChunkingConfig
from longctx.retrieval.contract.document import IndexableCorpus
from longctx.retrieval.fit import chunks_for
from longctx.retrieval.index.layout import (
    CHUNKS_FILE,
    INDEX_FORMAT_VERSION,
    partial_folder,
    segment_paths,
)
from longctx.retrieval.index.store import (
    index_meta,
    load_index,
    private_build_folder,
    publish,
    save_retriever,
    write_chunks,
)
from longctx.retrieval.index.types import Index, live_chunks
from longctx.retrieval.lineage import Base, find_base, write_documents

log = logging.getLogger(
    "longctx.retrieval.index"
)  # the index package's one logger: what users and tests filter on


@dataclass(frozen=True)
class CompactionPolicy:
    """When a grown index folds its segments back into one (see :mod:`longctx.retrieval.index`).

    Attributes:
        max_segments: The most segments an index keeps; a growth that would make more writes
            the new index as one segment. 10 is the merge factor of Lucene's log merge policy
            (``LogMergePolicy.DEFAULT_MERGE_FACTOR``) and the segments per tier of its tiered one.
        max_deleted: The largest share of stored chunks that may be deleted (tombstones); an edit
            that would leave more writes the new index as one segment of the live chunks. 0.2 is
            the default ``deletesPctAllowed`` (20%) of Lucene's ``TieredMergePolicy``.
    """

    max_segments: int = 10
    max_deleted: float = 0.2

    def __post_init__(self) -> None:
        if (
            isinstance(self.max_segments, bool)
            or not isinstance(self.max_segments, int)
            or self.max_segments < 1
        ):
            raise ValueError(f"max_segments must be a positive integer, got {self.max_segments!r}")
        if (
            isinstance(self.max_deleted, bool)
            or not isinstance(self.max_deleted, (int, float))
            or not 0 <= self.max_deleted <= 1
        ):
            raise ValueError(f"max_deleted must be a share in [0, 1], got {self.max_deleted!r}")

    def compacts(self, segments: int, *, deleted_chunks: int = 0, stored_chunks: int = 0) -> bool:
        """Whether an index of ``segments`` segments, ``deleted_chunks`` of its ``stored_chunks``
        deleted, is to be compacted into one."""
        return segments > self.max_segments or (
            deleted_chunks > 0 and deleted_chunks > self.max_deleted * stored_chunks
        )


def _same_json(a: Any, b: Any) -> bool:
    return bool(
        json.loads(json.dumps(a, sort_keys=True)) == json.loads(json.dumps(b, sort_keys=True))
    )


def cached_base(
    corpus: IndexableCorpus, chunking: ChunkingConfig, retriever: Retriever, root: Path
) -> Base | None:
    """The finished index under ``root`` (``<cache>/indexes``), of the same chunking and retriever,
    that ``corpus`` starts from: the most of its first documents live in that index, in order (a
    prefix, or the index of the corpus before documents were removed or updated;
    :mod:`longctx.retrieval.lineage`); None when there is none."""
    chunk_spec, params = chunking.as_dict(), retriever.cache_params()
    candidates = []
    for meta_path in root.glob("*/meta.json"):
        if "." in meta_path.parent.name:  # .build-*, .partial, .corrupt-*: never finished indexes
            continue
        try:
            meta = json.loads(meta_path.read_text())
            if (
                meta.get("format") == INDEX_FORMAT_VERSION
                and isinstance(meta.get("files"), dict)
                and _same_json(meta.get("chunking"), chunk_spec)
                and _same_json(meta.get("retriever"), params)
            ):
                candidates.append((meta_path.parent, meta, segment_paths(meta)))
        except (OSError, ValueError):
            continue
    return find_base(corpus, candidates)


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (no copy, its own lifetime); a copy where links are
    not possible."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


@dataclass(frozen=True)
class _Growth:
    """What a growth makes of the cached index it starts from (the retriever already extended and
    told the deletions)."""

    base: Base  # the cached index, and what of it the corpus keeps
    stored_documents: int  # its document slots (a new document's slot comes after them)
    appended: int  # the documents after the kept ones, which the new segment holds
    new_chunks: list[Chunk]  # their chunks, numbered after the base's
    stored: list[Chunk]  # every chunk the new index's files hold: the base's, then the new ones
    live: list[Chunk]  # the stored chunks of live documents, numbered as a fresh build numbers them
    deleted: set[int]  # deleted document slots
    old_segments: list[dict[str, Any]]  # the base's segments
    compacting: bool  # whether the new index is written as one segment of the live chunks

    @property
    def segments(self) -> int:
        """The segments the grown index would have without compaction."""
        return len(self.old_segments) + bool(self.appended)


def grow_index(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig,
    retriever: Retriever,
    key: str,
    folder: Path,
    show_progress: bool,
    compaction: CompactionPolicy,
) -> Index | None:
    """The index of ``corpus`` made from a cached index it starts from (:func:`cached_base`): that
    index's files linked, its documents the corpus dropped or replaced deleted (tombstones), and one
    segment of the documents after them (only they are chunked, tokenized, embedded). None when no
    such index is cached or the retriever cannot grow or delete (then the caller builds from
    scratch). The caller holds the build lock.

    When that would make more segments, or more deleted chunks, than ``compaction`` allows, the new
    index is written as one segment of the live chunks instead (:func:`write_compacted`); the cached
    index is left as it was."""
    if not grows(retriever):
        return None
    found = cached_base(corpus, chunking, retriever, folder.parent)
    if found is None:
        return None
    started = time.perf_counter()
    base = load_index(
        found.folder, found.meta["key"], chunking, retriever
    )  # validated: its files are linked below
    if (
        base is None
        or not getattr(retriever, "extensible", lambda: False)()
        or (found.deleted and not callable(getattr(retriever, "delete", None)))
    ):
        log.info("Cached index at %s cannot grow or delete; building the whole index", found.folder)
        return None
    partial = partial_folder(folder)
    growth = _extend(
        corpus, chunking, retriever, found, base.stored, partial, show_progress, compaction
    )
    tmp = private_build_folder(
        folder
    )  # after deleting the ones killed builders left (we hold the lock)
    try:
        checksums = Checksums(tmp)
        segments = _write_grown(tmp, retriever, corpus, growth, checksums)
        if segments is None:
            return None
        tombstones = {
            "stored_documents": growth.stored_documents + growth.appended,
            "deleted_documents": sorted(growth.deleted),
        }
        meta = index_meta(
            corpus,
            chunking,
            retriever,
            key,
            num_chunks=len(growth.live),
            started=started,
            grown_from=found.meta["key"],
            **({"compacted_segments": growth.segments} if growth.compacting else {}),
            **(tombstones if growth.deleted and not growth.compacting else {}),
            segments=segments,
            files=checksums.as_dict(),
        )
        publish(
            tmp, folder, meta
        )  # atomic: the base's index (its segments) untouched, the new one whole or absent
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(partial, ignore_errors=True)
    edits = f", deleted {len(found.deleted)} documents" if found.deleted else ""
    log.info(
        "Grew %s index by %d documents (%d chunks)%s in %.1fs at %s (from %s)%s",
        retriever.name,
        growth.appended,
        len(growth.new_chunks),
        edits,
        meta["build_seconds"],
        folder,
        found.folder.name,
        f"; compacted {growth.segments} segments into one" if growth.compacting else "",
    )
    if growth.compacting:
        return Index(growth.live, retriever, chunking, key, folder)
    return Index(growth.live, retriever, chunking, key, folder, stored=growth.stored)


def _extend(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig,
    retriever: SegmentedRetriever,
    found: Base,
    base_stored: list[Chunk],
    partial: Path,
    show_progress: bool,
    compaction: CompactionPolicy,
) -> _Growth:
    """Extend the loaded base index in ``retriever`` by the corpus's documents after the kept ones
    (chunked, tokenized, embedded in the resumable ``partial`` folder) and delete the documents the
    corpus dropped; what the new index holds."""
    stored_docs, first = (
        found.meta.get("stored_documents", found.meta["num_documents"]),
        len(base_stored),
    )
    appended = len(corpus) - found.kept
    shift = stored_docs - found.kept  # a new document's slot: after every stored one
    new_chunks = [
        replace(c, doc_index=c.doc_index + shift)
        for c in chunks_for(
            corpus,
            chunking,
            retriever,
            show_progress=show_progress,
            start=found.kept,
            first_chunk_id=first,
        )
    ]
    partial.mkdir(parents=True, exist_ok=True)
    if appended:
        retriever.extend(new_chunks, work_dir=partial, show_progress=show_progress)
    deleted = set(found.meta.get("deleted_documents") or []) | set(found.deleted)
    if found.deleted:
        newly = set(found.deleted)
        retriever.delete([c.chunk_id for c in base_stored if c.doc_index in newly])
    stored = base_stored + new_chunks
    live = live_chunks(stored, deleted)
    old_segments = found.meta.get("segments") or [
        {"path": ".", "documents": [0, stored_docs], "chunks": [0, first]}
    ]
    compacting = compaction.compacts(
        len(old_segments) + bool(appended),
        deleted_chunks=len(stored) - len(live),
        stored_chunks=len(stored),
    )
    return _Growth(
        found, stored_docs, appended, new_chunks, stored, live, deleted, old_segments, compacting
    )


def _write_grown(
    tmp: Path,
    retriever: SegmentedRetriever,
    corpus: IndexableCorpus,
    growth: _Growth,
    checksums: Checksums,
) -> list[dict[str, Any]] | None:
    """Write the grown index's files into ``tmp``: compacted into one segment, or the base's files
    linked and one segment of the new documents; its segment list, or None (``tmp`` deleted) when
    the base's files are gone."""
    if growth.compacting:
        return write_compacted(tmp, retriever, growth.live, corpus, checksums)
    base_folder = growth.base.folder
    try:
        for name, entry in growth.base.meta[
            "files"
        ].items():  # the base's segments, verified by load_index
            _link(base_folder / name, tmp / name)
            checksums.files[name] = entry
    except OSError as exc:  # the base's index was moved aside (repaired) meanwhile: build whole
        log.info(
            "Cannot reuse the cached index at %s (%s); building the whole index", base_folder, exc
        )
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    segments = list(growth.old_segments)
    if growth.appended:
        first, docs = len(growth.stored) - len(growth.new_chunks), growth.stored_documents
        segment = {
            "path": f"segments/{len(growth.old_segments):03d}",
            "documents": [docs, docs + growth.appended],
            "chunks": [first, len(growth.stored)],
        }
        seg_dir = tmp / str(segment["path"])
        seg_dir.mkdir(parents=True)
        retriever.save_segment(seg_dir, first, checksums)
        write_chunks(seg_dir / CHUNKS_FILE, growth.new_chunks, checksums)
        write_documents(seg_dir, corpus.document_digests[growth.base.kept :], checksums)
        segments.append(segment)
    checksums.add_unrecorded()
    return segments


def write_compacted(
    tmp: Path,
    retriever: SegmentedRetriever,
    chunks: list[Chunk],
    corpus: IndexableCorpus,
    checksums: Checksums,
) -> list[dict[str, Any]]:
    """Write the grown ``retriever`` into ``tmp`` as an index of one segment of the live ``chunks``,
    the layout of a fresh build; its segment list.

    BM25 merges its segments' raw counts without the deleted chunks' and makes its bm25s
    model from them (:meth:`~retrieval.bm25.BM25Retriever.compact`: nothing re-tokenized);
    dense keeps the live vectors in one flat index and saves it whole (nothing re-embedded).
    """
    compact = getattr(retriever, "compact", None)
    if callable(compact):
        compact()
    save_retriever(retriever, tmp, checksums)
    write_chunks(tmp / CHUNKS_FILE, chunks, checksums)
    write_documents(tmp, corpus.document_digests, checksums)
    checksums.add_unrecorded()  # files a library wrote itself (bm25s)
    return [{"path": ".", "documents": [0, len(corpus)], "chunks": [0, len(chunks)]}]
