"""Synthetic-corpus benchmark: generation time per tier and retrieval recall of the evidence.

    python -m benchmarks.bench_synth                          # all tiers; recall at 128K and 1M
    python -m benchmarks.bench_synth --tiers 128K 1M --dense-max-questions 10
    python -m benchmarks.bench_synth --tiers 10M --recall-tiers

Prints (nothing is asserted):
* per tier: wall seconds to generate, documents, tokens counted with the library's
  counter, deviation from the target;
* per recall tier: mean retrieval recall (share of a question's evidence documents
  that appear among the top-k retrieved chunks' documents) for BM25 and dense (MiniLM)
  over 200-token chunks, top-k 10 and 50, by difficulty.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from longctx.experiments.synth import (
    TIERS,
    NeedleConfig,
    SynthConfig,
    generate,
    load_samples,
    parse_tokens,
    retrieval_recall,
)
from longctx.retrieval import ChunkingConfig, build_index

DIFFICULTIES = ("easy", "medium", "hard", "needle")


def bench_generation(tier: str, domain: str, seed: int, root: Path) -> Path:
    """Generate one tier and print its time and size."""
    target = parse_tokens(tier)
    out = root / f"{domain}-{tier}"
    cfg = SynthConfig(
        domain=domain, target_tokens=target, seed=seed, needle=NeedleConfig(depth=0.5)
    )
    t = time.perf_counter()
    result = generate(cfg, out)
    secs = time.perf_counter() - t
    print(
        f"| {tier} | {domain} | {secs:.1f} | {result.num_documents:,} | {result.total_tokens:,} | "
        f"{100 * (result.total_tokens / target - 1):+.2f}% | {result.num_questions} |"
    )
    return out


def bench_recall(
    path: Path,
    tier: str,
    retrievers: list[str],
    ks: list[int],
    dense_max_questions: int,
    cache: Path,
) -> None:
    """Mean evidence recall per retriever and top-k, by difficulty."""
    samples = load_samples(path)
    corpus = samples[0].corpus
    chunking = ChunkingConfig(unit="tokens", size=200)
    for name in retrievers:
        t = time.perf_counter()
        index = build_index(corpus, name, chunking=chunking, cache_dir=cache)
        build_s = time.perf_counter() - t
        chosen = (
            samples
            if name != "dense" or not dense_max_questions
            else _spread(samples, dense_max_questions)
        )
        for k in ks:
            by: dict[str, list[float]] = {}
            for s in chosen:
                docs = [h.chunk.doc_id for h in index.search(s.question.text, k)]
                by.setdefault(s.difficulty, []).append(retrieval_recall(s.evidence_doc_ids, docs))
            cells = [
                f"{statistics.mean(by[d]):.3f} ({len(by[d])})" if d in by else "-"
                for d in DIFFICULTIES
            ]
            overall = statistics.mean(r for rs in by.values() for r in rs)
            print(
                f"| {tier} | {name} | {k} | "
                + " | ".join(cells)
                + f" | {overall:.3f} | {len(index):,} | {build_s:.1f} |"
            )


def _spread(samples: list, n: int) -> list:
    """``n`` samples spread over the list (keeps the difficulty mix), always with the needle."""
    step = max(1, len(samples) // n)
    picked = samples[::step][:n]
    return picked + [s for s in samples if s.difficulty == "needle" and s not in picked]


def main() -> None:
    """Parse arguments, generate tiers, print the tables."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--tiers",
        nargs="+",
        default=list(TIERS),
        help="tiers to generate (default: 128K 1M 4M 10M)",
    )
    p.add_argument(
        "--recall-tiers", nargs="*", default=["128K", "1M"], help="tiers to measure recall on"
    )
    p.add_argument("--domain", default="finance")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--retrievers", nargs="+", default=["bm25", "dense"])
    p.add_argument("--k", type=int, nargs="+", default=[10, 50], help="chunks retrieved")
    p.add_argument(
        "--dense-max-questions",
        type=int,
        default=0,
        help="limit dense to this many questions (0: all)",
    )
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print("## Generation (wall seconds on this machine; tokens counted with retrieval.tokens)")
        print("| tier | domain | seconds | documents | tokens | vs target | questions |")
        print("|---|---|---|---|---|---|---|")
        tiers = list(
            dict.fromkeys(args.tiers + args.recall_tiers)
        )  # recall tiers are generated (and timed) too
        paths = {tier: bench_generation(tier, args.domain, args.seed, root) for tier in tiers}
        if not args.recall_tiers:
            return
        print(
            "\n## Retrieval recall of evidence documents (mean over questions; question count in "
            "parentheses)"
        )
        print(
            "| tier | retriever | top-k chunks | "
            + " | ".join(DIFFICULTIES)
            + " | all | chunks | index s |"
        )
        print("|---|---|---|" + "---|" * (len(DIFFICULTIES) + 3))
        for tier in args.recall_tiers:
            bench_recall(
                paths[tier], tier, args.retrievers, args.k, args.dense_max_questions, root / "cache"
            )


if __name__ == "__main__":
    main()
