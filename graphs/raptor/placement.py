"""Where ``clustering="scalable"`` puts the nodes its UMAP was not fitted on (ours, docs/scale.md).

UMAP's own ``transform`` starts each new point at the strength-weighted mean position of its
``n_neighbors`` nearest fitted points (``init_graph_transform``) and then runs optimisation epochs
over all of them, single-threaded when seeded: at 10M tokens (106,669 leaves) that took most of
19 minutes. Here a node is placed at the start point only, without the epochs: the mean reduced
position of its ``k`` nearest sample nodes, found by an exact cosine (inner-product of unit rows)
search in the original embedding space, each weighted by its similarity (negative ones count 0; a
node with no positive similarity among its ``k`` takes their plain mean). A node whose nearest
sample node points the same way (cosine 1: UMAP's distance 0) is placed on it, as UMAP places a
point equal to a fitted one. Ties at the ``k``-th place go to the sample node that comes first.
"""

from __future__ import annotations

import numpy as np

#: Out-of-sample rows searched at once: a block of BLOCK x sample similarities (16 MB at 2,000).
BLOCK = 1024
#: Cosine at or above 1 - SAME: the same direction (UMAP's cosine distance 0).
SAME = 1e-9


def unit_rows(points: np.ndarray) -> np.ndarray:
    """``points`` as float64 rows of length 1 (a zero row stays zero)."""
    x = np.asarray(points, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def nearest_mask(sims: np.ndarray, k: int) -> np.ndarray:
    """Per row, True at its ``k`` largest similarities; among equal ones at the ``k``-th place the
    first columns are taken, so every row has exactly ``min(k, columns)`` True."""
    if k >= sims.shape[1]:
        return np.ones(sims.shape, dtype=bool)
    kth = -np.partition(-sims, k - 1, axis=1)[:, k - 1 : k]
    above = sims > kth
    equal = sims == kth
    room = k - above.sum(axis=1, keepdims=True)
    mask: np.ndarray = above | (equal & (np.cumsum(equal, axis=1) <= room))
    return mask


def neighbour_weights(sims: np.ndarray, k: int) -> np.ndarray:
    """Per row, the weight of each sample node in its placement: the similarity of its ``k``
    nearest (at least 0; all equal when none is positive), or 1 on the first same-direction one."""
    mask = nearest_mask(sims, k)
    weights = np.where(mask, np.clip(sims, 0.0, None), 0.0)
    none = weights.sum(axis=1) == 0
    weights[none] = mask[none]
    best = sims.argmax(axis=1)
    same = sims[np.arange(len(sims)), best] >= 1 - SAME
    weights[same] = 0.0
    weights[same, best[same]] = 1.0
    return weights


def place_by_neighbours(
    points: np.ndarray, rows: np.ndarray, fitted: np.ndarray, k: int
) -> np.ndarray:
    """Reduced positions of every row of ``points``: the sample ``rows`` at ``fitted`` (their UMAP
    embedding, in the same order), every other row at the similarity-weighted mean of the fitted
    positions of its ``k`` nearest sample rows by cosine (see the module's docstring)."""
    out = np.empty((len(points), fitted.shape[1]), dtype=np.float64)
    out[rows] = fitted
    anchors = unit_rows(points[rows])
    others = np.setdiff1d(np.arange(len(points)), rows)
    for start in range(0, len(others), BLOCK):
        block = others[start : start + BLOCK]
        weights = neighbour_weights(unit_rows(points[block]) @ anchors.T, k)
        out[block] = (weights @ fitted) / weights.sum(axis=1, keepdims=True)
    return out
