"""Dense retrieval: an embedder plus an exact FAISS inner-product index.

Embedding 10M tokens with MiniLM takes about an hour on 2 CPU cores, so embeddings are
written in shards as they are computed: an interrupted build resumes from the last
finished shard instead of starting over.

Each shard ``NNNNNN.npy`` has a record ``NNNNNN.json`` beside it: the size and XXH3-128
digest of the shard's bytes, taken as they are written (:mod:`longctx.retrieval.checksums`), and
its source, the embedder and the digest of the exact chunk texts embedded. A resumed
build reuses a shard only when both match, so neither a shard whose bytes changed (disk,
partial copy) nor one computed from other texts (another chunking or shard size in the
same work dir) or by another embedder ends up in the index.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from longctx.retrieval.checksums import ChecksumMismatch, Checksums, digest_texts, verify_file
from longctx.retrieval.chunking import Chunk
from longctx.retrieval.embedder_base import Embedder, dimension_error, source_of, warn_if_truncated
from longctx.retrieval.embedders import OpenAIEmbedder
from longctx.retrieval.extras import require
from longctx.retrieval.faiss_index import VectorIndex
from longctx.retrieval.fit import TokenLimit
from longctx.retrieval.tombstones import Tombstones

log = logging.getLogger(__name__)


class DenseRetriever:
    """Nearest chunks by embedding inner product (cosine for normalized embedders).

    Args:
        embedder: Any :class:`~retrieval.embedder_base.Embedder`.
        name: Registry name, recorded in the cache key.
        shard_size: Chunks embedded per saved shard (the resume granularity).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        name: str = "dense",
        shard_size: int = 1024,
        fit_chunks: bool = True,
    ):
        self.embedder = embedder
        self.name = name
        self.shard_size = shard_size
        self.fit_chunks = fit_chunks
        self._index: VectorIndex | None = None
        self._dead = Tombstones(0)  # deleted chunks (stored ids), filtered out of every search

    def chunk_limit(self) -> TokenLimit | None:
        """What one chunk may hold so that the embedder reads all of it (None: chunks are indexed
        as chunked).

        With ``fit_chunks`` (the default) and an embedder that tells its limit, the index
        splits longer chunks (:mod:`longctx.retrieval.fit`); otherwise a build warns which are cut.
        """
        limit_of = getattr(self.embedder, "token_limit", None)
        return limit_of() if self.fit_chunks and callable(limit_of) else None

    @property
    def limits_chunks(self) -> bool:
        """Whether :meth:`chunk_limit` has a limit (``fit_chunks`` and an embedder that tells it),
        told without loading the model."""
        return self.fit_chunks and callable(getattr(self.embedder, "token_limit", None))

    def chunk_limit_params(self) -> dict[str, Any]:
        """What decides :meth:`chunk_limit` (the key of chunks fitted to it): :meth:`cache_params`
        but the backend."""
        return {k: v for k, v in self.cache_params().items() if k != "backend"}

    def cache_params(self) -> dict[str, Any]:
        """Retriever name, embedding model id and, when not torch, the embedding backend.

        ``fit_chunks`` is recorded (the chunks differ), with an OpenAI-compatible embedder's
        ``max_input_tokens`` (a setting, where a local model's limit is its own). ``torch`` is
        left out of the key so that indexes built before backends existed (all torch) stay
        valid; ``torch-bf16`` / ``onnx`` / ``onnx-int8`` vectors differ slightly, so they get
        their own index.
        """
        params: dict[str, Any] = {"retriever": self.name, "model": self.embedder.model_id}
        if self.limits_chunks:
            params["fit_chunks"] = (
                True  # other chunks than an index built before chunks were fitted
            )
            if isinstance(
                self.embedder, OpenAIEmbedder
            ):  # a setting; a local model's limit is its own
                params["max_input_tokens"] = self.embedder.max_input_tokens
        backend = getattr(self.embedder, "backend", "torch")
        if backend != "torch":
            params["backend"] = backend
        return params

    def build(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Embed all chunks shard by shard (reusing shards already in ``work_dir/shards``)
        and index them."""
        require("faiss", extra="dense", feature="a dense index")  # before any embedding is paid for
        texts = [c.text for c in chunks]
        if (
            self.chunk_limit() is None
        ):  # fitted chunks fit (retrieval.fit); others may be cut: say which, before embedding
            warn_if_truncated(self.embedder, texts)
        shards_dir = work_dir / "shards"
        shards_dir.mkdir(parents=True, exist_ok=True)
        params = self.cache_params()
        shards = []
        engine = getattr(self.embedder, "backend", type(self.embedder).__name__)
        desc = f"Indexing: embedding ({self.embedder.model_id}, {engine})"
        with tqdm(total=len(texts), desc=desc, unit="chunk", disable=not show_progress) as bar:
            for n, start in enumerate(range(0, len(texts), self.shard_size)):
                batch = texts[start : start + self.shard_size]
                path = shard_path(shards_dir, n)
                source = shard_source(batch, params)
                vecs = read_shard(path, source)
                if vecs is None:
                    vecs = self.embedder.embed_documents(batch)
                    write_shard(path, vecs, source)
                shards.append(vecs)
                bar.update(len(batch))
        if not shards:
            raise ValueError("Cannot build a dense index over zero chunks")
        dims = sorted({s.shape[1] for s in shards})
        if len(dims) > 1:  # shards of an interrupted build by a model since changed under its name
            raise dimension_error(source_of(self.embedder), dims[-1], dims[0])
        vectors = np.concatenate(shards)
        self._index = VectorIndex(vectors.shape[1])
        self._index.add(vectors)
        self._dead = Tombstones(0)

    def write_shards(self, texts: Sequence[str], vectors: np.ndarray, *, work_dir: Path) -> None:
        """``vectors`` (of ``texts``, embedded elsewhere, e.g. on Ray) as the finished shards that
        :meth:`build` over the same texts in ``work_dir`` resumes from."""
        if len(texts) != len(vectors):
            raise ValueError(f"{len(vectors)} vectors for {len(texts)} texts")
        shards_dir = work_dir / "shards"
        shards_dir.mkdir(parents=True, exist_ok=True)
        params = self.cache_params()
        for n, start in enumerate(range(0, len(texts), self.shard_size)):
            stop = start + self.shard_size
            write_shard(
                shard_path(shards_dir, n),
                vectors[start:stop],
                shard_source(texts[start:stop], params),
            )

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """Top ``k`` live chunks by inner product with the query embedding (deleted ones skipped,
        live ids renumbered)."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        vector = np.asarray(self.embedder.embed_query(query))
        if vector.shape != (self._index.dim,):
            raise dimension_error(source_of(self.embedder), vector.size, self._index.dim)
        if not self._dead:
            return self._index.search(vector, k)
        found = self._index.search(vector, k + len(self._dead.dead))  # k live among them
        ids = np.asarray([i for i, _ in found], dtype=np.int64)
        live = ~self._dead.is_dead(ids)
        positions = self._dead.live_position(ids[live])
        return [
            (int(p), s) for p, (_, s) in zip(positions, [f for f, keep in zip(found, live) if keep])
        ][:k]

    def save(self, folder: Path, checksums: Checksums | None = None) -> None:
        """FAISS's native format (hashed into ``checksums`` as it is written)."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        self._index.save(folder, checksums)

    def load(self, folder: Path) -> None:
        """Read the FAISS index; the embedder itself loads lazily on the first query."""
        self._index = VectorIndex.load(folder)
        self._dead = Tombstones(0)

    # -- growing by segments ----------------------------------------------------------------
    @property
    def stored_chunks(self) -> int | None:
        """Vectors stored, deleted ones included (None before build/load)."""
        return len(self._index) if self._index is not None else None

    @property
    def num_chunks(self) -> int | None:
        """Live vectors indexed (None before build/load)."""
        return len(self._index) - len(self._dead.dead) if self._index is not None else None

    def delete(self, chunk_ids: Sequence[int] | np.ndarray) -> None:
        """Mark the stored chunks ``chunk_ids`` deleted: searches skip them (their vectors stay
        until :meth:`compact`)."""
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        self._dead = self._dead.grown(len(self._index)).plus(np.asarray(chunk_ids, dtype=np.int64))

    def compact(self) -> None:
        """Drop the deleted chunks' vectors: one flat index of the live ones, in order (nothing
        embedded again)."""
        if self._index is None or not self._dead:
            return
        live = self._index.vectors(0, len(self._index))[self._dead.live]
        self._index = VectorIndex(self._index.dim)
        self._index.add(live)
        self._dead = Tombstones(0)

    def extensible(self) -> bool:
        """Always, once built or loaded: new vectors are appended to the flat index."""
        return self._index is not None

    def extend(
        self, chunks: Sequence[Chunk], *, work_dir: Path, show_progress: bool = False
    ) -> None:
        """Embed only ``chunks`` (ids following the indexed ones) and append their vectors.

        Shards go to ``work_dir/segment-<first chunk id>/`` (resumable like a build's, and
        apart from a full build's ``shards/``). The flat index then holds the same vectors in
        the same order as a rebuild, so searches return what a rebuild returns.
        """
        if self._index is None:
            raise RuntimeError("Dense index is not built; call build() or load() first")
        if not chunks:
            return
        grown = DenseRetriever(
            self.embedder, name=self.name, shard_size=self.shard_size, fit_chunks=self.fit_chunks
        )
        grown.build(
            chunks, work_dir=work_dir / f"segment-{chunks[0].chunk_id}", show_progress=show_progress
        )
        assert grown._index is not None  # build() made it
        self._index.add(grown._index.vectors(0, len(grown._index)))
        self._dead = self._dead.grown(len(self._index))

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
        self._dead = Tombstones(0)


def shard_path(shards_dir: Path, n: int) -> Path:
    """The file of embedding shard ``n`` (rows ``n * shard_size`` onwards) in ``shards_dir``."""
    return Path(shards_dir) / f"{n:06d}.npy"


def shard_record_path(path: Path) -> Path:
    """The record beside a shard: its checksum and its source (``NNNNNN.json``)."""
    return Path(path).with_suffix(".json")


def shard_source(texts: Sequence[str], params: dict[str, Any]) -> dict[str, Any]:
    """What a shard's vectors are computed from: the embedder (the retriever's
    :meth:`~DenseRetriever.cache_params`) and the texts, by count and digest.

    The work dir of a cached build is keyed by corpus, chunking and embedder already, but
    not by shard size: shard ``n`` of a build with another ``shard_size`` covers other chunks,
    possibly as many. The texts' digest tells those apart (and a shard copied from another
    key's work dir, or left in a work dir a caller reuses for another embedder).
    """
    return {"embedder": dict(params), "rows": len(texts), "texts": digest_texts(texts)}


def write_shard(path: Path, vectors: np.ndarray, source: dict[str, Any]) -> None:
    """Save one shard with its record (checksum and ``source``), so that a kill never leaves a shard
    without its record.

    The shard is written under a temporary name and hashed as it is written; its record
    is put in place (temporary file, then rename) before the shard is renamed into place.
    The shard's rename is the commit: a record without its shard is an unfinished write,
    re-embedded; a shard is never there without the record of its bytes.
    """
    path = Path(path)
    tmp = path.with_suffix(".tmp.npy")
    checksums = Checksums(path.parent)
    with checksums.open(tmp, record_as=path.name) as f:
        np.save(f, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    record = shard_record_path(path)
    tmp_record = record.with_suffix(".tmp.json")
    tmp_record.write_text(json.dumps({"source": source, "files": checksums.as_dict()}))
    tmp_record.replace(record)
    tmp.replace(path)


def read_shard(path: Path, source: dict[str, Any]) -> np.ndarray | None:
    """The finished shard at ``path`` if it is sound and of ``source``, else None (re-embed it).

    A shard is discarded (named in a warning, deleted with its record) when its record is
    missing or unreadable, records another source (other texts or embedder), or its bytes
    fail the recorded size and checksum, and, belt and braces, when it does not load as a
    finite float matrix of ``source["rows"]`` rows.

    A shard without a record was written before shards had them: it is re-embedded, not
    trusted once. Its bytes cannot be checked, and with no record of its texts it cannot be
    told from a shard of another shard size (the earlier version reused such shards when
    their row counts matched). Re-embedding costs at most the work of one build interrupted
    before this version, once; a finished index, by contrast, is checked whole on load
    before its checksums are recorded (see :mod:`longctx.retrieval.index`).
    """
    path = Path(path)
    if not path.exists():
        return None
    record_path = shard_record_path(path)
    try:
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ChecksumMismatch(
                f"{record_path.name} is missing (a shard of an earlier version, without a checksum)"
            ) from None
        if not isinstance(record, dict) or record.get("source") != source:
            raise ChecksumMismatch(f"{record_path.name} records other texts or another embedder")
        verify_file(path.parent, path.name, record.get("files"), where=record_path.name)
        vecs: np.ndarray = np.load(path, allow_pickle=False)
        if (
            vecs.ndim != 2
            or vecs.dtype.kind != "f"
            or vecs.shape[0] != source["rows"]
            or not np.isfinite(vecs).all()
        ):
            raise ValueError(
                f"not a finite float matrix of {source['rows']} rows (shape {vecs.shape}, dtype "
                f"{vecs.dtype})"
            )
    except (
        OSError,
        ValueError,
        EOFError,
    ) as exc:  # ChecksumMismatch and JSON errors are ValueErrors
        log.warning("Discarding embedding shard %s (%s); re-embedding it", path, exc)
        path.unlink(missing_ok=True)
        record_path.unlink(missing_ok=True)
        return None
    return vecs
