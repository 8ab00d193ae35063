"""Where RAPTOR's clustering and HippoRAG's synonymy search stop scaling, for
``bench_index_build --sweep``.

* ``raptor``: one layer's clustering (``cluster_nodes``) of the corpus's first ``n`` leaves
  (100-token ``split_text`` chunks, embedded with the stub's hashed vectors computed in-process),
  official and scalable side by side: seconds, the process's peak RSS after each, clusters, and
  the adjusted Rand index of the two (each leaf labelled by its first cluster; a leaf in none is
  its own label).
* ``hipporag``: the synonymy search over ``n`` phrases (one to three pseudo-words of the Zipf
  vocabulary of ``synthetic_text``, distinct, hashed vectors), dense (the official search)
  against FAISS exact and IVF: seconds, pairs, whether exact FAISS gave the dense pairs, and
  IVF's share of them.
"""

from __future__ import annotations

import os
import time
from typing import Any

import numpy as np

from benchmarks.stub_content import hashed_vector


def _hwm() -> float:
    for line in open("/proc/self/status").read().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def first_labels(clusters: list[list[int]], n: int) -> list[int]:
    """Each point's first cluster (a point in none gets a label of its own)."""
    out = [-1 - i for i in range(n)]
    for c, members in enumerate(clusters):
        for i in members:
            if out[i] < 0:
                out[i] = c
    return out


def raptor_sweep(
    corpus: Any, sizes: list[int], official_max: int, sample: int
) -> list[dict[str, Any]]:
    """One layer's clustering of the first ``n`` leaves, for each ``n``, official (up to
    ``official_max``) and scalable."""
    from sklearn.metrics import adjusted_rand_score

    from longctx.graphs.raptor.clustering import cluster_nodes
    from longctx.graphs.raptor.split import split_text
    from longctx.retrieval.tokens import count_tokens_batch

    leaves: list[str] = []
    for doc in corpus.documents:
        leaves += split_text(doc.text, 100)
        if len(leaves) >= max(sizes):
            break
    rows = []
    for n in sizes:
        texts = leaves[:n]
        vectors = np.array([hashed_vector(t) for t in texts])
        tokens = count_tokens_batch(texts)
        row: dict[str, Any] = {"leaves": len(texts), "load": os.getloadavg()[0]}
        found = {}
        for method in ("official", "scalable"):
            if method == "official" and n > official_max:
                continue
            t0 = time.perf_counter()
            found[method] = cluster_nodes(
                vectors,
                tokens,
                dim=10,
                threshold=0.1,
                max_cluster_tokens=3500,
                method=method,
                sample=sample,
            )  # type: ignore[arg-type]
            row[f"{method}_s"] = round(time.perf_counter() - t0, 1)
            row[f"{method}_clusters"] = len(found[method])
            row[f"{method}_peak_rss_mib"] = round(_hwm(), 0)
        if len(found) == 2:
            row["ari"] = round(
                adjusted_rand_score(
                    first_labels(found["official"], n), first_labels(found["scalable"], n)
                ),
                3,
            )
        print(row, flush=True)
        rows.append(row)
    return rows


def phrases(n: int, seed: int = 0) -> list[str]:
    """``n`` distinct phrases of one to three Zipf-drawn pseudo-words."""
    from benchmarks.synthetic_text import vocabulary

    vocab = vocabulary(50_000, 0)
    probs = 1.0 / np.arange(1, 50_001) ** 1.07
    probs /= probs.sum()
    rng = np.random.default_rng(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        words = rng.choice(50_000, (n, 3), p=probs)
        lengths = rng.integers(1, 4, n)
        for w, k in zip(words, lengths):
            out[" ".join(vocab[int(i)] for i in w[:k])] = None
    return list(out)[:n]


def hipporag_sweep(sizes: list[int], dense_max: int) -> list[dict[str, Any]]:
    """The synonymy search over ``n`` phrases, for each ``n``: dense (up to ``dense_max``), FAISS
    exact and IVF."""
    from longctx.graphs.hipporag.kg import synonym_pairs

    rows = []
    for n in sizes:
        texts = phrases(n)
        vectors = np.array([hashed_vector(t) for t in texts])
        row: dict[str, Any] = {"phrases": n, "load": os.getloadavg()[0]}
        found = {}
        for knn in ("dense", "faiss", "faiss-ivf"):
            if knn == "dense" and n > dense_max:
                continue
            t0 = time.perf_counter()
            found[knn] = synonym_pairs(
                texts,
                vectors,
                threshold=0.8,
                top_k=2047,
                knn=knn,  # type: ignore[arg-type]
            )
            row[f"{knn}_s"] = round(time.perf_counter() - t0, 1)
            row[f"{knn}_pairs"] = len(found[knn])
            row[f"{knn}_peak_rss_mib"] = round(_hwm(), 0)
        if "dense" in found:
            row["faiss_pairs_equal_dense"] = [p[:2] for p in found["faiss"]] == [
                p[:2] for p in found["dense"]
            ]
        exact = {p[:2] for p in found["faiss"]}
        row["ivf_recall"] = round(
            len(exact & {p[:2] for p in found["faiss-ivf"]}) / max(len(exact), 1), 4
        )
        print(row, flush=True)
        rows.append(row)
    return rows
