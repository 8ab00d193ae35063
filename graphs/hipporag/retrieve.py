"""HippoRAG 2's retrieval (``HippoRAG.retrieve``, official code @ c617143): the query scored against
every fact, the ``linking_top_k`` best facts filtered by the recognition-memory call, then
Personalized PageRank seeded by the kept facts' phrases and every passage's dense score (or, when
the filter keeps no fact, the dense ranking alone).

Scores are min-max normalised as the official ``min_max_normalize`` (all equal: all ones).
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from longctx.graphs.hipporag.kg import KnowledgeGraph
from longctx.graphs.hipporag.ppr import personalized_pagerank

Fact = tuple[str, str, str]
_HEADER = re.compile(r"\[\[ ## (\w+) ## \]\]")


def min_max(x: np.ndarray) -> np.ndarray:
    """``(x - min) / (max - min)``; all ones when every value is the same."""
    low, high = np.min(x), np.max(x)
    if high - low == 0:
        return np.ones_like(x)
    out: np.ndarray = (x - low) / (high - low)
    return out


def fact_scores(kg: KnowledgeGraph, query: np.ndarray) -> np.ndarray:
    """Every fact's normalised similarity to the query (none without facts)."""
    if len(kg.facts) == 0:
        return np.array([])
    return min_max(kg.fact_vectors @ query)


def candidate_facts(scores: np.ndarray, link_top_k: int) -> list[int]:
    """The ``link_top_k`` best facts, best first (``rerank_facts``)."""
    if len(scores) <= link_top_k:
        return [int(i) for i in np.argsort(scores)[::-1]]
    return [int(i) for i in np.argsort(scores)[-link_top_k:][::-1]]


def _as_facts(value: Any) -> list[list[str]] | None:
    """``value`` read as the filter's ``Fact`` (``{"fact": [[str, ...], ...]}``), or ``None`` when
    it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("fact"), (list, tuple)):
        return None
    facts = value["fact"]
    if not all(isinstance(f, (list, tuple)) and all(isinstance(x, str) for x in f) for f in facts):
        return None
    return [list(f) for f in facts]


def parse_filter(reply: str) -> list[list[str]]:
    """The facts of the filter's ``[[ ## fact_after_filter ## ]]`` field
    (``DSPyFilter.parse_filter``): JSON, else a Python literal; none when no such field holds a
    ``Fact`` (the last one that does wins)."""
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in reply.splitlines():
        match = _HEADER.match(line.strip())
        if match:
            sections.append((match.group(1), []))
        else:
            sections[-1][1].append(line)
    parsed: list[list[str]] = []
    for name, lines in sections:
        if name != "fact_after_filter":
            continue
        value: Any = "\n".join(lines).strip()
        try:
            value = json.loads(value)
        except ValueError:
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                pass
        found = _as_facts(value)
        if found is not None:
            parsed = found
    return parsed


def kept_facts(generated: list[list[str]], candidates: list[Fact], limit: int) -> list[int]:
    """Positions in ``candidates`` of the facts the filter kept, in its order: each reply fact
    matched to its closest candidate (difflib, as ``DSPyFilter.rerank``; a candidate matched twice
    is kept twice), at most ``limit``."""
    texts = [str(c) for c in candidates]
    out: list[int] = []
    for fact in generated:
        closest = difflib.get_close_matches(str(fact), texts, n=1, cutoff=0.0)
        if closest:
            out.append(texts.index(closest[0]))
    return out[:limit]


def dense_ranking(kg: KnowledgeGraph, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Passages by normalised dense score, best first (``dense_passage_retrieval``), and those
    scores."""
    scores = min_max(kg.passage_vectors @ query)
    order = np.argsort(scores)[::-1]
    return order, scores[order]


@dataclass(frozen=True)
class Seeds:
    """PPR's reset vector and what it came from: each linked phrase's weight, best first."""

    reset: np.ndarray
    linked: list[tuple[str, float]]


def seeds(
    kg: KnowledgeGraph,
    facts: list[Fact],
    scores: list[float],
    query: np.ndarray,
    *,
    link_top_k: int,
    passage_node_weight: float,
) -> Seeds:
    """``graph_search_with_fact_entities``'s weights: each kept fact's subject and object get its
    score divided by the number of passages the phrase is in, averaged over its occurrences; the
    ``link_top_k`` phrases of highest weight are kept; every passage gets its normalised dense score
    times ``passage_node_weight``."""
    index = {p: i for i, p in enumerate(kg.phrases)}
    weights = np.zeros(kg.vertices)
    occurs = np.zeros(kg.vertices)
    linked: dict[str, int] = {}
    for (s, _, o), score in zip(facts, scores):
        for phrase in (s.lower(), o.lower()):
            i = index.get(phrase)
            if i is None:
                continue
            weights[i] += score / len(kg.phrase_passages[i]) if kg.phrase_passages[i] else score
            occurs[i] += 1
            linked.setdefault(phrase, i)
    weights = np.divide(weights, occurs, out=np.zeros_like(weights), where=occurs != 0)
    top = sorted(
        ((p, float(weights[i])) for p, i in linked.items()), key=lambda x: x[1], reverse=True
    )[:link_top_k]
    keep = {linked[p] for p, _ in top}
    weights[[i for i in range(len(kg.phrases)) if i not in keep]] = 0.0
    order, dense = dense_ranking(kg, query)
    for j, score in zip(order.tolist(), min_max(dense).tolist()):
        weights[kg.passage_vertex(j)] = score * passage_node_weight
    return Seeds(weights, top)


@dataclass(frozen=True)
class Ranking:
    """Every passage best first with its score, the linked phrases that seeded PPR, and how it was
    ranked (``ppr`` or ``dense``)."""

    order: np.ndarray
    scores: np.ndarray
    linked: list[tuple[str, float]]
    mode: str


def rank_passages(
    kg: KnowledgeGraph,
    graph: Any,
    query: np.ndarray,
    facts: list[Fact],
    scores: list[float],
    *,
    link_top_k: int,
    passage_node_weight: float,
    damping: float,
) -> Ranking:
    """PPR over ``graph`` (``kg`` as igraph) seeded by the kept ``facts`` (with their scores) and
    the dense scores; the dense ranking without facts."""
    if not facts:
        order, ranked = dense_ranking(kg, query)
        return Ranking(order, ranked, [], "dense")
    s = seeds(
        kg, facts, scores, query, link_top_k=link_top_k, passage_node_weight=passage_node_weight
    )
    passage_scores = personalized_pagerank(graph, s.reset, damping)[len(kg.phrases) :]
    order = np.argsort(passage_scores)[::-1]
    return Ranking(order, passage_scores[order], s.linked, "ppr")
