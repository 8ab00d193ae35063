"""Structured corpus analysis: Plan a table, Map every document to records, Reduce them to
one table, Query it with model-written SQL, answer in the benchmark's format.

    START -> plan -> map -> extract x documents (Send, max_concurrency) -> reduce -> query ->
                              format_answer -> END (map_executor="ray": map -> extract_ray ->
                              reduce)

* ``plan`` (:mod:`~graphs.structured.plan`): the table schema by tool calling (validated,
  retried; a config ``schema`` skips the call; a schema planned earlier on the same corpus
  that covers the new one is reused, so its records are too).
* ``map``: records of documents already extracted for (schema, model) come from the
  on-disk cache; the others are sent to ``extract``.
* ``extract``: one document, in windows when longer than the window; zero or more records
  per window, each value with its quote; a reply that stays malformed after the retries
  is recorded in an ``extract`` step (the document then gives no records and is not
  cached). Finished documents are cached at once: a killed run resumes from there.
  With ``map_executor="ray"``, ``extract_ray`` instead: the same extraction in Ray tasks
  (:mod:`~graphs.structured.ray_map`), into the same record log.
* ``reduce``: normalised values (:mod:`longctx.memory.records.normalize`), restatements resolved
  (latest document wins by default) into one table (:mod:`longctx.memory.records.table`).
* ``query`` (:mod:`~graphs.structured.query`): SQL from the model over the schema, a few rows
  and the text columns' values; run read-only with a time limit
  (:mod:`longctx.memory.records.database`); errors go back to the model (bounded retries).
* ``format_answer``: the final call (the benchmark's answer budget and format) over the
  SQL result; the evidence is the cells behind the result with their documents and quotes.

The records, their cache, the table and the SQL engine are a store of their own
(:mod:`longctx.memory.records`); this package prompts, calls and wires.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph._internal._runnable import RunnableCallable
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import Send

from longctx.graphs.plugin.api import (
    STRATEGIES,
    PromptSharing,
    SingleRun,
    StrategyContext,
    StrategyCosts,
    TableSchema,
    context_window,
    count_tokens_batch,
    document_fingerprint,
    index_time,
    model_id,
    normalise_records,
    reduce_cells,
    report_progress,
    schema_hash,
)
from longctx.graphs.structured import prompts as P
from longctx.graphs.structured.ceiling import STRUCTURED_CEILING
from longctx.graphs.structured.config import PROMPT_OVERHEAD, StructuredConfig
from longctx.graphs.structured.cost_model import structured_costs
from longctx.graphs.structured.extract import fits_untokenized
from longctx.graphs.structured.mapping import aextract_document, extract_document
from longctx.graphs.structured.plan import plan
from longctx.graphs.structured.presentation import PRESENTATION, RAY_STAGE
from longctx.graphs.structured.query import format_answer, query
from longctx.graphs.structured.ray_map import run_on_ray
from longctx.graphs.structured.state import StructuredState
from longctx.graphs.structured.stores import cache_root, record_cache
from longctx.retrieval.contract import Corpus, Step


def effective_window(ctx: StrategyContext[StructuredConfig]) -> int:
    """The window of one extraction call: the config's, capped by the model's own window."""
    cfg = ctx.config
    room = context_window(ctx.llm, 10**9) - cfg.extract_max_tokens - PROMPT_OVERHEAD
    return max(256, min(cfg.window_tokens, room))


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


def map_documents(
    state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """Cached records where this (schema, model) already read a document; the rest to extract."""
    ctx, cfg = runtime.context, runtime.context.config
    schema = TableSchema.model_validate(state["schema"])
    window = effective_window(ctx)
    # the default's keys stay those cached before the option
    order = () if cfg.extract_order == "table_first" else (cfg.extract_order,)
    key = schema_hash(
        schema, P.EXTRACT_PROMPTS_VERSION, state["tool_mode"], window, cfg.window_overlap, *order
    )
    loaded: dict[int, list[dict[str, Any]]] = {}
    pending: list[int] = []
    fingerprints: dict[int, str] = {}
    degraded: list[
        str
    ] = []  # documents whose cached extraction is degraded (reused unless retry_degraded)
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
    step = Step(
        "map",
        documents=len(ctx.corpus),
        cached=len(loaded),
        to_extract=len(pending),
        split_documents=len(split),
        schema_key=key[:16],
        model=model_id(ctx.llm),
        window_tokens=window,
        cache=cfg.cache,
    )
    report_progress("extract", done=0, total=len(pending))
    if degraded:
        step["degraded"] = (
            f"{len(degraded)} document(s) read degraded by an earlier question (cached): "
            f"{', '.join(degraded[:10])}{' ...' if len(degraded) > 10 else ''}; "
            "retry_degraded=True reads them again"
        )
    return {
        "cache_key": key,
        "window": window,
        "loaded": loaded,
        "pending": pending,
        "split": split,
        "group_size": group_size(len(pending), cfg.concurrency),
        "fingerprints": {i: fingerprints[i] for i in pending},
        "steps": [step],
    }


def group_size(documents: int, concurrency: int) -> int:
    """Documents per ``extract`` task: about two tasks per call slot, at least one document.

    A LangGraph task (and the callback and config copies each node run makes) costs ~0.6-1 ms
    of client CPU, as much as the extraction call's own client work; at 32 calls in flight
    against a 50 ms server that overhead, not the server, set the makespan
    (``benchmarks/bench_structured.py``). Two tasks per slot keep every slot busy on the
    threaded path too, where a task reads its documents one after the other.
    """
    return max(1, -(-documents // (2 * concurrency)))


def extract_tasks(state: StructuredState) -> list[dict[str, Any]]:
    """One ``extract`` task per document not in the cache, in corpus order from an offset
    taken from the question: questions started together then lead different documents
    rather than all waiting on the same ``concurrency`` ones (the single flight)."""
    split = set(state.get("split", []))
    fps, pending = state["fingerprints"], state["pending"]
    start = (
        zlib.crc32(state["question"].text.encode("utf-8", errors="surrogatepass")) % len(pending)
        if pending
        else 0
    )
    return [
        {
            "doc_index": i,
            "fingerprint": fps[i],
            "schema": state["schema"],
            "cache_key": state["cache_key"],
            "window": state["window"],
            "tool_mode": state["tool_mode"],
            "split": i in split,
        }
        for i in pending[start:] + pending[:start]
    ]


def route_extract(state: StructuredState) -> list[Send] | str:
    """The :func:`extract_tasks` sent to ``extract`` in groups of ``group_size`` documents, or on to
    ``reduce``."""
    tasks, size = extract_tasks(state), state.get("group_size", 1)
    return [
        Send("extract", {"documents": tasks[i : i + size]}) for i in range(0, len(tasks), size)
    ] or "reduce"


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


def extract(
    group: dict[str, Any], runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """A group of documents' records, one document after the other (each in windows when long;
    cached when every window gave a valid reply). Single flight: a document another question
    is reading for the same schema and model is waited for and its records reused
    (:mod:`longctx.graphs.structured.flight`)."""
    ctx = runtime.context
    cache = record_cache(ctx, group["documents"][0]["cache_key"]) if ctx.config.cache else None
    # records are cached per (document, schema, model) and reused by later questions
    with index_time():
        return merged([_counted(extract_document(task, ctx, cache)) for task in group["documents"]])


async def aextract(
    group: dict[str, Any], runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
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
    except BaseException:
        # the document's own error goes up as it is (a TaskGroup would wrap it); the others stop
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        raise


def _counted(update: dict[str, Any]) -> dict[str, Any]:
    """``update`` of one finished document, reported as extraction progress."""
    report_progress("extract", advance=1)
    return update


def extract_ray(
    state: StructuredState,
    runtime: Runtime[StrategyContext[StructuredConfig]],
    config: RunnableConfig,
) -> dict[str, Any]:
    """The documents not in the cache, extracted by Ray tasks (batches of ``ray_batch_documents``,
    at most ``ray_max_in_flight`` at once) into the same record log, under the same single
    flight: the same updates as the ``extract`` branches
    (:mod:`longctx.graphs.structured.ray_map`)."""

    ctx = runtime.context
    cache = record_cache(ctx, state["cache_key"]) if ctx.config.cache else None
    return run_on_ray(
        extract_tasks(state), ctx, cache, cache_root(ctx) if cache is not None else None, config
    )


def reduce(
    state: StructuredState, runtime: Runtime[StrategyContext[StructuredConfig]]
) -> dict[str, Any]:
    """Every document's records -> normalised cells -> one table (restatements resolved)."""
    ctx, cfg = runtime.context, runtime.context.config
    schema = TableSchema.model_validate(state["schema"])
    new = {e["doc_index"]: e for e in state.get("extractions", [])}
    per_doc = {
        **{i: r for i, r in state.get("loaded", {}).items()},
        **{i: e["records"] for i, e in new.items()},
    }
    docs = ctx.corpus.documents
    cells, stats = normalise_records(
        schema,
        ((i, docs[i].doc_id, docs[i].title, per_doc[i]) for i in sorted(per_doc)),
        drop_unverified=cfg.unverified_values == "drop",
    )
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
    step = Step(
        "reduce",
        extraction=extraction,
        records=stats["records"],
        values=stats["values"],
        unreadable=stats["unreadable"][:20],
        unreadable_count=len(stats["unreadable"]),
        unit_notes=stats["notes"],
        values_without_period=stats["no_period"],
        unverified_values=stats["unverified"],
        dropped_unverified=stats["dropped_unverified"],
        unverified_cells=sum(c.quote_found is False for c in table.cells.values()),
        **table.stats,
    )
    return {"table": table, "steps": [step]}


