"""The rerank calls of a cost plan: a :class:`RerankPlan` (``CostPlan.rerank``), apart from the chat
calls so that a plan says which calls go to the reranker; a budget counts them as model calls."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class RerankPlan:
    """The rerank calls of a plan (a strategy whose ``rerank`` option names a reranker): one per
    retrieval, each sending the first stage's candidates with the query. Token counts are estimates,
    as a plan's.

    Attributes:
        calls / max_calls: Rerank calls at least and at most.
        documents / max_documents: Candidate chunks they send, at least and at most.
        tokens / max_tokens: Tokens they send (the query once per candidate, and the candidate), at
        least and at most.
    """

    calls: int
    max_calls: int
    documents: int
    max_documents: int
    tokens: int
    max_tokens: int

    def scaled(self, k: float) -> RerankPlan:
        """Every count times ``k`` (rounded up)."""
        return RerankPlan(**{name: math.ceil(value * k) for name, value in self.to_dict().items()})

    def describe(self) -> str:
        """``2-6 rerank calls (100-300 documents, ~20,000-60,000 tokens)``: a range where the counts
        vary."""

        def span(least: int, most: int) -> str:
            return f"{least:,}" if least == most else f"{least:,}-{most:,}"

        return (
            f"{span(self.calls, self.max_calls)} rerank call{'' if self.max_calls == 1 else 's'} "
            f"({span(self.documents, self.max_documents)} documents, "
            f"~{span(self.tokens, self.max_tokens)} tokens)"
        )

    def to_dict(self) -> dict[str, int]:
        """JSON-ready form."""
        return {
            "calls": self.calls,
            "max_calls": self.max_calls,
            "documents": self.documents,
            "max_documents": self.max_documents,
            "tokens": self.tokens,
            "max_tokens": self.max_tokens,
        }


__all__ = ["RerankPlan"]
