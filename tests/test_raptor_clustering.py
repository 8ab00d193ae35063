"""RAPTOR's clustering against the official functions (``raptor/cluster_utils.py`` @ 2e3e83e, run
unchanged by ``tests/raptor_official.py`` with UMAP seeded as ours: the fixture holds what
it returned)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import longctx.graphs.raptor.clustering as clustering
from longctx.graphs.raptor.clustering import (
    RANDOM_SEED,
    best_component_count,
    cluster_nodes,
    cluster_points,
    fit_mixture,
    soft_memberships,
)
from longctx.retrieval.tokens import count_tokens_batch
from tests.raptor_official import fixture_nodes

OFFICIAL = json.loads(
    (Path(__file__).parent / "fixtures" / "raptor" / "official_clusters.json").read_text()
)


@pytest.mark.slow  # ~60 s on 2 shared cores: UMAP seeded runs single-threaded, 30-odd reductions
def test_labels_and_reclustered_clusters_equal_the_official_functions():
    points, texts = fixture_nodes()
    assert OFFICIAL["seed"] == RANDOM_SEED
    assert cluster_points(points, dim=10, threshold=0.1, seed=RANDOM_SEED) == OFFICIAL["labels"]
    clusters = cluster_nodes(
        points,
        count_tokens_batch(texts),
        dim=10,
        threshold=0.1,
        max_cluster_tokens=3500,
        seed=RANDOM_SEED,
    )
    assert clusters == OFFICIAL["clusters"]
    assert (
        len(clusters) > max(max(ls) for ls in OFFICIAL["labels"]) + 1
    )  # over-long clusters were split again


def test_bic_search_range_of_one_and_two_points():
    import numpy as np

    assert (
        best_component_count(np.zeros((1, 2))) == 1
    )  # the official range 1..n-1 is empty: one cluster
    assert best_component_count(np.array([[0.0, 0.0], [1.0, 1.0]])) == 1


def collapsed(scale: float = 10.0) -> np.ndarray:
    """12 float32 points on 3 spots (duplicated nodes, as UMAP places them), where scikit-learn's
    2-component fit fails in float32."""
    return (scale * np.repeat(np.random.default_rng(0).normal(size=(3, 10)), 4, axis=0)).astype(
        np.float32
    )


def test_a_mixture_of_collapsed_points_is_fitted_in_float64_where_float32_fails():
    from sklearn.mixture import GaussianMixture

    x = collapsed()
    with pytest.raises(ValueError, match="ill-defined empirical covariance"):
        GaussianMixture(n_components=2, random_state=RANDOM_SEED).fit(
            x
        )  # what the official code does
    mixture = fit_mixture(x, 2, RANDOM_SEED)
    assert mixture is not None and mixture.means_.dtype == np.float64
    labels, n = soft_memberships(x, 0.1)
    assert len(labels) == 12 and all(len(ls) >= 1 for ls in labels) and n >= 1


def test_a_count_no_mixture_fits_is_skipped_and_the_fit_falls_back_to_fewer(monkeypatch):
    real = clustering.fit_mixture
    monkeypatch.setattr(
        clustering, "fit_mixture", lambda p, n, s: None if n >= 2 else real(p, n, s)
    )
    x = np.random.default_rng(2).normal(size=(40, 3))
    assert best_component_count(x) == 1
    labels, n = soft_memberships(x, 0.1)
    assert n == 1 and all(list(ls) == [0] for ls in labels)
    monkeypatch.setattr(clustering, "fit_mixture", lambda p, n, s: None)
    with pytest.raises(ValueError, match="no Gaussian mixture fits these 40 points"):
        soft_memberships(x, 0.1)


@pytest.mark.slow  # UMAP
@pytest.mark.parametrize("method", ["official", "scalable"])
def test_duplicated_and_long_nodes_are_clustered_without_failing(method):
    """Leaves repeated 4 times each (boilerplate pages) and nodes long enough that clusters of 4 are
    over the limit: the official code fails on both (a mixture of collapsed points, UMAP with 1
    neighbour); every node still lands in a cluster."""
    rng = np.random.default_rng(0)
    for points in (np.repeat(rng.normal(size=(3, 16)), 4, axis=0), rng.normal(size=(120, 16))):
        n = len(points)
        clusters = cluster_nodes(
            points,
            [2000] * n,
            dim=10,
            threshold=0.1,
            max_cluster_tokens=3500,
            method=method,
            sample=50,
            patience=5,
        )
        assert sorted({i for c in clusters for i in c}) == list(range(n))


@pytest.mark.slow  # UMAP
def test_a_seeded_layer_is_clustered_without_a_warning():
    """UMAP warned "n_jobs value -1 overridden to 1 by setting random_state" on every reduction of
    every RAPTOR build: the seed makes it run single-threaded, and we now ask for that."""
    import warnings

    points = np.random.default_rng(0).normal(size=(30, 16))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clusters = cluster_nodes(points, [10] * 30, dim=10, threshold=0.1, max_cluster_tokens=3500)
    assert sorted({i for c in clusters for i in c}) == list(range(30))
