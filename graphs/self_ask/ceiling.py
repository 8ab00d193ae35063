"""Self-Ask's evidence ceiling: the union of the documents its ``retrieve_follow_up`` node returns
(LLM-free)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from longctx.graphs.plugin.api import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    Hit,
    Reach,
    cached_index,
    node_runtime,
    queries,
    reach_in_chunks,
)


@dataclass(frozen=True, kw_only=True)
class FollowUpCeiling(EvidenceCeiling):
    """The union of the documents ``retrieve_follow_up`` returns for each follow-up: the question
    itself, or with ``gold_sub_questions`` one gold sub-question per entity the records name, at
    most ``max_iterations`` of them. (The final call sees only the intermediate answers; with
    perfect readers these carry what the chunks held.) With evidence sentences (BABILong), the
    supporting facts those chunks cover.

    Attributes:
        retrieve_follow_up: Self-Ask's node (passed in by its registration, which this module cannot
            import).
    """

    retrieve_follow_up: Callable[..., dict[str, Any]]

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        index = cached_index(cfg, item.corpus, env)
        runtime = node_runtime(cfg, item.corpus, index)
        seen: list[Hit] = []
        read: list[Any] = []
        for query in queries(item, env, max(cfg.max_iterations, 1)):
            out = self.retrieve_follow_up({"follow_up": query, "hits": seen}, runtime)
            # the node returns the evidence so far with this retrieval's new chunks
            seen = out["hits"]
            read += [h.chunk for h in out["follow_up_hits"]]
        return reach_in_chunks(item, read, index.chunks)

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        q = (
            f"<= {cfg.max_iterations} gold sub-questions"
            if env.gold_sub_questions
            else "the question"
        )
        return (
            f"{env.evidence} in the top-{cfg.top_k} {cfg.retriever} chunks ({cfg.chunk_size} "
            f"{cfg.chunk_unit}) for {q}"
        )
