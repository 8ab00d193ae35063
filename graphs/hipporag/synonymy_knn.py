"""HippoRAG's synonymy neighbours: the dense search and, for graphs of hundreds of thousands of
phrases and more, FAISS.

The official code (``embed_utils.retrieve_knn``, @ c617143) multiplies every phrase's vector with
every other's, a block of queries at a time, and keeps each one's ``top_k`` (2,047) most similar
(``synonymy_knn="dense"``, in numpy here). Through FAISS the neighbours above the threshold are
found by a range search instead, so no row of similarities to every phrase is ever held or sorted:

* ``"faiss"``: an exact inner-product index (``IndexFlatIP``): the same neighbours, ordered the same
  way, as the dense search (``tests/test_synonymy_knn.py``);
* ``"faiss-ivf"``: an inverted-file index (``IndexIVFFlat``, ``4 sqrt(n)`` lists, trained on a
  seeded sample, ``IVF_PROBES`` lists searched): approximate, what keeps millions of phrases within
  reach of a small machine; docs/scale.md measures its recall against the exact search.

A search only proposes candidates (similar to within its rounding error, ``_margin``); each
candidate's similarity is then computed again, the same way wherever the pair sits
(:func:`pair_similarities`), and the neighbours are ordered by it, then by phrase order. A matrix
product rounds a row's similarities differently by the column's position (OpenBLAS's kernel for
the last columns of a single-query product; another CPU's FAISS or BLAS elsewhere), so exactly
tied phrases (identical vectors) came in an order that varied with the search, the batch size and
the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from longctx.graphs.plugin.api import require

#: How the synonymy neighbours are found (``HippoRAGConfig.synonymy_knn``).
Knn = Literal["dense", "faiss", "faiss-ivf"]
#: Lists an IVF search visits (of ``4 sqrt(n)``): about 5% of them at a million phrases.
IVF_PROBES = 200
#: Below this many phrases ``faiss-ivf`` searches exactly (an IVF index would not pay for its
#: training).
IVF_MIN_PHRASES = 20_000
#: Vectors per list that train the IVF quantizer (FAISS warns below 39).
IVF_TRAIN_PER_LIST = 64


def _index(unit: np.ndarray, knn: Knn, seed: int, ivf_min: int) -> Any:
    """The FAISS index over ``unit`` (rows of unit length): exact, or IVF from ``ivf_min`` rows
    on."""
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


def _margin(dim: int) -> float:
    """How far a search's float32 similarity of two unit vectors may fall below their exact one: the
    rounding bound of a ``dim``-term inner product (``dim`` units of 2**-24), doubled."""
    return (dim + 2) * 2.0**-23


def pair_similarities(unit: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The similarities of the pairs ``(unit[rows[k]], unit[cols[k]])`` as float32, each rounded
    once from a sum whose value does not depend on the order of its terms (so not on where a pair
    sits, the library or the CPU): a product of two float32 components is exact in float64, and is
    added as an integer count of ``2**-bits``, truncated (at most ``dim`` terms of magnitude 1 fit
    an int64)."""
    dim = max(unit.shape[1], 1)
    bits = 62 - dim.bit_length()
    out = np.empty(len(rows), dtype=np.float32)
    step = max(1, (1 << 22) // dim)  # 32 MB of products at a time
    for at in range(0, len(rows), step):
        products = unit[rows[at : at + step]].astype(np.float64) * unit[cols[at : at + step]]
        units = (products * 2.0**bits).astype(np.int64).sum(axis=1)
        out[at : at + step] = np.ldexp(units.astype(np.float64), -bits)
    return out


def _candidates(
    unit: np.ndarray, knn: Knn, lower: float, seed: int, ivf_min: int
) -> Callable[[int, int], tuple[np.ndarray, np.ndarray]]:
    """A function of rows ``start:end`` giving the pairs ``(row, column)`` a search finds at least
    ``lower`` similar, grouped by row: the dense product of those rows with every row, or FAISS."""
    if knn == "dense":

        def dense(start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
            rows, cols = np.nonzero(unit[start:end] @ unit.T >= lower)
            return rows + start, cols

        return dense
    index = _index(unit, knn, seed, ivf_min)
    radius = float(np.nextafter(np.float32(lower), np.float32(-np.inf)))  # FAISS keeps > radius

    def ranged(start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        lims, _, ids = index.range_search(unit[start:end], radius)
        return np.repeat(np.arange(start, end), np.diff(lims.astype(np.int64))), ids.astype(
            np.int64
        )

    return ranged


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
    """A function of a row ``i`` giving its neighbours of similarity at least ``threshold``, most
    similar first, ties in row order, at most ``top_k``, and their similarities
    (:func:`pair_similarities`); rows are asked in order and searched ``batch`` at a time
    (``faiss-ivf``: exact below ``ivf_min`` rows). The search finds the candidates from ``_margin``
    below the threshold; the exact similarities decide which are kept and their order."""
    unit = np.ascontiguousarray(unit, dtype=np.float32)
    search = _candidates(unit, knn, threshold - _margin(unit.shape[1]), seed, ivf_min)
    held: dict[str, Any] = {"start": -1}

    def row(i: int) -> tuple[np.ndarray, np.ndarray]:
        start = i - i % batch
        if held["start"] != start:
            end = min(start + batch, len(unit))
            rows, cols = search(start, end)
            sims = pair_similarities(unit, rows, cols)
            keep = sims >= np.float32(threshold)
            rows, cols, sims = rows[keep], cols[keep], sims[keep]
            order = np.lexsort((cols, -sims, rows))
            lims = np.searchsorted(rows[order], np.arange(start, end + 1))
            held.update(start=start, lims=lims, cols=cols[order], sims=sims[order])
        lo, hi = held["lims"][i - start], held["lims"][i - start + 1]
        hi = min(hi, lo + top_k)
        return held["cols"][lo:hi], held["sims"][lo:hi]

    return row


def pairs_of(
    phrases: Sequence[str],
    neighbours: Callable[[int], tuple[np.ndarray, np.ndarray]],
    eligible: Callable[[str], bool],
    max_synonyms: int,
) -> list[tuple[int, int, float]]:
    """``(phrase, synonym, similarity)`` from each eligible phrase's neighbours (itself and empty
    phrases skipped), at most ``max_synonyms + 1`` each, as ``HippoRAG.add_synonymy_edges`` keeps
    them."""
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
