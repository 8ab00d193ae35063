"""What checksumming an embedding shard costs against embedding it (not a test; nothing
is asserted).

    python -m benchmarks.bench_shards    # default embedder, 512-token chunks, shards of 1024
    python -m benchmarks.bench_shards --embed 128 --rounds 31

Chunks a generated corpus with the default chunking, embeds ``--embed`` of its chunks with
the default dense retriever's embedder (model loaded and warmed first) and scales that
time to one shard of ``--shard-size`` chunks. Then, ``--rounds`` times each on one shard of
vectors of the embedder's width, page cache warm: the digest of the shard's texts (its
source), writing the shard with its checksum and record against a bare ``np.save`` plus
rename (the earlier write), and reading it back through its record and checksum against a
bare ``np.load`` plus the finiteness check (the earlier read). Printed: medians and bests,
the checksum's added time per shard, and its share of the shard's embedding time.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.synthetic_text import generate_corpus
from longctx.retrieval.checksums import digest_file
from longctx.retrieval.chunking import ChunkingConfig, chunk_corpus
from longctx.retrieval.dense import (
    DenseRetriever,
    read_shard,
    shard_path,
    shard_source,
    write_shard,
)
from longctx.retrieval.retrievers import make_retriever


def timed(fn: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Median and best milliseconds of ``rounds`` calls of ``fn``."""
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times), min(times)


def bare_write(path: Path, vectors: np.ndarray) -> None:
    """The earlier shard write: ``np.save`` to a temporary file, renamed into place."""
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, vectors, allow_pickle=False)
    tmp.replace(path)


def bare_read(path: Path) -> np.ndarray:
    """The earlier shard read: ``np.load`` and the finiteness check."""
    vecs = np.load(path, allow_pickle=False)
    if not np.isfinite(vecs).all():
        raise ValueError("non-finite")
    return vecs


def main() -> None:
    """Time one shard's embedding, then its checksum work against the bare write and read,
    and print both."""
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--shard-size",
        type=int,
        default=None,
        help="chunks per shard (default: the dense retriever's)",
    )
    ap.add_argument(
        "--embed", type=int, default=64, help="chunks actually embedded to time the embedder"
    )
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()

    retriever = make_retriever("dense")
    assert isinstance(retriever, DenseRetriever)
    shard_size = args.shard_size or retriever.shard_size
    chunking = ChunkingConfig()
    chunks = chunk_corpus(generate_corpus(chunking.size * (shard_size + 8)), chunking)[:shard_size]
    texts = [c.text for c in chunks]
    embedder = retriever.embedder
    embedder.embed_documents(texts[:8])  # load and warm the model
    t = time.perf_counter()
    sample = embedder.embed_documents(texts[: args.embed])
    embed_s = (time.perf_counter() - t) * len(texts) / args.embed
    print(
        f"embedder {embedder.model_id} ({getattr(embedder, 'backend', 'torch')}), {len(texts)} "
        f"chunks of <= {chunking.size} {chunking.unit}"
    )
    print(
        f"embedding: {args.embed} chunks in {embed_s * args.embed / len(texts):.2f} s -> "
        f"{embed_s:.1f} s per shard of {len(texts)}"
    )

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((len(texts), sample.shape[1])).astype(np.float32)
    params = retriever.cache_params()
    source = shard_source(texts, params)
    rows: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = shard_path(Path(tmp), 0)
        rows["digest of the shard's texts (source)"] = timed(
            lambda: shard_source(texts, params), args.rounds
        )
        rows["write, bare (earlier)"] = timed(lambda: bare_write(path, vectors), args.rounds)
        rows["write with checksum and record"] = timed(
            lambda: write_shard(path, vectors, source), args.rounds
        )
        rows["digest of the shard file"] = timed(lambda: digest_file(path), args.rounds)
        rows["read, bare (earlier)"] = timed(lambda: bare_read(path), args.rounds)
        rows["read through record and checksum"] = timed(
            lambda: read_shard(path, source), args.rounds
        )
        size = path.stat().st_size
    print(f"shard file: {size / 2**20:.2f} MiB; {args.rounds} rounds each, median / best ms")
    for name, (median, best) in rows.items():
        print(f"  {name:40s} {median:8.2f} / {best:8.2f}")
    added = [
        rows["digest of the shard's texts (source)"][i]
        + rows["write with checksum and record"][i]
        - rows["write, bare (earlier)"][i]
        + rows["read through record and checksum"][i]
        - rows["read, bare (earlier)"][i]
        for i in (0, 1)
    ]
    print(
        "added per shard (texts digest + write and read over the bare ones), median / best: "
        f"{added[0]:.2f} / {added[1]:.2f} ms, "
        f"{added[0] / 10 / embed_s:.4f}% / {added[1] / 10 / embed_s:.4f}% of the shard's "
        f"{embed_s:.1f} s of embedding"
    )


if __name__ == "__main__":
    main()
