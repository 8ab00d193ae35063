"""One cost model per strategy: the bounds a budget is checked against and the typical cost the run
plan prints, from the same terms.

A strategy registers a :class:`StrategyCosts`
(``STRATEGIES.register(..., costs=StrategyCosts(model))``); its model is a :class:`CostModel`,
``(cfg, shape, questions, *, llm, window) -> Costs``: the least and most calls and prompt tokens (a
:class:`~graphs.metering.budget.CostPlan`: ``longctx.agents.estimate``, budgets refuse a call before
any model call) and the typical calls and tokens (an :class:`ExpectedCost`:
``longctx.agents.run_plan`` prints it before ``longctx run``/``demo``/``answer``), computed from one
set of terms so the typical cost lies within the bounds (``tests/test_cost_contract.py`` holds every
built-in to that). ``shape`` is the corpus's size per document (:class:`CorpusShape`: the corpus
itself for a budget, an even split of a size for the run plan), ``llm`` may be ``None`` (a plan made
before a model is chosen: cl100k and the config's default window), ``window`` the model's context
window where known.

The formulas are the README's ("calls per question" of the strategy table, and PAI's cost model);
token counts are estimates: the corpus in cl100k tokens (MemAgent's chunks in the model's own
tokens, as it cuts them), and each call's template with its question rendered from the strategy's
own prompt with an empty context (:func:`prompt_tokens`), counted as the budget guard counts a call,
so the least is a true lower bound of what a run sends and a budget of exactly that is not refused
up front. This module holds what the models share; each lives beside its strategy's graph
(``rag_costs`` in ``graphs/rag/graph.py``...). A plug-in may declare only one half
(``StrategyCosts(plan=...)`` or ``StrategyCosts(expected=...)``, or the older ``cost_plan=`` /
``expected_cost=`` keywords): the other half is then unavailable, with a clear error.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from langchain_core.language_models import BaseChatModel

from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.metering.budget import CostPlan
from longctx.graphs.plugin.config import ConfigT, StrategyConfig
from longctx.graphs.prompts import CHUNK_TEMPLATE
from longctx.retrieval.contract import Question
from longctx.retrieval.contract.corpus import Corpus
from longctx.retrieval.tokens import count_tokens

#: Prompt tokens of a call's template beyond the corpus text and the question, where a strategy's
#: model has no real prompt to count (a plug-in's estimate; every built-in counts its own templates
#: with :func:`prompt_tokens`). Measured (cl100k): the templates run from 38 (PAI's judge) to 189 +
#: 64 (structured's extraction, before its schema).
TEMPLATE_TOKENS = 200
#: Tokens a seam between two separately counted texts may save or add (a byte-pair merge across it),
#: per seam: a lower bound takes them off, an upper bound adds them, so a sum of counted parts
#: brackets the joined prompt.
SEAM_TOKENS = 1
#: The question a plan assumes when it is made for none (a placeholder, never asked).
PLACEHOLDER_QUESTION = Question(text="(a question)")
#: cl100k tokens per English word (chunk sizes given in words).
TOKENS_PER_WORD = 4 / 3


def tokens_of(size: int, unit: str) -> int:
    """Tokens of a chunk of ``size`` words or tokens."""
    return math.ceil(size * TOKENS_PER_WORD) if unit == "words" else size


def counter(llm: BaseChatModel | None = None) -> tuple[str, Callable[[str], int]]:
    """``(id, count)`` of the tokenizer the budget guard counts ``llm``'s prompts with (cl100k
    without a model)."""
    if llm is None:
        return "cl100k", count_tokens
    tok = tokenizer_for(llm)
    return tok.id, tok.count


#: Counted templates: (strategy, template, tokenizer, question) -> tokens (a plan is made per answer
#: call).
_COUNTED: dict[tuple[Any, ...], int] = {}
_COUNTED_MAX = 4096


def prompt_tokens(
    strategy: str,
    template: str,
    render: Callable[[], str],
    llm: BaseChatModel | None = None,
    question: Question | None = None,
) -> int:
    """Tokens of one call's prompt without its corpus text: ``render()`` (the strategy's own prompt
    function with an empty context, and ``question`` where given), counted as the budget guard
    counts a call (``llm``'s tokenizer; cl100k without one); cached per (strategy, template,
    tokenizer, question) so plans stay cheap. A question with a benchmark protocol (its own prompt
    builders) is counted afresh each time."""
    tokenizer, count = counter(llm)
    if question is not None and question.protocol is not None:
        return count(render())
    key = (
        strategy,
        template,
        tokenizer,
        None if question is None else (question.render(), question.instruction),
    )
    found = _COUNTED.get(key)
    if found is None:
        found = count(render())
        if len(_COUNTED) >= _COUNTED_MAX:
            _COUNTED.clear()
        _COUNTED[key] = found
    return found


def tool_schema_tokens(
    strategy: str, function: Mapping[str, Any], llm: BaseChatModel | None = None
) -> int:
    """Tokens of one OpenAI-format ``function`` schema sent with a call (tools mode), as the budget
    guard counts it (``longctx.graphs.calls.prompt_text.counted_prompt``: the ``tools`` list as
    JSON, after the messages), plus a seam: what each call that binds it adds to a plan's most."""
    name = str(function.get("function", {}).get("name", ""))
    text = functools.partial(json.dumps, [dict(function)])
    return prompt_tokens(strategy, f"tools:{name}:{len(text())}", text, llm) + SEAM_TOKENS


