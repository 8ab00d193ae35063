"""Load time and query latency of an index grown in many steps, with and without compaction (not a
test; rankings are checked).

    python -m benchmarks.bench_compact              # 1M tokens, BM25, 1 / 10 / 50 growth steps
    python -m benchmarks.bench_compact --tokens 200000 --retrievers dense

Generates a corpus (as ``bench_grow``: 200-word chunks), indexes its first documents (all
but ``--grow`` of its tokens) once, then for each number of steps grows a copy of that cache
to the whole corpus in that many equal steps under each compaction policy: never (every
growth adds a segment), the default (more than 10 segments are compacted into one) and
every growth (one segment always). In one run, side by side with a fresh build of the whole
corpus, it prints for each: the segments left, the growth time (all steps, and the slowest
one: a compacting step), the load time of the finished index from disk (median of
``--loads``, validation included), the median query time, and how many of ``--queries``
top-10s equal the fresh build's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from benchmarks.synthetic_text import generate_corpus, sample_queries
from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import SentenceTransformerEmbedder
from longctx.retrieval.index import CompactionPolicy
from longctx.retrieval.retrievers import make_retriever

POLICIES = {
    "never": CompactionPolicy(max_segments=10**9),
    "default (K=10)": CompactionPolicy(),
    "every growth": CompactionPolicy(max_segments=1),
}


def make(name: str, embedder: SentenceTransformerEmbedder | None):
    """A fresh retriever of ``name`` (dense: over the one loaded ``embedder``)."""
    return (
        DenseRetriever(embedder)
        if name == "dense" and embedder is not None
        else make_retriever(name)
    )


def split(corpus: Corpus, grow: float) -> int:
    """How many of the first documents hold about ``1 - grow`` of the tokens."""
    kept, total = 0, corpus.num_tokens
    for n, tokens in enumerate(corpus.token_counts):
        if kept + tokens > total * (1 - grow):
            return max(1, min(n, len(corpus) - 1))
        kept += tokens
    return len(corpus) - 1


def measure(
    corpus: Corpus, retriever, chunking: ChunkingConfig, cache: Path, queries: list[str], loads: int
):
    """``(index, median load ms, median query ms, top-10s)`` of the cached index of ``corpus``,
    loaded afresh."""
    times = []
    for _ in range(loads):
        index_module.clear_memory_cache()
        t = time.perf_counter()
        index = build_index(corpus, retriever(), chunking=chunking, cache_dir=cache)
        times.append((time.perf_counter() - t) * 1000)
    index.search(queries[0], 10)  # warm-up (dense: loads the model's query path)
    tops, query_ms = [], []
    for q in queries:
        t = time.perf_counter()
        tops.append([h.chunk.chunk_id for h in index.search(q, 10)])
        query_ms.append((time.perf_counter() - t) * 1000)
    return index, statistics.median(times), statistics.median(query_ms), tops


def main(argv: list[str] | None = None) -> None:
    """Grow copies of one prefix index in 1, 10, 50 steps under each policy; print them beside a
    fresh build."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=1_000_000, help="corpus size in tokens")
    p.add_argument(
        "--grow", type=float, default=0.2, help="share of the tokens added over the steps"
    )
    p.add_argument("--doc-tokens", type=int, default=1000, help="tokens per generated document")
    p.add_argument("--steps", type=int, nargs="+", default=[1, 10, 50])
    p.add_argument("--retrievers", nargs="+", default=["bm25"], choices=["bm25", "dense"])
    p.add_argument("--queries", type=int, default=50)
    p.add_argument("--loads", type=int, default=3, help="loads timed per index (median)")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*word-piece input and are truncated")
    corpus = generate_corpus(args.tokens, doc_tokens=args.doc_tokens)
    first = split(corpus, args.grow)
    if len(corpus) - first < max(args.steps):
        raise SystemExit(
            f"{len(corpus) - first} documents to add cannot make {max(args.steps)} steps; raise "
            "--tokens or --grow"
        )
    chunking = ChunkingConfig(unit="words", size=200)
    queries = sample_queries(args.queries, zipf=True)
    print(
        f"## Compacting a grown index: {corpus.num_tokens:,} tokens in {len(corpus)} documents; "
        f"the first {first} indexed, then {len(corpus) - first} added in N equal steps"
    )
    print(
        "| retriever | steps | compaction | segments | grow s: all steps / slowest | load ms | "
        "query ms | top-10 = fresh |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name in args.retrievers:
        embedder = SentenceTransformerEmbedder() if name == "dense" else None
        if embedder is not None:
            embedder.embed_documents(["warm-up: load the model before timing"])

        def retriever(name=name, embedder=embedder):
            return make(name, embedder)

        with tempfile.TemporaryDirectory() as scratch:
            root = Path(scratch)
            build_index(
                Corpus(corpus.documents[:first]),
                retriever(),
                chunking=chunking,
                cache_dir=root / "prefix",
            )
            t = time.perf_counter()
            build_index(corpus, retriever(), chunking=chunking, cache_dir=root / "fresh")
            fresh_s = time.perf_counter() - t
            _, load_ms, query_ms, fresh_tops = measure(
                corpus, retriever, chunking, root / "fresh", queries, args.loads
            )
            print(
                f"| {name} | - | fresh build | 1 | {fresh_s:.2f} (whole build) | {load_ms:.0f} | "
                f"{query_ms:.2f} | - |"
            )
            for steps in args.steps:
                cuts = [
                    first + round((len(corpus) - first) * (s + 1) / steps) for s in range(steps)
                ]
                for label, policy in POLICIES.items():
                    cache = root / f"{steps}-{label}"
                    shutil.copytree(root / "prefix", cache)
                    grow_times = []
                    for cut in cuts:
                        # every growth in a new process, as a daily job
                        index_module.clear_memory_cache()
                        t = time.perf_counter()
                        build_index(
                            Corpus(corpus.documents[:cut]),
                            retriever(),
                            chunking=chunking,
                            cache_dir=cache,
                            compaction=policy,
                        )
                        grow_times.append(time.perf_counter() - t)
                    index, load_ms, query_ms, tops = measure(
                        corpus, retriever, chunking, cache, queries, args.loads
                    )
                    segments = len(json.loads((index.path / "meta.json").read_text())["segments"])
                    same = sum(a == b for a, b in zip(tops, fresh_tops))
                    print(
                        f"| {name} | {steps} | {label} | {segments} | {sum(grow_times):.2f} / "
                        f"{max(grow_times):.2f} | {load_ms:.0f} | "
                        f"{query_ms:.2f} | {same}/{len(queries)} |"
                    )
                    shutil.rmtree(cache, ignore_errors=True)
        index_module.clear_memory_cache()


if __name__ == "__main__":
    main()
