"""RAPTOR's ``clustering="scalable"``: UMAP and mixtures fitted on seeded samples, every node placed
and scored."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture

import longctx.graphs.raptor.clustering as clustering
from longctx.graphs.index.embedding_store import EmbeddingStore
from longctx.graphs.plugin.config import ConfigError
from longctx.graphs.raptor.clustering import (
    FIT_SEED,
    Splitting,
    best_component_count,
    cluster_again,
    cluster_nodes,
    cluster_points,
    clustered_with_positions,
    reclustered,
    reduce,
    reduce_sampled,
    sample_rows,
    soft_memberships,
    split_over_long,
    supported_components,
    two_steps,
)
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.store import tree_key
from longctx.graphs.raptor.tree import SummaryLog, build_tree
from longctx.retrieval.contract import Corpus


def blobs(n: int, centres: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` unit vectors of 64 dimensions around ``centres`` well-apart centres, and each
    one's centre."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, centres, n)
    points = 4 * rng.normal(size=(centres, 64))[truth] + rng.normal(size=(n, 64))
    return points / np.linalg.norm(points, axis=1, keepdims=True), truth


def test_a_sample_is_seeded_sorted_and_everything_when_small():
    assert sample_rows(5, 10, 0).tolist() == [0, 1, 2, 3, 4]
    rows = sample_rows(1000, 100, 7)
    assert len(set(rows.tolist())) == 100 and rows.tolist() == sorted(rows.tolist())
    assert rows.tolist() == sample_rows(1000, 100, 7).tolist() != sample_rows(1000, 100, 8).tolist()


def test_the_mixture_is_fitted_on_the_sample_and_scores_every_point():
    points = blobs(300)[0][:, :3]
    labels, n = soft_memberships(points, 0.1, 224, sample=60)
    fit_on = points[sample_rows(300, 60, 224)]
    assert n == best_component_count(fit_on, supported_components(60, 3), seed=224)
    probs = GaussianMixture(n, random_state=FIT_SEED).fit(fit_on).predict_proba(points)
    assert len(labels) == 300
    assert [x.tolist() for x in labels] == [np.where(p > 0.1)[0].tolist() for p in probs]


def test_the_bic_search_is_bounded_by_the_points_each_component_needs():
    assert supported_components(40, 10) == 4  # tries 1..3 components: 11 points each
    assert supported_components(5, 10) == 3  # still tries a split in two
    assert supported_components(10_000, 10) == 50  # the official 1..49 where points suffice


@pytest.mark.slow  # ~15 s on 2 shared cores: UMAP (numba) fitted on samples, seeded single-threaded
def test_scalable_clusters_recover_well_apart_blobs_and_are_deterministic():
    points, truth = blobs(300)
    labels = cluster_points(points, 4, 0.1, 224, method="scalable", sample=100)
    first = [ls[0] if ls else -1 for ls in labels]
    assert all(labels)  # every node is in a cluster
    # local clusters split the blobs further: each cluster lies within one blob
    assert adjusted_rand_score(truth, first) > 0.3
    assert all(len({int(truth[i]) for i, f in enumerate(first) if f == c}) == 1 for c in set(first))
    assert labels == cluster_points(points, 4, 0.1, 224, method="scalable", sample=100)
    # up to the sample's size the reduction is the official one
    assert np.array_equal(
        reduce_sampled(points[:80], 4, 8, 100, 224), reduce(points[:80], 4, 8, 224)
    )


def nested_blobs(n: int, width: int, seed: int = 3) -> np.ndarray:
    """``n`` points of ``width`` dimensions with three levels of structure (2, 6, 18 blobs)."""
    rng = np.random.default_rng(seed)
    levels = [rng.normal(size=(k, width)) for k in (2, 6, 18)]
    blob = rng.integers(0, 18, n)
    return (
        9 * levels[0][blob // 9]
        + 3 * levels[1][blob // 3]
        + levels[2][blob]
        + 0.2 * rng.normal(size=(n, width))
    )


@pytest.mark.slow  # ~10 s on 2 shared cores: UMAP in every re-clustering
@pytest.mark.parametrize("recluster", ["fresh", "reuse"])
def test_long_clusters_are_clustered_again_and_the_recursion_ends(monkeypatch, recluster):
    points = nested_blobs(240, 32)
    fits = []
    real_reduce = clustering.reduce
    monkeypatch.setattr(clustering, "reduce", lambda *a: fits.append(len(a[0])) or real_reduce(*a))
    kwargs = {
        "dim": 4,
        "threshold": 0.1,
        "method": "scalable",
        "sample": 80,
        "recluster": recluster,
    }
    once = cluster_nodes(points, [2000] * 240, max_cluster_tokens=10**9, **kwargs)  # type: ignore[arg-type]
    layer_fits = len(fits)
    clusters = cluster_nodes(points, [2000] * 240, max_cluster_tokens=3500, **kwargs)  # type: ignore[arg-type]
    assert {i for c in clusters for i in c} == set(range(240))
    assert len(clusters) > len(once)  # over-long clusters were split again
    again = len(fits) - 2 * layer_fits  # the UMAP fits of the re-clustering alone
    assert again == 0 if recluster == "reuse" else again > 0
    # a cluster holding every node it was clustered from is kept, not clustered again forever
    whole = cluster_nodes(
        points[:20] * 0 + points[0],
        [1000] * 20,
        dim=4,
        threshold=0.1,
        max_cluster_tokens=3500,
        method="scalable",
        sample=60,
        recluster=recluster,
    )
    assert sorted(i for c in whole for i in c) == list(range(20))


def first_dims(points: np.ndarray, dim: int, neighbors: int, seed: int) -> np.ndarray:
    """A stand-in for UMAP in the tests of where positions go: a point's first
    ``dim`` coordinates."""
    return np.asarray(points)[:, :dim]


def test_each_cluster_carries_its_members_positions_in_the_reduction_it_was_found_in(monkeypatch):
    monkeypatch.setattr(
        clustering, "reduce", first_dims
    )  # every reduction: the first 4 coordinates
    points = nested_blobs(300, 12)
    labels, positions = clustered_with_positions(points, 4, 0.1, method="scalable", sample=2000)
    assert len(positions) > 6
    for label, at in enumerate(positions):
        members = [i for i, ls in enumerate(labels) if label in ls]
        assert np.array_equal(at, points[members, :4])


def test_reusing_the_positions_splits_an_over_long_cluster_with_no_new_reduction(monkeypatch):
    def no_umap(*args: object) -> None:
        raise AssertionError("a new reduction was fitted")

    monkeypatch.setattr(clustering, "reduce", no_umap)
    positions = nested_blobs(200, 6, seed=5)
    how = Splitting(
        dim=4,
        threshold=0.1,
        max_cluster_tokens=3500,
        method="scalable",
        sample=2000,
        patience=5,
        recluster="reuse",
    )
    clusters = cluster_again(np.zeros((200, 2)), positions, [1000] * 200, how)
    assert {i for c in clusters for i in c} == set(range(200))
    assert len(clusters) > 18  # split below the three levels of structure
    # every cluster over the limit (more than 3 nodes) is kept because it comes back whole
    for c in (c for c in clusters if len(c) > 3):
        assert cluster_again(np.zeros((len(c), 2)), positions[c], [1000] * len(c), how) == [
            list(range(len(c)))
        ]
    # the first split: the two mixture steps over the positions themselves, the global one from the
    # fewest components that could hold the tokens (200 x 50 / 3,500: 3)
    labels, at = two_steps(positions, lambda m: positions[m], 4, 0.1, 224, 2000, 5, least=3)
    assert len({ls[0] for ls in labels}) >= 3
    unsplit = cluster_again(np.zeros((200, 2)), positions, [50] * 200, how)
    grouped = [m for m in clustering.members_by_label(labels, len(at)) if m]
    assert unsplit == grouped
    # identical positions: two components of all of them, kept once, not split forever
    same = cluster_again(np.zeros((30, 2)), np.ones((30, 4)), [1000] * 30, how)
    assert sorted(i for c in same for i in c) == list(range(30))
    assert split_over_long([[0]] * 30, [np.ones((30, 4))], [1000] * 30, how, np.zeros((30, 2))) == [
        list(range(30))
    ]


def test_the_clustering_options_name_another_tree():
    corpus = Corpus.from_texts(["one leaf", "another leaf"])
    keys = {
        tree_key(corpus, cfg, None)
        for cfg in (
            RaptorConfig(),
            RaptorConfig(clustering="scalable"),
            RaptorConfig(clustering="scalable", cluster_sample=40),
            RaptorConfig(clustering="scalable", cluster_recluster="fresh"),
        )
    }
    assert len(keys) == 4
    # the official clustering never reads it: its trees keep their keys
    assert tree_key(corpus, RaptorConfig(cluster_recluster="fresh"), None) == tree_key(
        corpus, RaptorConfig(), None
    )


@pytest.mark.slow  # ~35 s in a fresh environment: UMAP's numba kernels compile on first use
def test_the_tree_is_built_with_the_scalable_clustering_and_keyed_by_it(monkeypatch):
    """120 leaves (two a text), a sample of 40: the global UMAP (sqrt(39) = 6 neighbours) is fitted
    on 40 of them and the other 80 placed by their 6 nearest sample leaves, never by
    UMAP's ``transform``."""
    umap = pytest.importorskip("umap")

    def no_transform(*args: object, **kwargs: object) -> None:
        raise AssertionError("UMAP.transform was called")

    monkeypatch.setattr(umap.UMAP, "transform", no_transform)
    placed: list[tuple[int, int, int]] = []
    real = clustering.place_by_neighbours

    def recorded(points: np.ndarray, rows: np.ndarray, fitted: np.ndarray, k: int) -> np.ndarray:
        placed.append((len(points), len(rows), k))
        return real(points, rows, fitted, k)

    monkeypatch.setattr(clustering, "place_by_neighbours", recorded)
    texts = [
        f"Company {i % 7} reported revenue of {i} million in year {2000 + i % 5}." * 8
        for i in range(60)
    ]
    corpus = Corpus.from_texts(texts)
    cfg = RaptorConfig(clustering="scalable", cluster_sample=40, num_layers=1)

    def embed(items):
        rng = np.random.default_rng(len(items))
        return np.array(
            [[len(t) % 5, t.count("1"), t.count("Company 3")] for t in items]
        ) + 0.01 * rng.normal(size=(len(items), 3))

    tree = build_tree(
        corpus, cfg, lambda context: context[:50], EmbeddingStore(None, embed), SummaryLog(None)
    )
    leaves = np.asarray(embed([n.text for n in tree.layer(0)]))
    expected = cluster_nodes(
        leaves,
        [len(n.text) // 4 for n in tree.layer(0)],
        dim=10,
        threshold=0.1,
        max_cluster_tokens=3500,
        method="scalable",
        sample=40,
        recluster="reuse",
    )
    assert tree.num_layers == 1
    assert placed[0] == (len(leaves), 40, 6) and len(leaves) == 120
    assert len(tree.layer(1)) == len(expected)
    assert tree_key(corpus, cfg, None) != tree_key(corpus, RaptorConfig(num_layers=1), None)


def test_the_options_are_checked_and_official_is_the_default():
    assert RaptorConfig().clustering == "official"
    with pytest.raises(ConfigError):
        RaptorConfig(clustering="kmeans")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        RaptorConfig(cluster_sample=1)


def test_a_patient_bic_search_stops_after_counts_that_do_not_lower_the_bic(monkeypatch):
    rng = np.random.default_rng(1)
    points = np.vstack([c + 0.3 * rng.normal(size=(30, 2)) for c in ([0, 0], [6, 0], [0, 6])])
    fits: list[int] = []
    real = GaussianMixture.fit

    def counted(self: GaussianMixture, x: np.ndarray, y: object = None) -> GaussianMixture:
        fits.append(self.n_components)
        return real(self, x)

    monkeypatch.setattr(GaussianMixture, "fit", counted)
    assert best_component_count(points, 7, seed=224) == 3  # the whole range: 1 .. 6
    assert fits == list(range(1, 7))
    fits.clear()
    assert best_component_count(points, 7, seed=224, patience=2) == 3
    assert fits == [1, 2, 3, 4, 5]  # 4 and 5 did not lower the BIC of 3


def test_scalable_trees_are_keyed_by_the_scalable_method_and_official_keys_stay(monkeypatch):
    import longctx.graphs.raptor.store as store

    corpus = Corpus.from_texts(["one text", "another text"])
    official, scalable = RaptorConfig(), RaptorConfig(clustering="scalable")
    keys = (tree_key(corpus, official, None), tree_key(corpus, scalable, None))
    patient = tree_key(corpus, RaptorConfig(clustering="scalable", cluster_bic_patience=5), None)
    monkeypatch.setattr(store, "SCALABLE_VERSION", store.SCALABLE_VERSION + 1)
    assert tree_key(corpus, official, None) == keys[0]  # official trees are found where they were
    assert tree_key(corpus, scalable, None) != keys[1]  # a changed scalable method builds anew
    assert patient != keys[1]


def test_over_long_clusters_clustered_again_in_worker_processes_give_the_same_clusters():
    how = Splitting(
        dim=4,
        threshold=0.1,
        max_cluster_tokens=3500,
        method="scalable",
        sample=2000,
        patience=5,
        recluster="reuse",
    )
    jobs = []
    for seed in range(5):
        positions = nested_blobs(80 + 20 * seed, 6, seed=seed)
        jobs.append((np.zeros((len(positions), 2)), positions, [300] * len(positions)))
    here = reclustered(jobs, how, workers=1)
    assert reclustered(jobs, how, workers=2) == here
    assert all(len(sub) > 1 for sub in here)  # every one was split


def test_a_worker_process_keeps_its_pools_at_one_thread():
    """The worker initializer's limit outlives the call (a dropped limit would restore the pools as
    it is collected). Run here, from pools of two threads, and undone after."""
    import gc

    from threadpoolctl import threadpool_info, threadpool_limits  # type: ignore[import-untyped]

    with threadpool_limits(limits=2):
        clustering._one_thread()
        gc.collect()
        try:
            assert {i["num_threads"] for i in threadpool_info()} == {1}
        finally:
            clustering._WORKER_LIMIT.__exit__(None, None, None)
