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

from graphs.answer_state import AnswerState, BatchAnswer, PromptState
from graphs.budget import UNBOUNDED, Budget, BudgetReached, CostPlan, IndexWork
from graphs.ceiling import CeilingEnv, CeilingItem, EvidenceCeiling, Reach, SkipCeiling
from graphs.config import StrategyConfig, option
from graphs.context import StrategyContext
from graphs.costs import (
    ANSWER_TOKENS,
    Calls,
    CorpusShape,
    Costs,
    ExpectedCost,
    StrategyCosts,
    per_question_plan,
    prompt_tokens,
    reply_tokens,
    tool_schema_tokens,
)
from graphs.events import report_progress, report_step
from graphs.llm import chat, complete, complete_with_usage, tokenizer_for
from graphs.nodes import AnswerSettings, generate, linear_graph
from graphs.presentation import Markup, Shown, StrategyPresentation
from graphs.prompts import DEFAULT_INSTRUCTION, fill, format_chunks, format_documents
from graphs.registry import Strategy
from graphs.retrieval_settings import RetrievalSettings
from graphs.strategy_registry import STRATEGIES
from graphs.tool_loop import FINAL_TURN_PROMPT, ToolLoop, ToolLoopState, final_text
from retrieval.contract import Answer, Corpus, Document, Evidence, Question, Step, Usage

__all__ = [
    "ANSWER_TOKENS",
    "DEFAULT_INSTRUCTION",
    "FINAL_TURN_PROMPT",
    "STRATEGIES",
    "UNBOUNDED",
    "Answer",
    "AnswerSettings",
    "AnswerState",
    "BatchAnswer",
    "Budget",
    "BudgetReached",
    "Calls",
    "CeilingEnv",
    "CeilingItem",
    "Corpus",
    "CorpusShape",
    "CostPlan",
    "Costs",
    "Document",
    "Evidence",
    "EvidenceCeiling",
    "ExpectedCost",
    "IndexWork",
    "Markup",
    "PromptState",
    "Question",
    "Reach",
    "RetrievalSettings",
    "Shown",
    "SkipCeiling",
    "Step",
    "Strategy",
    "StrategyConfig",
    "StrategyContext",
    "StrategyCosts",
    "StrategyPresentation",
    "ToolLoop",
    "ToolLoopState",
    "Usage",
    "chat",
    "complete",
    "complete_with_usage",
    "fill",
    "final_text",
    "format_chunks",
    "format_documents",
    "generate",
    "linear_graph",
    "option",
    "per_question_plan",
    "prompt_tokens",
    "reply_tokens",
    "report_progress",
    "report_step",
    "tokenizer_for",
    "tool_schema_tokens",
]
