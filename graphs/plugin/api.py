"""The one import surface of a strategy plug-in: what a strategy package needs from the engine.

``from longctx.graphs.plugin.api import ToolLoop, chat, StrategyContext, STRATEGIES, ...``: the
call helpers, the shared tool loop, the run context and config, the answer state and nodes, the
prompt helpers, the presentation and ceiling types, the cost model's parts and the registry, and the
contract's types (``Step``, ``Answer``...). A strategy that imports only this module (plus its own
package, ``longctx.retrieval.contract`` and third-party libraries) keeps working when the engine's
modules move: ``tests/test_plugin_surface.py`` holds new strategy packages under ``graphs/`` to that
and lists the built-ins' remaining imports as explicit exceptions; ``__all__`` groups the names by
what they serve. Importing it loads LangGraph (every strategy does), so ``import longctx`` stays
lazy and this module is imported by strategies only.
"""

from __future__ import annotations

from longctx.graphs.calls.llm import (
    add_usage,
    chat,
    complete,
    complete_with_usage,
    context_window,
    model_id,
    prompt_codec,
    tokenizer_for,
    tokenizer_id,
)
from longctx.graphs.calls.prompt_sharing import PromptSharing
from longctx.graphs.calls.prompt_text import counted_prompt
from longctx.graphs.calls.replies import MalformedOutput, text_of
from longctx.graphs.calls.request_settings import model_identity
from longctx.graphs.calls.tool_events import emit_calls, emit_results
from longctx.graphs.calls.tool_json import as_text_history, with_json_calls
from longctx.graphs.calls.tool_loop import FINAL_TURN_PROMPT, ToolLoop, ToolLoopState, final_text
from longctx.graphs.calls.validated_call import (
    Outcome,
    ToolMode,
    acall_validated,
    bind_function,
    call_validated,
    native_tools_model,
    resolve_tool_mode,
)
from longctx.graphs.index.embedding_store import EmbeddingStore, open_store, query_vector
from longctx.graphs.index.index_artifact import (
    ArtifactStore,
    LoadedArtifacts,
    Source,
    cache_root,
    digest_of,
    read_checked,
    root_of,
    write_checked,
)
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.index.retrieved import RAG_TEMPLATE, order_hits, retrieval_view, retrieve
from longctx.graphs.metering.budget import UNBOUNDED, Budget, BudgetReached, CostPlan, IndexWork
from longctx.graphs.metering.budget_field import budget_kwargs
from longctx.graphs.metering.budget_stop import ainvoke_keeping, invoke_keeping, stop_after_sub_run
from longctx.graphs.metering.costs import (
    ANSWER_TOKENS,
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    TEMPLATE_TOKENS,
    Calls,
    CorpusShape,
    Costs,
    ExpectedCost,
    StrategyCosts,
    chunk_headers,
    counter,
    per_question_plan,
    prompt_tokens,
    reply_tokens,
    retrieved_prompt,
    titles,
    tokens_of,
    tool_schema_tokens,
)
from longctx.graphs.metering.rerank_costs import Retrievals, with_rerank, with_sometimes
from longctx.graphs.metering.usage import index_time, report_index_seconds
from longctx.graphs.plugin.answer_state import AnswerState, BatchAnswer, PromptState
from longctx.graphs.plugin.ceiling import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
    NeedsIndexLLM,
    Reach,
    SkipCeiling,
    cached_index,
    chunk_regions,
    covered,
    node_runtime,
    queries,
    reach_in_chunks,
    reach_of,
    render_records,
)
from longctx.graphs.plugin.config import ConfigError, StrategyConfig, option
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.nodes import AnswerSettings, CompiledGraph, generate, linear_graph
from longctx.graphs.plugin.presentation import (
    Markup,
    Shown,
    StrategyPresentation,
    bullets,
    join,
    tag,
    text,
)
from longctx.graphs.plugin.registry import (
    BatchRun,
    BatchSettings,
    Continuation,
    SingleRun,
    Strategy,
)
from longctx.graphs.plugin.strategy_registry import STRATEGIES
from longctx.graphs.prompts import (
    DEFAULT_INSTRUCTION,
    DOCUMENT_TEMPLATE,
    fill,
    format_chunks,
    format_documents,
)
from longctx.graphs.runtime.batched import trace_steps
from longctx.graphs.runtime.cancel import RunCancelled
from longctx.graphs.runtime.event_loop import gather_or_cancel
from longctx.graphs.runtime.events import GrowingStage, listening, report_progress, report_step
from longctx.graphs.runtime.ray_map import (
    ModelRecipe,
    counted_model,
    map_on_ray,
    map_or_raise,
    model_recipe,
    portable_error,
    run_batch,
)
from longctx.graphs.runtime.ray_options import MAP_ON_RAY, RayMapOptions
from longctx.graphs.runtime.run import run_strategy
from longctx.graphs.runtime.twins import blocking, run_blocking
from longctx.graphs.sandbox.kinds import ReplKind, repl_factory
from longctx.graphs.sandbox.protocol import (
    ExecutionResult,
    HostFunction,
    HostStop,
    Repl,
    ReplFactory,
    SandboxLimits,
)
from longctx.memory import NO_MEMORY, MemoryTrace, bound_memory, strip_think
from longctx.memory.records.cache import RecordCache, SchemaStore, document_fingerprint
from longctx.memory.records.database import (
    QueryResult,
    QueryTimeout,
    QueryTooLarge,
    build_database,
    create_statement,
    run_query,
)
from longctx.memory.records.normalize import ValueNotUnderstood, entity_key, normalize_value
from longctx.memory.records.schema import (
    SQL_TYPES,
    Attribute,
    TableSchema,
    TimeDimension,
    parse_schema,
    schema_hash,
)
from longctx.memory.records.sql_text import QueryRefused, clean_sql
from longctx.memory.records.table import Table, normalise_records, reduce_cells
from longctx.retrieval import Chunk, ChunkingConfig, Hit, Index, chunk_corpus, middle_truncate
from longctx.retrieval.checksums import ALGORITHM, Checksums, digest_bytes, digest_texts
from longctx.retrieval.contract import Answer, Corpus, Document, Evidence, Question, Step, Usage
from longctx.retrieval.embedder_base import dimension_error, source_of
from longctx.retrieval.embedders import embedder_needs
from longctx.retrieval.extras import Need, require
from longctx.retrieval.paths import default_cache_dir
from longctx.retrieval.threads import apply_thread_policy
from longctx.retrieval.tokenizers import Tokenizer, slice_ids, split_ids, tiktoken_tokenizer
from longctx.retrieval.tokens import (
    count_tokens,
    count_tokens_batch,
    decode,
    encode,
    encode_segments,
)