def chunk_headers(chunks: int, title: str, llm: BaseChatModel | None = None) -> int:
    """Tokens of the headers :func:`~graphs.prompts.format_chunks` puts before ``chunks`` chunks
    titled ``title`` (the blank lines between them included), counted as :func:`prompt_tokens`
    counts."""
    return prompt_tokens(
        "chunks",
        f"headers:{chunks}:{title}",
        lambda: "\n\n".join(
            CHUNK_TEMPLATE.format(number=i, title=title, text="") for i in range(1, chunks + 1)
        ),
        llm,
    )


def titles(shape: CorpusShape, llm: BaseChatModel | None = None) -> tuple[str, str]:
    """The corpus's titles of fewest and of most tokens (both "" where the corpus is not known)."""
    if shape.corpus is None or not shape.corpus.documents:
        return "", ""
    _, count = counter(llm)
    sized = sorted({d.title for d in shape.corpus.documents}, key=count)
    return sized[0], sized[-1]


@dataclass(frozen=True)
class Span:
    """The least and most tokens of a prompt (or its part)."""

    least: int
    most: int

    def __add__(self, other: Span | int) -> Span:
        o = other if isinstance(other, Span) else Span(other, other)
        return Span(self.least + o.least, self.most + o.most)


def retrieved_prompt(
    render: Callable[[Question], str],
    *,
    strategy: str,
    template: str,
    questions: Sequence[Question],
    shape: CorpusShape,
    top_k: int,
    chunk_tokens: int,
    llm: BaseChatModel | None = None,
    headed: Callable[[Question], bool] = lambda q: True,
) -> Span:
    """Prompt tokens of one call over ``top_k`` retrieved chunks of ``chunk_tokens`` (at most the
    corpus): ``render(question)`` is the call's prompt with no chunks (the strategy's own function),
    counted per question (the least and most over ``questions``); the chunk headers of
    :func:`~graphs.prompts.format_chunks` where ``headed(question)``: at least one per document up
    to ``top_k`` with the corpus's shortest title, at most ``top_k`` with its longest; a seam per
    piece."""
    text = min(shape.tokens, top_k * chunk_tokens)
    least_chunks, most_chunks = min(top_k, max(1, shape.documents)), top_k
    shortest, longest = titles(shape, llm)
    lows, highs = [], []
    for q in questions or [PLACEHOLDER_QUESTION]:
        bare = prompt_tokens(strategy, template, functools.partial(render, q), llm, q)
        heads = (
            (chunk_headers(least_chunks, shortest, llm), chunk_headers(most_chunks, longest, llm))
            if headed(q)
            else (0, 0)
        )
        seams = SEAM_TOKENS * (2 * most_chunks + 2)
        lows.append(max(0, bare + heads[0] + text - seams))
        highs.append(bare + heads[1] + text + seams)
    return Span(min(lows), max(highs))


def per_question_plan(
    strategy: str,
    questions: Sequence[Question],
    *,
    calls: int,
    max_calls: int | None,
    prompt_tokens: int,
    max_prompt_tokens: int | None,
    completion_tokens: int,
    formula: str,
    **details: Any,
) -> CostPlan:
    """A per-question plan (the :class:`~graphs.metering.budget.CostPlan` fields of one question)
    scaled to every question (single-question strategies run the plan once each)."""
    one = CostPlan(
        strategy=strategy,
        questions=1,
        calls=calls,
        max_calls=max_calls,
        prompt_tokens=prompt_tokens,
        max_prompt_tokens=max_prompt_tokens,
        completion_tokens=completion_tokens,
        formula=formula,
        details=details,
    )
    return one.scaled(len(questions))


