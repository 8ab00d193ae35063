"""Index once, query many: chunked, indexed corpora persisted on disk and reused.

An index is keyed by (corpus fingerprint, chunking config, retriever parameters, format
version). Layout under ``<cache>/indexes/``:

* ``<key>/``: the finished index (``meta.json``, ``chunks.jsonl``, the retriever's files);
* ``<key>.lock``: held (``flock``) by the one thread/process building that key; others
  wait, then load what it built;
* ``<key>.partial/shards/``: embedding shards of an unfinished dense build, owned by the
  lock holder, so an interrupted build resumes from them (each shard's checksum and source
  are recorded beside it; a shard that fails them is re-embedded);
* ``<key>.build-<pid>-<id>/``: the holder's private output folder, renamed to ``<key>/``
  when complete, so nothing ever sees half an index.

A grown corpus (:meth:`Corpus.add <retrieval.contract.Corpus.add>`,
:meth:`~retrieval.contract.Corpus.rescan`) gets its index by segments: when the cache holds the
index of a prefix of the corpus (same chunking and retriever), its files are hard-linked into the
new index and one segment, ``segments/NNN/``, holds only the new documents' chunks (their ids follow
the old ones); ``meta.json`` lists the segments (the first is the folder itself). Queries merge
them: dense searches one flat index of all vectors in chunk order, BM25 scores the segments' raw
term counts with corpus-wide statistics, so rankings equal a rebuild's.

An edited corpus (:meth:`~retrieval.contract.Corpus.remove`,
:meth:`~retrieval.contract.Corpus.update` (delete + add), ``rescan``) starts from the cached index
that holds the most of its first documents, live and in order (:mod:`longctx.retrieval.lineage`:
every segment records its documents' digests in ``documents.json``). That index's files are linked
as for growth, its documents the corpus dropped or replaced are listed in ``meta.json`` as
``deleted_documents`` (tombstones, by stored position), and one segment holds the documents after
them. A load reads the stored chunks and keeps the live ones, numbered as a fresh build numbers them
(:func:`~retrieval.index.types.live_chunks`); the retriever is told which stored chunks are deleted:
BM25 scores the live chunks' raw counts with the live chunks' statistics (bit-identical to a
rebuild), dense searches past the deleted vectors (:mod:`longctx.retrieval.tombstones`).

Segments are compacted as in a log-structured merge: a growth that would leave more than
:attr:`~retrieval.index.growth.CompactionPolicy.max_segments` (10) segments writes the new index as
one segment instead, the layout of a fresh build, made from what the segments hold (BM25's raw
counts merged and turned into a bm25s matrix, dense's vectors; nothing is tokenized or embedded
again). A full merge rather than tiers: BM25's statistics are corpus-wide, so only a single segment
is scored by a precomputed bm25s matrix (a build's query speed); several, however few, are scored
from raw counts. The new index is written beside the prefix's, like any growth, and renamed into
place: a kill leaves the prefix's segments as they were. Deletions past
:attr:`~retrieval.index.growth.CompactionPolicy.max_deleted` (20% of the stored chunks) compact too,
and a compacted index holds the live chunks only (tombstones folded).

``meta.json`` records the size and XXH3-128 digest of every other file, computed while
the file is written (:mod:`longctx.retrieval.checksums`). Every load is validated (files present,
of their recorded size and digest, readable, chunk count as in the meta, one vector per
chunk); a damaged index, truncated or corrupted in place, is named in a warning, moved
aside and rebuilt. Nothing is pickled: chunks are JSON lines, vectors FAISS's format,
BM25 matrices ``.npy`` loaded with pickles off.

One module per idea: :mod:`~retrieval.index.types` (the ``Index``),
:mod:`~retrieval.index.layout` (key, folders, lock), :mod:`~retrieval.index.store` (write,
checksum, publish, load), :mod:`~retrieval.index.growth` (grow, edit, compact),
:mod:`~retrieval.index.process_cache` (the indexes kept in this process) and
:mod:`~retrieval.index.build` (``build_index``, which uses them all). They log as
``longctx.retrieval.index``.
"""

from __future__ import annotations

from longctx.retrieval.index.build import build_index
from longctx.retrieval.index.growth import CompactionPolicy, cached_base
from longctx.retrieval.index.layout import (
    CHUNKS_FILE,
    INDEX_FORMAT_VERSION,
    build_lock,
    index_folder,
    index_key,
    lock_file,
    partial_folder,
    shards_folder,
)
from longctx.retrieval.index.process_cache import clear_memory_cache
from longctx.retrieval.index.store import write_shards
from longctx.retrieval.index.types import Index, live_chunks

__all__ = [
    "CHUNKS_FILE",
    "INDEX_FORMAT_VERSION",
    "CompactionPolicy",
    "Index",
    "build_index",
    "build_lock",
    "cached_base",
    "clear_memory_cache",
    "index_folder",
    "index_key",
    "live_chunks",
    "lock_file",
    "partial_folder",
    "shards_folder",
    "write_shards",
]
