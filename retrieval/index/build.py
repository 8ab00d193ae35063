"""``build_index``: the index of a corpus, from this process's memory, the disk cache, a cached
index it grows from, or built.

One builder per index key (:func:`~retrieval.index.build_lock`): concurrent calls, in threads
or processes, wait for it and load what it built. A fresh build chunks the corpus, builds the
retriever in the resumable ``<key>.partial/`` folder and publishes the index whole
(:mod:`longctx.retrieval.index.store`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from longctx.retrieval.base import Retriever
from longctx.retrieval.checksums import Checksums
from longctx.retrieval.chunking import ChunkingConfig
from longctx.retrieval.contract.document import IndexableCorpus
from longctx.retrieval.contract.errors import OptionError
from longctx.retrieval.fit import chunks_for
from longctx.retrieval.hybrid import HybridRetriever
from longctx.retrieval.index.growth import CompactionPolicy, grow_index
from longctx.retrieval.index.layout import (
    CHUNKS_FILE,
    build_lock,
    index_folder,
    index_key,
    partial_folder,
)
from longctx.retrieval.index.process_cache import remember, remembered
from longctx.retrieval.index.store import (
    index_meta,
    load_index,
    move_aside,
    private_build_folder,
    publish,
    save_retriever,
    write_chunks,
)
from longctx.retrieval.index.types import Index
from longctx.retrieval.index.waits import waited_for
from longctx.retrieval.lineage import write_documents
from longctx.retrieval.retrievers import make_retriever

log = logging.getLogger(
    "longctx.retrieval.index"
)  # the index package's one logger: what users and tests filter on


def build_index(
    corpus: IndexableCorpus,
    retriever: str | Retriever = "bm25",
    *,
    chunking: ChunkingConfig | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    show_progress: bool = False,
    compaction: CompactionPolicy | None = None,
    **retriever_options: Any,
) -> Index:
    """Chunk ``corpus`` and index it with ``retriever``, reusing a cached index when one matches.

    One builder per index key: concurrent calls (threads or processes) for the same key
    wait for it and load its result. A cached index is validated on load; a damaged one
    is named in a warning, moved aside and rebuilt.

    Args:
        corpus: The corpus to index.
        retriever: A registry name (``bm25``, ``dense``, ``contriever``, ``openai``, ``hybrid``) or
            an instance.
        chunking: How to chunk; default 512-token chunks.
        cache_dir: Root of the on-disk cache (default :func:`~retrieval.paths.default_cache_dir`).
        use_cache: Read and write the on-disk cache; ``False`` builds in memory only.
        show_progress: Progress bars while chunking and embedding.
        compaction: When an index grown by segments is compacted into one (default
            :class:`CompactionPolicy`).
        **retriever_options: Options of the named retriever (e.g. ``model=...``, ``engine=...``).
    """
    chunking = chunking or ChunkingConfig()
    if isinstance(retriever, str):
        retriever = make_retriever(retriever, **retriever_options)
    elif retriever_options:
        raise OptionError("retriever options are only accepted with a retriever name")
    if isinstance(
        retriever, HybridRetriever
    ):  # made of its components' indexes, each cached under its own key
        return _hybrid_index(
            corpus,
            retriever,
            chunking,
            cache_dir=cache_dir,
            use_cache=use_cache,
            show_progress=show_progress,
            compaction=compaction,
        )
    key = index_key(corpus, chunking, retriever)
    if not use_cache:
        return _build(corpus, chunking, retriever, key, None, show_progress)
    cached = remembered(key)
    if cached is not None:
        return cached
    folder = index_folder(cache_dir, key)
    index = (
        load_index(folder, key, chunking, retriever, quiet=True)
        if (folder / "meta.json").exists()
        else None
    )
    if index is None:
        return _build_or_wait(
            corpus,
            chunking,
            retriever,
            key,
            folder,
            show_progress,
            compaction or CompactionPolicy(),
        )
    return remember(key, index)


def _build_or_wait(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig,
    retriever: Retriever,
    key: str,
    folder: Path,
    show_progress: bool,
    compaction: CompactionPolicy,
) -> Index:
    """The index at ``folder`` under its build lock: the one another builder made while this
    call waited, else loaded (upgraded), grown from an older index, or built."""
    with waited_for(
        build_lock(folder)
    ):  # one builder; the others wait here (not their build), then find its index
        cached = remembered(key)
        if cached is not None:
            return cached
        index = (
            load_index(folder, key, chunking, retriever, upgrade=True) if folder.exists() else None
        )
        if index is None:
            if folder.exists():
                move_aside(folder)
            index = grow_index(
                corpus,
                chunking,
                retriever,
                key,
                folder,
                show_progress,
                compaction,
            )
        if index is None:
            index = _build(corpus, chunking, retriever, key, folder, show_progress)
        remember(key, index)
        return index


def _hybrid_index(
    corpus: IndexableCorpus, hybrid: HybridRetriever, chunking: ChunkingConfig, **options: Any
) -> Index:
    """The hybrid index of ``corpus``: each component's own (cached) index, fused at search time.

    Each component's index is built, loaded or grown under its own key, so a dense index
    already built for ``retriever="dense"`` is reused, never embedded twice.
    """
    parts = {
        name: build_index(corpus, r, chunking=chunking, **options)
        for name, r in hybrid.components.items()
    }
    first = next(iter(parts.values()))
    for name, part in parts.items():
        if [c.chunk_id for c in part.chunks] != [c.chunk_id for c in first.chunks]:
            raise ValueError(
                f"hybrid component {name!r} indexes {len(part.chunks)} chunks, the first "
                f"{len(first.chunks)}: they must index the same chunks"
            )
    bound = hybrid.with_components({name: part.retriever for name, part in parts.items()})
    return Index(first.chunks, bound, chunking, index_key(corpus, chunking, hybrid), first.path)


def _build(
    corpus: IndexableCorpus,
    chunking: ChunkingConfig,
    retriever: Retriever,
    key: str,
    folder: Path | None,
    show_progress: bool,
) -> Index:
    """The index of ``corpus`` built from scratch: in memory when ``folder`` is None, else published
    at ``folder`` (the caller holds its build lock)."""
    started = time.perf_counter()
    chunks = chunks_for(corpus, chunking, retriever, show_progress=show_progress)
    if folder is None:
        with tempfile.TemporaryDirectory() as scratch:
            retriever.build(chunks, work_dir=Path(scratch), show_progress=show_progress)
        return Index(chunks, retriever, chunking, key, None)
    partial = partial_folder(folder)
    partial.mkdir(parents=True, exist_ok=True)
    tmp = private_build_folder(folder)
    try:
        retriever.build(chunks, work_dir=partial, show_progress=show_progress)
        checksums = Checksums(tmp)
        save_retriever(retriever, tmp, checksums)
        write_chunks(tmp / CHUNKS_FILE, chunks, checksums)
        write_documents(tmp, corpus.document_digests, checksums)
        hashed_after = (
            checksums.add_unrecorded()
        )  # files a library wrote itself (bm25s), hashed from the page cache
        if hashed_after:
            log.debug(
                "Hashed after writing (written by %s itself): %s",
                retriever.name,
                ", ".join(hashed_after),
            )
        meta = index_meta(
            corpus,
            chunking,
            retriever,
            key,
            num_chunks=len(chunks),
            started=started,
            segments=[{"path": ".", "documents": [0, len(corpus)], "chunks": [0, len(chunks)]}],
            files=checksums.as_dict(),
        )
        publish(tmp, folder, meta)
    except BaseException:
        shutil.rmtree(
            tmp, ignore_errors=True
        )  # the shards in .partial stay, for the next build to resume
        raise
    shutil.rmtree(partial, ignore_errors=True)
    log.info(
        "Built %s index of %d chunks in %.1fs at %s",
        retriever.name,
        len(chunks),
        meta["build_seconds"],
        folder,
    )
    return Index(chunks, retriever, chunking, key, folder)
