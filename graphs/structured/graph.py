"""Structured corpus analysis: Plan a table, Map every document to records, Reduce them to
one table, Query it with model-written SQL, answer in the benchmark's format.

    START -> plan -> map -> extract x documents (Send, max_concurrency) -> reduce -> query -> format_answer -> END
                              (map_executor="ray": map -> extract_ray -> reduce)

* ``plan``: the table schema by tool calling (validated, retried; a config ``schema``
  skips the call; a schema planned earlier on the same corpus that covers the new one is
  reused, so its records are too).
* ``map``: records of documents already extracted for (schema, model) come from the
  on-disk cache; the others are sent to ``extract``.
* ``extract``: one document, in windows when longer than the window; zero or more records
  per window, each value with its quote; a reply that stays malformed after the retries
  is recorded in an ``extract`` step (the document then gives no records and is not
  cached). Finished documents are cached at once: a killed run resumes from there.
  With ``map_executor="ray"``, ``extract_ray`` instead: the same extraction in Ray tasks
  (:mod:`~graphs.structured.ray_map`), into the same record log.
* ``reduce``: normalised values (:mod:`~graphs.structured.normalize`), restatements
  resolved (latest document wins by default) into one table.
* ``query``: SQL from the model over the schema, a few rows and the text columns' values;
  run read-only with a time limit; errors go back to the model (bounded retries).
* ``format_answer``: the final call (the benchmark's answer budget and format) over the
  SQL result; the evidence is the cells behind the result with their documents and quotes.
"""

from __future__ import annotations

import asyncio
import functools
import math
import operator
import re
import sqlite3
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from graphs import costs
from graphs.budget import CostPlan
from graphs.context import StrategyContext
from graphs.events import report_progress
from graphs.llm import complete, context_window, model_id
from graphs.pai.calls import resolve_tool_mode
from graphs.registry import STRATEGIES, SingleRun
from graphs.structured import prompts as P
from graphs.structured.cache import RecordCache, SchemaStore, document_fingerprint
from graphs.structured.ceiling import STRUCTURED_CEILING
from graphs.structured.config import StructuredConfig
from graphs.structured.database import (
    QueryRefused,
    QueryResult,
    QueryTimeout,
    QueryTooLarge,
    Table,
    build_database,
    clean_sql,
    create_statement,
    normalise_records,
    reduce_cells,
    run_query,
)
from graphs.structured.extract import call_validated, dumps, fits_untokenized
from graphs.structured.mapping import aextract_document, extract_document, extraction_model
from graphs.structured.normalize import entity_key
from graphs.structured.presentation import PRESENTATION, RAY_STAGE
from graphs.structured.ray_map import run_on_ray
from graphs.structured.schema import (
    SCHEMA_FUNCTION,
    Attribute,
    TableSchema,
    describe,
    parse_schema,
    schema_hash,
    summary,
)
from graphs.usage import index_time
from retrieval.contract import Corpus, Evidence, Question, Step
from retrieval.paths import default_cache_dir
from retrieval.tokens import count_tokens, count_tokens_batch, decode, encode

#: Tokens kept free of the model window for the extraction prompt's own text.
PROMPT_OVERHEAD = 1_024


class StructuredState(TypedDict, total=False):
    """What evolves during one answer (``extractions`` is written by ``Send`` branches)."""

    question: Question
    schema: dict[str, Any]
    tool_mode: str
    cache_key: str
    window: int
    loaded: dict[int, list[dict]]
    pending: list[int]
    fingerprints: dict[int, str]
    split: list[int]
    group_size: int
    extractions: Annotated[list[dict[str, Any]], operator.add]
    table: Table
    sql: str
    result: dict[str, Any] | None
    query_error: str | None
    raw: str
    answer: str
    evidence: list[Evidence]
    steps: Annotated[list[dict], operator.add]


def cache_root(ctx: StrategyContext[StructuredConfig]) -> Path:
    """The cache folder of the run (``cache_dir``, else ``$LONGCTX_CACHE_DIR`` or ``~/.cache/longctx``)."""
    return Path(ctx.cache_dir) if ctx.cache_dir is not None else default_cache_dir()


