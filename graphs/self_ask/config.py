"""Self-Ask's settings (FlashRAG's SelfAskPipeline and Li et al.'s retrieval)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from graphs.config import option
from graphs.rag.config import RetrievalSettings


@dataclass(frozen=True, kw_only=True)
class SelfAskConfig(RetrievalSettings):
    """Retrieval-backed Self-Ask.

    Attributes:
        max_iterations: Follow-up questions answered at most; then the final answer is forced.
        order: Order of a follow-up's chunks in the reader prompt (see ``rag``).
        max_new_tokens: Budget of each Self-Ask step (one follow-up line, or the final answer).
        follow_up_max_new_tokens: Budget of each intermediate answer.
        temperature: 0 = greedy.
    """

    chunk_size: int = option(300, min=1, source="ours: same retrieval as self_route (Li et al. 2024: 300 words x 5)")
    top_k: int = option(5, min=1, source="ours: same retrieval as self_route (Li et al. 2024: 300 words x 5)")
    max_iterations: int = option(5, min=0, source="FlashRAG SelfAskPipeline max_iter=5")
    order: Literal["document", "rank"] = option("document", source="LongBench v2 pred.py --rag: sort by c_idx")
    max_new_tokens: int = option(128, min=1, source="LongBench v2 pred.py max_tokens=128")
    follow_up_max_new_tokens: int = option(64, min=1, source="ours: one short sentence")
    temperature: float = option(0.0, min=0.0)
