"""Indexing throughput, local vs Ray: prints figures (not a test; nothing is asserted).

    python -m benchmarks.bench_ray                       # 300 chunks of 200 tokens
    python -m benchmarks.bench_ray --chunks 2000 --workers 1 2 4 --address auto

Embeds the same chunks with the local dense build (:func:`longctx.retrieval.build_index`, model
already loaded) and with :func:`longctx.retrieval.ray_index.build_index_ray` (Ray Data
``map_batches`` on a pool of embedding actors) for each worker count, each into a fresh
cache folder, and prints chunks per second and the Ray/local ratio. A Ray figure includes
what a real run pays: scheduling, shipping texts and vectors, and each actor loading
its model; the Ray instance itself is started (or joined) before timing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic_text import generate_corpus
from longctx.retrieval import ChunkingConfig, build_index, chunk_corpus
from longctx.retrieval import index as index_module
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import SentenceTransformerEmbedder
from longctx.retrieval.ray_index import build_index_ray
from longctx.retrieval.ray_support import ensure_ray


def main() -> None:
    """Parse arguments, run both builds, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--chunks", type=int, default=300, help="about this many chunks (default 300)"
    )
    parser.add_argument(
        "--chunk-tokens", type=int, default=200, help="tokens per chunk (default 200)"
    )
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[1, 2],
        help="Ray embedding actors to try (default 1 2)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=32, help="chunks per actor call (default 32)"
    )
    parser.add_argument(
        "--address", help="Ray cluster address (default: a new local instance with all CPUs)"
    )
    args = parser.parse_args()

    chunking = ChunkingConfig(unit="tokens", size=args.chunk_tokens)
    corpus = generate_corpus(args.chunks * args.chunk_tokens, doc_tokens=2000)
    n = len(chunk_corpus(corpus, chunking))
    ray = ensure_ray(args.address)
    cpus = int(ray.cluster_resources().get("CPU", 0))
    print(
        f"## Dense indexing, all-MiniLM-L6-v2: {n} chunks of <= {args.chunk_tokens} tokens, "
        f"{corpus.num_tokens:,} tokens"
    )
    print(
        f"machine: {os.cpu_count()} CPU cores; Ray cluster: {cpus} CPUs, {len(ray.nodes())} node(s)"
    )
    embedder = SentenceTransformerEmbedder()
    embedder.embed_documents(["warm-up"])  # the local figure excludes model loading
    with tempfile.TemporaryDirectory() as tmp:
        index_module.clear_memory_cache()
        t = time.perf_counter()
        build_index(
            corpus, DenseRetriever(embedder), chunking=chunking, cache_dir=Path(tmp) / "local"
        )
        local_s = time.perf_counter() - t
        print("| path | workers | seconds | chunks/s | vs local |")
        print("|---|---|---|---|---|")
        print(f"| local build_index | 1 process | {local_s:.1f} | {n / local_s:.1f} | 1.00x |")
        for workers in args.workers:
            index_module.clear_memory_cache()
            t = time.perf_counter()
            build_index_ray(
                corpus,
                DenseRetriever(SentenceTransformerEmbedder()),
                chunking=chunking,
                cache_dir=Path(tmp) / f"ray{workers}",
                workers=workers,
                batch_size=args.batch_size,
            )
            ray_s = time.perf_counter() - t
            print(
                f"| Ray Data map_batches | {workers} actor(s) | {ray_s:.1f} | {n / ray_s:.1f} | "
                f"{local_s / ray_s:.2f}x |"
            )
    ray.shutdown()


if __name__ == "__main__":
    main()
