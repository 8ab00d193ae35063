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

A grown corpus (:meth:`Corpus.add <retrieval.contract.Corpus.add>`, :meth:`~retrieval.contract.Corpus.rescan`)
gets its index by segments: when the cache holds the index of a prefix of the corpus (same
chunking and retriever), its files are hard-linked into the new index and one segment,
``segments/NNN/``, holds only the new documents' chunks (their ids follow the old ones);
``meta.json`` lists the segments (the first is the folder itself). Queries merge them:
dense searches one flat index of all vectors in chunk order, BM25 scores the segments' raw
term counts with corpus-wide statistics, so rankings equal a rebuild's.

An edited corpus (:meth:`~retrieval.contract.Corpus.remove`, :meth:`~retrieval.contract.Corpus.update`
(delete + add), ``rescan``) starts from the cached index that holds the most of its first
documents, live and in order (:mod:`retrieval.lineage`: every segment records its documents'
digests in ``documents.json``). That index's files are linked as for growth, its documents
the corpus dropped or replaced are listed in ``meta.json`` as ``deleted_documents``
(tombstones, by stored position), and one segment holds the documents after them. A load
reads the stored chunks and keeps the live ones, numbered as a fresh build numbers them
(:func:`live_chunks`); the retriever is told which stored chunks are deleted: BM25 scores
the live chunks' raw counts with the live chunks' statistics (bit-identical to a rebuild),
dense searches past the deleted vectors (:mod:`retrieval.tombstones`).