def fallback_schema(question: Question) -> TableSchema:
    """The degraded plan: one text fact per entity answering the question, stated per document."""
    return TableSchema(entity="entity", entity_description="what the fact is about",
                       attributes=[Attribute(name="fact", type="text", description=f"a fact that helps answer: {question.text}")])


def known_schemas(store: SchemaStore | None) -> list[TableSchema]:
    """The valid schemas stored for the corpus, oldest first (none without a store)."""
    found = []
    for data in store.load() if store is not None else []:
        try:
            found.append(TableSchema.model_validate(data))
        except ValueError:
            continue
    return found


def plan(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """The table schema: from the config, or by a validated tool call that sees the tables
    already filled from the corpus; an earlier covering schema is reused."""
    ctx, cfg, question = runtime.context, runtime.context.config, state["question"]
    mode = resolve_tool_mode(ctx.llm, cfg.tool_mode)
    step: dict[str, Any] = {"tool_mode": mode}
    store = SchemaStore(cache_root(ctx), ctx.corpus.fingerprint) if cfg.cache else None
    known = known_schemas(store) if cfg.reuse_schemas else []
    if cfg.schema is not None:
        schema = parse_schema(dict(cfg.schema))
        step["source"] = "config"
    else:
        how = P.PLAN_TOOLS if mode == "tools" else P.PLAN_JSON
        shown = known[-cfg.known_tables:] if cfg.known_tables else []
        listed = P.PLAN_KNOWN.format(tables="\n".join(summary(k) for k in reversed(shown))) if shown else ""
        prompt = P.PLAN_PROMPT.format(question=question.render(), max_attributes=cfg.max_attributes, known=listed, how=how)
        out = call_validated(ctx.llm, prompt, lambda args: parse_schema(args[0], cfg.max_attributes), mode=mode,
                             function=SCHEMA_FUNCTION, retries=cfg.retries, max_tokens=cfg.plan_max_tokens, temperature=cfg.temperature)
        step.update(source="model", attempts=out.attempts, known_tables=len(shown))
        if out.errors:
            step["errors"] = out.errors
        if out.ok:
            schema = out.value
        else:
            schema = fallback_schema(question)
            step["degraded"] = "no valid schema after the retries: one text fact per entity is extracted instead"
    if store is not None:
        for earlier in known_schemas(store) if cfg.reuse_schemas else []:  # read again: a concurrent question may have added one
            if earlier.covers(schema):
                step["reused_schema"] = earlier != schema
                schema = earlier
                break
        store.add(schema.model_dump())
    step["schema"] = schema.model_dump()
    return {"schema": schema.model_dump(), "tool_mode": mode, "steps": [Step("plan", **step)]}


def effective_window(ctx: StrategyContext[StructuredConfig]) -> int:
    """The window of one extraction call: the config's, capped by the model's own window."""
    cfg = ctx.config
    room = context_window(ctx.llm, 10**9) - cfg.extract_max_tokens - PROMPT_OVERHEAD
    return max(256, min(cfg.window_tokens, room))


def record_cache(ctx: StrategyContext[StructuredConfig], key: str) -> RecordCache:
    """The record cache of (schema key, model and its request settings) under the run's cache folder."""
    return _record_cache(str(cache_root(ctx)), key, extraction_model(ctx.llm))


@functools.lru_cache(maxsize=64)
def _record_cache(root: str, key: str, model: str) -> RecordCache:
    return RecordCache(root, key, model)  # made once per run, not per document


def long_token_counts(corpus: Corpus, indices: list[int]) -> list[int]:
    """cl100k tokens of the documents at ``indices``: the corpus's own counts (made once per
    corpus object and shared by every question on it) when they exist or most documents are
    asked for, else those documents alone."""
    if not indices:
        return []
    if "token_counts" in corpus.__dict__ or 2 * len(indices) > len(corpus):
        counts = corpus.token_counts
        return [counts[i] for i in indices]
    return count_tokens_batch([corpus[i].text for i in indices])


def map_documents(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """Cached records where this (schema, model) already read a document; the rest to extract."""
    ctx, cfg = runtime.context, runtime.context.config
    schema = TableSchema.model_validate(state["schema"])
    window = effective_window(ctx)
    key = schema_hash(schema, P.EXTRACT_PROMPTS_VERSION, state["tool_mode"], window, cfg.window_overlap)
    loaded: dict[int, list[dict]] = {}
    pending: list[int] = []
    fingerprints: dict[int, str] = {}
    degraded: list[str] = []  # documents whose cached extraction is degraded (reused unless retry_degraded)
    cache = record_cache(ctx, key) if cfg.cache else None
    if cache is not None:
        cache.refresh()  # the log read once, then looked up per document
    for i, doc in enumerate(ctx.corpus):
        fp = fingerprints[i] = document_fingerprint(doc)
        hit = cache.get(fp, refresh=False) if cache else None
        if hit is not None and not (hit.get("failed_windows") and cfg.retry_degraded):
            loaded[i] = hit["records"]
            if hit.get("failed_windows"):
                degraded.append(doc.doc_id)
        else:
            pending.append(i)
    # documents that may exceed the window are counted here, in one batch before the fan-out,
    # so an extraction task tokenizes only a document it has to split
    long = [i for i in pending if not fits_untokenized(ctx.corpus[i].text, window)]
    split = [i for i, n in zip(long, long_token_counts(ctx.corpus, long)) if n > window]
    step = Step("map", documents=len(ctx.corpus), cached=len(loaded), to_extract=len(pending), split_documents=len(split),
                schema_key=key[:16], model=model_id(ctx.llm), window_tokens=window, cache=cfg.cache)
    report_progress("extract", done=0, total=len(pending))
    if degraded:
        step["degraded"] = (f"{len(degraded)} document(s) read degraded by an earlier question (cached): "
                            f"{', '.join(degraded[:10])}{' ...' if len(degraded) > 10 else ''}; retry_degraded=True reads them again")  # fmt: skip
    return {"cache_key": key, "window": window, "loaded": loaded, "pending": pending, "split": split,
            "group_size": group_size(len(pending), cfg.concurrency), "fingerprints": {i: fingerprints[i] for i in pending}, "steps": [step]}


def group_size(documents: int, concurrency: int) -> int:
    """Documents per ``extract`` task: about two tasks per call slot, at least one document.

    A LangGraph task (and the callback and config copies each node run makes) costs ~0.6-1 ms
    of client CPU, as much as the extraction call's own client work; at 32 calls in flight
    against a 50 ms server that overhead, not the server, set the makespan
    (``experiments/perf/bench_structured.py``). Two tasks per slot keep every slot busy on the
    threaded path too, where a task reads its documents one after the other.
    """
    return max(1, -(-documents // (2 * concurrency)))


def extract_tasks(state: StructuredState) -> list[dict[str, Any]]:
    """One ``extract`` task per document not in the cache, in corpus order from an offset
    taken from the question: questions started together then lead different documents
    rather than all waiting on the same ``concurrency`` ones (the single flight)."""
    split = set(state.get("split", []))
    fps, pending = state["fingerprints"], state["pending"]
    start = zlib.crc32(state["question"].text.encode("utf-8", errors="surrogatepass")) % len(pending) if pending else 0
    return [{"doc_index": i, "fingerprint": fps[i], "schema": state["schema"], "cache_key": state["cache_key"],
             "window": state["window"], "tool_mode": state["tool_mode"], "split": i in split}
            for i in pending[start:] + pending[:start]]


def route_extract(state: StructuredState) -> list[Send] | str:
    """The :func:`extract_tasks` sent to ``extract`` in groups of ``group_size`` documents, or on to ``reduce``."""
    tasks, size = extract_tasks(state), state.get("group_size", 1)
    return [Send("extract", {"documents": tasks[i : i + size]}) for i in range(0, len(tasks), size)] or "reduce"


def route_extract_ray(state: StructuredState) -> str:
    """``map_executor="ray"``: the documents to extract go to ``extract_ray`` together."""
    return "extract_ray" if state.get("pending") else "reduce"


def merged(updates: list[dict[str, Any]]) -> dict[str, Any]:
    """The state updates of several documents as one (lists joined in order)."""
    out: dict[str, Any] = {"extractions": [e for u in updates for e in u["extractions"]]}
    steps = [st for u in updates for st in u.get("steps", [])]
    if steps:
        out["steps"] = steps
    return out


def extract(group: dict[str, Any], runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """A group of documents' records, one document after the other (each in windows when long;
    cached when every window gave a valid reply). Single flight: a document another question
    is reading for the same schema and model is waited for and its records reused
    (:mod:`graphs.structured.flight`)."""
    ctx = runtime.context
    cache = record_cache(ctx, group["documents"][0]["cache_key"]) if ctx.config.cache else None
    with index_time():  # records are cached per (document, schema, model) and reused by later questions
        return merged([_counted(extract_document(task, ctx, cache)) for task in group["documents"]])


async def aextract(group: dict[str, Any], runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """:func:`extract` through the model's async interface (what the graph's ``ainvoke`` runs):
    the group's documents concurrently, their calls under the run's gate of ``concurrency``
    calls in flight (a failure cancels the group's other documents)."""
    ctx = runtime.context
    cache = record_cache(ctx, group["documents"][0]["cache_key"]) if ctx.config.cache else None
    gate = ctx.call_gate(ctx.config.concurrency)

    async def one(task: dict[str, Any]) -> dict[str, Any]:
        with index_time():  # cached per (document, schema, model) and reused by later questions
            return _counted(await aextract_document(task, ctx, cache, gate=gate))

    running = [asyncio.ensure_future(one(task)) for task in group["documents"]]
    try:
        return merged(await asyncio.gather(*running))
    except BaseException:  # the document's own error goes up as it is (a TaskGroup would wrap it); the others stop
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


def _counted(update: dict[str, Any]) -> dict[str, Any]:
    """``update`` of one finished document, reported as extraction progress."""
    report_progress("extract", advance=1)
    return update


def extract_ray(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]], config: RunnableConfig) -> dict:
    """The documents not in the cache, extracted by Ray tasks (batches of ``ray_batch_documents``,
    at most ``ray_max_in_flight`` at once) into the same record log, under the same single
    flight: the same updates as the ``extract`` branches (:mod:`graphs.structured.ray_map`)."""

    ctx = runtime.context
    cache = record_cache(ctx, state["cache_key"]) if ctx.config.cache else None
    return run_on_ray(extract_tasks(state), ctx, cache, cache_root(ctx) if cache is not None else None, config)


def reduce(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """Every document's records -> normalised cells -> one table (restatements resolved)."""
    ctx, cfg = runtime.context, runtime.context.config
    schema = TableSchema.model_validate(state["schema"])
    new = {e["doc_index"]: e for e in state.get("extractions", [])}
    per_doc = {**{i: r for i, r in state.get("loaded", {}).items()}, **{i: e["records"] for i, e in new.items()}}
    docs = ctx.corpus.documents
    cells, stats = normalise_records(schema, ((i, docs[i].doc_id, docs[i].title, per_doc[i]) for i in sorted(per_doc)),
                                     drop_unverified=cfg.unverified_values == "drop")
    table = reduce_cells(schema, cells, cfg.conflict_rule)
    extraction = {
        "documents": len(docs),
        "cached": len(state.get("loaded", {})),
        "extracted": sum(1 for e in new.values() if not e.get("shared")),
        "shared": sum(1 for e in new.values() if e.get("shared")),
        "calls": sum(e["calls"] for e in new.values()),
        "windows": sum(e["windows"] for e in new.values()),
        "degraded_documents": [docs[i].doc_id for i, e in new.items() if e["failed_windows"]],
        "unverified_quotes": sum(e["unverified_quotes"] for e in new.values()),
        "documents_with_records": sum(1 for r in per_doc.values() if r),
    }
    step = Step("reduce", extraction=extraction, records=stats["records"], values=stats["values"], unreadable=stats["unreadable"][:20],
                unreadable_count=len(stats["unreadable"]), unit_notes=stats["notes"], values_without_period=stats["no_period"],
                unverified_values=stats["unverified"], dropped_unverified=stats["dropped_unverified"],
                unverified_cells=sum(c.quote_found is False for c in table.cells.values()), **table.stats)
    return {"table": table, "steps": [step]}


def _samples(table: Table, n: int) -> str:
    if not n or not table.rows:
        return ""
    shown = table.rows[:n]
    lines = "\n".join(dumps([r[c] for c in table.schema.columns]) for r in shown)
    return f"\nFirst {len(shown)} of {len(table.rows)} rows ({', '.join(table.schema.columns)}):\n{lines}\n"


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


def query(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """Model-written SQL run read-only; an error goes back to the model, at most ``sql_retries`` times."""
    ctx, cfg, question, table = runtime.context, runtime.context.config, state["question"], state["table"]
    schema = table.schema
    conn = build_database(table, max_value_bytes=cfg.sql_max_value_bytes, heap_limit_bytes=cfg.sql_heap_limit_mb * 2**20)
    per_period = f" and {schema.time.name}" if schema.time else ""
    rule = "the latest document's value is kept" if cfg.conflict_rule == "latest_document" else "the first document's value is kept"
    base = P.SQL_PROMPT.format(create=create_statement(schema), entity=schema.entity, per_period=per_period, rule=rule,
                               samples=_samples(table, cfg.sample_rows), distinct=_distinct(table, cfg.distinct_values),
                               question=question.render(), table=schema.table)
    attempts: list[dict[str, Any]] = []
    result: QueryResult | None = None
    sql, error = "", None
    try:
        for _ in range(cfg.sql_retries + 1):
            prompt = base if error is None else base + P.SQL_RETRY.format(sql=sql, error=error)
            sql = clean_sql(complete(ctx.llm, prompt, max_tokens=cfg.sql_max_tokens, temperature=cfg.temperature))
            try:
                result = run_query(conn, sql, timeout_s=cfg.sql_timeout_s, max_rows=cfg.max_result_rows,
                                   max_result_bytes=cfg.max_result_bytes, max_cell_chars=cfg.max_cell_chars)
                error = None
                attempts.append({"sql": sql})
                break
            except (QueryRefused, QueryTimeout, QueryTooLarge, sqlite3.Error) as exc:
                error = f"{type(exc).__name__}: {exc}"
                attempts.append({"sql": sql, "error": error})
    finally:
        conn.close()
    data = {"columns": result.columns, "rows": result.rows, "truncated": result.truncated} if result else None
    step = Step("query", sql=sql, attempts=attempts, ok=result is not None, error=error,
                columns=result.columns if result else None, rows=result.rows[:20] if result else None,
                n_rows=len(result.rows) if result else 0, truncated=result.truncated if result else False,
                result_bytes=result.nbytes if result else 0, cut_cells=result.cut_cells if result else 0,
                seconds=round(result.seconds, 4) if result else None)
    return {"sql": sql, "result": data, "query_error": error, "steps": [step]}


def evidence_cells(table: Table, sql: str, result: dict[str, Any] | None, limit: int) -> list[Evidence]:
    """The cells behind the result: the columns the SQL names, for the entities in the result rows
    (every entity when the result names none, e.g. a count), in the periods the SQL names."""
    if not result or not limit:
        return []
    schema = table.schema
    units = {a.name: a.unit for a in schema.attributes}
    named = [a.name for a in schema.attributes if re.search(rf"\b{re.escape(a.name)}\b", sql)] or [a.name for a in schema.attributes]
    in_rows = {entity_key(v) for row in result["rows"] for v in row if isinstance(v, str)} & set(table.display)
    periods = {int(y) for y in re.findall(r"\b(\d{4})\b", sql)} if schema.time and schema.time.type == "year" else set()
    periods &= {k[1] for k in table.cells}
    chosen = [c for (ek, p, attr), c in table.cells.items()
              if attr in named and (not in_rows or ek in in_rows) and (p is None or not periods or p in periods)]
    chosen.sort(key=lambda c: (entity_key(c.entity), str(c.period), c.attribute))
    out = []
    for rank, c in enumerate(chosen[:limit]):
        when = f" | {c.period}" if c.period is not None else ""
        unit = f" {units[c.attribute]}" if units.get(c.attribute) else ""
        unchecked = " [quote not found in the text read]" if c.quote_found is False else ""
        text = f"{table.display[entity_key(c.entity)]}{when} | {c.attribute} = {c.value}{unit} (as written: {c.raw}): \"{c.quote}\"{unchecked}"
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
            lines.append(f"... [{left} of {len(rows)} rows not shown: the result shown is limited to {max_tokens:,} tokens]")
            return "\n".join(lines), i
        lines.append(line)
        used += n
    return "\n".join(lines), len(rows)


def format_answer(state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]) -> dict:
    """The final call over the SQL result, in the benchmark's format and answer budget."""
    ctx, cfg, question, table = runtime.context, runtime.context.config, state["question"], state["table"]
    instruction = question.instruction or P.DEFAULT_INSTRUCTION
    result = state.get("result")
    max_tokens = question.answer_budget(cfg.answer_max_tokens)
    shown = 0
    if result is not None:
        room = max(64, min(cfg.answer_result_tokens, context_window(ctx.llm, 10**9) - max_tokens - 2 * PROMPT_OVERHEAD))
        rows, shown = result_text(result["rows"], room)
        cut = result["truncated"] or shown < len(result["rows"])
        prompt = P.ANSWER_PROMPT.format(question=question.render(), table=table.schema.table, columns=describe(table.schema),
                                        sql=state["sql"], n_rows=len(result["rows"]), truncated=", cut" if cut else "",
                                        header=", ".join(result["columns"]), result=rows, instruction=instruction)
    else:
        prompt = P.ANSWER_NO_SQL.format(error=state.get("query_error"), samples=_samples(table, cfg.sample_rows).strip() or "(empty table)",
                                        question=question.render(), instruction=instruction)
    raw = complete(ctx.llm, prompt, max_tokens=max_tokens, temperature=question.answer_temperature(cfg.temperature))
    evidence = evidence_cells(table, state.get("sql", ""), result, cfg.max_evidence)
    step = Step("format_answer", max_new_tokens=max_tokens, from_sql=result is not None, result_rows_shown=shown, evidence=len(evidence),
                evidence_documents=len({e.doc_id for e in evidence}))
    return {"raw": raw, "answer": raw.strip(), "evidence": evidence, "steps": [step]}


def structured_costs(cfg: Any, shape: costs.CorpusShape, questions: Sequence[Question], llm: Any = None,
                     window: int | None = None) -> costs.Costs:  # fmt: skip
    """A schema plan (none with a fixed schema), one extraction per document window, SQL, the answer.

    Records already extracted for this schema are reused by later questions, so a run over a
    cached corpus makes fewer calls than this plan (which counts every window once). Typically
    the plan and the extractions run once per corpus (no retry), then the SQL and the answer per question.
    """
    step = max(1, cfg.window_tokens - cfg.window_overlap)
    windows = sum(max(1, math.ceil(max(n - cfg.window_overlap, 1) / step)) for n in shape.token_counts)
    plan_calls = 0 if cfg.schema else 1
    k = len(questions)
    shortest, longest = costs.titles(shape, llm)
    seam = costs.SEAM_TOKENS

    def bare(name: str, template: str, **fields: Any) -> int:
        return costs.prompt_tokens("structured", name, lambda: template.format(**fields), llm)

    # each call's template with every schema-, model- and result-written field empty (a lower bound), per question its own text
    extract_bare = bare(f"extract:{shortest}", P.EXTRACT_PROMPT, entity="", period="", table="", columns="", title=shortest, part="", text="", how="")
    each_q = [
        (costs.prompt_tokens("structured", "plan", lambda x=x: P.PLAN_PROMPT.format(  # type: ignore[misc]
            question=x.render(), max_attributes=cfg.max_attributes, known="", how=""), llm, x),
         costs.prompt_tokens("structured", "sql", lambda x=x: P.SQL_PROMPT.format(  # type: ignore[misc]
             create="", entity="", per_period="", rule="", samples="", distinct="", question=x.render(), table=""), llm, x),
         min(costs.prompt_tokens("structured", "answer", lambda x=x: P.ANSWER_PROMPT.format(  # type: ignore[misc]
             question=x.render(), table="", columns="", sql="", n_rows="", truncated="", header="", result="",
             instruction=x.instruction or P.DEFAULT_INSTRUCTION), llm, x),
             costs.prompt_tokens("structured", "answer_no_sql", lambda x=x: P.ANSWER_NO_SQL.format(  # type: ignore[misc]
                 error="", samples="", question=x.render(), instruction=x.instruction or P.DEFAULT_INSTRUCTION), llm, x)))
        for x in questions or [costs.PLACEHOLDER_QUESTION]
    ]  # fmt: skip
    plan_least = min(e[0] for e in each_q) - 2 * seam
    asked_least = min(e[1] + e[2] for e in each_q) - 8 * seam
    # the schema's own text (columns, CREATE, the JSON form), at most max_attributes columns; the retry notes, model-written text
    schema = cfg.max_attributes * 48 + costs.TEMPLATE_TOKENS
    written = max(cfg.plan_max_tokens, cfg.sql_max_tokens) + costs.TEMPLATE_TOKENS
    plan_most = max(e[0] for e in each_q) + costs.TEMPLATE_TOKENS + written
    asked_most = max(e[1] + e[2] for e in each_q) + 2 * (schema + written) + cfg.answer_result_tokens
    calls = plan_calls + windows + k * 2
    max_calls = plan_calls * (1 + cfg.retries) + windows * (1 + cfg.retries) + k * (1 + cfg.sql_retries + 1)
    text = shape.tokens + (windows - shape.documents) * cfg.window_overlap  # a window past a document's first repeats the overlap
    extract = max(0, shape.tokens + windows * (extract_bare - 6 * seam))
    extract_most = text + windows * (bare(f"extract:{longest}", P.EXTRACT_PROMPT, entity="", period="", table="", columns="", title=longest,
                                          part=" (part 9999 of 9999)", text="", how="") + schema + 6 * seam)  # fmt: skip
    prompt = plan_calls * max(0, plan_least) + extract + k * max(0, asked_least)
    max_prompt = plan_calls * (1 + cfg.retries) * plan_most + (1 + cfg.retries) * extract_most + k * (1 + cfg.sql_retries) * asked_most
    fixed = (plan_least + plan_most) / 2
    per_question = max(0, asked_least) + (asked_most - max(0, asked_least)) / 4
    completion = plan_calls * cfg.plan_max_tokens + windows * cfg.extract_max_tokens + k * (cfg.sql_max_tokens + cfg.answer_max_tokens)
    bounds = CostPlan("structured", k, calls, max_calls, prompt, max_prompt, completion,
                      f"{plan_calls} plan + {windows:,} document windows + SQL + answer per question (cached records: fewer)",
                      {"windows": windows})  # fmt: skip
    once = costs.Calls(plan_calls + windows, plan_calls * fixed + (extract + extract_most) / 2, plan_calls * min(cfg.plan_max_tokens, 300) + windows * 150)
    each = costs.Calls(2, per_question, 100 + costs.reply_tokens(cfg, "answer_max_tokens"))
    return costs.Costs(bounds, costs.ExpectedCost(each, once))


@STRATEGIES.register(
    "structured",
    costs=costs.StrategyCosts(structured_costs),
    ceiling=STRUCTURED_CEILING,
    config_cls=StructuredConfig,
    prompts_version=P.PROMPTS_VERSION,
    run_mode=SingleRun(async_fan_out=True),  # extract has an async twin: answer() awaits it over an async client
    presentation=PRESENTATION,
    ray_stage=RAY_STAGE,
    description="Structured corpus analysis: a table schema -> records from every document (cached) -> one table -> SQL -> answer.",
)
def build_graph(config: StructuredConfig | None = None):
    """START -> plan -> map -> extract x documents (or extract_ray) -> reduce -> query -> format_answer -> END."""
    cfg = config or StructuredConfig()
    graph = StateGraph(StructuredState, context_schema=StrategyContext)
    graph.add_node("plan", plan)
    graph.add_node("map", map_documents)
    if cfg.map_executor == "ray":
        graph.add_node("extract_ray", extract_ray)  # type: ignore[arg-type, call-overload]  # (state, runtime, config) runs, but add_node's overloads omit it
    else:
        graph.add_node("extract", RunnableCallable(extract, aextract, name="extract"))  # sync and async twins
    graph.add_node("reduce", reduce)
    graph.add_node("query", query)
    graph.add_node("format_answer", format_answer)
    graph.add_edge(START, "plan")
    graph.add_edge("plan", "map")
    if cfg.map_executor == "ray":
        graph.add_conditional_edges("map", route_extract_ray, ["extract_ray", "reduce"])
        graph.add_edge("extract_ray", "reduce")
    else:
        graph.add_conditional_edges("map", route_extract, ["extract", "reduce"])
        graph.add_edge("extract", "reduce")
    graph.add_edge("reduce", "query")
    graph.add_edge("query", "format_answer")
    graph.add_edge("format_answer", END)
    return graph.compile(name="structured").with_config(max_concurrency=cfg.concurrency)
