"""Personalized PageRank over HippoRAG's graph (``HippoRAG.run_ppr``, official code @ c617143), by
python-igraph's PRPACK as the official code: undirected, edge weights, the reset vector the
query's seeds give (NaN and negative entries zeroed). python-igraph is imported when a graph is
first searched, never with the package."""

from __future__ import annotations

from typing import Any

import numpy as np

from longctx.graphs.hipporag.kg import KnowledgeGraph
from longctx.graphs.plugin.api import require


def igraph_of(kg: KnowledgeGraph) -> Any:
    """The graph as an undirected ``igraph.Graph`` with a ``weight`` per edge (parallel edges
    kept)."""
    require("igraph", extra="hipporag", feature="HippoRAG's Personalized PageRank")
    import igraph

    g = igraph.Graph(n=kg.vertices, edges=kg.edges, directed=False)
    g.es["weight"] = kg.weights
    return g


def personalized_pagerank(graph: Any, reset: np.ndarray, damping: float) -> np.ndarray:
    """Each vertex's PageRank with teleports to ``reset`` (normalised by igraph), ``damping`` the
    probability of following an edge."""
    reset = np.where(np.isnan(reset) | (reset < 0), 0, reset)
    scores = graph.personalized_pagerank(
        vertices=range(graph.vcount()),
        damping=damping,
        directed=False,
        weights="weight",
        reset=reset.tolist(),
        implementation="prpack",
    )
    return np.asarray(scores, dtype=np.float64)