Segments are compacted as in a log-structured merge: a growth that would leave more than
:attr:`CompactionPolicy.max_segments` (10) segments writes the new index as one segment
instead, the layout of a fresh build, made from what the segments hold (BM25's raw counts
merged and turned into a bm25s matrix, dense's vectors; nothing is tokenized or embedded
again). A full merge rather than tiers: BM25's statistics are corpus-wide, so only a single
segment is scored by a precomputed bm25s matrix (a build's query speed); several, however
few, are scored from raw counts. The new index is written beside the prefix's, like any
growth, and renamed into place: a kill leaves the prefix's segments as they were. Deletions
past :attr:`CompactionPolicy.max_deleted` (20% of the stored chunks) compact too, and a
compacted index holds the live chunks only (tombstones folded).

``meta.json`` records the size and XXH3-128 digest of every other file, computed while
the file is written (:mod:`retrieval.checksums`). Every load is validated (files present,
of their recorded size and digest, readable, chunk count as in the meta, one vector per
chunk); a damaged index, truncated or corrupted in place, is named in a warning, moved
aside and rebuilt. Nothing is pickled: chunks are JSON lines, vectors FAISS's format,
BM25 matrices ``.npy`` loaded with pickles off.
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import json
import logging
import os
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.base import Hit, Retriever
from retrieval.checksums import ChecksumMismatch, Checksums, verify_folder
from retrieval.chunking import Chunk, ChunkingConfig
from retrieval.contract import Corpus
from retrieval.dense import DenseRetriever
from retrieval.extras import MissingExtraError
from retrieval.fit import chunks_for
from retrieval.hybrid import HybridRetriever
from retrieval.lineage import Base, find_base, write_documents
from retrieval.locks import exclusive_lock
from retrieval.paths import default_cache_dir
from retrieval.retrievers import make_retriever

log = logging.getLogger(__name__)

#: Bump when chunking, tokenization or the on-disk layout changes: old indexes are then rebuilt.
INDEX_FORMAT_VERSION = 1
CHUNKS_FILE = "chunks.jsonl"
_MEMORY_CACHE: OrderedDict[str, Index] = OrderedDict()
_MEMORY_CACHE_SIZE = 4


def clear_memory_cache() -> None:
    """Forget the indexes kept in this process (the next lookup loads from disk); for tests and long-lived services."""
    _MEMORY_CACHE.clear()
_MEMORY_LOCK = threading.Lock()


@dataclass(frozen=True)
class CompactionPolicy:
    """When a grown index folds its segments back into one (see the module docstring).

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


class Index:
    """A corpus's chunks plus a built retriever over them."""

    def __init__(self, chunks: list[Chunk], retriever: Retriever, chunking: ChunkingConfig, key: str, path: Path | None,
                 *, stored: list[Chunk] | None = None):  # fmt: skip
        self.chunks = chunks
        self.retriever = retriever
        self.chunking = chunking
        self.key = key
        self.path = path
        #: Every chunk the index's files hold, deleted ones included, by stored id and document slot
        #: (``chunks`` are the live ones, numbered as a fresh build of the corpus numbers them).
        self.stored = stored if stored is not None else chunks

    def __len__(self) -> int:
        return len(self.chunks)

    def __repr__(self) -> str:
        return f"Index({self.retriever.name}, {len(self)} chunks, key={self.key[:12]})"

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first."""
        if not query.strip():
            raise ValueError("Cannot search with an empty query")
        detailed = getattr(self.retriever, "search_components", None)  # fused retrievers (hybrid) say what each component ranked
        if callable(detailed):
            return [Hit(self.chunks[i], score, rank, parts) for rank, (i, score, parts) in enumerate(detailed(query, k))]
        return [Hit(self.chunks[i], score, rank) for rank, (i, score) in enumerate(self.retriever.search(query, k))]

    def as_retriever(self, k: int = 7) -> Any:
        """This index as a LangChain ``BaseRetriever`` returning the top ``k`` chunks as documents."""
        from retrieval.langchain_retriever import IndexRetriever  # langchain_core's retriever stack costs ~1 s to import

        return IndexRetriever(index=self, k=k)

    def as_llama_index_retriever(self, k: int = 7) -> Any:
        """This index as a LlamaIndex ``BaseRetriever`` (``NodeWithScore`` results)."""
        from retrieval.langchain_retriever import llama_index_retriever

        return llama_index_retriever(self, k)


def index_key(corpus: Corpus, chunking: ChunkingConfig, retriever: Retriever) -> str:
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
    """The embedding shards of an unfinished dense build of ``folder`` (see :mod:`retrieval.dense`)."""
    return partial_folder(folder) / "shards"


def lock_file(folder: Path) -> Path:
    """``<key>.lock`` beside the index: held by its one builder (never deleted)."""
    return folder.with_name(folder.name + ".lock")


def build_lock(folder: Path):
    """Context manager: the exclusive right to build (or repair) the index at ``folder``.

    Other threads and processes wait on it, then load what the holder built. Re-entrant
    in the holding thread, so a caller may hold it around :func:`build_index`.
    """
    return exclusive_lock(lock_file(folder), wait=True, what=f"index {folder.name}")


def write_shards(folder: Path, retriever: DenseRetriever, texts: Sequence[str], vectors: np.ndarray) -> None:
    """``vectors`` of the chunk ``texts`` as the finished shards (checksummed, with their source) that
    a dense build of ``folder`` with ``retriever`` resumes from (hold :func:`build_lock`)."""
    retriever.write_shards(texts, vectors, work_dir=partial_folder(folder))


def build_index(
    corpus: Corpus,
    retriever: str | Retriever = "bm25",
    *,
    chunking: ChunkingConfig | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    show_progress: bool = False,
    compaction: CompactionPolicy | None = None,
    **retriever_options,
) -> Index:
    """Chunk ``corpus`` and index it with ``retriever``, reusing a cached index when one matches.

    One builder per index key: concurrent calls (threads or processes) for the same key
    wait for it and load its result. A cached index is validated on load; a damaged one
    is named in a warning, moved aside and rebuilt.

    Args:
        corpus: The corpus to index.
        retriever: A registry name (``bm25``, ``dense``, ``contriever``, ``openai``, ``hybrid``) or an instance.
        chunking: How to chunk; default 512-token chunks.
        cache_dir: Root of the on-disk cache (default :func:`default_cache_dir`).
        use_cache: Read and write the on-disk cache; ``False`` builds in memory only.
        show_progress: Progress bars while chunking and embedding.
        compaction: When an index grown by segments is compacted into one (default :class:`CompactionPolicy`).
        **retriever_options: Options of the named retriever (e.g. ``model=...``, ``engine=...``).
    """
    chunking = chunking or ChunkingConfig()
    if isinstance(retriever, str):
        retriever = make_retriever(retriever, **retriever_options)
    elif retriever_options:
        raise TypeError("retriever options are only accepted with a retriever name")
    if isinstance(retriever, HybridRetriever):  # made of its components' indexes, each cached under its own key
        return _hybrid_index(corpus, retriever, chunking, cache_dir=cache_dir, use_cache=use_cache, show_progress=show_progress, compaction=compaction)
    key = index_key(corpus, chunking, retriever)
    if not use_cache:
        return _build(corpus, chunking, retriever, key, None, show_progress)
    cached = _remembered(key)
    if cached is not None:
        return cached
    folder = index_folder(cache_dir, key)
    index = _load(folder, key, chunking, retriever, quiet=True) if (folder / "meta.json").exists() else None
    if index is None:
        with build_lock(folder):  # one builder; the others wait here, then find its index
            cached = _remembered(key)
            if cached is not None:
                return cached
            index = _load(folder, key, chunking, retriever, upgrade=True) if folder.exists() else None
            if index is None:
                if folder.exists():
                    _move_aside(folder)
                index = _grow(corpus, chunking, retriever, key, folder, show_progress, compaction or CompactionPolicy())
            if index is None:
                index = _build(corpus, chunking, retriever, key, folder, show_progress)
            _remember(key, index)
            return index
    return _remember(key, index)


def _hybrid_index(corpus: Corpus, hybrid: HybridRetriever, chunking: ChunkingConfig, **options: Any) -> Index:
    """The hybrid index of ``corpus``: each component's own (cached) index, fused at search time.

    Each component's index is built, loaded or grown under its own key, so a dense index
    already built for ``retriever="dense"`` is reused, never embedded twice.
    """
    parts = {name: build_index(corpus, r, chunking=chunking, **options) for name, r in hybrid.components.items()}
    first = next(iter(parts.values()))
    for name, part in parts.items():
        if [c.chunk_id for c in part.chunks] != [c.chunk_id for c in first.chunks]:
            raise ValueError(f"hybrid component {name!r} indexes {len(part.chunks)} chunks, the first {len(first.chunks)}: they must index the same chunks")
    bound = hybrid.with_components({name: part.retriever for name, part in parts.items()})
    return Index(first.chunks, bound, chunking, index_key(corpus, chunking, hybrid), first.path)


def _remembered(key: str) -> Index | None:
    with _MEMORY_LOCK:
        if key in _MEMORY_CACHE:
            _MEMORY_CACHE.move_to_end(key)
            return _MEMORY_CACHE[key]
    return None


def _remember(key: str, index: Index) -> Index:
    with _MEMORY_LOCK:
        index = _MEMORY_CACHE.setdefault(key, index)  # a concurrent loader's object wins: one per key
        _MEMORY_CACHE.move_to_end(key)
        while len(_MEMORY_CACHE) > _MEMORY_CACHE_SIZE:
            _MEMORY_CACHE.popitem(last=False)
    return index


def _move_aside(folder: Path) -> None:
    """Take a damaged or stale index out of the way (renamed, then deleted)."""
    aside = folder.with_name(f"{folder.name}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    try:
        folder.rename(aside)
    except OSError:
        aside = folder
    shutil.rmtree(aside, ignore_errors=True)


def _build(corpus, chunking, retriever, key, folder: Path | None, show_progress: bool) -> Index:
    started = time.perf_counter()
    chunks = chunks_for(corpus, chunking, retriever, show_progress=show_progress)
    if folder is None:
        import tempfile

        with tempfile.TemporaryDirectory() as scratch:
            retriever.build(chunks, work_dir=Path(scratch), show_progress=show_progress)
        return Index(chunks, retriever, chunking, key, None)
    for stale in folder.parent.glob(f"{folder.name}.build-*"):  # left by killed builders (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    partial = partial_folder(folder)
    partial.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f"{folder.name}.build-{os.getpid()}-{uuid.uuid4().hex[:8]}")  # this builder's own
    tmp.mkdir()
    try:
        retriever.build(chunks, work_dir=partial, show_progress=show_progress)
        checksums = Checksums(tmp)
        _save_retriever(retriever, tmp, checksums)
        with checksums.open(tmp / CHUNKS_FILE, text=True) as f:
            f.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in chunks)
        write_documents(tmp, corpus.document_digests, checksums)
        hashed_after = checksums.add_unrecorded()  # files a library wrote itself (bm25s), hashed from the page cache
        if hashed_after:
            log.debug("Hashed after writing (written by %s itself): %s", retriever.name, ", ".join(hashed_after))
        meta = {
            "format": INDEX_FORMAT_VERSION,
            "key": key,
            "corpus_fingerprint": corpus.fingerprint,
            "num_documents": len(corpus),
            "num_chunks": len(chunks),
            "chunking": chunking.as_dict(),
            "retriever": retriever.cache_params(),
            "build_seconds": round(time.perf_counter() - started, 3),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "segments": [{"path": ".", "documents": [0, len(corpus)], "chunks": [0, len(chunks)]}],
            "files": checksums.as_dict(),
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))  # written last: its presence means complete
        _fsync_tree(tmp)
        tmp.rename(folder)  # atomic: readers see no index or a whole one
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # the shards in .partial stay, for the next build to resume
        raise
    shutil.rmtree(partial, ignore_errors=True)
    log.info("Built %s index of %d chunks in %.1fs at %s", retriever.name, len(chunks), meta["build_seconds"], folder)
    return Index(chunks, retriever, chunking, key, folder)


def _save_retriever(retriever: Retriever, folder: Path, checksums: Checksums) -> None:
    """``retriever.save(folder)``, handing it ``checksums`` when its ``save`` takes them (ours do)
    so that its files are hashed as they are written; the files of any other retriever are
    hashed from disk afterwards."""
    if "checksums" in inspect.signature(retriever.save).parameters:
        retriever.save(folder, checksums=checksums)  # type: ignore[call-arg]  # the base signature lacks it; checked above
    else:
        retriever.save(folder)


def _fsync_tree(folder: Path) -> None:
    """Flush a finished index to disk before it is renamed into place (a power cut leaves no torn index)."""
    for path in folder.rglob("*"):
        if path.is_file():
            with open(path, "rb") as f:
                os.fsync(f.fileno())


def _read_chunks(path: Path) -> list[Chunk]:
    """The chunks of a ``chunks.jsonl``, one JSON object a line."""
    with open(path, encoding="utf-8") as f:
        return [Chunk(**json.loads(line)) for line in f]


def _record_checksums(folder: Path, meta: dict) -> None:
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


def _retriever_size(retriever: Retriever) -> int | None:
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


def _load(
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
    unless ``upgrade`` (the caller holds :func:`build_lock`): then, once every other check
    passes, its files' checksums are recorded in its meta, so an hour of embedding is not
    redone for want of them.
    """
    try:
        meta = json.loads((folder / "meta.json").read_text())
        if meta.get("key") != key or meta.get("format") != INDEX_FORMAT_VERSION:
            raise ValueError(f"meta.json is for key {meta.get('key')!r}, format {meta.get('format')!r}")
        files = meta.get("files")
        legacy = "files" not in meta
        if legacy and not upgrade:
            raise ChecksumMismatch("meta.json records no file checksums (written before they existed)")
        if verify and not legacy:
            verify_folder(folder, files)  # before anything is parsed or loaded
        segments = [folder / path for path in _segment_paths(meta)]
        stored = [c for segment in segments for c in _read_chunks(segment / CHUNKS_FILE)]
        if any(c.chunk_id != i for i, c in enumerate(stored)):
            raise ValueError("chunks.jsonl is out of order")
        deleted = set(meta.get("deleted_documents") or [])
        chunks = live_chunks(stored, deleted)
        if len(chunks) != meta.get("num_chunks"):
            raise ValueError(f"chunks.jsonl holds {len(chunks)} live chunks, meta.json says {meta.get('num_chunks')}")
        if len(segments) == 1:
            retriever.load(folder)
        elif callable(getattr(retriever, "load_segments", None)):
            retriever.load_segments(segments)  # type: ignore[attr-defined]  # optional part of the contract
        else:
            raise ValueError(f"the {retriever.name} retriever cannot read an index of {len(segments)} segments")
        if deleted:
            retriever.delete([c.chunk_id for c in stored if c.doc_index in deleted])  # type: ignore[attr-defined]  # only indexes of retrievers that delete have any
        size = _retriever_size(retriever)
        if size is not None and size != len(chunks):
            raise ValueError(f"the {retriever.name} index holds {size} entries for {len(chunks)} chunks")
        if legacy:
            _record_checksums(folder, meta)
    except MissingExtraError:  # the index is sound; this environment cannot read it: keep it
        raise
    except Exception as exc:  # noqa: BLE001 - anything unreadable means: never trusted, rebuilt
        if not quiet:
            log.warning("Cached index at %s is damaged or stale (%s: %s); moving it aside and rebuilding", folder, type(exc).__name__, exc)
        return None
    return Index(chunks, retriever, chunking, key, folder, stored=stored)


def live_chunks(stored: list[Chunk], deleted: set[int]) -> list[Chunk]:
    """The chunks of the documents not ``deleted`` (slots), numbered as a fresh build of the edited corpus numbers them:
    chunk ids by place among the live chunks, document indexes by place among the live documents."""
    if not deleted:
        return stored
    gone = sorted(deleted)
    return [
        replace(c, chunk_id=i, doc_index=c.doc_index - bisect.bisect_left(gone, c.doc_index))
        for i, c in enumerate(c for c in stored if c.doc_index not in deleted)
    ]


# -- growing by segments --------------------------------------------------------------------
def _segment_paths(meta: dict) -> list[str]:
    """The segment folders of an index, relative to it (``"."``: the index folder itself)."""
    segments = meta.get("segments") or [{"path": "."}]
    paths = [s.get("path") if isinstance(s, dict) else None for s in segments]
    for path in paths:
        if not isinstance(path, str) or Path(path).is_absolute() or ".." in Path(path).parts:
            raise ValueError(f"meta.json names a segment outside the index: {path!r}")
    return [str(p) for p in paths]  # each checked to be a relative path above


def _same_json(a: Any, b: Any) -> bool:
    return json.loads(json.dumps(a, sort_keys=True)) == json.loads(json.dumps(b, sort_keys=True))


def cached_base(corpus: Corpus, chunking: ChunkingConfig, retriever: Retriever, root: Path) -> Base | None:
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
                candidates.append((meta_path.parent, meta, _segment_paths(meta)))
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


def _grow(corpus, chunking, retriever, key, folder: Path, show_progress: bool, compaction: CompactionPolicy) -> Index | None:
    """The index of ``corpus`` made from a cached index it starts from (:func:`cached_base`): that index's files
    linked, its documents the corpus dropped or replaced deleted (tombstones), and one segment of the
    documents after them (only they are chunked, tokenized, embedded). None when no such index is cached
    or the retriever cannot grow or delete (then the caller builds from scratch). The caller holds the build lock.

    When that would make more segments, or more deleted chunks, than ``compaction`` allows, the new index
    is written as one segment of the live chunks instead (:func:`_write_compacted`); the cached index
    is left as it was."""
    if not callable(getattr(retriever, "extend", None)):
        return None
    found = cached_base(corpus, chunking, retriever, folder.parent)
    if found is None:
        return None
    base_folder, base_meta = found.folder, found.meta
    started = time.perf_counter()
    base = _load(base_folder, base_meta["key"], chunking, retriever)  # validated: its files are linked below
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
    for stale in folder.parent.glob(f"{folder.name}.build-*"):  # left by killed builders (we hold the lock)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = folder.with_name(f"{folder.name}.build-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    tmp.mkdir()
    try:
        checksums = Checksums(tmp)
        if compacting:
            segments = _write_compacted(tmp, retriever, live, corpus, checksums)
        else:
            try:
                for name, entry in base_meta["files"].items():  # the base's segments, verified by _load above
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
                with checksums.open(seg_dir / CHUNKS_FILE, text=True) as f:
                    f.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in new_chunks)
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
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
        _fsync_tree(tmp)
        tmp.rename(folder)  # atomic: the base's index (its segments) untouched, the new one whole or absent
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


def _write_compacted(tmp: Path, retriever: Retriever, chunks: list[Chunk], corpus: Corpus, checksums: Checksums) -> list[dict]:
    """Write the grown ``retriever`` into ``tmp`` as an index of one segment of the live ``chunks``, the layout of a fresh build;
    its segment list.

    BM25 merges its segments' raw counts without the deleted chunks' and makes its bm25s
    model from them (:meth:`~retrieval.bm25.BM25Retriever.compact`: nothing re-tokenized);
    dense keeps the live vectors in one flat index and saves it whole (nothing re-embedded).
    """
    compact = getattr(retriever, "compact", None)
    if callable(compact):
        compact()
    _save_retriever(retriever, tmp, checksums)
    with checksums.open(tmp / CHUNKS_FILE, text=True) as f:
        f.writelines(json.dumps(asdict(c), ensure_ascii=False) + "\n" for c in chunks)
    write_documents(tmp, corpus.document_digests, checksums)
    checksums.add_unrecorded()  # files a library wrote itself (bm25s)
    return [{"path": ".", "documents": [0, len(corpus)], "chunks": [0, len(chunks)]}]
