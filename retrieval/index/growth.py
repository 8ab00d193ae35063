"""Growing and editing an index by segments, and compacting the segments back into one.

A grown or edited corpus starts from the cached index that holds the most of its first
documents, live and in order (:func:`cached_base`, :mod:`retrieval.lineage`): that index's
files are hard-linked into the new one, the documents the corpus dropped or replaced are
deleted (tombstones) and one segment holds the documents after them (:func:`grow_index`).
Past :class:`CompactionPolicy`'s limits the new index is written as one segment instead
(:func:`write_compacted`), as a log-structured merge does; see :mod:`retrieval.index`.
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

from retrieval.base import Retriever, SegmentedRetriever, grows
from retrieval.checksums import Checksums
from retrieval.chunking import Chunk, ChunkingConfig
from retrieval.document import IndexableCorpus
from retrieval.fit import chunks_for
from retrieval.index.layout import CHUNKS_FILE, INDEX_FORMAT_VERSION, partial_folder, segment_paths
from retrieval.index.store import load_index, private_build_folder, publish, save_retriever, write_chunks
from retrieval.index.types import Index, live_chunks
from retrieval.lineage import Base, find_base, write_documents

log = logging.getLogger("retrieval.index")  # the index package's one logger: what users and tests filter on


@dataclass(frozen=True)
class CompactionPolicy:
    """When a grown index folds its segments back into one (see :mod:`retrieval.index`).

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
        if isinstance(self.max_segments, bool) or not isinstance(self.max_segments, int) or self.max_segments < 1:
            raise ValueError(f"max_segments must be a positive integer, got {self.max_segments!r}")
        if isinstance(self.max_deleted, bool) or not isinstance(self.max_deleted, (int, float)) or not 0 <= self.max_deleted <= 1:
            raise ValueError(f"max_deleted must be a share in [0, 1], got {self.max_deleted!r}")

    def compacts(self, segments: int, *, deleted_chunks: int = 0, stored_chunks: int = 0) -> bool:
        """Whether an index of ``segments`` segments, ``deleted_chunks`` of its ``stored_chunks`` deleted, is to be compacted into one."""
        return segments > self.max_segments or (deleted_chunks > 0 and deleted_chunks > self.max_deleted * stored_chunks)


def _same_json(a: Any, b: Any) -> bool:
    return bool(json.loads(json.dumps(a, sort_keys=True)) == json.loads(json.dumps(b, sort_keys=True)))


def cached_base(corpus: IndexableCorpus, chunking: ChunkingConfig, retriever: Retriever, root: Path) -> Base | None:
    """The finished index under ``root`` (``<cache>/indexes``), of the same chunking and retriever, that ``corpus``
    starts from: the most of its first documents live in that index, in order (a prefix, or the index of the
    corpus before documents were removed or updated; :mod:`retrieval.lineage`); None when there is none."""
    chunk_spec, params = chunking.as_dict(), retriever.cache_params()
    candidates = []
    for meta_path in root.glob("*/meta.json"):
        if "." in meta_path.parent.name:  # .build-*, .partial, .corrupt-*: never finished indexes
            continue
        try:
            meta = json.loads(meta_path.read_text())
            if (meta.get("format") == INDEX_FORMAT_VERSION and isinstance(meta.get("files"), dict)
                    and _same_json(meta.get("chunking"), chunk_spec) and _same_json(meta.get("retriever"), params)):  # fmt: skip
                candidates.append((meta_path.parent, meta, segment_paths(meta)))
        except (OSError, ValueError):
            continue
    return find_base(corpus, candidates)


