"""Full-context baseline: the whole corpus in one prompt, middle-truncated to the window.

Truncation follows LongBench / LV-Eval: tokenize the *filled* prompt and keep the first
and last half of the budget, so the instructions at both ends survive. The budget is
the model window minus the answer budget and a small reserve for the chat template.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.runtime import Runtime

from longctx.graphs.full_context.ceiling import TruncatedWindowCeiling
from longctx.graphs.full_context.config import FullContextConfig
from longctx.graphs.full_context.prepared import prepared_context, truncate_our_prompt
from longctx.graphs.full_context.presentation import PRESENTATION
from longctx.graphs.full_context.prompts import FULL_CONTEXT_TEMPLATE, PROMPTS_VERSION

# Re-exported (F401): this module was the truncation rule's home before it moved.
from longctx.graphs.full_context.truncation import (  # noqa: F401
    CHARS_PER_TOKEN_BOUND,
    END_MARGIN_TOKENS,
    FIRST_CHARS_PER_TOKEN,
    end_ids,
    truncate_prompt,
    truncation_cut,
)
from longctx.graphs.plugin.api import (
    DOCUMENT_TEMPLATE,
    PLACEHOLDER_QUESTION,
    SEAM_TOKENS,
    STRATEGIES,
    Calls,
    CompiledGraph,
    ConfigError,
    CorpusShape,
    Costs,
    ExpectedCost,
    PromptSharing,
    PromptState,
    StrategyContext,
    StrategyCosts,
    context_window,
    counter,
    fill,
    format_documents,
    generate,
    linear_graph,
    per_question_plan,
    prompt_codec,
    prompt_tokens,
    reply_tokens,
    tokenizer_id,
)
from longctx.retrieval.contract import Corpus, Question, Step


class FullContextState(PromptState, total=False):
    """What evolves during one full-context answer."""


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
        raise ConfigError(
            f"Context window {window} leaves no room for input after "
            f"{question.answer_budget(cfg.max_new_tokens)} output tokens"
        )
    return budget


def untruncated_prompt(
    corpus: Corpus, question: Question, cfg: FullContextConfig
) -> tuple[str, bool]:
    """The whole prompt before truncation, and whether it is the benchmark's official one."""
    official = question.protocol.prompt if question.protocol and cfg.prompt == "benchmark" else None
    if official is not None:
        return official(), True
    return fill(FULL_CONTEXT_TEMPLATE, format_documents(corpus.documents), question), False


def full_context_prompt(
    corpus: Corpus, question: Question, llm: BaseChatModel, cfg: FullContextConfig
) -> FullContextPrompt:
    """The benchmark's official prompt when the question carries one (else our template with
    every document), middle-truncated to the input budget in the model's tokens.

    A pure function of its inputs, shared by this strategy, Self-Route's full-context leg
    and the evidence ceilings.
    """
    window = cfg.context_window or context_window(llm, cfg.default_context_window)
    budget = input_budget(window, question, cfg)
    encode, decode = prompt_codec(llm)
    official = _official(question, cfg)
    if official:
        prompt, official = untruncated_prompt(corpus, question, cfg)
        text, truncated = truncate_prompt(prompt, budget, encode, decode)
    else:
        text, truncated = truncate_our_prompt(
            corpus, question, budget, encode, decode, tokenizer_id(llm)
        )
    return FullContextPrompt(
        text=text,
        context_window=window,
        max_input_tokens=budget,
        truncated=truncated,
        official=official,
    )


def _official(question: Question, cfg: FullContextConfig) -> bool:
    """Whether ``question`` gets its benchmark's official prompt rather than our template."""
    return bool(
        question.protocol and question.protocol.prompt is not None and cfg.prompt == "benchmark"
    )


