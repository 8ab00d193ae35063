"""How far RAPTOR's ``clustering="scalable"`` is from the official clustering on real embeddings.

    python -m benchmarks.raptor_agreement --corpus runs/index_build/corpus-1M --leaves 1000 \\
        --samples 250,2000 [--patience 0,5] [--recluster fresh,reuse]
        [--vectors runs/minilm1000.npy]
    python -m benchmarks.raptor_agreement --leaves 10656 --samples 2000 --patience 5 --hashed \\
        --no-official

One layer's clustering (``cluster_nodes``: dim 10, threshold 0.1, 3,500-token clusters clustered
again) of the corpus's first ``--leaves`` 100-token leaves embedded with all-MiniLM-L6-v2 (the
offline default embedder; ``--vectors`` keeps them, as embedding 1,000 leaves takes over a minute
on two shared cores) or with the stub's hashed bag-of-words vectors (``--hashed``), official once
(unless ``--no-official``) and scalable with each ``cluster_sample``, each BIC ``patience`` and each
``recluster``: seconds, clusters, and the adjusted Rand index with the official partition and, for
``recluster="reuse"``, with the same run re-clustering ``"fresh"`` (each leaf labelled by its first
cluster). One BLAS thread, as ``bench_index_build``. Nothing is asserted."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import adjusted_rand_score
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

from benchmarks.index_sweeps import first_labels
from benchmarks.stub_content import hashed_vector
from longctx.experiments.synth import load_samples
from longctx.graphs.raptor.clustering import cluster_nodes
from longctx.graphs.raptor.split import split_text
from longctx.retrieval.tokens import count_tokens_batch


def leaves_of(corpus_dir: str, n: int) -> list[str]:
    """The corpus's first ``n`` leaves, in document order."""
    leaves: list[str] = []
    for doc in load_samples(Path(corpus_dir))[0].corpus.documents:
        leaves += split_text(doc.text, 100)
        if len(leaves) >= n:
            break
    return leaves[:n]


def main() -> None:
    """Embed (or load), cluster official and scalable, print the figures."""
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--corpus", default="runs/index_build/corpus-1M")
    p.add_argument("--leaves", type=int, default=1000)
    p.add_argument("--samples", default="250,2000", help="cluster_sample values to compare")
    p.add_argument("--patience", default="0", help="cluster_bic_patience values to compare")
    p.add_argument("--recluster", default="fresh,reuse", help="cluster_recluster values to compare")
    p.add_argument(
        "--no-official",
        action="store_true",
        help="skip the official run (too slow past ~2,000 leaves)",
    )
    p.add_argument(
        "--hashed",
        action="store_true",
        help="the stub's hashed bag-of-words vectors instead of MiniLM",
    )
    p.add_argument("--vectors", help="a .npy of the leaves' MiniLM vectors (written when absent)")
    args = p.parse_args()
    leaves = leaves_of(args.corpus, args.leaves)
    with threadpool_limits(1):
        if args.hashed:
            vectors = np.array([hashed_vector(t) for t in leaves])
        elif args.vectors and os.path.exists(args.vectors):
            vectors = np.load(args.vectors)
        else:
            from longctx.retrieval.embedders import SentenceTransformerEmbedder

            vectors = np.asarray(SentenceTransformerEmbedder().embed_documents(leaves))
            if args.vectors:
                np.save(args.vectors, vectors)
        tokens = count_tokens_batch(leaves)
        runs = [("official", 2000, 0, "fresh")] if not args.no_official else []
        runs += [
            ("scalable", int(s), int(k), r)
            for s in args.samples.split(",")
            for k in args.patience.split(",")
            for r in args.recluster.split(",")
        ]
        found: dict[tuple[str, int, int, str], list[int]] = {}
        for run in runs:
            method, sample, patience, recluster = run
            started, load = time.perf_counter(), os.getloadavg()
            clusters = cluster_nodes(
                vectors,
                tokens,
                dim=10,
                threshold=0.1,
                max_cluster_tokens=3500,
                method=method,
                sample=sample,
                patience=patience,
                recluster=recluster,
            )  # type: ignore[arg-type]
            seconds = time.perf_counter() - started
            found[run] = first_labels(clusters, len(leaves))
            name = (
                "official"
                if method == "official"
                else (
                    f"scalable, cluster_sample {sample}, patience {patience}, recluster {recluster}"
                )
            )
            against = [
                ("official", ("official", 2000, 0, "fresh")),
                ("the same with fresh", (method, sample, patience, "fresh")),
            ]
            aris = "; ".join(
                f"ARI with {what} {adjusted_rand_score(found[ref], found[run]):.3f}"
                for what, ref in against
                if ref in found and ref != run
            )
            over = sum(sum(tokens[i] for i in c) > 3500 for c in clusters)
            print(
                f"{name}: {seconds:.1f} s, {len(clusters)} clusters ({over} over 3,500 tokens); "
                f"{aris or '-'}; load before {' / '.join(f'{x:.2f}' for x in load)}",
                flush=True,
            )


if __name__ == "__main__":
    main()
