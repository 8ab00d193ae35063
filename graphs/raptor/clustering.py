"""RAPTOR's clustering (Sarthi et al., ICLR 2024, §3; official code ``raptor/cluster_utils.py`` @
2e3e83e): UMAP reduction, Gaussian mixtures with the number of components chosen by BIC, soft
membership above a probability threshold, global then local, and clusters whose text is over a token
limit clustered again.

Every random step is seeded here. The official code seeds its BIC search (``random_state=224``)
and its final mixture fit (``random_state=0``, ``GMM_cluster``'s default) but leaves both UMAP
reductions unseeded (``umap.UMAP(...)`` without ``random_state``: numba-parallel, different on
every run); we pass ``seed`` to UMAP, which also makes UMAP single-threaded. With UMAP seeded the
same way, the clusters equal the official functions' (``tests/test_raptor_clustering.py``).
umap-learn and scikit-learn are imported when a layer is clustered, never with the package.

``method="scalable"`` (not the official code's; docs/scale.md measures it): every step above the
same, but each UMAP and each mixture (its BIC search and its fit) is fitted on a seeded sample of at
most ``sample`` points, the others placed at the similarity-weighted mean position of their nearest
sample points (:mod:`longctx.graphs.raptor.placement`, no UMAP ``transform``) and scored by the
fitted mixture, and the BIC search tries only the component counts the sample supports (``dim + 1``
points per component), stopped after ``patience`` counts in a row without a lower BIC when one is
given. The global UMAP's neighbours are the official ``sqrt(m - 1)`` of the ``m`` points it is
fitted on. Up to ``sample`` points the reductions are the official ones; beyond, a reduction's and a
BIC search's cost stops growing with the points but for an exact similarity search against the
sample and the scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from longctx.graphs.plugin.api import apply_thread_policy, require
from longctx.graphs.raptor.placement import place_by_neighbours

#: cluster_utils.RANDOM_SEED: the BIC search's mixtures (and here UMAP's) are seeded with it.
RANDOM_SEED = 224
#: GMM_cluster(random_state=0): the mixture whose memberships are kept.
FIT_SEED = 0
#: get_optimal_clusters(max_clusters=50): components tried are 1 .. min(50, n) - 1.
MAX_CLUSTERS = 50
#: local_cluster_embeddings(num_neighbors=10).
LOCAL_NEIGHBORS = 10
#: Bumped when ``method="scalable"`` gives other clusters for the same input (in its trees' cache
#: key). 2: out-of-sample nodes placed by their nearest sample nodes, not UMAP's ``transform``.
SCALABLE_VERSION = 2
#: How a layer is clustered: as the official code (UMAP, BIC over every point) or fitted on samples.
Method = Literal["official", "scalable"]
#: How an over-long cluster is clustered again: new UMAPs (official) or on its nodes' positions.
Recluster = Literal["fresh", "reuse"]


def reduce(points: np.ndarray, dim: int, neighbors: int, seed: int) -> np.ndarray:
    """``points`` reduced by UMAP to ``dim`` dimensions (cosine metric, as the official code)."""
    require("umap", extra="raptor", feature="RAPTOR's clustering")
    import umap  # numba compiles on first import: paid only when a tree is built

    # n_jobs=1: what the seed makes UMAP use anyway; left at -1, it warns so on every reduction
    reduced: np.ndarray = umap.UMAP(
        n_neighbors=neighbors, n_components=dim, metric="cosine", random_state=seed, n_jobs=1
    ).fit_transform(points)
    return reduced


def sample_rows(n: int, size: int, seed: int) -> np.ndarray:
    """Positions of a seeded sample of at most ``size`` of ``n`` rows, in order (all rows when
    ``n <= size``)."""
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).choice(n, size, replace=False))


def reduce_sampled(
    points: np.ndarray, dim: int, neighbors: int, sample: int, seed: int
) -> np.ndarray:
    """``points`` reduced by a UMAP fitted on a seeded sample of at most ``sample`` of them, the
    others placed by :func:`~graphs.raptor.placement.place_by_neighbours` over as many nearest
    sample points as UMAP's neighbours (``method="scalable"``; at most the sample's size less one);
    all of them, as :func:`reduce`, when they fit in the sample."""
    rows = sample_rows(len(points), sample, seed)
    # UMAP's least: the official sqrt(n - 1) neighbours is 1 for 4 points, and UMAP then fails
    neighbors = max(2, neighbors)
    if len(rows) == len(points):
        return reduce(points, dim, neighbors, seed)
    k = min(neighbors, len(rows) - 1)
    return place_by_neighbours(points, rows, reduce(points[rows], dim, k, seed), k)


def fit_mixture(points: np.ndarray, n: int, seed: int) -> Any | None:
    """A full-covariance Gaussian mixture of ``n`` components fitted on ``points`` (scikit-learn's
    defaults, as the official code), or ``None`` where it cannot be fitted. Collapsed points
    (duplicated nodes: UMAP puts them on one spot) can leave a component's covariance not positive
    definite in float32, UMAP's output type; the official code then fails. Such a fit is tried
    again in float64 (what scikit-learn's message advises), and a count that fails both ways is
    skipped by the caller (docs/protocols.md)."""
    from sklearn.mixture import GaussianMixture

    try:
        return GaussianMixture(n_components=n, random_state=seed).fit(points)
    except ValueError:
        if points.dtype == np.float64:
            return None
    try:  # the float64 copy only for a fit that failed
        return GaussianMixture(n_components=n, random_state=seed).fit(points.astype(np.float64))
    except ValueError:
        return None


def _bic(points: np.ndarray, n: int, seed: int) -> float:
    """The BIC of :func:`fit_mixture`'s mixture (infinite where it could not be fitted)."""
    mixture = fit_mixture(points, n, seed)
    return float("inf") if mixture is None else float(mixture.bic(as_fitted(points, mixture)))


def as_fitted(points: np.ndarray, mixture: Any) -> np.ndarray:
    """``points`` in the type ``mixture`` was fitted in (float64 where :func:`fit_mixture`
    retried)."""
    return np.asarray(points, dtype=mixture.means_.dtype)


def best_component_count(
    points: np.ndarray,
    max_clusters: int = MAX_CLUSTERS,
    seed: int = RANDOM_SEED,
    patience: int = 0,
    least: int = 1,
) -> int:
    """The number of mixture components with the lowest BIC, among 1 .. min(max_clusters, n) - 1
    (the official range, which never tries n components; 1 when that range is empty), or from
    ``least`` (``recluster="reuse"``'s split of an over-long cluster: 2). With
    ``patience`` (``method="scalable"`` only), the counts are tried in order and the search stops
    once that many in a row after the lowest so far have not lowered it (0: the whole range)."""
    candidates = list(range(least, min(max_clusters, len(points))))
    if not candidates:
        return 1
    if not patience:
        bics = [_bic(points, n, seed) for n in candidates]
        return candidates[int(np.argmin(bics))]
    best, lowest, since = candidates[0], float("inf"), 0
    for n in candidates:
        bic = _bic(points, n, seed)
        if bic < lowest:
            best, lowest, since = n, bic, 0
        elif (since := since + 1) >= patience:
            break
    return best


def supported_components(n: int, dim: int) -> int:
    """``method="scalable"``'s bound on the BIC search: 1 + the most components of full covariance
    that ``n`` points in ``dim`` dimensions support with ``dim + 1`` points each (more are singular
    but for the mixture's regularisation), at most :data:`MAX_CLUSTERS`, at least 3 (two are
    tried)."""
    return max(3, min(MAX_CLUSTERS, n // (dim + 1) + 1))


def soft_memberships(
    points: np.ndarray,
    threshold: float,
    seed: int = RANDOM_SEED,
    sample: int | None = None,
    patience: int = 0,
    least: int = 1,
) -> tuple[list[np.ndarray], int]:
    """Per point, the components whose posterior exceeds ``threshold`` (a point may be in several,
    or in none), and the number of components (``GMM_cluster``). With ``sample``, the BIC search and
    the mixture are fitted on a seeded sample of at most that many points (the BIC search bounded by
    :func:`supported_components`, and stopped after ``patience`` counts without a lower BIC), and
    every point is scored. ``least``: the fewest components the BIC search tries (fewer where the
    range would be empty)."""
    fit_on = points if sample is None else points[sample_rows(len(points), sample, seed)]
    limit = MAX_CLUSTERS if sample is None else supported_components(*fit_on.shape)
    least = max(1, min(least, min(limit, len(fit_on)) - 1))  # at least one count is tried
    n = best_component_count(fit_on, limit, seed, 0 if sample is None else patience, least)
    mixture = fit_mixture(fit_on, n, FIT_SEED)
    while mixture is None:  # fewer components until one fits (a single regularised Gaussian does)
        if n == 1:
            raise ValueError(f"no Gaussian mixture fits these {len(fit_on)} points")
        n -= 1
        mixture = fit_mixture(fit_on, n, FIT_SEED)
    probs = mixture.predict_proba(as_fitted(points, mixture))
    return [np.where(p > threshold)[0] for p in probs], n


def cluster_points(
    embeddings: np.ndarray,
    dim: int,
    threshold: float,
    seed: int = RANDOM_SEED,
    method: Method = "official",
    sample: int = 2000,
    patience: int = 0,
) -> list[list[int]]:
    """Per point, its cluster labels (``perform_clustering``): a global UMAP (neighbours
    ``sqrt(n - 1)``, ``min(dim, n - 2)`` dimensions) and soft mixture, then within each global
    cluster a local UMAP (10 neighbours, ``dim`` dimensions) and soft mixture, unless it has at
    most ``dim + 1`` points (then it is one local cluster). Labels are numbered across global
    clusters in order. Membership is by position; the official code finds members by equal
    vectors, so it gives every copy of a duplicated vector the labels of any one copy.
    ``method="scalable"``: UMAPs and mixtures fitted on samples of ``sample`` points
    (:func:`reduce_sampled`), the global UMAP with ``sqrt(m - 1)`` neighbours for the ``m`` points
    it is fitted on, each BIC search stopped after ``patience`` counts without a lower BIC (0:
    never)."""
    return clustered_with_positions(embeddings, dim, threshold, seed, method, sample, patience)[0]


def clustered_with_positions(
    embeddings: np.ndarray,
    dim: int,
    threshold: float,
    seed: int = RANDOM_SEED,
    method: Method = "official",
    sample: int = 2000,
    patience: int = 0,
) -> tuple[list[list[int]], list[np.ndarray]]:
    """:func:`cluster_points`'s labels, and per label the positions its members (ascending) have in
    the reduction that cluster was found in (the local UMAP, or the global one for a global cluster
    of at most ``dim + 1`` points)."""
    n = len(embeddings)
    fitted = None if method == "official" else sample

    def reduced_to(points: np.ndarray, to: int, neighbors: int) -> np.ndarray:
        if method == "official":
            return reduce(points, to, neighbors, seed)
        return reduce_sampled(points, to, neighbors, sample, seed)

    fitted_on = n if fitted is None else min(n, fitted)
    reduced = reduced_to(embeddings, min(dim, n - 2), int((fitted_on - 1) ** 0.5))
    return two_steps(
        reduced,
        lambda members: reduced_to(embeddings[members], dim, LOCAL_NEIGHBORS),
        dim,
        threshold,
        seed,
        fitted,
        patience,
    )


def two_steps(
    reduced: np.ndarray,
    local_reduction: Callable[[list[int]], np.ndarray],
    dim: int,
    threshold: float,
    seed: int,
    fitted: int | None,
    patience: int,
    least: int = 1,
) -> tuple[list[list[int]], list[np.ndarray]]:
    """The global soft mixture over ``reduced``, then a local one inside each global cluster of more
    than ``dim + 1`` points over ``local_reduction(its members)``: each point's labels, and per
    label its members' positions in the reduction it was found in. ``least``: the fewest components
    the global step's BIC search tries."""
    labels: list[list[int]] = [[] for _ in range(len(reduced))]
    positions: list[np.ndarray] = []
    global_labels, n_global = soft_memberships(reduced, threshold, seed, fitted, patience, least)
    for members in members_by_label(global_labels, n_global):
        if not members:
            continue
        if len(members) <= dim + 1:
            local, n_local, at = [np.array([0]) for _ in members], 1, reduced[members]
        else:
            at = local_reduction(members)
            local, n_local = soft_memberships(at, threshold, seed, fitted, patience)
        for pos, i in enumerate(members):  # each point's labels ascending, as np.where gives
            labels[i].extend(int(j) + len(positions) for j in local[pos])
        positions.extend(at[rows] for rows in members_by_label(local, n_local))
    return labels, positions


def members_by_label(labels: Sequence[Sequence[int] | np.ndarray], count: int) -> list[list[int]]:
    """For each label ``0 .. count - 1``, the positions that carry it, ascending (one pass over
    ``labels``, not one per label: at 100K nodes and hundreds of labels that pass is seconds)."""
    out: list[list[int]] = [[] for _ in range(count)]
    for i, ls in enumerate(labels):
        for x in ls:
            out[int(x)].append(i)
    return out


@dataclass(frozen=True)
class Splitting:
    """How :func:`cluster_nodes` clusters a layer and its over-long clusters again."""

    dim: int
    threshold: float
    max_cluster_tokens: int
    seed: int = RANDOM_SEED
    method: Method = "official"
    sample: int = 2000
    patience: int = 0
    recluster: Recluster = "fresh"


def cluster_nodes(
    embeddings: np.ndarray,
    tokens: Sequence[int],
    *,
    dim: int,
    threshold: float,
    max_cluster_tokens: int,
    seed: int = RANDOM_SEED,
    method: Method = "official",
    sample: int = 2000,
    patience: int = 0,
    recluster: Recluster = "fresh",
    workers: int = 1,
) -> list[list[int]]:
    """Clusters of node positions (``RAPTOR_Clustering.perform_clustering``), in label order: each
    cluster of two nodes or more whose texts hold more than ``max_cluster_tokens`` tokens is
    clustered again on its own (:func:`cluster_again`). Where the official recursion would repeat
    itself forever or fail (a cluster holds every node clustered, or comes back whole, or is too
    small for UMAP: ``n - 2`` dimensions, and with ``method="official"`` ``sqrt(n - 1)`` neighbours,
    need 5 nodes), the cluster is kept as it is. ``method``, ``sample``,
    ``patience``: as :func:`cluster_points`; ``recluster``: as :func:`cluster_again`; ``workers``:
    processes the layer's over-long clusters are clustered again in (:func:`reclustered`)."""
    how = Splitting(dim, threshold, max_cluster_tokens, seed, method, sample, patience, recluster)
    with one_thread_pools():
        labels, positions = clustered_with_positions(
            embeddings, dim, threshold, seed, method, sample, patience
        )
        return split_over_long(labels, positions, tokens, how, embeddings, workers)


@contextmanager
def one_thread_pools() -> Iterator[None]:
    """BLAS and OpenMP (scikit-learn's k-means start of each mixture) at one thread while a layer is
    clustered: its thousands of small mixture fits run slower on more (threads start and spin for a
    few milliseconds of work: 80 fits of 200 points took 1.57 s on two threads against 1.00 s on
    one, quiet; under load the gap grows, docs/scale.md). Seeded UMAP is single-threaded anyway.
    scikit-learn is imported first: a limit set before its OpenMP runtime loads does not reach
    it."""
    import sklearn.mixture  # noqa: F401
    from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]

    with threadpool_limits(limits=1):
        yield


def split_over_long(
    labels: list[list[int]],
    positions: list[np.ndarray],
    tokens: Sequence[int],
    how: Splitting,
    embeddings: np.ndarray | None,
    workers: int = 1,
) -> list[list[int]]:
    """The clusters of ``labels`` in label order, each over-long one replaced by its clusters
    (clustered again in ``workers`` processes, :func:`reclustered`). ``embeddings`` are read by a
    fresh re-clustering only (``None`` will do for ``recluster="reuse"``): a reusing one is not
    handed, nor sent to a worker, its nodes' embedding rows."""
    groups = [
        (m, at)
        for m, at in zip(members_by_label(labels, len(positions)), positions, strict=True)
        if m
    ]
    over = [
        len(m) > (4 if how.method == "official" else 3)  # official: sqrt(n - 1) neighbours >= 2
        and sum(tokens[i] for i in m) > how.max_cluster_tokens
        and len(m) < len(labels)  # all of them again: the same call, forever
        for m, _ in groups
    ]
    fresh = how.recluster == "fresh"  # only a fresh re-clustering reads the embeddings (new UMAPs)
    jobs = [
        (embeddings[m] if fresh and embeddings is not None else None, at, [tokens[i] for i in m])
        for (m, at), o in zip(groups, over)
        if o
    ]
    subs = iter(reclustered(jobs, how, workers))
    out: list[list[int]] = []
    for (members, _), again in zip(groups, over):
        if again:
            sub = next(subs)
            # it comes back whole (reuse's forced split of inseparable nodes: as copies of the
            # whole)
            whole = (len(sub) == 1 or how.recluster == "reuse") and all(
                len(c) == len(members) for c in sub
            )
            if not whole:
                out.extend([members[k] for k in cluster] for cluster in sub)
                continue
        out.append(members)
    return out


def reclustered(
    jobs: list[tuple[np.ndarray | None, np.ndarray, list[int]]], how: Splitting, workers: int = 1
) -> list[list[list[int]]]:
    """Each over-long cluster's clusters (:func:`cluster_again` of its nodes' embeddings, positions
    and tokens), in order: here, or over ``workers`` spawned processes of one BLAS thread each. The
    clusters are the same either way: each re-clustering is seeded and depends on its cluster alone
    (for ``recluster="fresh"``, as far as seeded UMAP is deterministic: on near-duplicate nodes it
    is not, even in one process; docs/protocols.md)."""
    if workers <= 1 or len(jobs) < 2:
        return [cluster_again(*job, how) for job in jobs]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    n = min(workers, len(jobs))
    with ProcessPoolExecutor(
        n, mp_context=multiprocessing.get_context("spawn"), initializer=_one_thread
    ) as pool:
        return list(
            pool.map(_again, jobs, [how] * len(jobs), chunksize=max(1, len(jobs) // (8 * n)))
        )


#: A worker process's one-thread limit (:func:`_one_thread`), entered once and never left.
_WORKER_LIMIT: Any = None


def _one_thread() -> None:
    """A re-clustering process's BLAS and OpenMP pools: one thread (``workers`` processes share the
    cores)."""
    global _WORKER_LIMIT
    apply_thread_policy(1)  # torch and faiss too, if a job loads them
    # held for the process's life: a dropped one would restore the pools as it is collected
    _WORKER_LIMIT = one_thread_pools()
    _WORKER_LIMIT.__enter__()


def _again(job: tuple[np.ndarray | None, np.ndarray, list[int]], how: Splitting) -> list[list[int]]:
    """:func:`cluster_again` in a worker process (a module function, picklable by name)."""
    return cluster_again(*job, how)


def cluster_again(
    embeddings: np.ndarray | None, positions: np.ndarray, tokens: Sequence[int], how: Splitting
) -> list[list[int]]:
    """An over-long cluster's clusters. ``recluster="fresh"`` (the official code's): its nodes
    clustered as a layer is (:func:`cluster_nodes`: new UMAPs). ``"reuse"`` (ours, with
    ``method="scalable"``; docs/scale.md): the same two mixture steps (:func:`two_steps`, soft
    membership, BIC choice), both over the ``positions`` its nodes have in the reduction the cluster
    was found in, with no new UMAP, the global step's BIC search starting from the fewest components
    that could hold its tokens, ``ceil(tokens / max_cluster_tokens)`` (at least 2: on positions
    where a mixture found one component the BIC mostly chooses one again, where a fresh UMAP spreads
    the nodes into new clumps; starting at 2 split a 10M-token layer in ~48 BIC searches per
    over-long cluster, docs/scale.md); its over-long clusters split again the same way."""
    if how.recluster == "fresh":
        assert embeddings is not None, "a fresh re-clustering needs the embeddings"
        return cluster_nodes(
            embeddings,
            tokens,
            dim=how.dim,
            threshold=how.threshold,
            max_cluster_tokens=how.max_cluster_tokens,
            seed=how.seed,
            method=how.method,
            sample=how.sample,
            patience=how.patience,
            recluster=how.recluster,
        )
    fitted = None if how.method == "official" else how.sample
    labels, at = two_steps(
        positions,
        lambda members: positions[members],
        how.dim,
        how.threshold,
        how.seed,
        fitted,
        how.patience,
        least=max(2, -(-sum(tokens) // how.max_cluster_tokens)),
    )
    return split_over_long(labels, at, tokens, how, None)
