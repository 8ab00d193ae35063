"""Structured extraction's evidence ceiling: it reads every document, so all evidence reaches it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import CeilingEnv, CeilingItem, EvidenceCeiling, Reach


@dataclass(frozen=True, kw_only=True)
class EveryDocumentCeiling(EvidenceCeiling):
    """Every document is read (a record extraction per document window), so all evidence reaches the
    final call."""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        if item.spans is not None:  # every sentence is read too
            return Reach(len(item.spans), len(item.spans))
        return Reach(len(set(item.evidence)), len(set(item.evidence)))

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return "reads every document"


#: Structured extraction's ceiling rule, on its registration.
STRUCTURED_CEILING = EveryDocumentCeiling(rank=80)
