"""RAPTOR's retrieval (``TreeRetriever``, official code @ 2e3e83e): the collapsed tree (every node
of every layer ranked by cosine distance to the query, the first ``top_k`` kept while they fit the
token budget) or tree traversal (``top_k`` of the top layer, then of their children, down to the
leaves)."""

from __future__ import annotations

import numpy as np

from longctx.graphs.plugin.api import count_tokens
from longctx.graphs.raptor.tree import Tree, TreeNode


def distances(tree: Tree, query: np.ndarray, nodes: list[TreeNode]) -> np.ndarray:
    """Cosine distances (``1 - cos``) from the query to ``nodes``."""
    if not nodes:
        return np.zeros(0)
    m = tree.embeddings[[n.index for n in nodes]]
    norms = np.linalg.norm(m, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    found: np.ndarray = 1.0 - (m @ query) / np.maximum(norms, 1e-12)
    return found


def collapsed(
    tree: Tree, query: np.ndarray, top_k: int, max_tokens: int
) -> list[tuple[TreeNode, float]]:
    """``retrieve_information_collapse_tree``: the nearest nodes in order, at most ``top_k``,
    stopping at the first that would take the context past ``max_tokens`` (cl100k) tokens."""
    d = distances(tree, query, tree.nodes)
    out, total = [], 0
    for i in np.argsort(d)[:top_k]:
        node = tree.nodes[int(i)]
        n = count_tokens(node.text)
        if total + n > max_tokens:
            break
        out.append((node, float(d[i])))
        total += n
    return out


def traversal(tree: Tree, query: np.ndarray, top_k: int) -> list[tuple[TreeNode, float]]:
    """``retrieve_information`` from the top layer through ``num_layers + 1`` layers: ``top_k``
    nearest of the layer, then ``top_k`` nearest of their children (in order of first appearance),
    and so on."""
    layer_nodes = tree.layer(tree.num_layers)
    out: list[tuple[TreeNode, float]] = []
    for depth in range(tree.num_layers + 1):
        d = distances(tree, query, layer_nodes)
        best = [int(i) for i in np.argsort(d)[:top_k]]
        out += [(layer_nodes[i], float(d[i])) for i in best]
        if depth == tree.num_layers:
            break
        children = list(dict.fromkeys(c for i in best for c in sorted(layer_nodes[i].children)))
        layer_nodes = [tree.nodes[c] for c in children]
    return out
