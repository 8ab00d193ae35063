"""The public API: ``answer(corpus, question)``, chat models, and the answer contract.

    from agents import answer, Corpus
    corpus = Corpus.from_path("examples/corpus")
    result = answer(corpus, "What was Halvorsen Maritime's revenue in 2023?", strategy="rag")
    result.answer, result.evidence, result.usage

In async code (FastAPI and the like): ``result = await aanswer(corpus, question, strategy="pai")``;
``async for event in astream_answer(corpus, question)`` yields the steps as they happen, then the answer.

The names below load their module on first use (PEP 562): ``import agents`` is instant, and the
engines (LangGraph graphs, LangChain, llama.cpp, the retrievers) load with the first name that needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from agents.api import aanswer, aanswer_many, answer, answer_many, estimate, index_for
    from agents.chat_errors import ChatModelError
    from agents.chat_models import make_chat_model
    from agents.embedded_chat import EmbeddedChatModel
    from agents.events import (
        AnswerEvent,
        ProgressEvent,
        StepEvent,
        TokenEvent,
        ToolCallEvent,
        ToolResultEvent,
    )
    from agents.interop import as_runnable, as_tool
    from agents.streaming import astream_answer, stream_answer
    from agents.workspace import Workspace
    from graphs import STRATEGIES, ConfigError
    from graphs.budget import Budget, BudgetExceeded, CostPlan
    from retrieval.contract import (
        Answer,
        Corpus,
        CorpusError,
        Document,
        Evidence,
        Question,
        Step,
        Usage,
    )
    from retrieval.errors import DataError, LongctxError, ModelError
    from retrieval.extras import MissingExtraError

#: Exported name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(
        ("aanswer", "aanswer_many", "answer", "answer_many", "estimate", "index_for"), "agents.api"
    ),
    "ChatModelError": "agents.chat_errors",
    "EmbeddedChatModel": "agents.embedded_chat",
    "make_chat_model": "agents.chat_models",
    **dict.fromkeys(
        (
            "AnswerEvent",
            "ProgressEvent",
            "StepEvent",
            "TokenEvent",
            "ToolCallEvent",
            "ToolResultEvent",
        ),
        "agents.events",
    ),
    **dict.fromkeys(("as_runnable", "as_tool"), "agents.interop"),
    **dict.fromkeys(("astream_answer", "stream_answer"), "agents.streaming"),
    "Workspace": "agents.workspace",
    **dict.fromkeys(("STRATEGIES", "ConfigError"), "graphs"),
    **dict.fromkeys(("Budget", "BudgetExceeded", "CostPlan"), "graphs.budget"),
    **dict.fromkeys(
        ("Answer", "Corpus", "CorpusError", "Document", "Evidence", "Question", "Step", "Usage"),
        "retrieval.contract",
    ),
    **dict.fromkeys(("DataError", "LongctxError", "ModelError"), "retrieval.errors"),
    "MissingExtraError": "retrieval.extras",
}

__all__ = [
    "STRATEGIES",
    "Answer",
    "AnswerEvent",
    "Budget",
    "BudgetExceeded",
    "ChatModelError",
    "ConfigError",
    "Corpus",
    "CorpusError",
    "CostPlan",
    "DataError",
    "Document",
    "EmbeddedChatModel",
    "Evidence",
    "LongctxError",
    "MissingExtraError",
    "ModelError",
    "ProgressEvent",
    "Question",
    "Step",
    "StepEvent",
    "TokenEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "Usage",
    "Workspace",
    "aanswer",
    "aanswer_many",
    "answer",
    "answer_many",
    "estimate",
    "as_runnable",
    "as_tool",
    "astream_answer",
    "index_for",
    "make_chat_model",
    "stream_answer",
]


__getattr__, __dir__ = lazy_attributes("agents", _EXPORTS, globals())