def prepare_corpus(
    corpus: Corpus,
    questions: Iterable[Question],
    llm: BaseChatModel,
    cfg: FullContextConfig | None = None,
) -> int:
    """Do now, once, what every question over ``corpus`` shares of :func:`full_context_prompt`
    with our template: format the documents, fingerprint the corpus, tokenize the kept head and
    the context's end (:func:`~graphs.full_context.prepared.prepared_context`, cached in this
    process). Optional: the first question does it otherwise. Returns the number of (budget)
    contexts prepared; questions that get a benchmark's official prompt need none.

    At 10M tokens and a 128K window this is 0.4-0.9 s (mostly formatting the 60 MB
    prompt), and each question's cut then costs ~2.4 ms instead of ~40 ms.
    """
    cfg = cfg or FullContextConfig()
    window = cfg.context_window or context_window(llm, cfg.default_context_window)
    budgets = {input_budget(window, q, cfg) for q in questions if not _official(q, cfg)}
    if budgets:
        encode, decode = prompt_codec(llm)
        tokenizer = tokenizer_id(llm)
        for budget in sorted(budgets):
            prepared_context(corpus, budget, encode, decode, tokenizer)
    return len(budgets)


def build_prompt(
    state: FullContextState, runtime: Runtime[StrategyContext[FullContextConfig]]
) -> dict[str, Any]:
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
    return {"prompt": built.text, "official_prompt": built.official, "steps": [step]}


def full_context_costs(
    cfg: FullContextConfig,
    shape: CorpusShape,
    questions: Sequence[Question],
    *,
    llm: BaseChatModel | None = None,
    window: int | None = None,
) -> Costs:
    """1 call of min(T, window input budget) tokens, its template counted from the real prompt;
    typically a short answer.

    Per question: the prompt with no documents (:func:`untruncated_prompt`'s template with no
    documents, or the benchmark's official prompt, counted whole), the documents' headers (their
    titles where the corpus is known, else empty), the corpus text, and a seam per piece; at most
    the window's input budget.
    """
    window = (
        cfg.context_window
        or window
        or (
            context_window(llm, cfg.default_context_window)
            if llm is not None
            else cfg.default_context_window
        )
    )
    first = questions[0] if questions else PLACEHOLDER_QUESTION
    docs = shape.corpus.documents if shape.corpus is not None else [None] * shape.documents
    headers = counter(llm)[1](
        "\n\n".join(
            DOCUMENT_TEMPLATE.format(number=i, title=d.title if d is not None else "", text="")
            for i, d in enumerate(docs, 1)
        )
    )
    seams = SEAM_TOKENS * (2 * len(docs) + 2)
    lows, highs = [], []
    for q in questions or [first]:
        cap = input_budget(window, q, cfg)
        official = q.protocol.prompt if q.protocol and _official(q, cfg) else None
        if official is not None:
            whole = prompt_tokens("full_context", "benchmark", official, llm, q)
            low, high = whole - 2 * SEAM_TOKENS, whole + 2 * SEAM_TOKENS
        else:
            bare = prompt_tokens(
                "full_context",
                "ours",
                functools.partial(fill, FULL_CONTEXT_TEMPLATE, "", q),
                llm,
                q,
            )
            low, high = bare + headers + shape.tokens - seams, bare + headers + shape.tokens + seams
        lows.append(max(0, min(low, cap - 2 * SEAM_TOKENS)))
        highs.append(min(high, cap + 2 * SEAM_TOKENS))
    least, most = min(lows), max(highs)
    bounds = per_question_plan(
        "full_context",
        questions,
        calls=1,
        max_calls=1,
        prompt_tokens=least,
        max_prompt_tokens=most,
        completion_tokens=first.answer_budget(cfg.max_new_tokens),
        formula=f"1 call of min(T, window) tokens, window {window:,}",
    )
    return Costs(bounds, ExpectedCost(Calls(1, (least + most) / 2, reply_tokens(cfg))))


@STRATEGIES.register(
    "full_context",
    costs=StrategyCosts(full_context_costs, always_bounded=True),
    ceiling=TruncatedWindowCeiling(
        rank=70, input_budget=input_budget, untruncated_prompt=untruncated_prompt
    ),
    config_cls=FullContextConfig,
    presets={"paper": FullContextConfig(), "ours": FullContextConfig(prompt="ours")},
    prompts_version=PROMPTS_VERSION,
    presentation=PRESENTATION,
    prompt_sharing=PromptSharing("the corpus text (cut to the window), before the question"),
    description="The whole corpus in one prompt, middle-truncated to the model window.",
    parts={"prompt": full_context_prompt},  # Self-Route's full-context leg
)
def build_graph(config: FullContextConfig | None = None) -> CompiledGraph:
    """START -> build_prompt -> generate -> END."""
    return linear_graph(
        "full_context", FullContextState, ("build_prompt", build_prompt), ("generate", generate)
    )
