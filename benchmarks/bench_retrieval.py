"""Retrieval benchmark: prints figures side by side in one run (not a test; nothing is asserted).

    python -m benchmarks.bench_retrieval                 # 1M and 10M tokens, dense on 512 chunks
    python -m benchmarks.bench_retrieval --sizes 1000000 --dense-chunks 128
    python -m benchmarks.bench_retrieval --only backends      # the embedding-backend guard alone

Reports, on generated corpora:
* BM25 build seconds (chunking, then tokenize + index) and query latency p50/p95 for
  ``bm25s`` vs ``rank_bm25``, and the time to load the cached bm25s index from disk;
* dense indexing throughput of our pipeline (sharded embedding + FAISS) vs a bare
  ``SentenceTransformer.encode`` on the same chunks (overhead ratio) and vs a plain
  LlamaIndex ``VectorStoreIndex`` build with the same embedder;
* per embedding backend (``torch``, ``torch-bf16``, ``onnx``, ``onnx-int8``): throughput
  against a bare torch float32 ``SentenceTransformer.encode`` on the same chunks (a bare
  bfloat16 encode beside it; one warm-up pass each, then rounds interleaved, best and
  median round of each), and the quality guard on a synthetic tier (``longctx synth --domain finance
  --tokens 1M --seed 0``, 200-token chunks): mean top-10 overlap of each backend's index
  with the torch index on the tier's questions, and evidence recall at top-10 / top-50;
* peak RSS after each phase.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.synthetic_text import generate_corpus, sample_queries
from longctx.retrieval import ChunkingConfig, build_index, chunk_corpus
from longctx.retrieval import index as index_module
from longctx.retrieval.bm25 import BM25Retriever
from longctx.retrieval.dense import DenseRetriever
from longctx.retrieval.embedders import SentenceTransformerEmbedder, offline_minilm_path
from longctx.retrieval.embedding_backends import EMBEDDING_BACKENDS, native_bf16_cpu


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def bench_bm25(num_tokens: int, n_queries: int, engines: list[str]) -> None:
    """Build and query BM25 with each engine over one generated corpus."""
    t = time.perf_counter()
    corpus = generate_corpus(num_tokens)
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    chunking = ChunkingConfig(unit="words", size=200)  # the RAG default (LongBench v1)
    chunks = chunk_corpus(corpus, chunking)
    chunk_s = time.perf_counter() - t
    print(
        f"\n## BM25 over {corpus.num_tokens:,} tokens ({len(corpus):,} documents, "
        f"{len(chunks):,} chunks of 200 words)"
    )
    print(f"generated in {gen_s:.1f}s, chunked in {chunk_s:.1f}s")
    query_sets = {"tail": sample_queries(n_queries), "head": sample_queries(n_queries, zipf=True)}
    queries = query_sets["tail"]
    print(
        "query p50/p95 in ms; tail = words drawn uniformly (short postings), head = Zipf-drawn "
        "(long postings)"
    )
    print(
        "| engine | tokenize+index s | build incl. chunking s | tail p50 | tail p95 | head p50 | "
        "head p95 | peak RSS MiB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for engine in engines:
        retriever = BM25Retriever(engine=engine)
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            retriever.build(chunks, work_dir=Path(tmp))
        build_s = time.perf_counter() - t
        retriever.search(queries[0], 10)  # warm-up
        cells = []
        for qs in query_sets.values():
            latencies = []
            for q in qs:
                t = time.perf_counter()
                retriever.search(q, 10)
                latencies.append((time.perf_counter() - t) * 1000)
            cells += [f"{statistics.median(latencies):.2f}", f"{percentile(latencies, 95):.2f}"]
        print(
            f"| {engine} | {build_s:.1f} | {build_s + chunk_s:.1f} | {' | '.join(cells)} | "
            f"{peak_rss_mb():,.0f} |"
        )
        del retriever
    with tempfile.TemporaryDirectory() as cache:
        t = time.perf_counter()
        build_index(corpus, "bm25", chunking=chunking, cache_dir=cache)
        cold = time.perf_counter() - t
        index_module.clear_memory_cache()
        t = time.perf_counter()
        loaded = build_index(corpus, "bm25", chunking=chunking, cache_dir=cache)
        load_s = time.perf_counter() - t
        t = time.perf_counter()
        loaded.search(queries[0], 10)
        first_q = (time.perf_counter() - t) * 1000
    print(
        f"cached bm25s index: built+saved in {cold:.1f}s, loaded from disk in {load_s:.2f}s, "
        f"first query {first_q:.1f} ms"
    )


def bench_dense(n_chunks: int, skip_llamaindex: bool) -> None:
    """Embedding throughput: bare encode vs our pipeline vs LlamaIndex, same chunks and model."""
    corpus = generate_corpus(n_chunks * 200, doc_tokens=2000, seed=7)
    chunks = chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=200))[
        :n_chunks
    ]  # fits MiniLM's 256 pieces
    texts = [c.text for c in chunks]
    path = str(offline_minilm_path())
    print(
        f"\n## Dense indexing, all-MiniLM-L6-v2 on CPU, {len(texts)} chunks of <=200 tokens, "
        "batch 32"
    )
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu")
    model.encode(texts[:64], batch_size=32)  # warm-up: load weights, allocate
    results = {}
    t = time.perf_counter()
    model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True)
    results["bare SentenceTransformer.encode"] = time.perf_counter() - t

    embedder = SentenceTransformerEmbedder(batch_size=32, backend="torch")
    embedder._model = model  # same loaded weights: measure the pipeline, not a second load
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        DenseRetriever(embedder).build(chunks, work_dir=Path(tmp))
        results["ours (shards + FAISS)"] = time.perf_counter() - t

    if not skip_llamaindex:
        try:
            from llama_index.core import Settings, VectorStoreIndex
            from llama_index.core.schema import TextNode
            from llama_index.embeddings.huggingface import HuggingFaceEmbedding
        except ImportError:
            print("(LlamaIndex comparison skipped: pip install -e '.[bench]')")
        else:
            Settings.llm = None
            embed = HuggingFaceEmbedding(model_name=path, device="cpu", embed_batch_size=32)
            embed.get_text_embedding_batch(texts[:64])  # warm-up
            nodes = [TextNode(text=x, id_=str(i)) for i, x in enumerate(texts)]
            t = time.perf_counter()
            VectorStoreIndex(nodes, embed_model=embed)
            results["LlamaIndex VectorStoreIndex"] = time.perf_counter() - t

    bare = results["bare SentenceTransformer.encode"]
    print("| pipeline | seconds | chunks/s | time vs bare encode |")
    print("|---|---|---|---|")
    for name, secs in results.items():
        print(f"| {name} | {secs:.1f} | {len(texts) / secs:.1f} | {secs / bare:.3f}x |")
    print(f"peak RSS {peak_rss_mb():,.0f} MiB")


def dense_texts(n_chunks: int) -> list:
    """``n_chunks`` generated chunks of <=200 tokens (they fit MiniLM's 256 word pieces)."""
    corpus = generate_corpus(n_chunks * 200, doc_tokens=2000, seed=7)
    return chunk_corpus(corpus, ChunkingConfig(unit="tokens", size=200))[:n_chunks]


BARE_TORCH = "bare SentenceTransformer.encode (torch fp32)"


def bench_backend_throughput(n_chunks: int, backends: list[str], rounds: int) -> None:
    """Embedding throughput per backend vs bare torch encode, same chunks, rounds interleaved."""
    texts = [c.text for c in dense_texts(n_chunks)]
    import torch
    from sentence_transformers import SentenceTransformer

    print(
        f"\n## Embedding backends, all-MiniLM-L6-v2 on CPU, {len(texts)} chunks of <=200 tokens, "
        "batch 32"
    )
    path = str(offline_minilm_path())
    bare = SentenceTransformer(path, device="cpu")
    encoders = {BARE_TORCH: lambda xs: bare.encode(xs, batch_size=32, normalize_embeddings=True)}
    if "torch-bf16" in backends:
        bare16 = SentenceTransformer(path, device="cpu", model_kwargs={"dtype": torch.bfloat16})
        encoders["bare SentenceTransformer.encode (bf16)"] = lambda xs: bare16.encode(
            xs, batch_size=32, normalize_embeddings=True
        )
    for b in backends:
        embedder = SentenceTransformerEmbedder(batch_size=32, backend=b)
        t = time.perf_counter()
        embedder.model  # export once (cached under the cache dir's onnx/) and load
        print(f"{b}: model ready in {time.perf_counter() - t:.1f}s")
        encoders[f"{b} (our embedder)"] = embedder.embed_documents
    runs = {name: (lambda encode=encode: encode(texts)) for name, encode in encoders.items()}
    for (
        run
    ) in runs.values():  # warm-up, a full pass each: oneDNN builds its bf16 kernels per input shape
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            t = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t)
    best, median = min(times[BARE_TORCH]), statistics.median(times[BARE_TORCH])
    print(
        f"after one warm-up pass each, {rounds} interleaved rounds; throughput ratio = bare "
        "torch fp32 seconds / "
        "pipeline seconds, best round against best round and median against median"
    )
    print(
        "| pipeline | best s | median s | chunks/s (best) | vs bare torch fp32, best | vs bare "
        "torch fp32, median |"
    )
    print("|---|---|---|---|---|---|")
    for name, ts in times.items():
        print(
            f"| {name} | {min(ts):.1f} | {statistics.median(ts):.1f} | {len(texts) / min(ts):.1f} "
            f"| {best / min(ts):.2f}x | {median / statistics.median(ts):.2f}x |"
        )
    print(f"peak RSS {peak_rss_mb():,.0f} MiB")


