"""RLM's evidence ceiling (LLM-free): the whole corpus is the REPL's ``context``, so every
evidence document (and sentence) is within the code's reach; what the root reads of it is the
model's choice, which no LLM-free rule can bound more tightly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Reach,
    covered,
    reach_of,
)


@dataclass(frozen=True, kw_only=True)
class WholeContextCeiling(EvidenceCeiling):
    """Every evidence document of the corpus (with evidence sentences: every one whole in its
    document), as the REPL holds the corpus unabridged."""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        """All the evidence that is in the corpus."""
        if item.spans is not None:
            regions = [(d.doc_id, 0, len(d.text)) for d in item.corpus.documents]
            return Reach(covered(item.spans, regions), len(item.spans))
        return reach_of(item.evidence, (d.doc_id for d in item.corpus.documents))

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        """``<evidence> anywhere in the REPL's context (the whole corpus)``."""
        return f"{env.evidence} anywhere in the REPL's context (the whole corpus, unabridged)"


RLM_CEILING = WholeContextCeiling(rank=85)
