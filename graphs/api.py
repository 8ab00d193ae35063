"""The one import surface of a strategy plug-in: what a strategy package needs from the engine.

``from graphs.api import ToolLoop, chat, StrategyContext, STRATEGIES, StrategyCosts, ...``: the call
helpers, the shared tool loop, the run context and config, the answer state and nodes, the prompt
helpers, the presentation and ceiling types, the cost model's parts and the registry, and the
contract's types (``Step``, ``Answer``...). A strategy that imports only this module (plus its own
package, ``retrieval.contract`` and third-party libraries) keeps working when the engine's modules
move: ``tests/test_plugin_surface.py`` holds new strategy packages under ``graphs/`` to that and
lists the built-ins' older imports as explicit exceptions. Importing it loads LangGraph (every
strategy does), so ``import graphs`` stays lazy and this module is imported by strategies only.
"""

from __future__ import annotations

# The answer state, the budget and the batch loop's parts.
from graphs.answer_state import AnswerState, BatchAnswer, PromptState
from graphs.batched import trace_steps
from graphs.budget import UNBOUNDED, Budget, BudgetReached, CostPlan, IndexWork

# The evidence ceiling: its types and the helpers a strategy's ceiling reads the run with.
from graphs.ceiling import (
    CeilingEnv,
    CeilingItem,
    EvidenceCeiling,
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

# The run's config and context.
from graphs.config import ConfigError, StrategyConfig, option
from graphs.context import StrategyContext

# The cost model: what a strategy's cost model is built of.
from graphs.costs import (
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

# Events, the call helpers and the model's facts.
from graphs.event_loop import gather_or_cancel
from graphs.events import listening, report_progress, report_step
from graphs.llm import (
    add_usage,
    chat,
    complete,
    complete_with_usage,
    context_window,
    prompt_codec,
    tokenizer_for,
    tokenizer_id,
)

# Graph nodes; the drill-down's markup; prompts and the prompt-sharing declaration; the registry and
# its run kinds; a malformed reply's error; the rerank stage's cost; the shared index service and its
# settings; reading retrieved chunks (RAG's prompt, the hit order, the drill-down's retrieval view).
from graphs.nodes import AnswerSettings, CompiledGraph, generate, linear_graph
from graphs.presentation import Markup, Shown, StrategyPresentation, bullets, join, tag, text
from graphs.prompt_sharing import PromptSharing
from graphs.prompts import (
    DEFAULT_INSTRUCTION,
    DOCUMENT_TEMPLATE,
    fill,
    format_chunks,
    format_documents,
)
from graphs.registry import BatchRun, BatchSettings, Continuation, SingleRun, Strategy
from graphs.replies import MalformedOutput
from graphs.rerank_costs import Retrievals, with_rerank, with_sometimes
from graphs.retrieval_service import RetrievalService
from graphs.retrieval_settings import RetrievalSettings
from graphs.retrieved import RAG_TEMPLATE, order_hits, retrieval_view

# Another strategy's run as a leg of a composite (Self-Route's fallback); the strategy registry.
from graphs.run import run_strategy
from graphs.strategy_registry import STRATEGIES

# The shared tool loop.
from graphs.tool_loop import FINAL_TURN_PROMPT, ToolLoop, ToolLoopState, final_text

# The validated (structured-output) call: a schema as a tool or JSON, retried on malformed replies.
from graphs.validated_call import (
    Outcome,
    ToolMode,
    acall_validated,
    bind_function,
    call_validated,
    resolve_tool_mode,
)

# Memory for streaming strategies (MemAgent's kind); retrieval's hits, chunks and truncation.
from memory import NO_MEMORY, MemoryTrace, bound_memory, strip_think
from retrieval import Chunk, Hit, Index, chunk_corpus, middle_truncate

# The contract's types.
from retrieval.contract import Answer, Corpus, Document, Evidence, Question, Step, Usage

# Token ids: splitting and slicing a text by a tokenizer.
from retrieval.tokenizers import Tokenizer, slice_ids, split_ids, tiktoken_tokenizer

__all__ = [
    "with_sometimes",
    "run_strategy",
    "Index",
    "RAG_TEMPLATE",
    "order_hits",
    "retrieval_view",
    "TEMPLATE_TOKENS",
    "chunk_headers",
    "titles",
    "chunk_regions",
    "gather_or_cancel",
    "MalformedOutput",
    "Outcome",
    "ToolMode",
    "acall_validated",
    "bind_function",
    "call_validated",
    "resolve_tool_mode",
    "ANSWER_TOKENS",
    "DEFAULT_INSTRUCTION",
    "DOCUMENT_TEMPLATE",
    "FINAL_TURN_PROMPT",
    "NO_MEMORY",
    "PLACEHOLDER_QUESTION",
    "SEAM_TOKENS",
    "STRATEGIES",
    "UNBOUNDED",
    "Answer",
    "AnswerSettings",
    "AnswerState",
    "BatchAnswer",
    "BatchRun",
    "BatchSettings",
    "Budget",
    "BudgetReached",
    "Calls",
    "CeilingEnv",
    "CeilingItem",
    "Chunk",
    "CompiledGraph",
    "ConfigError",
    "Continuation",
    "Corpus",
    "CorpusShape",
    "CostPlan",
    "Costs",
    "Document",
    "Evidence",
    "EvidenceCeiling",
    "ExpectedCost",
    "Hit",
    "IndexWork",
    "Markup",
    "MemoryTrace",
    "PromptSharing",
    "PromptState",
    "Question",
    "Reach",
    "RetrievalService",
    "RetrievalSettings",
    "Retrievals",
    "Shown",
    "SingleRun",
    "SkipCeiling",
    "Step",
    "Strategy",
    "StrategyConfig",
    "StrategyContext",
    "StrategyCosts",
    "StrategyPresentation",
    "Tokenizer",
    "ToolLoop",
    "ToolLoopState",
    "Usage",
    "add_usage",
    "bound_memory",
    "bullets",
    "cached_index",
    "chat",
    "chunk_corpus",
    "complete",
    "complete_with_usage",
    "context_window",
    "counter",
    "covered",
    "fill",
    "final_text",
    "format_chunks",
    "format_documents",
    "generate",
    "join",
    "linear_graph",
    "listening",
    "middle_truncate",
    "node_runtime",
    "option",
    "per_question_plan",
    "prompt_codec",
    "prompt_tokens",
    "queries",
    "reach_in_chunks",
    "reach_of",
    "render_records",
    "reply_tokens",
    "report_progress",
    "report_step",
    "retrieved_prompt",
    "slice_ids",
    "split_ids",
    "strip_think",
    "tag",
    "text",
    "tiktoken_tokenizer",
    "tokenizer_for",
    "tokenizer_id",
    "tokens_of",
    "tool_schema_tokens",
    "trace_steps",
    "with_rerank",
]
