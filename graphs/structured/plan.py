"""The Plan node: the table schema of a question, from the config or a validated tool call that
sees the tables already filled from the corpus; an earlier schema that covers it is reused."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    Attribute,
    SchemaStore,
    StrategyContext,
    TableSchema,
    call_validated,
    parse_schema,
    resolve_tool_mode,
)
from longctx.graphs.structured import prompts as P
from longctx.graphs.structured.config import StructuredConfig
from longctx.graphs.structured.extract import bound_model
from longctx.graphs.structured.functions import SCHEMA_FUNCTION, summary
from longctx.graphs.structured.state import StructuredState
from longctx.graphs.structured.stores import schema_store
from longctx.retrieval.contract import Question, Step


def fallback_schema(question: Question) -> TableSchema:
    """The degraded plan: one text fact per entity answering the question, stated per document."""
    return TableSchema(
        entity="entity",
        entity_description="what the fact is about",
        attributes=[
            Attribute(
                name="fact", type="text", description=f"a fact that helps answer: {question.text}"
            )
        ],
    )


def known_schemas(store: SchemaStore | None) -> list[TableSchema]:
    """The valid schemas stored for the corpus, oldest first (none without a store)."""
    found: list[TableSchema] = []
    for data in store.load() if store is not None else []:
        try:
            found.append(TableSchema.model_validate(data))
        except ValueError:
            continue
    return found


def plan(
    state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """The table schema: from the config, or by a validated tool call that sees the tables
    already filled from the corpus; an earlier covering schema is reused."""
    ctx, cfg, question = runtime.context, runtime.context.config, state["question"]
    mode = resolve_tool_mode(ctx.llm, cfg.tool_mode)
    step: dict[str, Any] = {"tool_mode": mode}
    store = schema_store(ctx) if cfg.cache else None
    known = known_schemas(store) if cfg.reuse_schemas else []
    if cfg.schema is not None:
        schema = parse_schema(dict(cfg.schema))
        step["source"] = "config"
    else:
        how = P.PLAN_TOOLS if mode == "tools" else P.PLAN_JSON
        shown = known[-cfg.known_tables :] if cfg.known_tables else []
        listed = (
            P.PLAN_KNOWN.format(tables="\n".join(summary(k) for k in reversed(shown)))
            if shown
            else ""
        )
        prompt = P.PLAN_PROMPT.format(
            question=question.render(), max_attributes=cfg.max_attributes, known=listed, how=how
        )
        out = call_validated(
            ctx.llm,
            bound_model(ctx.llm, mode, SCHEMA_FUNCTION),
            prompt,
            lambda args: parse_schema(args[0], cfg.max_attributes),
            retries=cfg.retries,
            max_tokens=cfg.plan_max_tokens,
            temperature=cfg.temperature,
        )
        step.update(source="model", attempts=out.attempts, known_tables=len(shown))
        if out.errors:
            step["errors"] = out.errors
        if out.ok and out.value is not None:
            schema = out.value
        else:
            schema = fallback_schema(question)
            step["degraded"] = (
                "no valid schema after the retries: one text fact per entity is extracted instead"
            )
    if store is not None:
        # read again: a concurrent question may have added one
        for earlier in known_schemas(store) if cfg.reuse_schemas else []:
            if earlier.covers(schema):
                step["reused_schema"] = earlier != schema
                schema = earlier
                break
        store.add(schema.model_dump())
    step["schema"] = schema.model_dump()
    return {"schema": schema.model_dump(), "tool_mode": mode, "steps": [Step("plan", **step)]}


__all__ = ["fallback_schema", "known_schemas", "plan"]
