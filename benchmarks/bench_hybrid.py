"""Evidence recall of BM25, dense, hybrid (RRF and score fusion) and, where a reranker is given,
hybrid + rerank.

    python -m benchmarks.bench_hybrid                          # synthetic 1M finance tier, seed 0
    python -m benchmarks.bench_hybrid --tier 128K --k 7 10 50
    python -m benchmarks.bench_hybrid --rerank-model PATH      # + a local CrossEncoder
    # + a tiny random reranker: the path runs, its recall is noise
    python -m benchmarks.bench_hybrid --tiny-reranker
    python -m benchmarks.bench_hybrid --rerank-url http://HOST:PORT/v1 \\
        --rerank-name bge-reranker-v2-m3

LLM-free: recall@k is the share of a question's evidence documents among the documents of the top-k
chunks (:func:`longctx.experiments.synth.retrieval_recall`), averaged over the tier's questions,
overall and by difficulty. Chunks are the RAG default (200 words); dense is the offline MiniLM.
Prints a markdown table (nothing is asserted) and, per k, whether hybrid's recall is at least
max(bm25, dense).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from longctx.experiments.synth import (
    NeedleConfig,
    SynthConfig,
    generate,
    load_samples,
    parse_tokens,
    retrieval_recall,
)
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings

DIFFICULTIES = ("easy", "medium", "hard", "needle")


def variants(args: argparse.Namespace) -> list[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """``(label, retriever, retriever options, rerank settings)`` of every measured setting."""
    # --no-fit-chunks: MiniLM reads the RAG chunks as chunked (cut at 256 word pieces); by default
    # dense and both of hybrid's components index the chunks fitted to MiniLM (retrieval.fitted)
    dense: dict[str, Any] = {"fit_chunks": False} if args.no_fit_chunks else {}
    fused: dict[str, Any] = {"dense_options": dense} if dense else {}
    rows: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
        ("bm25", "bm25", {}, {}),
        ("dense (MiniLM)", "dense", dense, {}),
        ("hybrid rrf k=60", "hybrid", fused, {}),
        *[
            (f"hybrid score w={w}", "hybrid", {**fused, "fusion": "score", "weight": w}, {})
            for w in args.weights
        ],
    ]
    rerank: dict[str, Any] = {}
    if args.rerank_model:
        rerank = {"rerank": "cross-encoder", "rerank_options": {"model": args.rerank_model}}
        if args.tiny_reranker:
            rerank["label"] = "tiny random cross-encoder, not a real reranker"
    elif args.rerank_url:
        rerank = {
            "rerank": "server",
            "rerank_options": {"base_url": args.rerank_url, "model": args.rerank_name},
        }
    if rerank:
        label = rerank.pop("label", rerank["rerank"])
        rows.append(
            (
                f"hybrid rrf + rerank ({label})",
                "hybrid",
                fused,
                {**rerank, "rerank_candidates": args.candidates},
            )
        )
    return rows


def measure(
    samples: list,
    retriever: str,
    options: dict[str, Any],
    rerank: dict[str, Any],
    ks: list[int],
    cache: Path,
) -> dict[int, dict[str, list[float]]]:
    """Recall per k and difficulty over ``samples``: the top ``max(ks)`` retrieved once per
    question, each k a prefix (fused and reranked rankings are prefix-consistent: every k under
    ``candidates`` fuses the same lists)."""
    by_k: dict[int, dict[str, list[float]]] = {k: {} for k in ks}
    settings = RetrievalSettings(
        retriever=retriever, retriever_options=options, top_k=max(ks), **rerank
    )
    service = RetrievalService(settings=settings, cache_dir=cache)
    index = service.build_index(samples[0].corpus)
    for s in samples:
        docs = [h.chunk.doc_id for h in service.retrieve(index, s.question.text)]
        for k in ks:
            by_k[k].setdefault(s.difficulty, []).append(
                retrieval_recall(s.evidence_doc_ids, docs[:k])
            )
    return by_k


def main() -> None:
    """Generate the tier, measure every variant, print the table."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--tier", default="1M")
    p.add_argument("--domain", default="finance")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--k", type=int, nargs="+", default=[7, 10, 50])
    p.add_argument(
        "--weights", type=float, nargs="*", default=[0.5], help="score fusion: weight of dense"
    )
    p.add_argument("--rerank-model", help="a local CrossEncoder checkpoint")
    p.add_argument(
        "--tiny-reranker",
        action="store_true",
        help=(
            "a tiny random cross-encoder built here (benchmarks.tiny_reranker): "
            "shows the path runs, its recall is not a real reranker's"
        ),
    )
    p.add_argument("--rerank-url", help="a rerank server's base URL (http://HOST:PORT/v1)")
    p.add_argument("--rerank-name", default="", help="the model name the rerank server expects")
    p.add_argument("--candidates", type=int, default=50, help="first-stage chunks reranked")
    p.add_argument("--cache", help="index cache folder (default: a temporary one)")
    p.add_argument(
        "--no-fit-chunks",
        action="store_true",
        help="dense reads the chunks as chunked (cut at its max length), as BM25 indexes them",
    )
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.tiny_reranker:
            from benchmarks.tiny_reranker import build_tiny_reranker

            args.rerank_model = build_tiny_reranker(Path(tmp) / "tiny-reranker")
        out = Path(tmp) / f"{args.domain}-{args.tier}"
        t = time.perf_counter()
        generate(
            SynthConfig(
                domain=args.domain,
                target_tokens=parse_tokens(args.tier),
                seed=args.seed,
                needle=NeedleConfig(depth=0.5),
            ),
            out,
        )
        samples = load_samples(out)
        corpus = samples[0].corpus
        print(
            f"## Evidence recall on the synthetic {args.tier} {args.domain} tier (seed "
            f"{args.seed}): {corpus.num_tokens:,} tokens, "
            f"{len(corpus):,} documents, {len(samples)} questions; 200-word chunks (generated in "
            f"{time.perf_counter() - t:.1f}s)"
        )
        print(
            "| retriever | k | " + " | ".join(DIFFICULTIES) + " | all | seconds (index + queries) |"
        )
        print("|---|---|" + "---|" * (len(DIFFICULTIES) + 2))
        cache = Path(args.cache) if args.cache else Path(tmp) / "cache"
        overall: dict[str, dict[int, float]] = {}
        for label, retriever, options, rerank in variants(args):
            t = time.perf_counter()
            by_k = measure(samples, retriever, options, rerank, args.k, cache)
            secs = time.perf_counter() - t
            for k, by in by_k.items():
                cells = [
                    f"{statistics.mean(by[d]):.3f} ({len(by[d])})" if d in by else "-"
                    for d in DIFFICULTIES
                ]
                overall.setdefault(label, {})[k] = statistics.mean(
                    r for rs in by.values() for r in rs
                )
                print(
                    f"| {label} | {k} | "
                    + " | ".join(cells)
                    + f" | {overall[label][k]:.3f} | {secs:.1f} |"
                )
        for k in args.k:
            best_single = max(overall["bm25"][k], overall["dense (MiniLM)"][k])
            verdicts = ", ".join(
                f"{label} {'>=' if r[k] >= best_single else '<'} max(bm25, dense) ({r[k]:.4f} vs "
                f"{best_single:.4f})"
                for label, r in overall.items()
                if label.startswith("hybrid")
            )
            print(f"k={k}: {verdicts}")


if __name__ == "__main__":
    main()
