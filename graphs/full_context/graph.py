"""Full-context baseline: the whole corpus in one prompt, middle-truncated to the window.

Truncation follows LongBench / LV-Eval: tokenize the *filled* prompt and keep the first
and last half of the budget, so the instructions at both ends survive. The budget is
the model window minus the answer budget and a small reserve for the chat template.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, TypedDict

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from graphs.config import ConfigError
from graphs.context import StrategyContext
from graphs.full_context.config import FullContextConfig
from graphs.full_context.prompts import FULL_CONTEXT_TEMPLATE, PROMPTS_VERSION
from graphs.full_context.truncation import (  # noqa: F401 - re-exported: the truncation rule's home before it moved
    CHARS_PER_TOKEN_BOUND,
    END_MARGIN_TOKENS,
    FIRST_CHARS_PER_TOKEN,
    end_ids,
    truncate_prompt,
    truncation_cut,
)
from graphs.llm import context_window, prompt_codec, tokenizer_id
from graphs.nodes import generate, linear_graph
from graphs.prompts import DEFAULT_INSTRUCTION, fill, format_documents
from graphs.registry import STRATEGIES
from retrieval.contract import Corpus, Question, Step


class FullContextState(TypedDict, total=False):
    """What evolves during one full-context answer."""

    question: Question
    prompt: str
    raw: str
    answer: str
    steps: Annotated[list[Step], operator.add]


@dataclass(frozen=True)
class FullContextPrompt:
    """The filled, truncated full-context prompt and how it was fitted to the window."""

    text: str
    context_window: int
    max_input_tokens: int
    truncated: bool
    official: bool = False


def input_budget(window: int, question: Question, cfg: FullContextConfig) -> int:
    """Tokens of prompt the window leaves: the benchmark's rule when the question carries one
    (window - reserve, capped by an absolute budget such as LongBench v2's 120,000), else
    window - answer budget - chat-template reserve."""
    protocol = question.protocol
    if protocol and protocol.window_reserve is not None:
        budget = window - protocol.window_reserve
    else:
        budget = window - question.answer_budget(cfg.max_new_tokens) - cfg.prompt_reserve_tokens
    if protocol and protocol.max_input_tokens:
        budget = min(budget, protocol.max_input_tokens)
    if budget <= 0:
        raise ConfigError(f"Context window {window} leaves no room for input after {question.answer_budget(cfg.max_new_tokens)} output tokens")
    return budget


def untruncated_prompt(corpus: Corpus, question: Question, cfg: FullContextConfig) -> tuple[str, bool]:
    """The whole prompt before truncation, and whether it is the benchmark's official one."""
    official = question.protocol.prompt if question.protocol and cfg.prompt == "benchmark" else None
    if official is not None:
        return official(), True
    return fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), question), False


_HEADS: dict[tuple, str] = {}  # (corpus fingerprint, tokenizer, budget) -> the kept head text
_BODIES: dict[str, str] = {}  # corpus fingerprint -> the template's text before the question (the last corpus only)
_CACHE_LOCK = threading.Lock()


def _template_body(corpus: Corpus) -> str:
    """``FULL_CONTEXT_TEMPLATE`` up to ``{context}``, filled with every document: the part of
    the prompt no question changes (kept for the last corpus seen, so questions share it)."""
    with _CACHE_LOCK:
        body = _BODIES.get(corpus.fingerprint)
        if body is None:
            body = FULL_CONTEXT_TEMPLATE.split("{context}")[0] + format_documents(corpus.documents)
            _BODIES.clear()
            _BODIES[corpus.fingerprint] = body
        return body


def _question_tail(question: Question) -> str:
    """``FULL_CONTEXT_TEMPLATE`` after ``{context}``, filled with the question."""
    rest = FULL_CONTEXT_TEMPLATE.split("{context}")[1]
    return rest.format(question=question.render(), instruction=question.instruction or DEFAULT_INSTRUCTION)


def truncate_our_prompt(
    corpus: Corpus, question: Question, max_tokens: int, encode: Callable[[str], list[int]], decode: Callable[[list[int]], str], tokenizer: str
) -> tuple[str, bool]:
    """:func:`truncate_prompt` of our filled template, the same text, without building the
    whole prompt per question: for a prompt far beyond the budget the kept head comes from
    the corpus and the template alone, so it is tokenized once per (corpus, tokenizer,
    budget) and shared by every question; each question tokenizes only its tail (at 10M
    tokens and a 128K window this took ~0.3 s a question, building a 60 MB prompt and
    tokenizing both ends)."""
    body, tail_text = _template_body(corpus), _question_tail(question)
    bound = CHARS_PER_TOKEN_BOUND * max_tokens
    if len(body) + len(tail_text) <= 2 * bound or len(tail_text) >= bound:
        return truncate_prompt(body + tail_text, max_tokens, encode, decode)
    half = max_tokens // 2
    key = (corpus.fingerprint, tokenizer, max_tokens)
    with _CACHE_LOCK:
        head = _HEADS.get(key)
    if head is None:
        head = decode(end_ids(body, half, encode, tail=False)[:half])  # the prompt's first `bound` chars are the body's
        with _CACHE_LOCK:
            if len(_HEADS) > 16:
                _HEADS.clear()
            _HEADS[key] = head
    tail = end_ids(body[-bound:] + tail_text, half, encode, tail=True)  # holds the prompt's last `bound` chars
    return head + decode(tail[len(tail) - half :]), True


def full_context_prompt(corpus: Corpus, question: Question, llm: BaseChatModel, cfg: FullContextConfig) -> FullContextPrompt:
    """The benchmark's official prompt when the question carries one (else our template with
    every document), middle-truncated to the input budget in the model's tokens.

    A pure function of its inputs, shared by this strategy, Self-Route's full-context leg
    and the evidence ceilings.
    """
    window = cfg.context_window or context_window(llm, cfg.default_context_window)
    budget = input_budget(window, question, cfg)
    encode, decode = prompt_codec(llm)
    official = bool(question.protocol and question.protocol.prompt is not None and cfg.prompt == "benchmark")
    if official:
        prompt, official = untruncated_prompt(corpus, question, cfg)
        text, truncated = truncate_prompt(prompt, budget, encode, decode)
    else:
        text, truncated = truncate_our_prompt(corpus, question, budget, encode, decode, tokenizer_id(llm))
    return FullContextPrompt(text=text, context_window=window, max_input_tokens=budget, truncated=truncated, official=official)


def build_prompt(state: FullContextState, runtime: Runtime[StrategyContext]) -> dict:
    """The full-context prompt of :func:`full_context_prompt`."""
    ctx = runtime.context
    built = full_context_prompt(ctx.corpus, state["question"], ctx.llm, ctx.config)
    step = Step(
        "build_prompt",
        context_window=built.context_window,
        max_input_tokens=built.max_input_tokens,
        truncated=built.truncated,
        prompt="benchmark" if built.official else "ours",
    )
    return {"prompt": built.text, "steps": [step]}


@STRATEGIES.register(
    "full_context",
    config_cls=FullContextConfig,
    presets={"paper": FullContextConfig(), "ours": FullContextConfig(prompt="ours")},
    prompts_version=PROMPTS_VERSION,
    description="The whole corpus in one prompt, middle-truncated to the model window.",
)
def build_graph(config: FullContextConfig | None = None):
    """START -> build_prompt -> generate -> END."""
    return linear_graph("full_context", FullContextState, ("build_prompt", build_prompt), ("generate", generate))
