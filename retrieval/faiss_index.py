"""An exact inner-product FAISS index over chunk embeddings, saved in FAISS's own format.

FAISS is imported when an index is first made or read, not with this module: importing the
retrievers (as every strategy does) must not load the engine a run may never use.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from longctx.retrieval.checksums import Checksums
from longctx.retrieval.extras import require
from longctx.retrieval.threads import ensure_thread_policy

if TYPE_CHECKING:
    import faiss


class VectorIndex:
    """Exact maximum-inner-product search (``IndexFlatIP``).

    Flat search is exact and, at 384-768 dimensions, answers in milliseconds up to a few
    hundred thousand chunks (a 10M-token corpus at 512-token chunks is ~20k vectors), so
    no approximate index is needed at this scale. Normalized vectors make this cosine.
    """

    FILENAME = "vectors.faiss"

    def __init__(self, dim: int):
        require("faiss", extra="dense", feature="a dense index")
        import faiss  # the engine, on first use (see the module docstring)

        ensure_thread_policy()
        self.index: faiss.Index = faiss.IndexFlatIP(dim)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self.index.d

    def __len__(self) -> int:
        return self.index.ntotal

    def add(self, vectors: np.ndarray) -> None:
        """Append vectors (ids continue from the current size)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise ValueError(f"expected vectors of shape (n, {self.dim}), got {vectors.shape}")
        self.index.add(vectors)

    def vectors(self, start: int, count: int) -> np.ndarray:
        """The ``count`` stored vectors from id ``start`` on (copies, float32)."""
        if count <= 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors: np.ndarray = self.index.reconstruct_n(start, count)
        return vectors

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top ``k`` ``(id, inner product)`` pairs for one query vector, best first, ties by lower
        id (as BM25's); FAISS leaves ties in its heap's order (last id first), so while a tie runs
        past the ``k``-th pair, more are fetched to find every id it holds."""
        n, want = len(self), min(k, len(self))
        if want <= 0:
            return []
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(1, -1)
        fetch = want
        while True:
            scores, ids = self.index.search(q, fetch)
            found = ids[0] >= 0
            s, i = scores[0][found], ids[0][found]
            if fetch >= n or len(s) < fetch or s[-1] < s[want - 1]:
                break
            fetch = min(n, 2 * fetch)
        order = np.lexsort((i, -s))[:want]
        return [(int(i[o]), float(s[o])) for o in order]

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """Write the index to ``folder/vectors.faiss``, hashed into ``checksums`` as
        FAISS writes it."""
        import faiss

        path = folder / self.FILENAME
        if checksums is None:
            faiss.write_index(self.index, str(path))
            return
        with checksums.open(path) as f:
            # in faiss's SWIG module, not its stubs
            writer = faiss.PyCallbackIOWriter(f.write)  # type: ignore[attr-defined]
            faiss.write_index(self.index, writer)
            del writer  # FAISS flushes through the callback when its writer is freed

    @classmethod
    def load(cls, folder: Path) -> VectorIndex:
        """Read an index written by :meth:`save`."""
        require("faiss", extra="dense", feature="a dense index")
        import faiss

        index = faiss.read_index(str(folder / cls.FILENAME))
        obj = cls.__new__(cls)
        obj.index = index
        return obj
