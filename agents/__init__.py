"""The public API: ``answer(corpus, question)``, chat models, and the answer contract.

    from agents import answer, Corpus
    corpus = Corpus.from_path("examples/corpus")
    result = answer(corpus, "What was Halvorsen Maritime's revenue in 2023?", strategy="rag")
    result.answer, result.evidence, result.usage

In async code (FastAPI and the like): ``result = await aanswer(corpus, question, strategy="pai")``;
``async for event in astream_answer(corpus, question)`` yields the steps as they happen, then the answer.
"""

from agents.api import aanswer, aanswer_many, answer, answer_many, estimate, index_for
from agents.chat_models import ChatModelError, EmbeddedChatModel, make_chat_model
from agents.events import AnswerEvent, ProgressEvent, StepEvent, TokenEvent
from agents.interop import as_runnable, as_tool
from agents.streaming import astream_answer, stream_answer
from agents.workspace import Workspace
from graphs import STRATEGIES, ConfigError
from graphs.budget import Budget, BudgetExceeded, CostPlan
from retrieval.contract import Answer, Corpus, CorpusError, Document, Evidence, Question, Step, Usage

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
    "Document",
    "EmbeddedChatModel",
    "Evidence",
    "ProgressEvent",
    "Question",
    "Step",
    "StepEvent",
    "TokenEvent",
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
