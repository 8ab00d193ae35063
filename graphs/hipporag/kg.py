"""HippoRAG 2's graph (``HippoRAG.index``, official code @ c617143): phrase nodes (the subjects and
objects of every passage's triples, normalised), passage nodes, and weighted edges, in the official
order: for each passage's triples both directions of subject-object (counted), then passage-phrase
(1.0), then synonymy (embedding kNN: a phrase of more than two letters or digits is joined to each
other phrase whose cosine similarity is at least the threshold, the nearest first, at most 101,
among its ``top_k`` nearest; the similarity is the weight and replaces a counted edge between the
same two phrases). Self-loops are dropped; the graph is undirected, so an edge recorded in both
directions is two parallel edges, as the official ``igraph`` graph has them.

Vertices: the phrases in sorted order (``np.unique``, the official entity store's order), then the
passages in corpus order.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from longctx.graphs.hipporag.openie import Extraction
from longctx.graphs.hipporag.synonymy_knn import Knn, neighbours_above, pairs_of

#: HippoRAG.add_synonymy_edges: ``num_nns > 100`` ends a phrase's synonyms (at most 101).
MAX_SYNONYMS = 100
_NOT_ALNUM = re.compile("[^A-Za-z0-9]")
_NOT_ALNUM_SPACE = re.compile("[^A-Za-z0-9 ]")

Embed = Callable[[Sequence[str]], np.ndarray]


def normalise(text: Any) -> str:
    """``misc_utils.text_processing``: lower case, every character but letters, digits and spaces
    made a space, stripped."""
    return _NOT_ALNUM_SPACE.sub(" ", str(text).lower()).strip()


def fact_text(fact: tuple[str, str, str]) -> str:
    """What a fact's embedding is of: its Python tuple form, as the official fact store holds it
    (``str(fact)``)."""
    return str(fact)


def unit_rows(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero)."""
    m = np.asarray(m, dtype=np.float32)
    if m.size == 0:
        return m
    out: np.ndarray = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return out


@dataclass
class KnowledgeGraph:
    """Phrases, passages and facts with their embeddings, and the graph's edges (vertex
    ``i < len(phrases)`` is phrase ``i``, vertex ``len(phrases) + j`` passage ``j``)."""

    phrases: list[str]
    passages: list[str]
    facts: list[tuple[str, str, str]]
    fact_vectors: np.ndarray
    passage_vectors: np.ndarray
    phrase_passages: list[list[int]]
    edges: list[tuple[int, int]]
    weights: list[float]
    facts_of_build: dict[str, Any] = field(default_factory=dict)

    @property
    def vertices(self) -> int:
        """Phrase and passage vertices together."""
        return len(self.phrases) + len(self.passages)

    def passage_vertex(self, j: int) -> int:
        """The vertex of passage ``j``."""
        return len(self.phrases) + j


def synonym_pairs(
    phrases: Sequence[str],
    vectors: np.ndarray,
    *,
    threshold: float,
    top_k: int,
    batch: int = 1000,
    knn: Knn = "dense",
) -> list[tuple[int, int, float]]:
    """``(phrase, synonym, similarity)`` in the official order: phrases in order, each one's
    synonyms nearest first, exact ties in phrase order
    (:mod:`longctx.graphs.hipporag.synonymy_knn`). ``knn``: ``"dense"`` (the official search:
    similarities to every phrase, ``batch`` phrases at a time), or through FAISS (``"faiss"`` exact,
    ``"faiss-ivf"`` approximate)."""
    if len(phrases) == 0:
        return []
    found = neighbours_above(
        unit_rows(vectors), threshold=threshold, top_k=top_k, knn=knn, batch=batch
    )
    return pairs_of(phrases, found, lambda p: len(_NOT_ALNUM.sub("", p)) > 2, MAX_SYNONYMS)


def build_graph(
    passages: Sequence[str],
    extractions: Sequence[Extraction],
    embed: Embed,
    *,
    threshold: float,
    top_k: int,
    batch: int = 1000,
    embed_facts: Embed | None = None,
    embed_passages: Embed | None = None,
    knn: Knn = "dense",
) -> KnowledgeGraph:
    """The graph over ``passages`` (distinct texts, in order) and their OpenIE; ``embed`` embeds the
    phrases and, unless given their own (the official code's three embedding stores), the facts and
    passages."""
    embed_facts, embed_passages = embed_facts or embed, embed_passages or embed
    triples: list[list[tuple[str, str, str]]] = [
        [(normalise(t[0]), normalise(t[1]), normalise(t[2])) for t in e.triples]
        for e in extractions
    ]
    phrases = sorted({x for ts in triples for t in ts for x in (t[0], t[2])})
    index = {p: i for i, p in enumerate(phrases)}
    facts = list(dict.fromkeys(t for ts in triples for t in ts))
    stats: dict[tuple[int, int], float] = {}
    for ts in triples:
        for s, _, o in ts:
            a, b = index[s], index[o]
            stats[(a, b)] = stats.get((a, b), 0.0) + 1
            stats[(b, a)] = stats.get((b, a), 0.0) + 1
    phrase_passages: list[list[int]] = [[] for _ in phrases]
    for j, ts in enumerate(triples):
        for p in sorted({index[x] for t in ts for x in (t[0], t[2])}):
            stats[(len(phrases) + j, p)] = 1.0
            phrase_passages[p].append(j)
    phrase_vectors = embed(phrases) if phrases else np.zeros((0, 0), dtype=np.float32)
    synonyms = synonym_pairs(
        phrases, phrase_vectors, threshold=threshold, top_k=top_k, batch=batch, knn=knn
    )
    for a, b, score in synonyms:
        stats[(a, b)] = score
    edges = [e for e in stats if e[0] != e[1]]
    facts_of_build = {
        "phrases": len(phrases),
        "passages": len(passages),
        "facts": len(facts),
        "synonym_edges": len(synonyms),
        "edges": len(edges),
    }
    fact_vectors = (
        unit_rows(embed_facts([fact_text(f) for f in facts]))
        if facts
        else np.zeros((0, 0), np.float32)
    )
    return KnowledgeGraph(
        list(phrases),
        list(passages),
        facts,
        fact_vectors,
        unit_rows(embed_passages(list(passages))),
        phrase_passages,
        edges,
        [stats[e] for e in edges],
        facts_of_build,
    )
