"""Index once, query many: chunked, indexed corpora persisted on disk and reused.

An index is keyed by (corpus fingerprint, chunking config, retriever parameters, format
version). It is built into ``<key>.partial/`` and renamed into place when complete, so
an interrupted build never leaves a half index that a later run would trust, and a
dense build resumes from its finished embedding shards. Nothing is pickled: chunks are
JSON lines, vectors FAISS's format, BM25 matrices ``.npy`` loaded with pickles off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path

from retrieval.base import Hit, Retriever
from retrieval.chunking import Chunk, ChunkingConfig, chunk_corpus
from retrieval.contract import Corpus
from retrieval.retrievers import make_retriever

log = logging.getLogger(__name__)

#: Bump when chunking, tokenization or the on-disk layout changes: old indexes are then rebuilt.
INDEX_FORMAT_VERSION = 1
_MEMORY_CACHE: OrderedDict[str, Index] = OrderedDict()
_MEMORY_CACHE_SIZE = 4


def default_cache_dir() -> Path:
    """``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``; indexes go under ``indexes/``."""
    return Path(os.environ.get("LONGCTX_CACHE_DIR") or Path.home() / ".cache" / "longctx")


class Index:
    """A corpus's chunks plus a built retriever over them."""

    def __init__(self, chunks: list[Chunk], retriever: Retriever, chunking: ChunkingConfig, key: str, path: Path | None):
        self.chunks = chunks
        self.retriever = retriever
        self.chunking = chunking
        self.key = key
        self.path = path

    def __len__(self) -> int:
        return len(self.chunks)

    def __repr__(self) -> str:
        return f"Index({self.retriever.name}, {len(self)} chunks, key={self.key[:12]})"

    def search(self, query: str, k: int) -> list[Hit]:
        """The ``k`` best chunks for ``query``, best first."""
        if not query.strip():
            raise ValueError("Cannot search with an empty query")
        return [Hit(self.chunks[i], score, rank) for rank, (i, score) in enumerate(self.retriever.search(query, k))]


def index_key(corpus: Corpus, chunking: ChunkingConfig, retriever: Retriever) -> str:
    """Hash of everything that determines the index's contents."""
    spec = {
        "format": INDEX_FORMAT_VERSION,
        "corpus": corpus.fingerprint,
        "chunking": chunking.as_dict(),
        "retriever": retriever.cache_params(),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:32]


def build_index(
    corpus: Corpus,
    retriever: str | Retriever = "bm25",
    *,
    chunking: ChunkingConfig | None = None,
    cache_dir: str | Path | None = None,
    use_cache: bool = True,
    show_progress: bool = False,
    **retriever_options,
) -> Index:
    """Chunk ``corpus`` and index it with ``retriever``, reusing a cached index when one matches.

    Args:
        corpus: The corpus to index.
        retriever: A registry name (``bm25``, ``dense``, ``contriever``, ``openai``) or an instance.
        chunking: How to chunk; default 512-token chunks.
        cache_dir: Root of the on-disk cache (default :func:`default_cache_dir`).
        use_cache: Read and write the on-disk cache; ``False`` builds in memory only.
        show_progress: Progress bars while chunking and embedding.
        **retriever_options: Options of the named retriever (e.g. ``model=...``, ``engine=...``).
    """
    chunking = chunking or ChunkingConfig()
    if isinstance(retriever, str):
        retriever = make_retriever(retriever, **retriever_options)
    elif retriever_options:
        raise TypeError("retriever options are only accepted with a retriever name")
    key = index_key(corpus, chunking, retriever)
    if key in _MEMORY_CACHE and use_cache:
        _MEMORY_CACHE.move_to_end(key)
        return _MEMORY_CACHE[key]
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    folder = root / "indexes" / key
    index = _load(folder, key, chunking, retriever) if use_cache else None
    if index is None:
        if use_cache and folder.exists():  # stale or corrupt: never trusted, replaced
            shutil.rmtree(folder, ignore_errors=True)
        index = _build(corpus, chunking, retriever, key, folder if use_cache else None, show_progress)
    if use_cache:
        _MEMORY_CACHE[key] = index
        while len(_MEMORY_CACHE) > _MEMORY_CACHE_SIZE:
            _MEMORY_CACHE.popitem(last=False)
    return index


def _build(corpus, chunking, retriever, key, folder: Path | None, show_progress: bool) -> Index:
    started = time.perf_counter()
    chunks = chunk_corpus(corpus, chunking, show_progress=show_progress)
    if folder is None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            retriever.build(chunks, work_dir=Path(tmp), show_progress=show_progress)
        return Index(chunks, retriever, chunking, key, None)
    partial = folder.with_name(folder.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    retriever.build(chunks, work_dir=partial, show_progress=show_progress)
    retriever.save(partial)
    with open(partial / "chunks.jsonl", "w", encoding="utf-8") as f:
        for c in chunks:
            f.write(json.dumps(asdict(c), ensure_ascii=False) + "\n")
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
    }
    (partial / "meta.json").write_text(json.dumps(meta, indent=2))
    shutil.rmtree(partial / "shards", ignore_errors=True)
    try:
        partial.rename(folder)
    except OSError:  # another process finished the same index first: theirs is equivalent
        shutil.rmtree(partial, ignore_errors=True)
    log.info("Built %s index of %d chunks in %.1fs at %s", retriever.name, len(chunks), meta["build_seconds"], folder)
    return Index(chunks, retriever, chunking, key, folder)


def _load(folder: Path, key: str, chunking: ChunkingConfig, retriever: Retriever) -> Index | None:
    meta_path = folder / "meta.json"
    if not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text())
        if meta.get("key") != key or meta.get("format") != INDEX_FORMAT_VERSION:
            return None
        with open(folder / "chunks.jsonl", encoding="utf-8") as f:
            chunks = [Chunk(**json.loads(line)) for line in f]
        retriever.load(folder)
    except (OSError, ValueError, TypeError, KeyError) as exc:
        log.warning("Ignoring unreadable cached index at %s (%s); rebuilding", folder, exc)
        return None
    return Index(chunks, retriever, chunking, key, folder)
