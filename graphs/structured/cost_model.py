"""The structured strategy's cost model: a schema plan, one extraction per document window, then SQL
and the answer per question (records already cached make a run cheaper than this plan)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.graphs.plugin.api import (
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    TEMPLATE_TOKENS,
    Calls,
    CorpusShape,
    CostPlan,
    Costs,
    ExpectedCost,
    IndexWork,
    prompt_tokens,
    reply_tokens,
    titles,
    tool_schema_tokens,
)
from longctx.graphs.structured import prompts as P
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.functions import SCHEMA_FUNCTION
from longctx.retrieval.contract import Question


def structured_costs(
    cfg: StructuredConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """A schema plan (none with a fixed schema), one extraction per document window, SQL, the
    answer.

    Records already extracted for this schema are reused by later questions, so a run over a
    cached corpus makes fewer calls than this plan (which counts every window once). Typically
    the plan and the extractions run once per corpus (no retry), then the SQL and the answer per
    question.
    """
    step = max(1, cfg.window_tokens - cfg.window_overlap)
    windows = sum(
        max(1, math.ceil(max(n - cfg.window_overlap, 1) / step)) for n in shape.token_counts
    )
    plan_calls = 0 if cfg.schema else 1
    k = len(questions)
    shortest, longest = titles(shape, llm)
    seam = SEAM_TOKENS

    def bare(name: str, template: str, **fields: Any) -> int:
        return prompt_tokens("structured", name, lambda: template.format(**fields), llm)

    # each call's template with every schema-, model- and result-written field empty (a lower
    # bound), per question its own text
    template = P.EXTRACT_TEMPLATES[cfg.extract_order]
    extract_bare = bare(
        f"extract:{cfg.extract_order}:{shortest}",
        template,
        entity="",
        period="",
        table="",
        columns="",
        title=shortest,
        part="",
        text="",
        how="",
    )
    each_q = [
        (
            prompt_tokens(
                "structured",
                "plan",
                lambda x=x: P.PLAN_PROMPT.format(  # type: ignore[misc]
                    question=x.render(), max_attributes=cfg.max_attributes, known="", how=""
                ),
                llm,
                x,
            ),
            prompt_tokens(
                "structured",
                "sql",
                lambda x=x: P.SQL_PROMPT.format(  # type: ignore[misc]
                    create="",
                    entity="",
                    per_period="",
                    rule="",
                    samples="",
                    distinct="",
                    question=x.render(),
                    table="",
                ),
                llm,
                x,
            ),
            min(
                prompt_tokens(
                    "structured",
                    "answer",
                    lambda x=x: P.ANSWER_PROMPT.format(  # type: ignore[misc]
                        question=x.render(),
                        table="",
                        columns="",
                        sql="",
                        n_rows="",
                        truncated="",
                        header="",
                        result="",
                        instruction=x.instruction or P.DEFAULT_INSTRUCTION,
                    ),
                    llm,
                    x,
                ),
                prompt_tokens(
                    "structured",
                    "answer_no_sql",
                    lambda x=x: P.ANSWER_NO_SQL.format(  # type: ignore[misc]
                        error="",
                        samples="",
                        question=x.render(),
                        instruction=x.instruction or P.DEFAULT_INSTRUCTION,
                    ),
                    llm,
                    x,
                ),
            ),
        )
        for x in questions or [PLACEHOLDER_QUESTION]
    ]
    plan_least = min(e[0] for e in each_q) - 2 * seam
    asked_least = min(e[1] + e[2] for e in each_q) - 8 * seam
    # the schema's own text (columns, CREATE, the JSON form), at most max_attributes columns; the
    # retry notes, model-written text
    schema = cfg.max_attributes * 48 + TEMPLATE_TOKENS
    written = max(cfg.plan_max_tokens, cfg.sql_max_tokens) + TEMPLATE_TOKENS
    # in tools mode the schema plan also sends its function's schema (counted by the guard)
    schema_function = tool_schema_tokens("structured", SCHEMA_FUNCTION, llm)
    plan_most = max(e[0] for e in each_q) + TEMPLATE_TOKENS + written + schema_function
    asked_most = (
        max(e[1] + e[2] for e in each_q) + 2 * (schema + written) + cfg.answer_result_tokens
    )
    calls = plan_calls + windows + k * 2
    max_calls = (
        plan_calls * (1 + cfg.retries) + windows * (1 + cfg.retries) + k * (1 + cfg.sql_retries + 1)
    )
    # a window past a document's first repeats the overlap
    text = shape.tokens + (windows - shape.documents) * cfg.window_overlap
    extract = max(0, shape.tokens + windows * (extract_bare - 6 * seam))
    extract_most = text + windows * (
        bare(
            f"extract:{cfg.extract_order}:{longest}",
            template,
            entity="",
            period="",
            table="",
            columns="",
            title=longest,
            part=" (part 9999 of 9999)",
            text="",
            how="",
        )
        + schema
        + 6 * seam
    )
    prompt = plan_calls * max(0, plan_least) + extract + k * max(0, asked_least)
    max_prompt = (
        plan_calls * (1 + cfg.retries) * plan_most
        + (1 + cfg.retries) * extract_most
        + k * (1 + cfg.sql_retries) * asked_most
    )
    fixed = (plan_least + plan_most) / 2
    per_question = max(0, asked_least) + (asked_most - max(0, asked_least)) / 4
    completion = (
        plan_calls * cfg.plan_max_tokens
        + windows * cfg.extract_max_tokens
        + k * (cfg.sql_max_tokens + cfg.answer_max_tokens)
    )
    bounds = CostPlan(
        strategy="structured",
        questions=k,
        calls=calls,
        max_calls=max_calls,
        prompt_tokens=prompt,
        max_prompt_tokens=max_prompt,
        completion_tokens=completion,
        formula=(
            f"{plan_calls} plan + {windows:,} document windows + SQL + answer per question "
            "(cached records: fewer)"
        ),
        details={"windows": windows, "tool_schema_tokens": {"plan": schema_function}},
        index=IndexWork(
            what=f"the records of {windows:,} document windows",
            calls=windows,
            max_calls=windows * (1 + cfg.retries),
            prompt_tokens=extract,
            max_prompt_tokens=(1 + cfg.retries) * extract_most,
            completion_tokens=windows * cfg.extract_max_tokens,
        ),
    )
    # index time (Usage.index_*): the records later questions reuse
    extraction = Calls(windows, (extract + extract_most) / 2, windows * 150)
    once = Calls(
        plan_calls + extraction.calls,
        plan_calls * fixed + extraction.prompt_tokens,
        plan_calls * min(cfg.plan_max_tokens, 300) + extraction.completion_tokens,
    )
    each = Calls(2, per_question, 100 + reply_tokens(cfg, "answer_max_tokens"))
    return Costs(bounds, ExpectedCost(each, once, index=extraction))


__all__ = ["structured_costs"]
