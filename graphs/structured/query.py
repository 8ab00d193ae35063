"""The Query and answer nodes: model-written SQL over the reduced table, run read-only under hard
limits (:mod:`longctx.memory.records.database`), errors back to the model; then the final call over
the result, with the cells behind it as evidence."""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from langgraph.runtime import Runtime

from longctx.graphs.plugin.api import (
    QueryRefused,
    QueryResult,
    QueryTimeout,
    QueryTooLarge,
    StrategyContext,
    Table,
    build_database,
    clean_sql,
    complete,
    context_window,
    count_tokens,
    create_statement,
    decode,
    encode,
    entity_key,
    run_query,
)
from longctx.graphs.structured import prompts as P
from longctx.graphs.structured.config import PROMPT_OVERHEAD, StructuredConfig
from longctx.graphs.structured.extract import dumps
from longctx.graphs.structured.functions import describe
from longctx.graphs.structured.state import StructuredState
from longctx.retrieval.contract import Evidence, Step


def _samples(table: Table, n: int) -> str:
    if not n or not table.rows:
        return ""
    shown = table.rows[:n]
    lines = "\n".join(dumps([r[c] for c in table.schema.columns]) for r in shown)
    return (
        f"\nFirst {len(shown)} of {len(table.rows)} rows ({', '.join(table.schema.columns)}):\n"
        f"{lines}\n"
    )


def _distinct(table: Table, n: int) -> str:
    if not n:
        return ""
    lines = []
    for a in table.schema.attributes:
        if a.type in ("text", "boolean"):
            values = sorted({str(r[a.name]) for r in table.rows if r.get(a.name) is not None})
            if values:
                more = f" (and {len(values) - n} more)" if len(values) > n else ""
                lines.append(f"- {a.name}: {dumps(values[:n])}{more}")
    return "\nValues of the text columns:\n" + "\n".join(lines) + "\n" if lines else ""