def no_typical_rereading(cfg: StructuredConfig) -> float:
    """None of a typical run's questions re-reads a document: its plan extracts each once (later
    questions reuse the records); the saving comes with each new table a later question fills from a
    document."""
    return 0.0


#: With ``extract_order="document_first"`` every extraction of a document (window) starts with it,
#: whatever the table.
EXTRACT_SHARING = PromptSharing(
    "each document, in its extraction calls for every table (extract_order='document_first')",
    share=no_typical_rereading,
    options={"extract_order": "document_first"},
)


@STRATEGIES.register(
    "structured",
    costs=StrategyCosts(structured_costs, always_bounded=True),
    ceiling=STRUCTURED_CEILING,
    config_cls=StructuredConfig,
    prompts_version=P.PROMPTS_VERSION,
    prompt_sharing=EXTRACT_SHARING,
    run_mode=SingleRun(
        async_fan_out=True
    ),  # extract has an async twin: answer() awaits it over an async client
    presentation=PRESENTATION,
    ray_stage=RAY_STAGE,
    description=(
        "Structured corpus analysis: a table schema -> records from every document (cached) -> "
        "one table -> SQL -> answer."
    ),
)
def build_graph(
    config: StructuredConfig | None = None,
) -> CompiledStateGraph[StructuredState, StrategyContext[Any], StructuredState, StructuredState]:
    """START -> plan -> map -> extract x documents (or extract_ray) -> reduce -> query ->
    format_answer -> END."""
    cfg = config or StructuredConfig()
    graph = StateGraph(StructuredState, context_schema=StrategyContext)
    graph.add_node("plan", plan)
    graph.add_node("map", map_documents)
    if cfg.map_executor == "ray":
        # (state, runtime, config) runs, but add_node's overloads omit it: the node is given
        # untyped (cast), its own signature checked where it is defined.
        graph.add_node("extract_ray", cast(Any, extract_ray))
    else:
        twins = RunnableCallable(extract, aextract, name="extract")  # sync and async twins
        graph.add_node("extract", twins)
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
