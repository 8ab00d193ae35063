"""What the built-in strategies' cost plans share: model calls and prompt tokens from the corpus size and its config.

The plans themselves live beside each strategy's graph (``rag_plan`` in ``graphs/rag/graph.py``...);
this module holds what they share. The formulas are the README's ("calls per question" of the strategy table, and PAI's cost
model); token counts are estimates: the corpus in cl100k tokens (MemAgent's chunks in the
model's own tokens, as it cuts them), the question, and :data:`TEMPLATE_TOKENS` of prompt
template per call. A plan function is ``(cfg, corpus, questions, llm) -> CostPlan`` and is
registered on the strategy (``STRATEGIES.register(..., cost_plan=...)``); ``llm`` may be ``None``
(a plan made before a model is chosen: cl100k and the config's default window).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from graphs.budget import CostPlan
from retrieval.contract import Question
from retrieval.tokens import count_tokens

#: Prompt tokens of a call's template and instructions beyond the corpus text and the question (estimate).
TEMPLATE_TOKENS = 200
#: The question a plan assumes when it is made for none (a placeholder, never asked).
PLACEHOLDER_QUESTION = Question(text="(a question)")
#: cl100k tokens per English word (chunk sizes given in words).
TOKENS_PER_WORD = 4 / 3


def tokens_of(size: int, unit: str) -> int:
    """Tokens of a chunk of ``size`` words or tokens."""
    return math.ceil(size * TOKENS_PER_WORD) if unit == "words" else size


def question_tokens(questions: Sequence[Question]) -> int:
    """cl100k tokens of the longest question."""
    return max((count_tokens(q.render()) for q in questions), default=0)


def per_question_plan(strategy: str, questions: Sequence[Question], calls: int, max_calls: int, prompt: int, max_prompt: int, completion: int,
                      formula: str, **details: Any) -> CostPlan:  # fmt: skip
    """A per-question plan scaled to every question (single-question strategies run the plan once each)."""
    return CostPlan(strategy, 1, calls, max_calls, prompt, max_prompt, completion, formula, details).scaled(len(questions))
