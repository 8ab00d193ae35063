"""What the built-in strategies' cost plans share: model calls and prompt tokens from the corpus size and its config.

The plans themselves live beside each strategy's graph (``rag_plan`` in ``graphs/rag/graph.py``...);
this module holds what they share. The formulas are the README's ("calls per question" of the strategy table, and PAI's cost
model); token counts are estimates: the corpus in cl100k tokens (MemAgent's chunks in the
model's own tokens, as it cuts them), the question, and :data:`TEMPLATE_TOKENS` of prompt
template per call. A plan function is ``(cfg, corpus, questions, llm) -> CostPlan`` and is
registered on the strategy (``STRATEGIES.register(..., cost_plan=...)``); ``llm`` may be ``None``
(a plan made before a model is chosen: cl100k and the config's default window).

Beside those bounds, each strategy registers its *expected* cost (``expected_cost=``): the typical
calls and tokens ``agents.run_plan`` prints before a run (a model may stop early or write to its
budget), from the corpus size alone. :class:`ExpectedCost` and the helpers at the end are what
those formulas share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


# -- expected cost: typical calls and tokens before a run (agents.run_plan) --------------------------------------

#: Prompt tokens of a call beyond what it reads: instructions, the question, the format (expected, not a bound).
CALL_OVERHEAD_TOKENS = 150
#: A short answer's length; the reply budget (``max_new_tokens``) bounds it.
ANSWER_TOKENS = 32


@dataclass(frozen=True)
class Calls:
    """Model calls and the tokens they read and write (typical counts, fractional for averages)."""

    calls: float = 0
    prompt_tokens: float = 0
    completion_tokens: float = 0


@dataclass(frozen=True)
class ExpectedCost:
    """What a strategy typically costs over one corpus: per question, and once per corpus (a cache built once)."""

    per_question: Calls
    once: Calls = Calls()


#: ``(config, corpus_tokens, documents, window) -> ExpectedCost``, registered as ``expected_cost=``;
#: ``window`` is the model's context window when known.
ExpectedCostFn = Callable[[Any, int, int, int | None], ExpectedCost]


def reply_tokens(cfg: Any, field: str = "max_new_tokens") -> int:
    """A reply's expected length: a short answer, at most the config's reply budget."""
    return min(getattr(cfg, field, ANSWER_TOKENS) or ANSWER_TOKENS, ANSWER_TOKENS)


def retrieved_tokens(cfg: Any, corpus_tokens: int) -> float:
    """Tokens of ``top_k`` chunks (a word is about 4/3 tokens), at most the corpus."""
    size = cfg.chunk_size * (4 / 3 if getattr(cfg, "chunk_unit", "tokens") == "words" else 1)
    return min(corpus_tokens, cfg.top_k * size)


def full_read_tokens(cfg: Any, corpus_tokens: int, window: int | None) -> float:
    """Tokens a full-context read keeps: the corpus, cut to the window less the reply and reserve."""
    window = int(getattr(cfg, "context_window", None) or window or getattr(cfg, "default_context_window", None) or 128_000)
    room = window - (getattr(cfg, "max_new_tokens", None) or 128) - (getattr(cfg, "prompt_reserve_tokens", None) or 64) - CALL_OVERHEAD_TOKENS
    return min(corpus_tokens, max(room, 0))
