"""The public API: ``answer(corpus, question)``, chat models, and the answer contract.

    from agents import answer, Corpus
    corpus = Corpus.from_path("reports/")
    result = answer(corpus, "Which company had the highest revenue in 2023?", strategy="rag")
    result.answer, result.evidence, result.usage
"""

from agents.api import answer, answer_many, index_for
from agents.chat_models import ChatModelError, EmbeddedChatModel, make_chat_model
from agents.types import Answer, Evidence, Usage
from graphs import STRATEGIES, Question
from retrieval import Corpus, Document

__all__ = [
    "STRATEGIES",
    "Answer",
    "ChatModelError",
    "Corpus",
    "Document",
    "EmbeddedChatModel",
    "Evidence",
    "Question",
    "Usage",
    "answer",
    "answer_many",
    "index_for",
    "make_chat_model",
]
