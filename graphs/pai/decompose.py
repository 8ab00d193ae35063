"""PAI's first stage: properties from the question alone (PAI), or sub-questions directly (PAI-).

Several properties per question come back as **parallel tool calls of the paper's own
one-property function** (``property_calls="parallel"``, the default): the schema stays
verbatim (Fig. 4), and Fig. 8 shows one ``{'metric', 'subject'}`` dict per property, as
one call's arguments would be. ``property_calls="list"`` wraps the same item schema in an
array so one forced call returns them all (for servers without parallel calls). Without
tool support the model is asked for ``{"items": [...]}`` JSON text; either way each item
is validated and a malformed reply retried. When every attempt fails, the question itself
becomes the only sub-question and the errors are recorded in the step.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from pydantic import BaseModel

from longctx.graphs.pai import prompts as P
from longctx.graphs.pai.calls import CallOutcome, PropertyArgs, SubQuestionArgs, call_structured
from longctx.graphs.pai.config import PaiConfig
from longctx.graphs.plugin.api import StrategyContext, resolve_tool_mode
from longctx.retrieval.contract import Question, Step


def resolve_domain(domain: str, question: Question) -> str:
    """The configured domain, or under ``"auto"`` the question's ``metadata["domain"]`` mapped to
    ours."""
    if domain != "auto":
        return domain
    label = str(question.metadata.get("domain", "")).lower()
    return P.DOMAIN_ALIASES.get(label, "general")


def decompose_call(
    ctx: StrategyContext[PaiConfig],
    question: Question,
    *,
    template: str,
    function: dict[str, Any],
    item_model: type[BaseModel],
    item: str,
) -> tuple[CallOutcome, str]:
    """One structured decomposition call in the model's tool mode; returns the outcome and the
    mode."""
    cfg = ctx.config
    mode = resolve_tool_mode(ctx.llm, cfg.tool_mode)
    if mode == "json":
        how, schema, choice = P.json_instruction(function), None, None
    elif cfg.property_calls == "list":
        how, schema, choice = P.HOW_LIST.format(item=item), P.list_schema(function), "Query"
    else:
        how, schema, choice = P.HOW_PARALLEL.format(item=item), function, "any"
    prompt = template.format(question=question.render(), how=how)
    out = call_structured(
        ctx.llm,
        prompt,
        item_model=item_model,
        mode=mode,
        function=schema,
        tool_choice=choice,
        retries=cfg.retries,
        max_tokens=cfg.extract_max_tokens,
        temperature=cfg.temperature,
    )
    return out, mode


def dedupe_and_cap(
    items: list[dict[str, Any]], cap: int
) -> tuple[list[dict[str, Any]], int, list[dict[str, Any]]]:
    """Items in order without exact repeats, at most ``cap``; also the repeat count and the items
    cut."""
    unique: list[dict[str, Any]] = []
    for item in items:
        if item not in unique:
            unique.append(item)
    return unique[:cap], len(items) - len(unique), unique[cap:]


def _step(
    node: str,
    out: CallOutcome,
    mode: str,
    items: list[dict[str, Any]],
    repeats: int,
    cut: list[dict[str, Any]],
    **extra: Any,
) -> Step:
    """The decomposition's trace entry: items, attempts, every error, and whether it degraded."""
    step = Step(
        node,
        tool_mode=mode,
        attempts=out.attempts,
        items=items,
        repeats_removed=repeats,
        cut_over_max_items=cut,
        **extra,
    )
    if out.errors:
        step["errors"] = out.errors
    if not out.ok:
        step["degraded"] = (
            "no valid reply after the retries: the question itself is the only sub-question"
        )
    return step


def _fallback(question: Question) -> list[dict[str, Any]]:
    """The degraded plan: the question itself as the only sub-question."""
    return [{"text": question.text, "metric": None, "subject": None}]


def extract_properties(
    state: dict[str, Any], runtime: Runtime[StrategyContext[PaiConfig]]
) -> dict[str, Any]:
    """Properties by function calling with the domain's examples, then one sub-question each."""
    ctx, question = runtime.context, state["question"]
    domain = resolve_domain(ctx.config.domain, question)
    function = P.fill_schema(P.PROPERTY_FUNCTION, domain)
    out, mode = decompose_call(
        ctx,
        question,
        template=P.PROPERTY_PROMPT,
        function=function,
        item_model=PropertyArgs,
        item="property",
    )
    properties, repeats, cut = dedupe_and_cap(out.items, ctx.config.max_items)
    subs = [{"text": P.SUB_QUESTION_TEMPLATE.format(**p), **p} for p in properties] or _fallback(
        question
    )
    step = _step(
        "extract_properties",
        out,
        mode,
        properties,
        repeats,
        cut,
        domain=domain,
        property_calls=ctx.config.property_calls,
        sub_questions=[s["text"] for s in subs],
    )
    return {"tool_mode": mode, "properties": properties, "sub_questions": subs, "steps": [step]}


def generate_sub_questions(
    state: dict[str, Any], runtime: Runtime[StrategyContext[PaiConfig]]
) -> dict[str, Any]:
    """PAI-: sub-questions asked for directly (same function-calling machinery, no properties)."""
    ctx, question = runtime.context, state["question"]
    function = dict(P.SUB_QUESTION_FUNCTION)
    out, mode = decompose_call(
        ctx,
        question,
        template=P.SUB_QUESTION_PROMPT,
        function=function,
        item_model=SubQuestionArgs,
        item="sub-question",
    )
    items, repeats, cut = dedupe_and_cap(out.items, ctx.config.max_items)
    subs = [
        {"text": i["sub_question"], "metric": None, "subject": None} for i in items
    ] or _fallback(question)
    step = _step(
        "generate_sub_questions",
        out,
        mode,
        items,
        repeats,
        cut,
        sub_questions=[s["text"] for s in subs],
    )
    return {"tool_mode": mode, "properties": [], "sub_questions": subs, "steps": [step]}
