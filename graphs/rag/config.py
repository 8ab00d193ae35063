"""RAG's settings: ``RagConfig``, the shared retrieval settings plus how the prompt is assembled."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import RetrievalSettings, option


@dataclass(frozen=True, kw_only=True)
class RagConfig(RetrievalSettings):
    """Chunked top-N RAG.

    Attributes:
        order: ``"rank"`` (LongBench v1, the default) or ``"document"`` (corpus order, LongBench
            v2's RAG and the stronger DOS-RAG baseline; preset ``longbench-v2``).
        assembly: ``"benchmark"``: when the question carries a benchmark protocol, the chunks fill
            the benchmark's official prompt in its official order where it has one (LongBench v2's
            RAG prompt with "Retrieved chunk {i}: ", chunks in document order as ``0shot_rag``;
            elsewhere the full-context prompt around the chunks joined, as LongBench v1's
            ``retrieval/pred.py``); ``"ours"``: our labelled-chunk template always.
        max_new_tokens: Answer budget (LongBench v2 ``pred.py``: 128).
        temperature: 0 = greedy, as LongBench v1.
    """

    order: Literal["document", "rank"] = option(
        "rank", source="LongBench v1 retrieval/pred.py: chunks in rank order"
    )
    assembly: Literal["benchmark", "ours"] = option(
        "benchmark", source="LongBench v1: retrieved chunks joined into the dataset's own prompt"
    )
    max_new_tokens: int = option(128, min=1, source="LongBench v2 pred.py max_tokens=128")
    temperature: float = option(0.0, min=0.0)
