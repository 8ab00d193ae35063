"""Self-Ask's cost model (its calls and tokens before any call;
:mod:`longctx.graphs.metering.costs`), from its own prompts."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    Calls,
    CorpusShape,
    Costs,
    ExpectedCost,
    Retrievals,
    per_question_plan,
    prompt_tokens,
    reply_tokens,
    tokens_of,
    with_rerank,
)
from longctx.graphs.self_ask.config import SelfAskConfig
from longctx.graphs.self_ask.flashrag import flashrag_prompt
from longctx.graphs.self_ask.reader import self_ask_prompt
from longctx.retrieval.contract import Question


def self_ask_costs(
    cfg: SelfAskConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """Up to ``max_iterations`` generator calls (FlashRAG); the reader variant also answers each
    follow-up.

    Each call carries the few-shot template with the question (counted from the real prompt),
    the top-k chunks (all retrieved so far with ``contexts="accumulate"``), and at most the
    transcript so far. Typically 2 calls per question (a follow-up and the answer), each with the
    template and ``top_k`` chunks.
    """

    def template(q: Question) -> str:
        return (
            flashrag_prompt(q, [], "", single_hop=cfg.single_hop)
            if cfg.variant == "flashrag"
            else self_ask_prompt(q, "")
        )

    # each question's template, counted as the budget guard counts (the least and the most over the
    # questions)
    bases = [
        prompt_tokens(
            "self_ask", f"{cfg.variant}:{cfg.single_hop}", functools.partial(template, q), llm, q
        )
        for q in questions or [PLACEHOLDER_QUESTION]
    ]
    base, base_most = min(bases), max(bases)
    chunk = tokens_of(cfg.chunk_size, "words")
    if cfg.variant == "flashrag":
        least, most = min(1, cfg.max_iterations), cfg.max_iterations
        formula = f"1 to max_iterations ({cfg.max_iterations}) generator calls"
    else:
        least, most = 1, 2 * cfg.max_iterations + 2
        formula = f"1 to 2 x max_iterations + 2 ({most}) calls"
    contexts = min(shape.tokens, cfg.top_k * chunk)
    widest = (
        min(shape.tokens, max(most, 1) * cfg.top_k * chunk)
        if cfg.contexts == "accumulate"
        else contexts
    )
    transcript = most * max(cfg.max_new_tokens, cfg.follow_up_max_new_tokens)
    bounds = per_question_plan(
        "self_ask",
        questions,
        calls=least,
        max_calls=most,
        prompt_tokens=least * (base + contexts),
        max_prompt_tokens=most * (base_most + widest + transcript),
        completion_tokens=least * cfg.max_new_tokens,
        formula=formula,
    )
    calls = min(2, most)
    found = Costs(
        bounds,
        ExpectedCost(Calls(calls, calls * (base + contexts), calls * reply_tokens(cfg))),
    )
    # retrievals: flashrag's of the question and of each follow-up (one per generator call at most);
    # the reader's of each follow-up
    first = 1 if cfg.variant == "flashrag" else 0
    searched = Retrievals(
        least=first,
        most=first + cfg.max_iterations,
        typical=min(first + 1, first + cfg.max_iterations),
    )
    return with_rerank(found, cfg, shape, questions, retrievals=searched, llm=llm)
