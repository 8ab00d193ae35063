"""HippoRAG's synonymy neighbours through FAISS (``synonymy_knn``) against the dense search the
official code does (``embed_utils.retrieve_knn``; ``kg.synonym_pairs`` with ``knn="dense"``)."""

from __future__ import annotations

import numpy as np
import pytest

from longctx.graphs.hipporag.config import HippoRAGConfig
from longctx.graphs.hipporag.kg import build_graph, synonym_pairs, unit_rows
from longctx.graphs.hipporag.openie import Extraction
from longctx.graphs.hipporag.synonymy_knn import neighbours_above
from longctx.graphs.plugin.config import ConfigError

pytest.importorskip("faiss")


def tied_vectors() -> tuple[list[str], np.ndarray]:
    """Phrases whose vectors repeat (exact ties) and nearly repeat, with short and empty phrases
    among them."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 16))
    vectors = np.concatenate(
        [base, base[:15], base[:15], base[:6] + 0.02 * rng.normal(size=(6, 16))]
    )
    phrases = [f"phrase {i}" for i in range(len(vectors))]
    phrases[3], phrases[9], phrases[44] = (
        "ab",
        "",
        "a1",
    )  # too short to get synonyms; empty: never one
    return phrases, vectors


@pytest.mark.parametrize(
    ("threshold", "top_k", "batch"),
    [(0.8, 2047, 1000), (0.8, 2, 7), (0.0, 5, 7), (-1.0, 3, 13), (0.999, 1, 1)],
)
def test_exact_faiss_gives_the_dense_searchs_pairs_in_its_order(threshold, top_k, batch):
    phrases, vectors = tied_vectors()
    dense = synonym_pairs(phrases, vectors, threshold=threshold, top_k=top_k, batch=batch)
    faiss = synonym_pairs(
        phrases, vectors, threshold=threshold, top_k=top_k, batch=batch, knn="faiss"
    )
    assert dense, "the case has synonyms"
    assert [p[:2] for p in faiss] == [p[:2] for p in dense]
    assert np.allclose([p[2] for p in faiss], [p[2] for p in dense], atol=1e-6)


def twins_at_the_ends() -> tuple[list[str], np.ndarray, list[int]]:
    """63 phrases, five of them one vector (exact ties), two at the start and three in the last
    columns (63 = 4 x 15 + 3: OpenBLAS's single-query product rounds those in another kernel), and
    thirty near them."""
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(63, 16))
    twins = [1, 2, 60, 61, 62]
    vectors[twins] = rng.normal(size=16)
    vectors[10:40] = vectors[1] + 0.3 * rng.normal(size=(30, 16))
    return [f"phrase {i}" for i in range(63)], vectors, twins


@pytest.mark.parametrize("knn", ["dense", "faiss"])
@pytest.mark.parametrize("batch", [1, 7, 1000])
def test_exactly_tied_synonyms_come_in_phrase_order_whatever_the_search_and_batch(knn, batch):
    phrases, vectors, twins = twins_at_the_ends()
    assert all(np.array_equal(unit_rows(vectors)[t], unit_rows(vectors)[1]) for t in twins)
    pairs = synonym_pairs(phrases, vectors, threshold=-1.0, top_k=4, batch=batch, knn=knn)
    for a in range(len(phrases)):
        listed = [b for x, b, _ in pairs if x == a and b in twins]
        assert listed == [t for t in twins if t != a][: len(listed)], (a, listed)
    assert pairs == synonym_pairs(phrases, vectors, threshold=-1.0, top_k=4, batch=1000)


def test_ties_are_kept_in_phrase_order_and_cut_by_top_k_as_the_dense_search():
    vectors = np.array([[1.0, 0.0]] * 6 + [[0.0, 1.0]])
    phrases = [f"phrase {i}" for i in range(7)]
    for knn in ("dense", "faiss"):
        pairs = synonym_pairs(phrases, vectors, threshold=0.5, top_k=3, knn=knn)  # type: ignore[arg-type]
        # each of the six equal phrases: the first three of the tie (itself among them,
        # then dropped)
        assert [(a, b) for a, b, _ in pairs if a == 4] == [(4, 0), (4, 1), (4, 2)]
        assert [(a, b) for a, b, _ in pairs if a == 1] == [(1, 0), (1, 2)]
        assert not [p for p in pairs if 6 in p[:2]]


def test_at_most_one_hundred_and_one_synonyms_each_as_the_official_code():
    vectors = np.ones((150, 4))
    pairs = synonym_pairs(
        [f"phrase {i}" for i in range(150)], vectors, threshold=0.8, top_k=2047, knn="faiss"
    )
    assert {a: sum(1 for p in pairs if p[0] == a) for a in range(150)} == {
        a: 101 for a in range(150)
    }


def test_ivf_searches_exactly_below_its_size_and_finds_most_neighbours_above_it():
    phrases, vectors = tied_vectors()
    assert synonym_pairs(
        phrases, vectors, threshold=0.8, top_k=50, knn="faiss-ivf"
    ) == synonym_pairs(phrases, vectors, threshold=0.8, top_k=50, knn="faiss")
    rng = np.random.default_rng(1)
    n = 4000
    points = rng.normal(size=(400, 16))[rng.integers(0, 400, n)] + 0.1 * rng.normal(size=(n, 16))
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    exact = neighbours_above(points, threshold=0.9, top_k=50, knn="faiss")
    ivf = neighbours_above(points, threshold=0.9, top_k=50, knn="faiss-ivf", ivf_min=n)
    rows = range(0, 1000, 7)  # one search batch
    found = sum(len(set(exact(i)[0]) & set(ivf(i)[0])) for i in rows)
    assert found / sum(len(exact(i)[0]) for i in rows) > 0.95  # approximate (IVF), and close


def test_a_graph_built_with_faiss_has_the_dense_graphs_edges():
    texts = ["Alpha Beta met Gamma", "Alpha Beta and Gamma Delta", "Gamma Delta saw Alpha"]
    ex = [
        Extraction([], [["Alpha Beta", "met", "Gamma"]]),
        Extraction([], [["Alpha Beta", "and", "Gamma Delta"]]),
        Extraction([], [["Gamma Delta", "saw", "Alpha"]]),
    ]

    def embed(items):
        return np.array([[len(t) % 3 + 1.0, t.count("a") + 0.5, 1.0] for t in items])

    dense = build_graph(texts, ex, embed, threshold=0.8, top_k=2047)
    faiss = build_graph(texts, ex, embed, threshold=0.8, top_k=2047, knn="faiss")
    assert dense.facts_of_build["synonym_edges"] > 0
    assert faiss.edges == dense.edges and np.allclose(faiss.weights, dense.weights, atol=1e-6)


def test_the_option_is_checked_and_dense_is_the_default():
    assert HippoRAGConfig().synonymy_knn == "dense"
    assert HippoRAGConfig(synonymy_knn="faiss").synonymy_knn == "faiss"
    with pytest.raises(ConfigError):
        HippoRAGConfig(synonymy_knn="annoy")  # type: ignore[arg-type]
