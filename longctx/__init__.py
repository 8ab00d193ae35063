"""longctx: answer questions over corpora of 4M-10M tokens, and compare the strategies that try.

    from longctx import answer, Corpus
    corpus = Corpus.from_path("examples/corpus")
    result = answer(corpus, "What was Halvorsen Maritime's revenue in 2023?", strategy="rag")
    result.answer, result.evidence, result.usage

In async code (FastAPI and the like): ``result = await aanswer(corpus, question, strategy="pai")``;
``async for event in astream_answer(corpus, question)`` yields the steps as they happen, then the
answer.

Everything the library installs lives under this one namespace: ``longctx.agents`` (the API and
chat models), ``longctx.retrieval``, ``longctx.memory``, ``longctx.graphs`` (the strategies and
their engine) and ``longctx.experiments`` (benchmarks, runs, reports, the command line).

The names below load their module on first use (PEP 562): ``import longctx`` is instant, and the
engines (LangGraph graphs, LangChain, llama.cpp, the retrievers) load with the first name that needs
them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longctx.retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from longctx.agents.api import aanswer, aanswer_many, answer, answer_many, estimate, index_for
    from longctx.agents.chat_errors import ChatModelError
    from longctx.agents.chat_models import make_chat_model
    from longctx.agents.embedded_chat import EmbeddedChatModel
    from longctx.agents.events import (
        AnswerEvent,
        ProgressEvent,
        StepEvent,
        TokenEvent,
        ToolCallEvent,
        ToolResultEvent,
    )
    from longctx.agents.interop import as_runnable, as_tool
    from longctx.agents.streaming import astream_answer, stream_answer
    from longctx.agents.workspace import Workspace
    from longctx.graphs import STRATEGIES, ConfigError
    from longctx.graphs.metering.budget import Budget, BudgetExceeded, CostPlan
    from longctx.retrieval.contract import (
        Answer,
        Corpus,
        CorpusError,
        Document,
        Evidence,
        Question,
        Step,
        Usage,
    )
    from longctx.retrieval.contract.errors import DataError, LongctxError, ModelError
    from longctx.retrieval.extras import MissingExtraError

#: Exported name -> the module that defines it.
_EXPORTS = {
    **dict.fromkeys(
        ("aanswer", "aanswer_many", "answer", "answer_many", "estimate", "index_for"),
        "longctx.agents.api",
    ),
    "ChatModelError": "longctx.agents.chat_errors",
    "EmbeddedChatModel": "longctx.agents.embedded_chat",
    "make_chat_model": "longctx.agents.chat_models",
    **dict.fromkeys(
        (
            "AnswerEvent",
            "ProgressEvent",
            "StepEvent",
            "TokenEvent",
            "ToolCallEvent",
            "ToolResultEvent",
        ),
        "longctx.agents.events",
    ),
    **dict.fromkeys(("as_runnable", "as_tool"), "longctx.agents.interop"),
    **dict.fromkeys(("astream_answer", "stream_answer"), "longctx.agents.streaming"),
    "Workspace": "longctx.agents.workspace",
    **dict.fromkeys(("STRATEGIES", "ConfigError"), "longctx.graphs"),
    **dict.fromkeys(("Budget", "BudgetExceeded", "CostPlan"), "longctx.graphs.metering.budget"),
    **dict.fromkeys(
        ("Answer", "Corpus", "CorpusError", "Document", "Evidence", "Question", "Step", "Usage"),
        "longctx.retrieval.contract",
    ),
    **dict.fromkeys(
        ("DataError", "LongctxError", "ModelError"), "longctx.retrieval.contract.errors"
    ),
    "MissingExtraError": "longctx.retrieval.extras",
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


__getattr__, __dir__ = lazy_attributes("longctx", _EXPORTS, globals())