def query(
    state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """Model-written SQL run read-only; an error goes back to the model, at most ``sql_retries``
    times."""
    ctx, cfg, question, table = (
        runtime.context,
        runtime.context.config,
        state["question"],
        state["table"],
    )
    schema = table.schema
    conn = build_database(
        table,
        max_value_bytes=cfg.sql_max_value_bytes,
        heap_limit_bytes=cfg.sql_heap_limit_mb * 2**20,
    )
    per_period = f" and {schema.time.name}" if schema.time else ""
    rule = (
        "the latest document's value is kept"
        if cfg.conflict_rule == "latest_document"
        else "the first document's value is kept"
    )
    base = P.SQL_PROMPT.format(
        create=create_statement(schema),
        entity=schema.entity,
        per_period=per_period,
        rule=rule,
        samples=_samples(table, cfg.sample_rows),
        distinct=_distinct(table, cfg.distinct_values),
        question=question.render(),
        table=schema.table,
    )
    attempts: list[dict[str, Any]] = []
    result: QueryResult | None = None
    sql, error = "", None
    try:
        for _ in range(cfg.sql_retries + 1):
            prompt = base if error is None else base + P.SQL_RETRY.format(sql=sql, error=error)
            sql = clean_sql(
                complete(
                    ctx.llm, prompt, max_tokens=cfg.sql_max_tokens, temperature=cfg.temperature
                )
            )
            try:
                result = run_query(
                    conn,
                    sql,
                    timeout_s=cfg.sql_timeout_s,
                    max_rows=cfg.max_result_rows,
                    max_result_bytes=cfg.max_result_bytes,
                    max_cell_chars=cfg.max_cell_chars,
                )
                error = None
                attempts.append({"sql": sql})
                break
            except (QueryRefused, QueryTimeout, QueryTooLarge, sqlite3.Error) as exc:
                error = f"{type(exc).__name__}: {exc}"
                attempts.append({"sql": sql, "error": error})
    finally:
        conn.close()
    data = (
        {"columns": result.columns, "rows": result.rows, "truncated": result.truncated}
        if result
        else None
    )
    step = Step(
        "query",
        sql=sql,
        attempts=attempts,
        ok=result is not None,
        error=error,
        columns=result.columns if result else None,
        rows=result.rows[:20] if result else None,
        n_rows=len(result.rows) if result else 0,
        truncated=result.truncated if result else False,
        result_bytes=result.nbytes if result else 0,
        cut_cells=result.cut_cells if result else 0,
        seconds=round(result.seconds, 4) if result else None,
    )
    return {"sql": sql, "result": data, "query_error": error, "steps": [step]}


def evidence_cells(
    table: Table, sql: str, result: dict[str, Any] | None, limit: int
) -> list[Evidence]:
    """The cells behind the result: the columns the SQL names, for the entities in the result rows
    (every entity when the result names none, e.g. a count), in the periods the SQL names."""
    if not result or not limit:
        return []
    schema = table.schema
    units = {a.name: a.unit for a in schema.attributes}
    named = [a.name for a in schema.attributes if re.search(rf"\b{re.escape(a.name)}\b", sql)] or [
        a.name for a in schema.attributes
    ]
    in_rows = {entity_key(v) for row in result["rows"] for v in row if isinstance(v, str)} & set(
        table.display
    )
    periods = (
        {int(y) for y in re.findall(r"\b(\d{4})\b", sql)}
        if schema.time and schema.time.type == "year"
        else set()
    )
    periods &= {k[1] for k in table.cells}
    chosen = [
        c
        for (ek, p, attr), c in table.cells.items()
        if attr in named
        and (not in_rows or ek in in_rows)
        and (p is None or not periods or p in periods)
    ]
    chosen.sort(key=lambda c: (entity_key(c.entity), str(c.period), c.attribute))
    out = []
    for rank, c in enumerate(chosen[:limit]):
        when = f" | {c.period}" if c.period is not None else ""
        unit = f" {units[c.attribute]}" if units.get(c.attribute) else ""
        unchecked = " [quote not found in the text read]" if c.quote_found is False else ""
        text = (
            f"{table.display[entity_key(c.entity)]}{when} | {c.attribute} = {c.value}{unit} (as "
            f'written: {c.raw}): "{c.quote}"{unchecked}'
        )
        out.append(Evidence(doc_id=c.doc_id, title=c.title, text=text, rank=rank))
    return out


def result_text(rows: list[list[Any]], max_tokens: int) -> tuple[str, int]:
    """The result rows as JSON lines for the final prompt, within ``max_tokens`` (cl100k), and how
    many rows it shows whole: a row past the budget ends the text with a visible marker line
    naming the rows left out (a first row longer than the budget is shown cut)."""
    if not rows:
        return "(no rows)", 0
    lines: list[str] = []
    used = 0
    for i, row in enumerate(rows):
        line = dumps(row)
        n = count_tokens(line)
        if used + n > max_tokens:
            if i == 0:  # the first row alone is over the budget: its start, cut
                lines.append(decode(encode(line)[: max(0, max_tokens - 32)]) + " ... [row cut]")
            left = len(rows) - i - (i == 0)
            lines.append(
                f"... [{left} of {len(rows)} rows not shown: the result shown is limited to "
                f"{max_tokens:,} tokens]"
            )
            return "\n".join(lines), i
        lines.append(line)
        used += n
    return "\n".join(lines), len(rows)


def format_answer(
    state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """The final call over the SQL result, in the benchmark's format and answer budget."""
    ctx, cfg, question, table = (
        runtime.context,
        runtime.context.config,
        state["question"],
        state["table"],
    )
    instruction = question.instruction or P.DEFAULT_INSTRUCTION
    result = state.get("result")
    max_tokens = question.answer_budget(cfg.answer_max_tokens)
    shown = 0
    if result is not None:
        room = max(
            64,
            min(
                cfg.answer_result_tokens,
                context_window(ctx.llm, 10**9) - max_tokens - 2 * PROMPT_OVERHEAD,
            ),
        )
        rows, shown = result_text(result["rows"], room)
        cut = result["truncated"] or shown < len(result["rows"])
        prompt = P.ANSWER_PROMPT.format(
            question=question.render(),
            table=table.schema.table,
            columns=describe(table.schema),
            sql=state["sql"],
            n_rows=len(result["rows"]),
            truncated=", cut" if cut else "",
            header=", ".join(result["columns"]),
            result=rows,
            instruction=instruction,
        )
    else:
        prompt = P.ANSWER_NO_SQL.format(
            error=state.get("query_error"),
            samples=_samples(table, cfg.sample_rows).strip() or "(empty table)",
            question=question.render(),
            instruction=instruction,
        )
    raw = complete(
        ctx.llm,
        prompt,
        max_tokens=max_tokens,
        temperature=question.answer_temperature(cfg.temperature),
    )
    evidence = evidence_cells(table, state.get("sql", ""), result, cfg.max_evidence)
    step = Step(
        "format_answer",
        max_new_tokens=max_tokens,
        from_sql=result is not None,
        result_rows_shown=shown,
        evidence=len(evidence),
        evidence_documents=len({e.doc_id for e in evidence}),
    )
    return {"raw": raw, "answer": raw.strip(), "evidence": evidence, "steps": [step]}


__all__ = ["evidence_cells", "format_answer", "query", "result_text"]
