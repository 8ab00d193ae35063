"""Rank fusion: several rankings of the same chunks made into one, each component's rank
and score kept.

Two rules, both pure functions of the component rankings (``name -> [(chunk_id, score), ...]``,
best first):

* :func:`reciprocal_rank_fusion`: ``sum over components of 1 / (k + rank)``, rank 1-based,
  k=60 (Cormack, Clarke and Buettcher, SIGIR 2009, "Reciprocal Rank Fusion outperforms
  Condorcet and individual rank learning methods"). Scores are ignored, so a BM25 score
  of 30 and a cosine of 0.6 need no common scale.
* :func:`score_fusion`: each component's scores min-max normalised over its own list, then
  a weighted sum (LlamaIndex's ``relative_score`` mode, LangChain's weighted ensemble).

A chunk absent from a component's list contributes nothing from it (RRF) or the lowest
normalised score, 0 (score fusion); its rank and score for that component are ``None``.
Ties are broken by chunk id (lower first), so fusion is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Cormack et al. 2009: k=60, "fixed during a pilot investigation and not altered".
RRF_K = 60


@dataclass(frozen=True)
class ComponentScore:
    """One component retriever's view of a fused chunk: its 0-based rank and raw score, or None
    where absent."""

    rank: int | None
    score: float | None

    def as_dict(self) -> dict[str, int | float | None]:
        """``{"rank": ..., "score": ...}`` (JSON-ready)."""
        return {"rank": self.rank, "score": self.score}


@dataclass(frozen=True)
class Fused:
    """A chunk in the fused ranking: its fused score and what each component said of it."""

    chunk_id: int
    score: float
    components: Mapping[str, ComponentScore]


Rankings = Mapping[str, Sequence[tuple[int, float]]]


def reciprocal_rank_fusion(rankings: Rankings, k: int = RRF_K) -> list[Fused]:
    """All chunks of ``rankings`` by ``sum 1 / (k + rank)`` (rank 1-based), best first.

    Args:
        rankings: Component name -> its ``(chunk_id, score)`` pairs, best first.
        k: The RRF constant; larger flattens the difference between top and lower ranks.
    """
    if k < 0:
        raise ValueError(f"the RRF constant k must be >= 0, got {k}")
    fused: dict[int, float] = {}
    for ranking in rankings.values():
        for rank, (chunk_id, _) in enumerate(_unique(ranking)):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (k + rank + 1)
    return _ranked(fused, rankings)


def score_fusion(rankings: Rankings, weights: Mapping[str, float]) -> list[Fused]:
    """All chunks of ``rankings`` by the ``weights``-weighted sum of min-max normalised
    scores, best first.

    Each component's scores are scaled to [0, 1] over its own list (all equal: 1 each, so a
    component that cannot tell its chunks apart still counts them as found); a chunk a
    component did not return gets 0 from it.

    Args:
        rankings: Component name -> its ``(chunk_id, score)`` pairs, best first.
        weights: Component name -> weight (every component of ``rankings`` needs one).
    """
    missing = sorted(set(rankings) - set(weights))
    if missing:
        raise ValueError(f"score fusion needs a weight for every component; none for {missing}")
    fused: dict[int, float] = {}
    for name, ranking in rankings.items():
        pairs = _unique(ranking)
        if not pairs:
            continue
        scores = [s for _, s in pairs]
        low, high = min(scores), max(scores)
        for chunk_id, score in pairs:
            norm = (score - low) / (high - low) if high > low else 1.0
            fused[chunk_id] = fused.get(chunk_id, 0.0) + weights[name] * norm
    for ranking in rankings.values():  # a chunk with weight-0 components only still takes its place
        for chunk_id, _ in ranking:
            fused.setdefault(chunk_id, 0.0)
    return _ranked(fused, rankings)


def _unique(ranking: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    """``ranking`` with each chunk at its first (best) place only."""
    seen: set[int] = set()
    out = []
    for chunk_id, score in ranking:
        if chunk_id not in seen:
            seen.add(chunk_id)
            out.append((chunk_id, float(score)))
    return out


def _ranked(fused: dict[int, float], rankings: Rankings) -> list[Fused]:
    """Fused scores sorted best first (ties by chunk id), with every component's rank and score."""
    places = {
        name: {cid: (rank, score) for rank, (cid, score) in enumerate(_unique(r))}
        for name, r in rankings.items()
    }
    out = []
    for chunk_id, score in sorted(fused.items(), key=lambda item: (-item[1], item[0])):
        components = {}
        for name, place in places.items():
            rank, raw = place.get(chunk_id, (None, None))
            components[name] = ComponentScore(rank, raw)
        out.append(Fused(chunk_id, score, components))
    return out
