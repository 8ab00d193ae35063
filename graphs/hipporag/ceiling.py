"""HippoRAG's evidence ceiling: none without the model. Which passages PPR ranks first depends on
the triples an index-time LLM extracts (the graph's edges) and on the facts a question-time call
keeps, so no LLM-free rule bounds it; the rule says so instead of guessing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from graphs.ceiling import CeilingEnv, CeilingItem, EvidenceCeiling, Reach, SkipCeiling

#: Why the rule does not apply.
NEEDS_INDEX_LLM = (
    "needs the index-time LLM: the passages are ranked over a graph of the triples a model extracts"
)


@dataclass(frozen=True, kw_only=True)
class OpenIEGraphCeiling(EvidenceCeiling):
    """Marks HippoRAG's ceiling as needing the index-time LLM (every question skipped, with the reason)."""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        raise SkipCeiling(NEEDS_INDEX_LLM)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return f"no LLM-free ceiling ({NEEDS_INDEX_LLM})"


#: HippoRAG's ceiling rule, on its registration.
HIPPORAG_CEILING = OpenIEGraphCeiling(rank=95)
