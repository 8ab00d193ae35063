"""HippoRAG's synonymy neighbours through FAISS, for graphs of hundreds of thousands of phrases and more.

The official code (``embed_utils.retrieve_knn``, @ c617143) multiplies every phrase's vector with
every other's, a block of queries at a time, and keeps each one's ``top_k`` (2,047) most similar;
``kg.synonym_pairs`` does the same in numpy (``synonymy_knn="dense"``). Here the neighbours above
the threshold are found by a FAISS range search instead, so no row of similarities to every phrase
is ever held or sorted:

* ``"faiss"``: an exact inner-product index (``IndexFlatIP``): the same neighbours, ordered the same
  way (similarity, then phrase order), as the dense search (``tests/test_synonymy_knn.py``);
* ``"faiss-ivf"``: an inverted-file index (``IndexIVFFlat``, ``4 sqrt(n)`` lists, trained on a seeded
  sample, ``IVF_PROBES`` lists searched): approximate, what keeps millions of phrases within reach
  of a small machine; docs/scale.md measures its recall against the exact search.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from retrieval.extras import require

#: How the synonymy neighbours are found (``HippoRAGConfig.synonymy_knn``).
Knn = Literal["dense", "faiss", "faiss-ivf"]
#: Lists an IVF search visits (of ``4 sqrt(n)``): about 5% of them at a million phrases.
IVF_PROBES = 200
#: Below this many phrases ``faiss-ivf`` searches exactly (an IVF index would not pay for its training).
IVF_MIN_PHRASES = 20_000
#: Vectors per list that train the IVF quantizer (FAISS warns below 39).
IVF_TRAIN_PER_LIST = 64


def _index(unit: np.ndarray, knn: Knn, seed: int, ivf_min: int) -> Any:
    """The FAISS index over ``unit`` (rows of unit length): exact, or IVF from ``ivf_min`` rows on."""
    require("faiss", extra="dense", feature="HippoRAG's FAISS synonymy search")
    import faiss

    n, dim = unit.shape
    index: Any
    if knn == "faiss" or n < ivf_min:
        index = faiss.IndexFlatIP(dim)
    else:
        lists = int(4 * n**0.5)
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, lists, faiss.METRIC_INNER_PRODUCT)
        rows = np.random.default_rng(seed).choice(
            n, min(n, lists * IVF_TRAIN_PER_LIST), replace=False
        )
        index.train(unit[np.sort(rows)])
        index.nprobe = min(IVF_PROBES, lists)
    index.add(unit)
    return index


def neighbours_above(
    unit: np.ndarray,
    *,
    threshold: float,
    top_k: int,
    knn: Knn,
    batch: int = 1000,
    seed: int = 0,
    ivf_min: int = IVF_MIN_PHRASES,
) -> Callable[[int], tuple[np.ndarray, np.ndarray]]:
    """A function of a row ``i`` giving its neighbours of similarity at least ``threshold``, most similar
    first (ties in row order), at most ``top_k``, and their similarities; rows are asked in order and
    searched ``batch`` at a time (``faiss-ivf``: exact below ``ivf_min`` rows)."""
    unit = np.ascontiguousarray(unit, dtype=np.float32)
    index = _index(unit, knn, seed, ivf_min)
    radius = float(np.nextafter(np.float32(threshold), np.float32(-np.inf)))  # FAISS keeps > radius
    held: dict[str, Any] = {"start": -1}

    def row(i: int) -> tuple[np.ndarray, np.ndarray]:
        start = i - i % batch
        if held["start"] != start:
            lims, sims, ids = index.range_search(unit[start : start + batch], radius)
            held.update(start=start, lims=lims, sims=sims, ids=ids)
        lims, sims, ids = held["lims"], held["sims"], held["ids"]
        lo, hi = lims[i - start], lims[i - start + 1]
        s, j = sims[lo:hi], ids[lo:hi].astype(np.int64)
        keep = s >= threshold
        s, j = s[keep], j[keep]
        order = np.lexsort((j, -s))[:top_k]
        return j[order], s[order]

    return row


def pairs_of(
    phrases: Sequence[str],
    neighbours: Callable[[int], tuple[np.ndarray, np.ndarray]],
    eligible: Callable[[str], bool],
    max_synonyms: int,
) -> list[tuple[int, int, float]]:
    """``(phrase, synonym, similarity)`` from each eligible phrase's neighbours (itself and empty phrases
    skipped), at most ``max_synonyms + 1`` each, as ``HippoRAG.add_synonymy_edges`` keeps them."""
    out: list[tuple[int, int, float]] = []
    for i, phrase in enumerate(phrases):
        if not eligible(phrase):
            continue
        ids, sims = neighbours(i)
        kept = 0
        for j, s in zip(ids.tolist(), sims.tolist()):
            if kept > max_synonyms:
                break
            if j != i and phrases[j] != "":
                out.append((i, int(j), float(s)))
                kept += 1
    return out