def bench_backend_quality(
    tier: str, backends: list[str], k: int = 10, recall_ks: tuple[int, ...] = (10, 50)
) -> None:
    """Top-k overlap with the torch index and evidence recall per backend on a synthetic tier."""
    from longctx.experiments.cli.app import main as cli_main
    from longctx.experiments.synth import load_samples, retrieval_recall

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / f"finance-{tier}"
        t = time.perf_counter()
        cli_main(
            ["synth", "--domain", "finance", "--tokens", tier, "--seed", "0", "--out", str(out)]
        )
        print(f"(generated in {time.perf_counter() - t:.1f}s)")
        samples = load_samples(out)
        corpus = samples[0].corpus
        chunking = ChunkingConfig(unit="tokens", size=200)
        hits: dict[str, list[list]] = {}
        rows = []
        for b in ["torch", *[x for x in backends if x != "torch"]]:
            t = time.perf_counter()
            index = build_index(
                corpus, "dense", backend=b, chunking=chunking, cache_dir=Path(tmp) / "cache"
            )
            build_s = time.perf_counter() - t
            hits[b] = [index.search(s.question.text, max(k, *recall_ks)) for s in samples]
            overlap = statistics.mean(
                len({h.chunk.chunk_id for h in mine[:k]} & {h.chunk.chunk_id for h in ref[:k]}) / k
                for mine, ref in zip(hits[b], hits["torch"])
            )
            recalls = [
                statistics.mean(
                    retrieval_recall(s.evidence_doc_ids, [h.chunk.doc_id for h in hs[:rk]])
                    for s, hs in zip(samples, hits[b])
                )
                for rk in recall_ks
            ]
            rows.append((b, overlap, recalls, build_s, len(index)))
        print(
            f"\n## Embedding backends: quality on the synthetic {tier} finance tier (seed 0), "
            f"{corpus.num_tokens:,} tokens, "
            f"{rows[0][4]:,} chunks of 200 tokens, {len(samples)} questions"
        )
        print(
            f"| backend | mean top-{k} overlap with torch | "
            + " | ".join(f"evidence recall@{rk}" for rk in recall_ks)
            + " | "
            + " | ".join(f"recall@{rk} vs torch" for rk in recall_ks)
            + " | index build s | chunks/s |"
        )
        print("|---|---|" + "---|" * (2 * len(recall_ks) + 2))
        ref = rows[0][2]
        for b, overlap, recalls, build_s, n in rows:
            print(
                f"| {b} | {overlap:.3f} | "
                + " | ".join(f"{r:.3f}" for r in recalls)
                + " | "
                + " | ".join(f"{r - r0:+.3f}" for r, r0 in zip(recalls, ref))
                + f" | {build_s:.1f} | {n / build_s:.1f} |"
            )
        print(f"peak RSS {peak_rss_mb():,.0f} MiB")