# -- the typical cost and the registered model
# ----------------------------------------------------------------

#: A short answer's length; the reply budget (``max_new_tokens``) bounds it.
ANSWER_TOKENS = 32


@dataclass(frozen=True)
class Calls:
    """Model calls and the tokens they read and write (typical counts, fractional for averages)."""

    calls: float = 0
    prompt_tokens: float = 0
    completion_tokens: float = 0


@dataclass(frozen=True)
class RerankCalls:
    """Rerank calls (typical counts): the calls, the candidate documents they send and their
    tokens."""

    calls: float = 0
    documents: float = 0
    tokens: float = 0


@dataclass(frozen=True)
class ExpectedCost:
    """What a strategy typically costs over one corpus: per question, and once per corpus (a cache
    built once); ``index`` is the part of ``once`` spent at index time (``Usage.index_*``: RAPTOR's
    tree, structured's extraction), which the run plan prints apart from question time; ``rerank``:
    its rerank calls per question (:mod:`longctx.graphs.metering.rerank_costs`), besides the model
    calls."""

    per_question: Calls
    once: Calls = Calls()
    index: Calls = Calls()
    rerank: RerankCalls = RerankCalls()

    def __post_init__(self) -> None:
        i, o = self.index, self.once
        if (
            i.calls > o.calls
            or i.prompt_tokens > o.prompt_tokens
            or i.completion_tokens > o.completion_tokens
        ):
            raise ValueError(f"the index-time part {i} exceeds what is spent once per corpus {o}")


#: ``(config, corpus_tokens, documents, window) -> ExpectedCost``: a plug-in's typical cost alone
#: (``StrategyCosts(expected=...)``, formerly ``expected_cost=``); ``window`` is the model's context
#: window when known.
ExpectedCostFn = Callable[[ConfigT, int, int, int | None], ExpectedCost]
#: ``(config, corpus, questions, llm) -> CostPlan``: a plug-in's bounds alone
#: (``StrategyCosts(plan=...)``, formerly ``cost_plan=``).
CostPlanFn = Callable[[ConfigT, Corpus, Sequence[Question], BaseChatModel | None], CostPlan]


@dataclass(frozen=True)
class CorpusShape:
    """What a cost model reads of a corpus: each document's tokens, and the corpus itself where
    known (MemAgent cuts its text as a run would; without it, chunks of the configured size are
    assumed)."""

    token_counts: tuple[int, ...]
    corpus: Corpus | None = None

    @classmethod
    def of(cls, corpus: Corpus) -> CorpusShape:
        """The shape of ``corpus`` (a budget's plan: the real documents)."""
        return cls(corpus.token_counts, corpus)

    @classmethod
    def even(cls, tokens: int, documents: int) -> CorpusShape:
        """``tokens`` split evenly over ``documents`` documents (the run plan knows only the
        sizes)."""
        n = max(1, documents)
        base, extra = divmod(max(0, tokens), n)
        return cls((base + 1,) * extra + (base,) * (n - extra))

    @property
    def tokens(self) -> int:
        """Tokens of the whole corpus."""
        return sum(self.token_counts)

    @property
    def documents(self) -> int:
        """Documents in the corpus."""
        return len(self.token_counts)


@dataclass(frozen=True)
class Costs:
    """A strategy's cost over one corpus and its questions: the bounds and the typical value, from
    the same terms.

    Attributes:
        bounds: The least and most calls and prompt tokens of all the questions.
        typical: The typical calls and tokens, per question and once per corpus.
    """

    bounds: CostPlan
    typical: ExpectedCost


ConfigT_contra = TypeVar("ConfigT_contra", bound=StrategyConfig, contravariant=True)


class CostModel(Protocol[ConfigT_contra]):
    """A strategy's one cost model: ``(cfg, shape, questions, *, llm=None, window=None) -> Costs``.

    ``llm``: the model whose tokenizer counts the prompts (``None``: a plan made before one is
    chosen, cl100k); ``window``: its context window where known.
    """

    def __call__(
        self,
        cfg: ConfigT_contra,
        shape: CorpusShape,
        questions: Sequence[Question],
        /,
        *,
        llm: BaseChatModel | None = None,
        window: int | None = None,
    ) -> Costs: ...


