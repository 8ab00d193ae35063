"""``clustering="scalable"`` places the nodes its UMAP was not fitted on by their nearest
sample nodes."""

from __future__ import annotations

import numpy as np

import longctx.graphs.raptor.placement as placement
from longctx.graphs.raptor.placement import nearest_mask, neighbour_weights, place_by_neighbours

#: Three sample nodes in the original space (rows 1, 2, 3 of POINTS) and where UMAP put them.
SAMPLE = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
FITTED = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
ROWS = np.array([1, 2, 3])


def placed(node: list[float], k: int) -> np.ndarray:
    """Where ``node`` (row 0, out of the sample) is placed."""
    points = np.vstack([node, SAMPLE])
    out = place_by_neighbours(points, ROWS, FITTED, k)
    assert np.array_equal(out[ROWS], FITTED)  # the sample stays where UMAP put it
    return out[0]


def test_a_node_is_placed_at_the_similarity_weighted_mean_of_its_nearest_sample_nodes():
    # cosines 0.6, 0.8, -0.6 (the node is not of unit length: the search is by cosine)
    node = [3.0, 4.0]
    assert np.allclose(placed(node, 2), [0.8 * 10 / (0.8 + 0.6), 0.0])  # (40/7, 0)
    assert np.allclose(placed(node, 3), [40 / 7, 0.0])  # a negative cosine weighs nothing
    assert np.allclose(placed(node, 1), [10.0, 0.0])
    # no positive cosine among its nearest: their plain mean (cosines 0, -1, 0; nearest: 1st
    # and 3rd)
    assert np.allclose(placed([0.0, -1.0], 2), [0.0, 5.0])


def test_ties_at_the_kth_place_go_to_the_first_sample_node():
    assert nearest_mask(np.array([[0.5, 0.9, 0.5, 0.5]]), 2).tolist() == [
        [True, True, False, False]
    ]
    assert nearest_mask(np.array([[0.5, 0.5, 0.5]]), 3).all()
    # equally near the 1st and 2nd sample nodes: the 1st with k=1, both equally with k=2
    assert np.allclose(placed([1.0, 1.0], 1), FITTED[0])
    assert np.allclose(placed([1.0, 1.0], 2), [5.0, 0.0])


def test_a_node_in_the_same_direction_as_a_sample_node_lands_on_it():
    # a sample of four: its two other nearest have positive cosines (0.6 and 0.8)
    sample = np.vstack([SAMPLE, [0.6, 0.8]])
    fitted = np.vstack([FITTED, [7.0, 7.0]])
    points = np.vstack([[1.2, 1.6], sample])  # twice the 4th sample node
    out = place_by_neighbours(points, np.arange(1, 5), fitted, 3)
    assert out[0].tolist() == [7.0, 7.0]
    weights = neighbour_weights(np.array([[0.9, 1.0, 0.95]]), 3)
    assert weights.tolist() == [[0.0, 1.0, 0.0]]


def test_blocks_do_not_change_the_placement(monkeypatch):
    rng = np.random.default_rng(0)
    points, rows = rng.normal(size=(50, 8)), np.arange(0, 50, 5)
    fitted = rng.normal(size=(10, 3))
    whole = place_by_neighbours(points, rows, fitted, 4)
    monkeypatch.setattr(placement, "BLOCK", 3)
    assert np.allclose(place_by_neighbours(points, rows, fitted, 4), whole, rtol=0, atol=1e-12)
