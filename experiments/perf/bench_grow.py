"""What adding documents to an indexed corpus costs against a rebuild (not a test; the rankings are checked).

    python -m experiments.perf.bench_grow                          # 1M tokens, add 1%, BM25 and dense
    python -m experiments.perf.bench_grow --tokens 10000000 --retrievers bm25

Generates a corpus (as ``bench_retrieval``: 200-word chunks, the RAG default), indexes its
first documents (all but ``--grow`` of its tokens) into a cache, then, for each retriever,
times in one run, side by side: growing that cached index to the whole corpus (load and
validate the prefix's index, chunk, tokenize or embed only the new documents, write one
segment) and rebuilding the whole corpus's index from scratch into an empty cache. It then
checks that the top-10 of ``--queries`` queries is the same chunks in the same order in both,
and prints the texts each one embedded (dense) to show that only the new documents were.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from experiments.perf.synthetic_text import generate_corpus, sample_queries
from retrieval import ChunkingConfig, Corpus, build_index
from retrieval import index as index_module
from retrieval.dense import DenseRetriever
from retrieval.embedders import SentenceTransformerEmbedder
from retrieval.retrievers import make_retriever


class CountingEmbedder(SentenceTransformerEmbedder):
    """The real embedder, counting the texts it embeds."""

    def __init__(self) -> None:
        super().__init__()
        self.embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return super().embed_documents(texts)


def make(name: str, embedder: CountingEmbedder | None):
    """A fresh retriever of ``name`` (dense: over ``embedder``)."""
    return DenseRetriever(embedder) if name == "dense" else make_retriever(name)


def top10(index, queries: list[str]) -> tuple[list[list[int]], float]:
    """The top-10 chunk ids of each query, and the median milliseconds of a query (after one warm-up)."""
    index.search(queries[0], 10)
    tops, times = [], []
    for q in queries:
        t = time.perf_counter()
        tops.append([h.chunk.chunk_id for h in index.search(q, 10)])
        times.append((time.perf_counter() - t) * 1000)
    return tops, statistics.median(times)


def split(corpus: Corpus, grow: float) -> int:
    """How many of the first documents hold about ``1 - grow`` of the tokens (at least one is added)."""
    counts, total, kept = corpus.token_counts, corpus.num_tokens, 0
    for n, tokens in enumerate(counts):
        if kept + tokens > total * (1 - grow):
            return max(1, min(n, len(corpus) - 1))
        kept += tokens
    return len(corpus) - 1


def main(argv: list[str] | None = None) -> None:
    """Index the prefix, then grow it and rebuild the whole, timed side by side."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tokens", type=int, default=1_000_000, help="corpus size in tokens")
    p.add_argument("--grow", type=float, default=0.01, help="share of the tokens added")
    p.add_argument("--doc-tokens", type=int, default=1000, help="tokens per generated document")
    p.add_argument("--retrievers", nargs="+", default=["bm25", "dense"], choices=["bm25", "dense"])
    p.add_argument("--queries", type=int, default=50)
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*word-piece input and are truncated")  # the 200-word chunks of bench_retrieval
    corpus = generate_corpus(args.tokens, doc_tokens=args.doc_tokens)
    n = split(corpus, args.grow)
    prefix = Corpus(corpus.documents[:n])
    added = corpus.num_tokens - prefix.num_tokens
    chunking = ChunkingConfig(unit="words", size=200)
    queries = sample_queries(args.queries, zipf=True)
    print(f"## Growing an index: {corpus.num_tokens:,} tokens in {len(corpus)} documents; "
          f"{len(corpus) - n} documents added ({added:,} tokens, {added / corpus.num_tokens:.1%})")
    print(
        "| retriever | chunks (added) | prefix build s | grow s | rebuild s | grow / rebuild "
        "| texts embedded: grow / rebuild | top-10 equal | query ms: grown / rebuilt |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.retrievers:
        with tempfile.TemporaryDirectory() as grow_cache, tempfile.TemporaryDirectory() as rebuild_cache:
            counting = [CountingEmbedder() for _ in range(3)] if name == "dense" else [None] * 3
            if counting[0] is not None:
                counting[0].embed_documents(["warm-up: load the model before timing"])
            t = time.perf_counter()
            build_index(prefix, make(name, counting[0]), chunking=chunking, cache_dir=grow_cache)
            prefix_s = time.perf_counter() - t
            index_module.clear_memory_cache()
            t = time.perf_counter()
            grown = build_index(corpus, make(name, counting[1]), chunking=chunking, cache_dir=grow_cache)
            grow_s = time.perf_counter() - t
            index_module.clear_memory_cache()
            t = time.perf_counter()
            rebuilt = build_index(corpus, make(name, counting[2]), chunking=chunking, cache_dir=Path(rebuild_cache))
            rebuild_s = time.perf_counter() - t
            embedded = f"{counting[1].embedded:,} / {counting[2].embedded:,}" if counting[1] is not None else "-"  # before the queries
            grown_top, grown_ms = top10(grown, queries)
            rebuilt_top, rebuilt_ms = top10(rebuilt, queries)
            same = sum(a == b for a, b in zip(grown_top, rebuilt_top))
            new_chunks = len(grown) - sum(1 for c in grown.chunks if c.doc_index < n)
            print(f"| {name} | {len(grown):,} ({new_chunks:,}) | {prefix_s:.2f} | {grow_s:.2f} | {rebuild_s:.2f} | "
                  f"{grow_s / rebuild_s:.1%} | {embedded} | {same}/{len(queries)} | {grown_ms:.1f} / {rebuilt_ms:.1f} |")  # fmt: skip
        index_module.clear_memory_cache()


if __name__ == "__main__":
    main()
