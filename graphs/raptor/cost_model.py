"""RAPTOR's cost model: one answer call per question, and once per corpus the tree's summaries
(none when the tree is already cached, so the least run is the answer calls alone)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    RAG_TEMPLATE,
    SEAM_TOKENS,
    Calls,
    CorpusShape,
    CostPlan,
    Costs,
    ExpectedCost,
    IndexWork,
    fill,
    prompt_tokens,
    reply_tokens,
)
from longctx.graphs.raptor import prompts as P
from longctx.graphs.raptor.config import RaptorConfig
from longctx.graphs.raptor.tree import leaf_count
from longctx.retrieval.contract import Question

#: Nodes per cluster, typically, in a layer of fewer than :data:`LARGE_LAYER` nodes (measured: 24
#: leaves gave 6 clusters, 60 fixed nodes 25 after re-clustering).
NODES_PER_CLUSTER = 4
#: From this many nodes a layer's clusters hold about :data:`NODES_PER_CLUSTER_LARGE` nodes
#: (measured, docs/scale.md: the official clustering of 1,000 MiniLM leaves 7.5; the scalable one of
#: a 1M-token layer's 10,656 leaves 7.4-8.3, of a 10M-token layer's 106,669 leaves 12.2 and then
#: 10.8, 13.4: the 10M plan is ~1.6x the calls its tree asked).
LARGE_LAYER = 1000
NODES_PER_CLUSTER_LARGE = 8


def typical_layers(leaves: int, cfg: RaptorConfig) -> list[int]:
    """Clusters per summary layer, typically: a quarter of the nodes below (an eighth from
    :data:`LARGE_LAYER` nodes), while a layer has more than ``reduction_dimension + 1`` nodes."""
    out: list[int] = []
    n = leaves
    while len(out) < cfg.num_layers and n > cfg.reduction_dimension + 1:
        n = max(
            1, math.ceil(n / (NODES_PER_CLUSTER_LARGE if n >= LARGE_LAYER else NODES_PER_CLUSTER))
        )
        out.append(n)
    return out


def summary_prompt_tokens(llm: BaseChatModel | None) -> int:
    """Tokens of one summary call's prompt without the texts it summarises (counted as the budget
    guard counts: ``llm``'s tokenizer)."""
    return prompt_tokens(
        "raptor",
        "summary",
        lambda: P.SUMMARY_SYSTEM + "\n" + P.SUMMARY_TEMPLATE.format(context=""),
        llm,
    )


def raptor_costs(
    cfg: RaptorConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """Per question one answer call over at most ``context_tokens`` of nodes; once per corpus one
    summary per cluster per layer."""
    k = len(questions)
    each_q = [
        prompt_tokens("raptor", "answer", functools.partial(_answer_prompt, cfg, x), llm, x)
        for x in questions or [PLACEHOLDER_QUESTION]
    ]
    summary = summary_prompt_tokens(llm)
    # the nodes and their blank-line separators
    context = min(cfg.context_tokens, shape.tokens) + 2 * cfg.top_k
    # the leaves the corpus makes where it is known (a budget's plan), else chunks of chunk_tokens
    # (the run plan)
    real = leaf_count(shape.corpus, cfg.chunk_tokens) if shape.corpus is not None else None
    leaves = (
        real
        if real is not None
        else sum(max(1, math.ceil(n / cfg.chunk_tokens)) for n in shape.token_counts if n > 0)
    )
    layers = typical_layers(leaves, cfg)
    below = [leaves, *layers[:-1]]
    once_calls = sum(layers)
    # the texts each layer summarises
    read = (shape.tokens if layers else 0) + sum(b * cfg.summary_tokens for b in below[1:])
    once_prompt = sum(c * summary for c in layers) + read + 2 * sum(below[: len(layers)])
    # the most: the leaves the corpus makes (without it, a leaf per sentence: at most one per
    # token), every layer as many clusters as nodes below it, each reading all of them
    most_leaves = (
        (real if real is not None else shape.tokens) if leaves > cfg.reduction_dimension + 1 else 0
    )
    max_index_calls = cfg.num_layers * most_leaves
    max_index_prompt = (
        cfg.num_layers
        * (shape.tokens + most_leaves * (cfg.summary_tokens + summary + 2 + SEAM_TOKENS))
        if most_leaves
        else 0
    )
    least = k * max(0, min(each_q) - 2 * SEAM_TOKENS)
    most = k * (max(each_q) + context + 2 * SEAM_TOKENS) + max_index_prompt
    bounds = CostPlan(
        strategy="raptor",
        questions=k,
        calls=k,
        max_calls=k + max_index_calls,
        prompt_tokens=least,
        max_prompt_tokens=most,
        completion_tokens=k * cfg.max_new_tokens + max_index_calls * cfg.summary_tokens,
        formula=(
            "1 answer call per question; once per corpus one summary per cluster per layer (none "
            "when the tree is cached)"
        ),
        details={"leaves": leaves, "typical_clusters_per_layer": layers},
        index=IndexWork(
            what="the tree's summaries, one per cluster per layer",
            calls=0,
            max_calls=max_index_calls,
            prompt_tokens=0,
            max_prompt_tokens=max_index_prompt,
            completion_tokens=max_index_calls * cfg.summary_tokens,
        ),
    )
    per_question = Calls(1, sum(each_q) / len(each_q) + context / 2, reply_tokens(cfg))
    once = Calls(once_calls, once_prompt, once_calls * cfg.summary_tokens)
    # the tree is all of what is built once
    return Costs(bounds, ExpectedCost(per_question, once, index=once))


def _answer_prompt(cfg: RaptorConfig, question: Question) -> str:
    """The answer call's text without its nodes (the system turn counted with the user turn for
    ``paper``)."""
    if cfg.qa_prompt == "paper":
        return P.QA_SYSTEM + "\n" + P.QA_TEMPLATE.format(context="", question=question.render())
    return fill(RAG_TEMPLATE, "", question)
