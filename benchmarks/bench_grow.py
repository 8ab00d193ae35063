"""What adding documents to an indexed corpus costs against a rebuild (not a test; the rankings
are checked).

    python -m benchmarks.bench_grow                          # 1M tokens, add 1%, BM25 and dense
    python -m benchmarks.bench_grow --tokens 10000000 --retrievers bm25
    python -m benchmarks.bench_grow --only edit              # updates and removals only
    python -m benchmarks.bench_grow --only edit --retrievers dense \\
        --embedder-url http://127.0.0.1:PORT/v1

Generates a corpus (as ``bench_retrieval``: 200-word chunks, the RAG default), indexes its
first documents (all but ``--grow`` of its tokens) into a cache, then, for each retriever,
times in one run, side by side: growing that cached index to the whole corpus (load and
validate the prefix's index, chunk, tokenize or embed only the new documents, write one
segment) and rebuilding the whole corpus's index from scratch into an empty cache. It then
checks that the top-10 of ``--queries`` queries is the same chunks in the same order in both,
and prints the texts each one embedded (dense) to show that only the new documents were.

Then, for changing corpora (``--edit``, default 1%): the whole corpus is indexed once, and for
each change (``remove`` 1% of the documents, ``update`` 1% of them: a sentence appended, which
moves them to the end as delete + add, and both at once) its index is derived from a hard-linked
copy of that cache (tombstones for the removed and replaced documents, one segment of the updated
ones) and timed against a rebuild of the changed corpus into an empty cache. The top-10 of every
query must be the same chunks in the same order; for BM25 every chunk's score must be bit-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from benchmarks.synthetic_text import generate_corpus, sample_queries
from longctx.retrieval import ChunkingConfig, Corpus, build_index
from longctx.retrieval import index as index_module
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import OpenAIEmbedder, SentenceTransformerEmbedder
from longctx.retrieval.retrievers import make_retriever


class Counting:
    """Counts the texts an embedder embeds (mixed in before the embedder's class)."""

    embedded = 0

    def embed_documents(self, texts):
        self.embedded += len(texts)
        return super().embed_documents(texts)


class CountingEmbedder(Counting, SentenceTransformerEmbedder):
    """The real embedder, counting the texts it embeds."""


class CountingServerEmbedder(Counting, OpenAIEmbedder):
    """An OpenAI-compatible embeddings endpoint (``--embedder-url``), counting the
    texts it embeds."""

    url = ""

    def __init__(self) -> None:
        super().__init__(model="stub-embedding", base_url=self.url, api_key="unused")


def counting_embedder() -> CountingEmbedder | CountingServerEmbedder:
    """The dense retriever's embedder: MiniLM, or the endpoint given by ``--embedder-url``."""
    return CountingServerEmbedder() if CountingServerEmbedder.url else CountingEmbedder()


def make(name: str, embedder: CountingEmbedder | CountingServerEmbedder | None):
    """A fresh retriever of ``name`` (dense: over ``embedder``)."""
    return DenseRetriever(embedder) if name == "dense" else make_retriever(name)


def top10(index, queries: list[str]) -> tuple[list[list[int]], float]:
    """The top-10 chunk ids of each query, and the median milliseconds of a query (after
    one warm-up)."""
    index.search(queries[0], 10)
    tops, times = [], []
    for q in queries:
        t = time.perf_counter()
        tops.append([h.chunk.chunk_id for h in index.search(q, 10)])
        times.append((time.perf_counter() - t) * 1000)
    return tops, statistics.median(times)


def split(corpus: Corpus, grow: float) -> int:
    """How many of the first documents hold about ``1 - grow`` of the tokens (at least
    one is added)."""
    counts, total, kept = corpus.token_counts, corpus.num_tokens, 0
    for n, tokens in enumerate(counts):
        if kept + tokens > total * (1 - grow):
            return max(1, min(n, len(corpus) - 1))
        kept += tokens
    return len(corpus) - 1


def main(argv: list[str] | None = None) -> None:
    """Index the prefix, then grow it and rebuild the whole, timed side by side; then edit the whole
    and rebuild it."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tokens", type=int, default=1_000_000, help="corpus size in tokens")
    p.add_argument("--grow", type=float, default=0.01, help="share of the tokens added")
    p.add_argument("--doc-tokens", type=int, default=1000, help="tokens per generated document")
    p.add_argument("--retrievers", nargs="+", default=["bm25", "dense"], choices=["bm25", "dense"])
    p.add_argument("--queries", type=int, default=50)
    p.add_argument(
        "--edit",
        type=float,
        default=0.01,
        help="share of the documents removed, and updated, in the edit rows",
    )
    p.add_argument("--only", choices=["grow", "edit"], help="run one part (default: both)")
    p.add_argument(
        "--embedder-url",
        help=(
            "dense: an OpenAI-compatible embeddings endpoint instead of MiniLM (e.g. the stub's, "
            "python -m benchmarks.stub_server: the index's own work at 1M-10M without "
            "MiniLM's half hour per 1M tokens on 2 cores)"
        ),
    )
    args = p.parse_args(argv)
    CountingServerEmbedder.url = args.embedder_url or ""
    corpus = generate_corpus(args.tokens, doc_tokens=args.doc_tokens)
    if args.only != "edit":
        grow_rows(corpus, args)
    if args.only != "grow":
        edit_rows(corpus, args)


def grow_rows(corpus: Corpus, args: argparse.Namespace) -> None:
    """Grow the prefix's cached index to the whole corpus, against a rebuild."""
    n = split(corpus, args.grow)
    prefix = Corpus(corpus.documents[:n])
    added = corpus.num_tokens - prefix.num_tokens
    chunking = ChunkingConfig(unit="words", size=200)
    queries = sample_queries(args.queries, zipf=True)
    print(
        f"## Growing an index: {corpus.num_tokens:,} tokens in {len(corpus)} documents; "
        f"{len(corpus) - n} documents added ({added:,} tokens, {added / corpus.num_tokens:.1%})"
    )
    print(
        "| retriever | chunks (added) | prefix build s | grow s | rebuild s | grow / rebuild "
        "| texts embedded: grow / rebuild | top-10 equal | query ms: grown / rebuilt |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.retrievers:
        with (
            tempfile.TemporaryDirectory() as grow_cache,
            tempfile.TemporaryDirectory() as rebuild_cache,
        ):
            counting = [counting_embedder() for _ in range(3)] if name == "dense" else [None] * 3
            if counting[0] is not None:
                counting[0].embed_documents(["warm-up: load the model before timing"])
            t = time.perf_counter()
            build_index(prefix, make(name, counting[0]), chunking=chunking, cache_dir=grow_cache)
            prefix_s = time.perf_counter() - t
            index_module.clear_memory_cache()
            t = time.perf_counter()
            grown = build_index(
                corpus, make(name, counting[1]), chunking=chunking, cache_dir=grow_cache
            )
            grow_s = time.perf_counter() - t
            index_module.clear_memory_cache()
            t = time.perf_counter()
            rebuilt = build_index(
                corpus, make(name, counting[2]), chunking=chunking, cache_dir=Path(rebuild_cache)
            )
            rebuild_s = time.perf_counter() - t
            embedded = (
                f"{counting[1].embedded:,} / {counting[2].embedded:,}"
                if counting[1] is not None
                else "-"
            )  # before the queries
            grown_top, grown_ms = top10(grown, queries)
            rebuilt_top, rebuilt_ms = top10(rebuilt, queries)
            same = sum(a == b for a, b in zip(grown_top, rebuilt_top))
            new_chunks = len(grown) - sum(1 for c in grown.chunks if c.doc_index < n)
            print(
                f"| {name} | {len(grown):,} ({new_chunks:,}) | {prefix_s:.2f} | {grow_s:.2f} | "
                f"{rebuild_s:.2f} | {grow_s / rebuild_s:.1%} | {embedded} | {same}/{len(queries)} "
                f"| {grown_ms:.1f} / {rebuilt_ms:.1f} |"
            )
        index_module.clear_memory_cache()


def changed(corpus: Corpus, mode: str, share: float, seed: int = 3) -> tuple[Corpus, int, int]:
    """``corpus`` with ``share`` of its documents removed (``remove``), updated (``update``: a
    sentence appended), or both; the counts removed and updated."""
    rng = random.Random(seed)
    n = max(1, round(share * len(corpus)))
    picked = rng.sample(range(len(corpus)), 2 * n)
    gone = [corpus[i].doc_id for i in picked[:n]] if mode in ("remove", "both") else []
    edits = [corpus[i] for i in picked[n:]] if mode in ("update", "both") else []
    new = corpus.remove(*gone) if gone else corpus
    if edits:
        new = new.update(*[replace(d, text=d.text + " Revised after the audit.") for d in edits])
    return new, len(gone), len(edits)


def exact_top10(index, queries: list[str]) -> list[list[int]]:
    """Each query's top-10 live chunk ids by a brute-force inner product over the index's stored
    vectors, deleted ones excluded, ties by chunk order: the oracle of a dense index with
    tombstones, apart from FAISS and the retriever's filter."""
    stored = index.retriever._index.vectors(0, len(index.stored))
    live = (
        np.asarray([c.doc_index for c in index.stored]) >= 0
    )  # every stored chunk, then the deleted ones dropped
    deleted = set(json.loads((index.path / "meta.json").read_text()).get("deleted_documents") or [])
    live &= np.asarray([c.doc_index not in deleted for c in index.stored])
    positions = np.cumsum(live) - 1  # a live stored chunk's id among the live ones
    tops = []
    for q in queries:
        scores = stored @ index.retriever.embedder.embed_query(q)
        ids = np.flatnonzero(live)
        order = ids[np.lexsort((ids, -scores[ids]))][:10]
        tops.append([int(positions[i]) for i in order])
    return tops


def link_copy(src: Path, dst: Path) -> None:
    """A copy of the cache ``src`` made of hard links (the base index, shared, as the edited
    index shares it)."""
    shutil.copytree(src, dst, copy_function=os.link)


def edit_rows(corpus: Corpus, args: argparse.Namespace) -> None:
    """Index the whole corpus, then derive the index of each changed corpus from it,
    against a rebuild."""
    chunking = ChunkingConfig(unit="words", size=200)
    queries = sample_queries(args.queries, zipf=True)
    print(
        f"\n## Editing an indexed corpus: {corpus.num_tokens:,} tokens in {len(corpus)} "
        f"documents; {args.edit:.0%} of the "
        "documents removed, updated (delete + add), or both"
    )
    print(
        "| retriever | change | chunks: stored / live | base build s | edit s | rebuild s | edit "
        "/ rebuild | texts embedded: edit / rebuild | top-10 equal to the rebuild | BM25 scores "
        "bit-identical (dense: top-10 exact) | query ms: edited / rebuilt |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.retrievers:
        with tempfile.TemporaryDirectory() as root:
            base_cache = Path(root) / "base"
            first = counting_embedder() if name == "dense" else None
            if first is not None:
                first.embed_documents(["warm-up: load the model before timing"])
            t = time.perf_counter()
            build_index(corpus, make(name, first), chunking=chunking, cache_dir=base_cache)
            base_s = time.perf_counter() - t
            for mode in ("remove", "update", "both"):
                new, removed, updated = changed(corpus, mode, args.edit)
                # hashed by the caller's corpus (as any corpus is once), not timed as index work
                new.document_digests  # noqa: B018
                link_copy(base_cache, Path(root) / mode)
                counting = (
                    [counting_embedder(), counting_embedder()] if name == "dense" else [None, None]
                )
                index_module.clear_memory_cache()
                t = time.perf_counter()
                edited = build_index(
                    new, make(name, counting[0]), chunking=chunking, cache_dir=Path(root) / mode
                )
                edit_s = time.perf_counter() - t
                index_module.clear_memory_cache()
                t = time.perf_counter()
                rebuilt = build_index(
                    new,
                    make(name, counting[1]),
                    chunking=chunking,
                    cache_dir=Path(root) / f"{mode}-rebuild",
                )
                rebuild_s = time.perf_counter() - t
                embedded = (
                    f"{counting[0].embedded:,} / {counting[1].embedded:,}"
                    if counting[0] is not None
                    else "-"
                )
                edited_top, edited_ms = top10(edited, queries)
                rebuilt_top, rebuilt_ms = top10(rebuilt, queries)
                same = (
                    sum(a == b for a, b in zip(edited_top, rebuilt_top))
                    if edited.chunks == rebuilt.chunks
                    else 0
                )
                bits = "-"
                if name == "bm25":
                    equal = sum(
                        np.array_equal(edited.retriever.scores(q), rebuilt.retriever.scores(q))
                        for q in queries
                    )
                    bits = f"{equal}/{len(queries)}"
                else:
                    # the rebuild re-embeds every chunk in other batches: also compare with the same
                    # vectors, searched exactly
                    exact = exact_top10(edited, queries)
                    bits = (
                        "same vectors: "
                        f"{sum(a == b for a, b in zip(edited_top, exact))}/{len(queries)}"
                    )
                what = {
                    "remove": f"remove {removed}",
                    "update": f"update {updated}",
                    "both": f"update {updated} + remove {removed}",
                }[mode]
                print(
                    f"| {name} | {what} | {len(edited.stored):,} / {len(edited):,} | {base_s:.2f} "
                    f"| {edit_s:.2f} | {rebuild_s:.2f} | {edit_s / rebuild_s:.1%} | {embedded} | "
                    f"{same}/{len(queries)} | {bits} | {edited_ms:.1f} / {rebuilt_ms:.1f} |"
                )
                index_module.clear_memory_cache()


if __name__ == "__main__":
    main()
