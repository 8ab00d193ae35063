"""PAI's cost model (its calls and tokens before any call; :mod:`longctx.graphs.metering.costs`),
from its own prompts."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel

from longctx.graphs.pai import prompts as P
from longctx.graphs.pai.config import PaiConfig
from longctx.graphs.pai.judging import JUDGE_TEMPLATES, choose_mode
from longctx.graphs.plugin.api import (
    ANSWER_TOKENS,
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    TEMPLATE_TOKENS,
    Calls,
    CorpusShape,
    Costs,
    ExpectedCost,
    Retrievals,
    chunk_headers,
    per_question_plan,
    prompt_tokens,
    titles,
    tokens_of,
    tool_schema_tokens,
    with_rerank,
)
from longctx.retrieval.contract import Question

#: Typical properties of a PAI question (its judge calls multiply by this; expected cost only).
TYPICAL_PROPERTIES = 2


def pai_costs(
    cfg: PaiConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
    strategy: str = "pai",
) -> Costs:
    """Properties, then N_p x C judge calls (exhaustive) or N_p x min(K, C) (prefilter), N_p
    sub-answers, 1 summary.

    Typically :data:`TYPICAL_PROPERTIES` properties (at most ``max_items``), each judged over its
    chunks once, with a sub-answer reading half its context budget; one decomposition and one
    summary.
    """
    t = shape.tokens
    chunk = tokens_of(cfg.chunk_size, cfg.chunk_unit)
    c = max(1, sum(math.ceil(n / chunk) for n in shape.token_counts))  # chunks are cut per document
    mode = choose_mode(cfg, t)
    judged = c if mode == "exhaustive" else min(cfg.top_k, c)
    shortest, longest = titles(shape, llm)
    decompose = P.PROPERTY_PROMPT if strategy == "pai" else P.SUB_QUESTION_PROMPT
    judge = [
        prompt_tokens(
            strategy,
            f"judge:{i}:{title}",
            functools.partial(tpl.format, sub_question="", title=title, chunk=""),
            llm,
        )
        for title in (shortest, longest)
        for i, tpl in enumerate(JUDGE_TEMPLATES.values())
    ]
    answer = prompt_tokens(
        strategy,
        "sub_answer",
        lambda: P.SUB_ANSWER_PROMPT.format(
            context="", sub_question="", form=P.PROPERTY_ANSWER_FORM
        ),
        llm,
    )
    own = []  # per question: its decomposition's and its summary's text (no "how", no findings)
    for x in questions or [PLACEHOLDER_QUESTION]:
        instruction = x.instruction or P.DEFAULT_SUMMARY_INSTRUCTION
        own.append(
            prompt_tokens(
                strategy, "decompose", functools.partial(_decompose_prompt, decompose, x), llm, x
            )
            + prompt_tokens(
                strategy, "summary", functools.partial(_summary_prompt, x, instruction), llm, x
            )
        )
    seam = SEAM_TOKENS
    judged_text = t if mode == "exhaustive" else min(t, judged * chunk)
    # at least (counted from the real templates, every model-written part empty): the decomposition,
    # one property judged over its chunks, the summary; no sub-answer (none is called when no chunk
    # is kept)
    calls = 1 + judged + 1
    prompt = max(0, min(own) - 2 * seam + judged * (min(judge[:2]) - 3 * seam) + judged_text)
    # at most: decomposition retried, max_items properties, every judge retried, sub-answers,
    # summary; each model-written part at its reply budget (a sub-question at most the
    # decomposition's), the "how" and a retry note an allowance
    n_max = cfg.max_items
    written = cfg.extract_max_tokens + TEMPLATE_TOKENS
    judge_tokens = min(t, judged * chunk) + judged * (max(judge) + written + 3 * seam)
    sub_prompt = (
        min(t, cfg.sub_answer_context_tokens)
        + answer
        + written
        + n_max * chunk_headers(1, longest, llm)
    )
    max_calls = (1 + cfg.retries) + n_max * judged * (1 + cfg.judge_retries) + n_max + 1
    # in tools mode the decomposition and every judge call also send their function's schema
    # (counted by the guard)
    schemas = {
        "decompose": tool_schema_tokens(
            strategy, P.PROPERTY_FUNCTION if strategy == "pai" else P.SUB_QUESTION_FUNCTION, llm
        ),
        "judge": tool_schema_tokens(strategy, P.KEEP_CONTEXT_FUNCTION, llm),
    }
    max_prompt = (
        (1 + cfg.retries) * (max(own) + written + schemas["decompose"])
        + n_max * sub_prompt
        + n_max * (1 + cfg.judge_retries) * (judge_tokens + judged * schemas["judge"])
        + n_max * cfg.sub_answer_max_tokens
    )
    completion = cfg.extract_max_tokens + judged * cfg.judge_max_tokens + cfg.summary_max_tokens
    formula = (
        f"N_p x {judged:,} judge calls ({mode}: "
        f"{'C = T/' + str(chunk) if mode == 'exhaustive' else 'min(K, C)'}), N_p 1-{n_max}, + "
        "N_p sub-answers + 2"
    )
    bounds = per_question_plan(
        strategy,
        questions,
        calls=calls,
        max_calls=max_calls,
        prompt_tokens=prompt,
        max_prompt_tokens=max_prompt,
        completion_tokens=completion,
        formula=formula,
        judged_chunks=judged,
        mode=mode,
        tool_schema_tokens=schemas,
    )
    p = max(1, min(n_max, TYPICAL_PROPERTIES))
    # a question's decomposition or summary, with a short "how" or findings
    fixed = max(own) / 2 + ANSWER_TOKENS
    judge_typical = min(t, judged * chunk) + judged * (max(judge[:2]) + 16)
    typical = Calls(
        2 + p * (judged + 1),
        2 * fixed + p * (judge_typical + answer + min(t, cfg.sub_answer_context_tokens) / 2),
        2 * ANSWER_TOKENS + p * (judged * 8 + ANSWER_TOKENS),
    )
    # one per sub-question
    searched = (
        Retrievals(least=1, most=n_max, typical=p)
        if mode == "prefilter"
        else Retrievals(least=0, most=0, typical=0)
    )
    return with_rerank(
        Costs(bounds, ExpectedCost(typical)),
        cfg,
        shape,
        questions,
        retrievals=searched,
        llm=llm,
    )


def pai_minus_costs(
    cfg: PaiConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """PAI's costs (sub-questions generated directly instead of properties: the same counts)."""
    return pai_costs(cfg, shape, questions, llm=llm, window=window, strategy="pai_minus")


def _decompose_prompt(template: str, question: Question) -> str:
    """The decomposition prompt of ``question`` without its "how" (what a plan counts of it)."""
    return template.format(question=question.render(), how="")


def _summary_prompt(question: Question, instruction: str) -> str:
    """The summary prompt of ``question`` without its findings (what a plan counts of it)."""
    return P.SUMMARY_PROMPT.format(question=question.render(), findings="", instruction=instruction)