def _link(src: Path, dst: Path) -> None:
    """``dst`` as a hard link to ``src`` (no copy, its own lifetime); a copy where links are not possible."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def grow_index(corpus: IndexableCorpus, chunking: ChunkingConfig, retriever: Retriever, key: str, folder: Path, show_progress: bool,
               compaction: CompactionPolicy) -> Index | None:  # fmt: skip
    """The index of ``corpus`` made from a cached index it starts from (:func:`cached_base`): that index's files
    linked, its documents the corpus dropped or replaced deleted (tombstones), and one segment of the
    documents after them (only they are chunked, tokenized, embedded). None when no such index is cached
    or the retriever cannot grow or delete (then the caller builds from scratch). The caller holds the build lock.

    When that would make more segments, or more deleted chunks, than ``compaction`` allows, the new index
    is written as one segment of the live chunks instead (:func:`write_compacted`); the cached index
    is left as it was."""
    if not grows(retriever):
        return None
    found = cached_base(corpus, chunking, retriever, folder.parent)
    if found is None:
        return None
    base_folder, base_meta = found.folder, found.meta
    started = time.perf_counter()
    base = load_index(base_folder, base_meta["key"], chunking, retriever)  # validated: its files are linked below
    if base is None or not getattr(retriever, "extensible", lambda: False)() or (found.deleted and not callable(getattr(retriever, "delete", None))):
        log.info("Cached index at %s cannot grow or delete; building the whole index", base_folder)
        return None
    stored_docs, first = base_meta.get("stored_documents", base_meta["num_documents"]), len(base.stored)
    appended = len(corpus) - found.kept
    shift = stored_docs - found.kept  # a new document's slot: after every stored one
    new_chunks = [replace(c, doc_index=c.doc_index + shift)
                  for c in chunks_for(corpus, chunking, retriever, show_progress=show_progress, start=found.kept, first_chunk_id=first)]  # fmt: skip
    partial = partial_folder(folder)
    partial.mkdir(parents=True, exist_ok=True)
    if appended:
        retriever.extend(new_chunks, work_dir=partial, show_progress=show_progress)
    deleted = set(base_meta.get("deleted_documents") or []) | set(found.deleted)
    if found.deleted:
        newly = set(found.deleted)
        retriever.delete([c.chunk_id for c in base.stored if c.doc_index in newly])
    stored = base.stored + new_chunks
    live = live_chunks(stored, deleted)
    old_segments = base_meta.get("segments") or [{"path": ".", "documents": [0, stored_docs], "chunks": [0, first]}]
    segment = {"path": f"segments/{len(old_segments):03d}", "documents": [stored_docs, stored_docs + appended], "chunks": [first, len(stored)]}
    compacting = compaction.compacts(len(old_segments) + bool(appended), deleted_chunks=len(stored) - len(live), stored_chunks=len(stored))
    tmp = private_build_folder(folder)  # after deleting the ones killed builders left (we hold the lock)
    try:
        checksums = Checksums(tmp)
        if compacting:
            segments = write_compacted(tmp, retriever, live, corpus, checksums)
        else:
            try:
                for name, entry in base_meta["files"].items():  # the base's segments, verified by load_index above
                    _link(base_folder / name, tmp / name)
                    checksums.files[name] = entry
            except OSError as exc:  # the base's index was moved aside (repaired) meanwhile: build whole
                log.info("Cannot reuse the cached index at %s (%s); building the whole index", base_folder, exc)
                shutil.rmtree(tmp, ignore_errors=True)
                return None
            segments = list(old_segments)
            if appended:
                seg_dir = tmp / str(segment["path"])
                seg_dir.mkdir(parents=True)
                retriever.save_segment(seg_dir, first, checksums)
                write_chunks(seg_dir / CHUNKS_FILE, new_chunks, checksums)
                write_documents(seg_dir, corpus.document_digests[found.kept :], checksums)
                segments.append(segment)
            checksums.add_unrecorded()
        tombstones = {"stored_documents": stored_docs + appended, "deleted_documents": sorted(deleted)} if deleted and not compacting else {}
        meta = {
            "format": INDEX_FORMAT_VERSION,
            "key": key,
            "corpus_fingerprint": corpus.fingerprint,
            "num_documents": len(corpus),
            "num_chunks": len(live),
            "chunking": chunking.as_dict(),
            "retriever": retriever.cache_params(),
            "build_seconds": round(time.perf_counter() - started, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "grown_from": base_meta["key"],
            **({"compacted_segments": len(old_segments) + bool(appended)} if compacting else {}),
            **tombstones,
            "segments": segments,
            "files": checksums.as_dict(),
        }
        publish(tmp, folder, meta)  # atomic: the base's index (its segments) untouched, the new one whole or absent
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(partial, ignore_errors=True)
    edits = f", deleted {len(found.deleted)} documents" if found.deleted else ""
    log.info("Grew %s index by %d documents (%d chunks)%s in %.1fs at %s (from %s)%s", retriever.name, appended, len(new_chunks), edits,
             meta["build_seconds"], folder, base_folder.name,
             f"; compacted {len(old_segments) + bool(appended)} segments into one" if compacting else "")  # fmt: skip
    if compacting:
        return Index(live, retriever, chunking, key, folder)
    return Index(live, retriever, chunking, key, folder, stored=stored)


def write_compacted(tmp: Path, retriever: SegmentedRetriever, chunks: list[Chunk], corpus: IndexableCorpus,
                    checksums: Checksums) -> list[dict[str, Any]]:  # fmt: skip
    """Write the grown ``retriever`` into ``tmp`` as an index of one segment of the live ``chunks``, the layout of a fresh build;
    its segment list.

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