__all__ = [
    # The contract's types.
    "Answer",
    "Corpus",
    "Document",
    "Evidence",
    "Question",
    "Step",
    "Usage",
    # Run context, config, answer state, registry and run kinds.
    "AnswerState",
    "BatchAnswer",
    "BatchRun",
    "BatchSettings",
    "ConfigError",
    "Continuation",
    "PromptState",
    "STRATEGIES",
    "SingleRun",
    "Strategy",
    "StrategyConfig",
    "StrategyContext",
    "option",
    "ainvoke_keeping",
    "invoke_keeping",
    "run_strategy",
    "stop_after_sub_run",
    "trace_steps",
    # Calls: the call helpers, the validated (structured-output) call, the shared tool loop, events.
    "FINAL_TURN_PROMPT",
    "GrowingStage",
    "MalformedOutput",
    "Outcome",
    "ToolLoop",
    "ToolLoopState",
    "ToolMode",
    "acall_validated",
    "add_usage",
    "as_text_history",
    "bind_function",
    "blocking",
    "budget_kwargs",
    "call_validated",
    "chat",
    "complete",
    "complete_with_usage",
    "emit_calls",
    "emit_results",
    "context_window",
    "counted_prompt",
    "final_text",
    "gather_or_cancel",
    "listening",
    "model_id",
    "model_identity",
    "prompt_codec",
    "report_progress",
    "report_step",
    "native_tools_model",
    "resolve_tool_mode",
    "run_blocking",
    "text_of",
    "tokenizer_for",
    "tokenizer_id",
    "with_json_calls",
    # Graph nodes, prompts and prompt sharing.
    "AnswerSettings",
    "CompiledGraph",
    "DEFAULT_INSTRUCTION",
    "DOCUMENT_TEMPLATE",
    "PromptSharing",
    "fill",
    "format_chunks",
    "format_documents",
    "generate",
    "linear_graph",
    # Presentation (the drill-down) and the evidence ceiling.
    "CeilingEnv",
    "CeilingItem",
    "EvidenceCeiling",
    "Markup",
    "NeedsIndexLLM",
    "Reach",
    "Shown",
    "SkipCeiling",
    "StrategyPresentation",
    "bullets",
    "cached_index",
    "chunk_regions",
    "covered",
    "join",
    "node_runtime",
    "queries",
    "reach_in_chunks",
    "reach_of",
    "render_records",
    "tag",
    "text",
    # Budgets and the cost model.
    "ANSWER_TOKENS",
    "Budget",
    "BudgetReached",
    "Calls",
    "CorpusShape",
    "CostPlan",
    "Costs",
    "ExpectedCost",
    "IndexWork",
    "PLACEHOLDER_QUESTION",
    "Retrievals",
    "SEAM_TOKENS",
    "StrategyCosts",
    "TEMPLATE_TOKENS",
    "UNBOUNDED",
    "chunk_headers",
    "counter",
    "index_time",
    "per_question_plan",
    "prompt_tokens",
    "reply_tokens",
    "report_index_seconds",
    "retrieved_prompt",
    "titles",
    "tokens_of",
    "tool_schema_tokens",
    "with_rerank",
    "with_sometimes",
    # Retrieval: settings, the shared index service, hits and chunks, reading retrieved chunks.
    "Chunk",
    "ChunkingConfig",
    "Hit",
    "Index",
    "RAG_TEMPLATE",
    "RetrievalService",
    "RetrievalSettings",
    "chunk_corpus",
    "middle_truncate",
    "order_hits",
    "retrieval_view",
    "retrieve",
    # Memory for streaming strategies (MemAgent's kind) and token ids.
    "MemoryTrace",
    "NO_MEMORY",
    "Tokenizer",
    "bound_memory",
    "count_tokens",
    "count_tokens_batch",
    "decode",
    "encode",
    "encode_segments",
    "slice_ids",
    "split_ids",
    "strip_think",
    "tiktoken_tokenizer",
    # Index-time strategies (RAPTOR, HippoRAG, Structured): artefacts, embeddings, the Ray map.
    "ALGORITHM",
    "ArtifactStore",
    "Checksums",
    "EmbeddingStore",
    "LoadedArtifacts",
    "MAP_ON_RAY",
    "ModelRecipe",
    "Need",
    "RayMapOptions",
    "RecordCache",
    "SchemaStore",
    "Source",
    "cache_root",
    "counted_model",
    "default_cache_dir",
    "digest_bytes",
    "digest_of",
    "digest_texts",
    "dimension_error",
    "document_fingerprint",
    "embedder_needs",
    "apply_thread_policy",
    "map_on_ray",
    "map_or_raise",
    "model_recipe",
    "open_store",
    "portable_error",
    "query_vector",
    "read_checked",
    "require",
    "root_of",
    "run_batch",
    "source_of",
    "write_checked",
    # Model-written code (RLM's kind): the REPL contract and the REPL a config names; the stop a
    # cancelled run's next model call raises (a host function keeps it like a budget stop).
    "RunCancelled",
    "ExecutionResult",
    "HostFunction",
    "HostStop",
    "Repl",
    "ReplFactory",
    "ReplKind",
    "SandboxLimits",
    "repl_factory",
    # Records (Structured's kind): schema, normalised values, the table and its SQL database.
    "Attribute",
    "QueryRefused",
    "QueryResult",
    "QueryTimeout",
    "QueryTooLarge",
    "SQL_TYPES",
    "Table",
    "TableSchema",
    "TimeDimension",
    "ValueNotUnderstood",
    "build_database",
    "clean_sql",
    "create_statement",
    "entity_key",
    "normalise_records",
    "normalize_value",
    "parse_schema",
    "reduce_cells",
    "run_query",
    "schema_hash",
]
