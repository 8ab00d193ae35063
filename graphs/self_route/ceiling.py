"""Self-Route's evidence ceiling: its RAG leg, and (as a detail) perfect routing of declined
questions (LLM-free)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longctx.graphs.full_context import input_budget, untruncated_prompt
from longctx.graphs.full_context.ceiling import TruncatedWindowCeiling
from longctx.graphs.plugin.api import (
    STRATEGIES,
    CeilingEnv,
    CeilingItem,
    Reach,
    SkipCeiling,
    order_hits,
)
from longctx.graphs.rag import retrieve
from longctx.graphs.rag.ceiling import RetrievedChunksCeiling

_FULL_CONTEXT_LEG = TruncatedWindowCeiling(
    input_budget=input_budget, untruncated_prompt=untruncated_prompt
)


@dataclass(frozen=True, kw_only=True)
class RoutedCeiling(RetrievedChunksCeiling):
    """Its RAG leg: RAG's rule with Self-Route's own retrieval settings (300 words x 5). The detail
    ``routed_complete_share`` adds perfect routing: a question whose RAG leg lacks evidence is
    declined and answered by the full-context leg (corpus fits the window) or the fallback
    strategy, under that strategy's registered rule (``declined_to`` counts the legs)."""

    leg: str = "RAG leg: "

    def fallback(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> tuple[str, Reach | None]:
        """The leg a declined question takes under perfect routing, and its reach (``None``: no rule
        applies)."""
        fc = cfg.full_context()
        if not _FULL_CONTEXT_LEG.spans(fc, item, env).truncated:
            return "full_context", _FULL_CONTEXT_LEG.reach(fc, item, env)
        spec = STRATEGIES.get(cfg.fallback)  # truncated: the fallback strategy answers
        if spec.ceiling is None:
            return cfg.fallback, None
        try:
            return cfg.fallback, spec.ceiling.reach(
                spec.make_config(**dict(cfg.fallback_options)), item, env
            )
        except SkipCeiling:
            return cfg.fallback, None

    def detail(
        self, cfg: Any, items: Sequence[CeilingItem], reaches: Sequence[Reach], env: CeilingEnv
    ) -> dict[str, Any]:
        """``routed_complete_share`` under perfect routing, and where declined questions went."""
        routed: list[bool] = []
        legs: dict[str, int] = {}
        for item, r in zip(items, reaches):
            if r.complete:
                routed.append(True)
                continue
            leg, fallback = self.fallback(cfg, item, env)
            legs[leg] = legs.get(leg, 0) + 1
            routed.append(bool(fallback and fallback.complete))
        return {"routed_complete_share": sum(routed) / len(routed), "declined_to": legs}


#: Self-Route's ceiling rule, on its registration.
SELF_ROUTE_CEILING = RoutedCeiling(rank=20, retrieve=retrieve, order_hits=order_hits)
