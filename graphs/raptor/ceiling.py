"""RAPTOR's evidence ceiling: none without the model. Which nodes the collapsed tree retrieves
depends on the summaries the index-time LLM writes (they are ranked with the leaves), so no
LLM-free rule bounds it; the rule says so instead of guessing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphs.ceiling import CeilingEnv, CeilingItem, EvidenceCeiling, Reach, SkipCeiling

#: Why the rule does not apply.
NEEDS_INDEX_LLM = "needs the index-time LLM: the retrieved nodes are ranked among the tree's summaries, which a model writes"


@dataclass(frozen=True, kw_only=True)
class TreeSummariesCeiling(EvidenceCeiling):
    """Marks RAPTOR's ceiling as needing the index-time LLM (every question skipped, with the reason)."""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        raise SkipCeiling(NEEDS_INDEX_LLM)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return f"no LLM-free ceiling ({NEEDS_INDEX_LLM})"


#: RAPTOR's ceiling rule, on its registration.
RAPTOR_CEILING = TreeSummariesCeiling(rank=90)
