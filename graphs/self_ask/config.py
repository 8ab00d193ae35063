"""Self-Ask's settings: FlashRAG's SelfAskPipeline by default, the project's reader variant as an
option."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import RetrievalSettings, option


@dataclass(frozen=True, kw_only=True)
class SelfAskConfig(RetrievalSettings):
    """Retrieval-backed Self-Ask.

    The defaults are FlashRAG's (``SelfAskPipeline`` as ``examples/methods/run_exp.py``
    runs it: top-5 retrieval over 100-word passages, ``max_iter=5``, 100 new tokens,
    greedy, multi-hop prompt); the ``paper`` preset is the same config and ``reader`` the
    project's earlier setting (see ``docs/self_ask.md``).

    Attributes:
        variant: ``"flashrag"``: the generator writes follow-ups *and* intermediate answers
            from the retrieved contexts in its prompt (FlashRAG ``SelfAskPipeline``).
            ``"reader"``: the generator only asks; a separate reader call answers each
            follow-up from the chunks retrieved for it.
        max_iterations: ``flashrag``: generator calls at most (FlashRAG ``max_iter``); the
            answer is empty when none wrote "So the final answer is: ". ``reader``:
            follow-ups answered at most; then the final answer is forced.
        single_hop: ``flashrag`` only: the single-hop prompt ("Are follow up questions
            needed here: No." and direct-answer exemplars) instead of the multi-hop one.
        contexts: ``flashrag`` only: ``"replace"`` (FlashRAG: a follow-up's top-k replace
            the contexts in the prompt) or ``"accumulate"`` (every retrieval's chunks so
            far, each once, oldest first).
        order: ``reader`` only: order of a follow-up's chunks in the reader prompt (see ``rag``).
        max_new_tokens: Budget of every generator call (``reader``: each step and the
            forced final answer).
        follow_up_max_new_tokens: ``reader`` only: budget of each reader call.
        temperature: 0 = greedy.
    """

    variant: Literal["flashrag", "reader"] = option(
        "flashrag", source="FlashRAG active_pipeline.py SelfAskPipeline"
    )
    chunk_size: int = option(
        100, min=1, source="FlashRAG retrieval corpus wiki18_100w: 100-word passages"
    )
    top_k: int = option(5, min=1, source="FlashRAG config retrieval_topk: 5")
    max_iterations: int = option(
        5, min=0, source="FlashRAG SelfAskPipeline max_iter=5 (run_exp.py retrobust)"
    )
    single_hop: bool = option(
        False, source="FlashRAG run_exp.py retrobust: SelfAskPipeline(single_hop=False)"
    )
    contexts: Literal["replace", "accumulate"] = option(
        "replace", source="FlashRAG SelfAskPipeline.run_item: retrieval_result replaced"
    )
    order: Literal["document", "rank"] = option(
        "document", source="LongBench v2 pred.py --rag: sort by c_idx"
    )
    max_new_tokens: int = option(
        100, min=1, source="FlashRAG run_exp.py retrobust generation_params max_tokens=100"
    )
    follow_up_max_new_tokens: int = option(64, min=1, source="ours: one short sentence")
    temperature: float = option(0.0, min=0.0, source="FlashRAG generation_params do_sample: False")
