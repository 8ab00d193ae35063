"""Dense retrieval: an embedder plus an exact FAISS inner-product index.

Embedding 10M tokens with MiniLM takes about an hour on 2 CPU cores, so embeddings are
written in shards as they are computed: an interrupted build resumes from the last
finished shard instead of starting over.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from retrieval.checksums import Checksums
from retrieval.chunking import Chunk
from retrieval.embedders import Embedder, warn_if_truncated
from retrieval.faiss_index import VectorIndex

log = logging.getLogger(__name__)


class DenseRetriever:
    """Nearest chunks by embedding inner product (cosine for normalized embedders).

    Args:
        embedder: Any :class:`~retrieval.embedders.Embedder`.
        name: Registry name, recorded in the cache key.
        shard_size: Chunks embedded per saved shard (the resume granularity).
    """

    def __init__(self, embedder: Embedder, *, name: str = "dense", shard_size: int = 1024):
        self.embedder = embedder
        self.name = name
        self.shard_size = shard_size
        self._index: VectorIndex | None = None

    def cache_params(self) -> dict[str, Any]:
        """Retriever name, embedding model id and, when not torch, the embedding backend.

        ``torch`` is left out of the key so that indexes built before backends existed
        (all torch) stay valid; ``torch-bf16`` / ``onnx`` / ``onnx-int8`` vectors differ slightly, so they get
        their own index.
        """
        params = {"retriever": self.name, "model": self.embedder.model_id}
        backend = getattr(self.embedder, "backend", "torch")
        if backend != "torch":
            params["backend"] = backend
        return params

    def build(self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False) -> None:
        """Embed all chunks shard by shard (reusing shards already in ``work_dir/shards``) and index them."""
        texts = [c.text for c in chunks]
        warn_if_truncated(self.embedder, texts)
        shards_dir = work_dir / "shards"
        shards_dir.mkdir(parents=True, exist_ok=True)
        shards = []
        desc = f"Indexing: embedding ({self.embedder.model_id}, {getattr(self.embedder, 'backend', 'torch')})"
        with tqdm(total=len(texts), desc=desc, unit="chunk", disable=not show_progress) as bar:
            for n, start in enumerate(range(0, len(texts), self.shard_size)):
                batch = texts[start : start + self.shard_size]
                path = shard_path(shards_dir, n)
                vecs = read_shard(path, len(batch))
                if vecs is None:
                    vecs = self.embedder.embed_documents(batch)
                    write_shard(path, vecs)
                shards.append(vecs)
                bar.update(len(batch))
        if not shards:
            raise ValueError("Cannot build a dense index over zero chunks")
        vectors = np.concatenate(shards)
        self._index = VectorIndex(vectors.shape[1])
        self._index.add(vectors)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` chunks by inner product with the query embedding."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        return self._index.search(self.embedder.embed_query(query), k)

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """FAISS's native format (hashed into ``checksums`` as it is written)."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        self._index.save(folder, checksums)

    def load(self, folder: Path) -> None:
        """Read the FAISS index; the embedder itself loads lazily on the first query."""
        self._index = VectorIndex.load(folder)

    # -- growing by segments ----------------------------------------------------------------
    @property
    def num_chunks(self) -> int | None:
        """Vectors indexed (None before build/load)."""
        return len(self._index) if self._index is not None else None

    def extensible(self) -> bool:
        """Always, once built or loaded: new vectors are appended to the flat index."""
        return self._index is not None

    def extend(self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False) -> None:
        """Embed only ``chunks`` (ids following the indexed ones) and append their vectors.

        Shards go to ``work_dir/segment-<first chunk id>/`` (resumable like a build's, and
        apart from a full build's ``shards/``). The flat index then holds the same vectors in
        the same order as a rebuild, so searches return what a rebuild returns.
        """
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        if not chunks:
            return
        grown = DenseRetriever(self.embedder, name=self.name, shard_size=self.shard_size)
        grown.build(chunks, work_dir=work_dir / f"segment-{chunks[0].chunk_id}", show_progress=show_progress)
        assert grown._index is not None  # build() made it
        self._index.add(grown._index.vectors(0, len(grown._index)))

    def save_segment(self, folder: Path, start: int, checksums: Checksums | None = None) -> None:
        """Write the vectors of the chunks from ``start`` on into ``folder``, FAISS's format."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        folder.mkdir(parents=True, exist_ok=True)
        segment = VectorIndex(self._index.dim)
        segment.add(self._index.vectors(start, len(self._index) - start))
        segment.save(folder, checksums)

    def load_segments(self, folders: Sequence[Path]) -> None:
        """Read an index saved as segments into one flat index, vectors in segment order."""
        self._index = VectorIndex.load(folders[0])
        for folder in folders[1:]:
            part = VectorIndex.load(folder)
            self._index.add(part.vectors(0, len(part)))


def shard_path(shards_dir: Path, n: int) -> Path:
    """The file of embedding shard ``n`` (rows ``n * shard_size`` onwards) in ``shards_dir``."""
    return Path(shards_dir) / f"{n:06d}.npy"


def write_shard(path: Path, vectors: np.ndarray) -> None:
    """Save one shard atomically (temporary file, then rename): a kill never leaves half a shard."""
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, np.asarray(vectors, dtype=np.float32), allow_pickle=False)
    tmp.replace(path)


def read_shard(path: Path, expected_rows: int) -> np.ndarray | None:
    """A finished shard of the right size, or None: missing, from another chunking, or corrupt
    (unreadable, not a 2-d float matrix, non-finite values); a corrupt one is named in a
    warning and deleted, so it is re-embedded rather than trusted."""
    if not path.exists():
        return None
    try:
        vecs = np.load(path, allow_pickle=False)
        if vecs.ndim != 2 or vecs.dtype.kind != "f" or not np.isfinite(vecs).all():
            raise ValueError(f"not a finite 2-d float matrix (shape {vecs.shape}, dtype {vecs.dtype})")
    except (OSError, ValueError, EOFError) as exc:
        log.warning("Discarding corrupt embedding shard %s (%s); re-embedding it", path, exc)
        path.unlink(missing_ok=True)
        return None
    return vecs if vecs.shape[0] == expected_rows else None
