"""RAPTOR's clustering against the official functions (``raptor/cluster_utils.py`` @ 2e3e83e, run
unchanged by ``tests/raptor_official.py`` with UMAP seeded as ours: the fixture holds what it returned)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphs.raptor.clustering import (
    RANDOM_SEED,
    best_component_count,
    cluster_nodes,
    cluster_points,
)
from retrieval.tokens import count_tokens_batch
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
