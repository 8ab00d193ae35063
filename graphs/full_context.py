"""Full-context baseline: the whole corpus in one prompt, middle-truncated to the window.

Truncation follows LongBench / LV-Eval: tokenize the *filled* prompt and keep the first
and last half of the budget, so the instructions at both ends survive. The budget is
the model window minus the answer budget and a small reserve for the chat template.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, TypedDict

from langgraph.runtime import Runtime

from graphs.llm import context_window, prompt_codec
from graphs.nodes import generate, linear_graph
from graphs.prompts import FULL_CONTEXT_TEMPLATE, fill, format_documents
from graphs.registry import Strategy, register_strategy
from graphs.types import Question, StrategyContext
from retrieval import middle_truncate

#: Characters kept per side before tokenizing a huge prompt; no tokenizer packs 16 chars per token.
_CHARS_PER_TOKEN_BOUND = 16


@dataclass(frozen=True, kw_only=True)
class FullContextConfig:
    """Full-context baseline.

    Attributes:
        context_window: Model window in tokens; ``None`` asks the model (the embedded
            model reports its own), else 128000 (GPT-4o class; LongBench v2 truncates to 120000).
        max_new_tokens: Answer budget, subtracted from the window.
        prompt_reserve_tokens: Room for chat-template tokens around the prompt.
        temperature: 0 = greedy.
    """

    context_window: int | None = None
    default_context_window: int = field(default=128_000, metadata={"source": "LongBench v2 model2maxlen: 120000 for 128k models"})
    max_new_tokens: int = field(default=128, metadata={"source": "LongBench v2 pred.py max_tokens=128"})
    prompt_reserve_tokens: int = 64
    temperature: float = 0.0


class FullContextState(TypedDict, total=False):
    """What evolves during one full-context answer."""

    question: Question
    prompt: str
    raw: str
    answer: str
    steps: Annotated[list[dict], operator.add]


def truncate_prompt(
    prompt: str, max_tokens: int, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str]
) -> tuple[str, bool]:
    """Middle-truncate ``prompt`` to ``max_tokens`` tokens; returns ``(text, was_truncated)``.

    For prompts far beyond the budget (a 10M-token corpus) only the two ends are
    tokenized: a slice of ``16 * max_tokens`` characters per side always holds more than
    half the budget in tokens, so the result equals tokenizing everything.
    """
    bound = _CHARS_PER_TOKEN_BOUND * max_tokens
    if len(prompt) > 2 * bound:
        half = max_tokens // 2
        head, tail = encode(prompt[:bound]), encode(prompt[-bound:])
        return decode(head[:half]) + decode(tail[len(tail) - half :]), True
    ids = encode(prompt)
    if len(ids) <= max_tokens:
        return prompt, False
    kept = middle_truncate(ids, max_tokens)
    half = len(kept) // 2
    return decode(kept[:half]) + decode(kept[half:]), True


def build_prompt(state: FullContextState, runtime: Runtime[StrategyContext]) -> dict:
    """Fill the template with every document, then middle-truncate to the input budget."""
    ctx = runtime.context
    cfg: FullContextConfig = ctx.config
    window = cfg.context_window or context_window(ctx.llm, cfg.default_context_window)
    budget = window - cfg.max_new_tokens - cfg.prompt_reserve_tokens
    if budget <= 0:
        raise ValueError(f"Context window {window} leaves no room for input after {cfg.max_new_tokens} output tokens")
    prompt = fill(FULL_CONTEXT_TEMPLATE, format_documents(ctx.corpus.documents), state["question"])
    encode, decode = prompt_codec(ctx.llm)
    text, truncated = truncate_prompt(prompt, budget, encode, decode)
    step = {"node": "build_prompt", "context_window": window, "max_input_tokens": budget, "truncated": truncated}
    return {"prompt": text, "steps": [step]}


def build_graph(config: FullContextConfig | None = None):
    """START -> build_prompt -> generate -> END."""
    return linear_graph("full_context", FullContextState, ("build_prompt", build_prompt), ("generate", generate))


register_strategy(
    Strategy(
        name="full_context",
        config_cls=FullContextConfig,
        build_graph=build_graph,
        uses_index=False,
        description="The whole corpus in one prompt, middle-truncated to the model window.",
    )
)