def main() -> None:
    """Parse arguments and run the selected benchmarks."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[1_000_000, 10_000_000],
        help="corpus sizes in tokens",
    )
    p.add_argument("--queries", type=int, default=100)
    p.add_argument(
        "--rank-bm25-max", type=int, default=10_000_000, help="largest size to run rank_bm25 on"
    )
    p.add_argument(
        "--dense-chunks",
        type=int,
        default=512,
        help="chunks embedded per dense pipeline (0 to skip)",
    )
    p.add_argument("--skip-llamaindex", action="store_true")
    p.add_argument(
        "--only",
        choices=["bm25", "dense", "backends"],
        nargs="+",
        help="run only these parts (default: all)",
    )
    runnable = [b for b in EMBEDDING_BACKENDS if b != "torch-bf16" or native_bf16_cpu()]
    p.add_argument(
        "--backends",
        nargs="+",
        default=runnable,
        choices=EMBEDDING_BACKENDS,
        help="default: all (torch-bf16 only on a CPU with native bfloat16)",
    )
    p.add_argument(
        "--backend-chunks",
        type=int,
        default=512,
        help="chunks per backend throughput round (0 to skip)",
    )
    p.add_argument(
        "--backend-rounds",
        type=int,
        default=3,
        help="interleaved throughput rounds (best and median reported)",
    )
    p.add_argument(
        "--quality-tier",
        default="1M",
        help="synthetic tier of the backend quality guard ('' to skip)",
    )
    args = p.parse_args()
    parts = set(args.only or ["bm25", "dense", "backends"])
    if "bm25" in parts:
        for size in args.sizes:
            engines = ["bm25s"] + (["rank_bm25"] if size <= args.rank_bm25_max else [])
            bench_bm25(size, args.queries, engines)
    if "dense" in parts and args.dense_chunks:
        bench_dense(args.dense_chunks, args.skip_llamaindex)
    if "backends" in parts:
        if args.backend_chunks:
            bench_backend_throughput(args.backend_chunks, args.backends, args.backend_rounds)
        if args.quality_tier:
            bench_backend_quality(args.quality_tier, args.backends)


if __name__ == "__main__":
    main()
