"""The public API: ``answer(corpus, question)``, chat models, and the answer contract.

    from agents import answer, Corpus
    corpus = Corpus.from_path("examples/corpus")
    result = answer(corpus, "What was Halvorsen Maritime's revenue in 2023?", strategy="rag")
    result.answer, result.evidence, result.usage

In async code (FastAPI and the like): ``result = await aanswer(corpus, question, strategy="pai")``.
"""

from agents.api import aanswer, aanswer_many, answer, answer_many, estimate, index_for
from agents.chat_models import ChatModelError, EmbeddedChatModel, make_chat_model
from agents.interop import as_runnable, as_tool
from graphs import STRATEGIES, ConfigError
from graphs.budget import Budget, BudgetExceeded, CostPlan
from retrieval.contract import Answer, Corpus, CorpusError, Document, Evidence, Question, Step, Usage

__all__ = [
    "STRATEGIES",
    "Answer",
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
    "Question",
    "Step",
    "Usage",
    "aanswer",
    "aanswer_many",
    "answer",
    "answer_many",
    "estimate",
    "as_runnable",
    "as_tool",
    "index_for",
    "make_chat_model",
]
