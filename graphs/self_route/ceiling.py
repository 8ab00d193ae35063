"""Self-Route's evidence ceiling: its RAG leg, and (as a detail) perfect routing of declined
questions (LLM-free). The legs' rules are the registered ones of ``rag`` and ``full_context``,
reached through the registry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    STRATEGIES,
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    SkipCeiling,
)


def _leg_rule(name: str) -> Any:
    """The registered ceiling rule of the strategy ``name`` (RAG's retrieved chunks, Full
    context's truncated window)."""
    rule = STRATEGIES.get(name).ceiling
    assert rule is not None, f"{name} registers a ceiling rule"
    return rule


@dataclass(frozen=True, kw_only=True)
class RoutedCeiling(EvidenceCeiling):
    """Its RAG leg: RAG's rule with Self-Route's own retrieval settings (300 words x 5). The detail
    ``routed_complete_share`` adds perfect routing: a question whose RAG leg lacks evidence is
    declined and answered by the full-context leg (corpus fits the window) or the fallback
    strategy, under that strategy's registered rule (``declined_to`` counts the legs)."""

    leg: str = "RAG leg: "

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        """RAG's reach under Self-Route's retrieval settings."""
        return _leg_rule("rag").reach(cfg, item, env)  # type: ignore[no-any-return]

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        """RAG's rule, prefixed with the leg."""
        return f"{self.leg}{_leg_rule('rag').describe(cfg, env, corpus_tokens)}"

    def fallback(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> tuple[str, Reach | None]:
        """The leg a declined question takes under perfect routing, and its reach (``None``: no rule
        applies)."""
        fc, window = cfg.full_context(), _leg_rule("full_context")
        if not window.spans(fc, item, env).truncated:
            return "full_context", window.reach(fc, item, env)
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
SELF_ROUTE_CEILING = RoutedCeiling(rank=20)