@dataclass(frozen=True)
class StrategyCosts(Generic[ConfigT]):
    """What a strategy costs, registered on its entry (``costs=``): one :attr:`model` giving the
    bounds and the typical value together (every built-in), or, for a plug-in, only one half
    (:attr:`plan` or :attr:`expected`).

    Attributes:
        model: ``(config, shape, questions, *, llm, window) -> Costs`` (a :class:`CostModel`).
        plan: A plug-in's bounds alone (``(config, corpus, questions, llm) -> CostPlan``); not with
            ``model``.
        expected: A plug-in's typical cost alone
            (``(config, corpus_tokens, documents, window) -> ExpectedCost``); not with ``model``.
        always_bounded: Every plan it gives has a most (calls and prompt tokens), whatever the
            config and corpus: a budget-less answer then skips the plan, which nothing would read
            (no :class:`~graphs.metering.plan_check.UnboundedCostWarning` can be due). ``False``
            (the default, and an agent that may loop until done): the plan is computed to know.
    """

    model: CostModel[ConfigT] | None = None
    plan: CostPlanFn[ConfigT] | None = None
    expected: ExpectedCostFn[ConfigT] | None = None
    always_bounded: bool = False

    def __post_init__(self) -> None:
        if self.model is not None and (self.plan is not None or self.expected is not None):
            raise TypeError(
                "StrategyCosts takes a model (bounds and typical cost together) or plan= / "
                "expected=, not both"
            )

    @property
    def has_bounds(self) -> bool:
        """Whether a budget can be checked before any call."""
        return self.model is not None or self.plan is not None

    @property
    def has_typical(self) -> bool:
        """Whether the run plan can print a typical cost."""
        return self.model is not None or self.expected is not None

    def bounds(
        self,
        cfg: ConfigT,
        *,
        corpus: Corpus,
        questions: Sequence[Question],
        llm: BaseChatModel | None = None,
    ) -> CostPlan:
        """The least and most calls and prompt tokens of ``questions`` over ``corpus``.

        Raises:
            ValueError: Only a typical cost is declared.
        """
        if self.model is not None:
            return self.model(cfg, CorpusShape.of(corpus), questions, llm=llm).bounds
        if self.plan is None:
            raise ValueError("declares no cost bounds (StrategyCosts(plan=...) or a model)")
        return self.plan(cfg, corpus, questions, llm)

    def halves(
        self,
        cfg: ConfigT,
        *,
        shape: CorpusShape,
        questions: Sequence[Question],
        llm: BaseChatModel | None = None,
        window: int | None = None,
    ) -> tuple[CostPlan | None, ExpectedCost | None]:
        """The bounds (``None`` without them, or without the corpus they count) and the typical cost
        (``None`` without it): what a strategy that runs another (Self-Route's fallback) adds up."""
        if self.model is not None:
            both = self.model(cfg, shape, questions, llm=llm, window=window)
            return both.bounds, both.typical
        bounds = (
            self.plan(cfg, shape.corpus, questions, llm)
            if self.plan is not None and shape.corpus is not None
            else None
        )
        typical = (
            self.expected(cfg, shape.tokens, shape.documents, window)
            if self.expected is not None
            else None
        )
        return bounds, typical

    def typical(
        self, cfg: ConfigT, *, corpus_tokens: int, documents: int, window: int | None = None
    ) -> ExpectedCost:
        """The typical cost over a corpus of this size (per question: a placeholder question's).

        Raises:
            ValueError: Only bounds are declared.
        """
        if self.model is not None:
            return self.model(
                cfg,
                CorpusShape.even(corpus_tokens, documents),
                [PLACEHOLDER_QUESTION],
                window=window,
            ).typical
        if self.expected is None:
            raise ValueError("declares no typical cost (StrategyCosts(expected=...) or a model)")
        return self.expected(cfg, corpus_tokens, documents, window)


def reply_tokens(cfg: StrategyConfig, field: str = "max_new_tokens") -> int:
    """A reply's expected length: a short answer, at most the config's reply budget."""
    return min(getattr(cfg, field, ANSWER_TOKENS) or ANSWER_TOKENS, ANSWER_TOKENS)
