"""Spending limits of one call: a :class:`Budget` and a strategy's :class:`CostPlan` (the guard that
stops a run at its budget is :class:`longctx.graphs.metering.budget_guard.BudgetGuard`).

A budget is checked twice. Up front, the strategy's cost plan (calls and prompt tokens from the
corpus size and its config, before any call) is compared with it: a plan that cannot fit is
refused with :class:`BudgetExceeded` (a checkpointed run's plan less what its checkpoint already
holds, :meth:`CostPlan.after`). During the run, :class:`~graphs.metering.budget_guard.BudgetGuard`
(a LangChain callback, like :class:`longctx.graphs.runtime.cancel.CancelGuard`) counts every
chat-model call as it starts and raises
:class:`BudgetReached` before the call that would pass a limit; the run path turns that into an
answer marked ``stopped="budget"`` with what was done (MemAgent's checkpoint keeps its chunks).
A rerank call is a model call too: the rerank stage announces it (``budget_guard.RERANK_EVENT``)
before its request, and the guard counts it (a call, its query-document tokens as prompt tokens,
their cost at :attr:`Budget.rerank_price`) or refuses it as it refuses a chat call.

Money needs a price. The report's price table lives in ``longctx.experiments.planning.prices``,
above this layer (experiments -> agents -> graphs), so the budget takes the price as a parameter
(:attr:`Budget.price`, USD per 1M prompt, completion and cached prompt tokens) and the CLI fills it
from that table for the model it runs; a library caller passes it
(``longctx.experiments.planning.prices.price_for(model)`` gives it) or leaves ``max_cost_usd``
unset. USD is the report's (:mod:`longctx.graphs.metering.pricing`): a finished call costs what its
server's usage says at that price, cached prompt tokens at the cached rate.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from longctx.graphs.metering.pricing import as_token_price
from longctx.graphs.metering.rerank_plan import RerankPlan
from longctx.retrieval.contract.errors import ConfigError, LongctxError


class BudgetExceeded(LongctxError, ValueError):
    """A call whose cost plan cannot fit its budget, refused before any model call (the message has
    the plan)."""


class BudgetReached(Exception):
    """Raised inside a run before the model call that would pass its budget; the run path stops
    there."""


@dataclass(frozen=True)
class Budget:
    """At most this much for one call of ``answer`` / ``answer_many`` (all its questions together).

    Attributes:
        max_llm_calls: Model calls (a call is counted when it starts, cached replays included).
        max_prompt_tokens: Prompt tokens sent, counted with the model's tokenizer before each call.
        max_cost_usd: USD at :attr:`price` (a call's prompt tokens reserved before it, at the prompt
            rate; settled at the usage its server reports when it ends, cached prompt tokens at the
            cached rate, as the report prices them).
        price: ``(prompt, completion)`` or ``(prompt, completion, cached)`` USD per 1M tokens of the
            model (or an ``longctx.experiments.planning.prices.Price``), read as a
            :class:`~graphs.metering.pricing.TokenPrice`; needed by ``max_cost_usd`` (a
            :class:`~agents.workspace.Workspace` fills in its own; a run without one is refused
            before any call). A parameter because the price table sits above this layer.
        rerank_price: The same for the reranker of a strategy's ``rerank`` stage (its prompt rate is
            what the query-document tokens cost); ``None``: free (a local cross-encoder or server).

    Rerank calls count as model calls: each against ``max_llm_calls``, its query-document tokens
    against ``max_prompt_tokens``, their cost at ``rerank_price`` against ``max_cost_usd``.
    """

    max_llm_calls: int | None = None
    max_prompt_tokens: int | None = None
    max_cost_usd: float | None = None
    price: Any = None  # any form as_token_price reads; a TokenPrice (or None) once made
    rerank_price: Any = None  # the same

    def __post_init__(self) -> None:
        for name in ("max_llm_calls", "max_prompt_tokens"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ConfigError(
                    f"Budget {name} must be a non-negative whole number, got {value!r}"
                )
        cost = self.max_cost_usd
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, (int, float))
            or cost < 0
            or math.isnan(cost)
        ):
            raise ConfigError(f"Budget max_cost_usd must be a non-negative number, got {cost!r}")
        try:
            object.__setattr__(self, "price", as_token_price(self.price))
            object.__setattr__(self, "rerank_price", as_token_price(self.rerank_price))
        except ValueError as exc:
            raise ConfigError(f"Budget {exc}") from None

    def check_priced(self) -> None:
        """Refuse a ``max_cost_usd`` without a price (it would bind nothing): the run path calls
        this before any model call, once a :class:`~agents.workspace.Workspace` has given its own
        price to a budget without one.

        Raises:
            ConfigError: ``max_cost_usd`` is set and :attr:`price` is not.
        """
        if self.max_cost_usd is not None and self.price is None:
            raise ConfigError(
                "Budget max_cost_usd needs the model's price: Budget(max_cost_usd=..., "
                "price=(prompt, completion[, cached])) in USD per 1M tokens "
                "(experiments.planning.prices.price_for(model) reads the report's table), or a "
                "Workspace(price=...) to answer in"
            )

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return any(
            v is not None for v in (self.max_llm_calls, self.max_prompt_tokens, self.max_cost_usd)
        )

    def cost(
        self, prompt_tokens: float, completion_tokens: float, cached_prompt_tokens: float = 0
    ) -> float:
        """USD of these tokens at :attr:`price` (0 without a price; cached prompt tokens at its
        cached rate)."""
        return (
            0.0
            if self.price is None
            else float(self.price.cost(prompt_tokens, completion_tokens, cached_prompt_tokens))
        )

    def rerank_cost(self, tokens: float) -> float:
        """USD of ``tokens`` sent to the reranker at :attr:`rerank_price` (0 without one: local)."""
        return 0.0 if self.rerank_price is None else float(self.rerank_price.cost(tokens, 0))

    def describe(self) -> str:
        """The limits, for messages: ``200 calls, 2,000,000 prompt tokens, $5.00``."""
        parts = []
        if self.max_llm_calls is not None:
            parts.append(f"{self.max_llm_calls:,} calls")
        if self.max_prompt_tokens is not None:
            parts.append(f"{self.max_prompt_tokens:,} prompt tokens")
        if self.max_cost_usd is not None:
            parts.append(f"${self.max_cost_usd:,.2f}")
        return ", ".join(parts) or "no limit"


@dataclass(frozen=True, kw_only=True)
class IndexWork:
    """The part of a :class:`CostPlan` spent at index time: what a strategy builds once per corpus
    and later questions reuse (RAPTOR's tree, structured's records; ``Usage.index_*`` when it runs),
    counted as the plan counts (at least / at most); nothing of it is sent when it is cached
    already.

    Attributes:
        what: What is built, for the plan's description.
        calls: Model calls at least.
        max_calls: Model calls at most.
        prompt_tokens: Prompt tokens at least (estimate).
        max_prompt_tokens: Prompt tokens at most (estimate).
        completion_tokens: Its part of the plan's completion tokens.
    """

    what: str
    calls: int
    max_calls: int
    prompt_tokens: int
    max_prompt_tokens: int
    completion_tokens: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "what": self.what,
            "calls": self.calls,
            "max_calls": self.max_calls,
            "prompt_tokens": self.prompt_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


@dataclass(frozen=True, kw_only=True)
class CostPlan:
    """What a strategy will spend on a corpus, known before its first call.

    ``calls`` / ``prompt_tokens`` are the least the run makes (every strategy's fixed part);
    ``max_calls`` / ``max_prompt_tokens`` the most (retries, follow-ups, a fallback, every
    extracted property); equal where the count is fixed (rag, full_context, memagent).
    ``completion_tokens`` is the most the least run may generate (its calls' answer budgets).
    ``max_calls=None`` / ``max_prompt_tokens=None``: no most (:data:`UNBOUNDED`, an agent that loops
    until it is done): a budget must then cap the run
    (:func:`longctx.graphs.metering.plan_check.check_plan` warns without one). Token counts are
    estimates (the corpus in the model's tokens plus the prompt templates).

    Attributes:
        strategy: The strategy's name.
        questions: Questions the plan covers.
        calls: Model calls at least.
        max_calls: Model calls at most (``None``: unbounded).
        prompt_tokens: Prompt tokens at least (estimate).
        max_prompt_tokens: Prompt tokens at most (estimate; ``None``: unbounded).
        completion_tokens: Completion tokens the least run may generate at most.
        formula: How the counts follow from the corpus and the config (the README's formula).
        details: Strategy-specific facts (MemAgent: its chunks).
        steps: For a batched run (MemAgent), per step in order (its closing answers last),
            ``(calls, prompt tokens at least, completion tokens)`` of all questions together,
            summing to the counts above: what lets a resumed run's plan count only the steps it has
            left (:meth:`after`); empty where the run has no steps.
        index: The part of the counts above spent at index time, once per corpus (its cost model's
            declaration; ``None``: it declares none, every question pays its own way); the rest is
            question time.
        rerank: The rerank calls besides the chat calls above (``None``: the strategy reranks
            nothing); a budget counts them as model calls (:meth:`over`).
    """

    strategy: str
    questions: int
    calls: int
    max_calls: int | None
    prompt_tokens: int
    max_prompt_tokens: int | None
    completion_tokens: int
    formula: str
    details: dict[str, Any] = field(default_factory=dict)
    steps: tuple[tuple[int, int, int], ...] = field(default=(), repr=False)
    index: IndexWork | None = None
    rerank: RerankPlan | None = None

    def __post_init__(self) -> None:
        i = self.index
        if i is not None and not (
            i.calls <= self.calls
            and i.max_calls <= _most(self.max_calls)
            and i.prompt_tokens <= self.prompt_tokens
            and i.max_prompt_tokens <= _most(self.max_prompt_tokens)
            and i.completion_tokens <= self.completion_tokens
        ):
            raise ValueError(
                f"{self.strategy}'s index-time part {i.to_dict()} exceeds its plan's counts"
            )

    def scaled(self, questions: int) -> CostPlan:
        """The plan for ``questions`` questions answered one by one (each runs the whole plan but
        its index part, built once)."""
        k = questions / max(self.questions, 1)
        i = self.index

        def part(total: Any, once: int) -> Any:
            return None if total is None else once + math.ceil((total - once) * k)

        return CostPlan(
            strategy=self.strategy,
            questions=questions,
            calls=part(self.calls, i.calls if i else 0),
            max_calls=part(self.max_calls, i.max_calls if i else 0),
            prompt_tokens=part(self.prompt_tokens, i.prompt_tokens if i else 0),
            max_prompt_tokens=part(self.max_prompt_tokens, i.max_prompt_tokens if i else 0),
            completion_tokens=part(self.completion_tokens, i.completion_tokens if i else 0),
            formula=self.formula,
            details=dict(self.details),
            index=i,
            rerank=self.rerank.scaled(k) if self.rerank is not None else None,
        )

    @property
    def unbounded(self) -> bool:
        """Whether the plan has no most (calls or prompt tokens): only a budget bounds the run."""
        return self.max_calls is None or self.max_prompt_tokens is None

    @property
    def question_calls(self) -> tuple[int, int | None]:
        """Model calls at question time, at least and at most (the plan's less its index part)."""
        i = self.index
        return (
            (self.calls - i.calls, _less(self.max_calls, i.max_calls))
            if i
            else (self.calls, self.max_calls)
        )

    @property
    def question_prompt_tokens(self) -> tuple[int, int | None]:
        """Prompt tokens at question time, at least and at most (the plan's less its index part)."""
        i = self.index
        return (
            (
                self.prompt_tokens - i.prompt_tokens,
                _less(self.max_prompt_tokens, i.max_prompt_tokens),
            )
            if i
            else (self.prompt_tokens, self.max_prompt_tokens)
        )

    def cost_usd(self, price: Any, rerank_price: Any = None) -> float | None:
        """USD of the least run at ``price`` (any form
        :func:`~graphs.metering.pricing.as_token_price` reads; every prompt token at the prompt
        rate: a plan does not know what a server's cache will hold), ``None`` without one; its
        rerank tokens at ``rerank_price`` (its prompt rate; ``None``: free, a local reranker)."""
        rates, rerank_rates = as_token_price(price), as_token_price(rerank_price)
        if rates is None:
            return None
        reranked = (
            rerank_rates.cost(self.rerank.tokens, 0)
            if self.rerank is not None and rerank_rates is not None
            else 0.0
        )
        return float(rates.cost(self.prompt_tokens, self.completion_tokens)) + float(reranked)

    def over(self, budget: Budget) -> list[str]:
        """The limits of ``budget`` the least run already passes (empty: it may fit); rerank calls
        count as calls, their tokens as prompt tokens."""
        problems = []
        calls, tokens = self.calls, self.prompt_tokens
        if self.rerank is not None:
            calls, tokens = calls + self.rerank.calls, tokens + self.rerank.tokens
        reranks = (
            f" ({self.rerank.calls:,} of them rerank calls)"
            if self.rerank is not None and self.rerank.calls
            else ""
        )
        if budget.max_llm_calls is not None and calls > budget.max_llm_calls:
            problems.append(
                f"{calls:,} call{'' if calls == 1 else 's'}{reranks} > {budget.max_llm_calls:,}"
            )
        if budget.max_prompt_tokens is not None and tokens > budget.max_prompt_tokens:
            problems.append(f"~{tokens:,} prompt tokens > {budget.max_prompt_tokens:,}")
        cost = self.cost_usd(budget.price, budget.rerank_price)
        if budget.max_cost_usd is not None and cost is not None and cost > budget.max_cost_usd:
            problems.append(f"~${cost:,.4f} > ${budget.max_cost_usd:,.2f}")
        return problems

    def with_index_calls(self, calls: int, prompt_tokens: int = 0) -> CostPlan:
        """This plan when its index is known to need ``calls`` model calls and ``prompt_tokens``
        prompt tokens at least (its cost model assumes a cached index: none), so a budget the build
        alone passes is refused before any call; the most stays the most, raised only where the
        least passes it."""
        i = self.index
        if i is None:
            return self
        more, tokens = max(0, calls - i.calls), max(0, prompt_tokens - i.prompt_tokens)
        if not more and not tokens:
            return self
        least_calls, least_tokens = self.calls + more, self.prompt_tokens + tokens
        most_tokens = self.max_prompt_tokens
        return dataclasses.replace(
            self,
            calls=least_calls,
            max_calls=None if self.max_calls is None else max(self.max_calls, least_calls),
            prompt_tokens=least_tokens,
            max_prompt_tokens=None if most_tokens is None else max(most_tokens, least_tokens),
            details={**self.details, "index_calls_left": calls, "index_tokens_left": prompt_tokens},
            index=dataclasses.replace(
                i,
                calls=i.calls + more,
                max_calls=max(i.max_calls, i.calls + more),
                prompt_tokens=i.prompt_tokens + tokens,
                max_prompt_tokens=max(i.max_prompt_tokens, i.prompt_tokens + tokens),
            ),
        )

    def index_cached(self) -> CostPlan:
        """This plan when its index is cached: nothing of the build is sent, so its part leaves the
        least and the most (a most that would otherwise warn that the budget may stop the run)."""
        i = self.index
        if i is None or i.max_calls == 0:
            return self

        def less(total: int | None, part: int) -> int | None:
            return None if total is None else total - part

        return dataclasses.replace(
            self,
            calls=self.calls - i.calls,
            max_calls=less(self.max_calls, i.max_calls),
            prompt_tokens=self.prompt_tokens - i.prompt_tokens,
            max_prompt_tokens=less(self.max_prompt_tokens, i.max_prompt_tokens),
            completion_tokens=self.completion_tokens - i.completion_tokens,
            details={**self.details, "index_cached": True},
            index=dataclasses.replace(
                i, calls=0, max_calls=0, prompt_tokens=0, max_prompt_tokens=0, completion_tokens=0
            ),
        )

    def after(self, calls: int, step: int | None = None) -> CostPlan:
        """What is left of this plan when a checkpoint already holds ``calls`` calls (a resumed run
        does not make them again), the first ``step`` of its :attr:`steps` finished (``None``: not
        known, as for a run continued from an earlier corpus's). Calls: those less ``calls``.
        Tokens: those of the steps left, a step partly done left out, so the least stays a lower
        bound; without the steps (a plug-in, or ``step`` unknown) no least is claimed (0)."""
        if calls <= 0:
            return self
        if self.steps and step is not None:
            done = sum(c for c, _, _ in self.steps[:step])
            # a step partly done counts none of its tokens
            rest = self.steps[step + 1 :] if calls > done else self.steps[step:]
            prompt, completion = sum(p for _, p, _ in rest), sum(t for _, _, t in rest)
            # the steps done sent their least
            most = _less(self.max_prompt_tokens, self.prompt_tokens - prompt)
        else:
            prompt, completion, most = 0, 0, self.max_prompt_tokens
        return CostPlan(
            strategy=self.strategy,
            questions=self.questions,
            calls=max(0, self.calls - calls),
            max_calls=_less(self.max_calls, calls),
            prompt_tokens=prompt,
            max_prompt_tokens=None if most is None else max(prompt, most),
            completion_tokens=completion,
            formula=(
                f"{self.formula}; less the {calls:,} call{'' if calls == 1 else 's'} its "
                "checkpoint holds"
            ),
            details={**self.details, "checkpointed_calls": calls},
            rerank=self.rerank,
        )

    def describe(self) -> str:
        """One line: calls and tokens (a range where they vary) and the formula."""
        calls, tokens = (
            _range(self.calls, self.max_calls),
            f"~{_range(self.prompt_tokens, self.max_prompt_tokens)}",
        )
        per = f" for {self.questions} questions" if self.questions != 1 else ""
        line = (
            f"{self.strategy} plans {calls} call{'' if self.max_calls == 1 else 's'} and "
            f"{tokens} prompt tokens{per} ({self.formula})"
        )
        line += f", and {self.rerank.describe()}" if self.rerank is not None else ""
        i = self.index
        if i is None or i.max_calls == 0:
            return line
        (asked, asked_most), (read, read_most) = self.question_calls, self.question_prompt_tokens
        return (
            f"{line}; index time, once per corpus ({i.what}; nothing when cached): "
            f"{_range(i.calls, i.max_calls)} calls and "
            f"~{_range(i.prompt_tokens, i.max_prompt_tokens)} prompt tokens; question time: "
            f"{_range(asked, asked_most)} calls and ~{_range(read, read_most)} prompt tokens"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "strategy": self.strategy,
            "questions": self.questions,
            "calls": self.calls,
            "max_calls": self.max_calls,
            "prompt_tokens": self.prompt_tokens,
            "max_prompt_tokens": self.max_prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "formula": self.formula,
            **({"details": self.details} if self.details else {}),
            **({"rerank": self.rerank.to_dict()} if self.rerank is not None else {}),
            **({"index": self.index.to_dict()} if self.index is not None else {}),
        }


def _range(least: int, most: int | None) -> str:
    """``12``, ``12-40`` or ``12-unbounded``, with thousands separators."""
    if most is None:
        return f"{least:,}-{UNBOUNDED_TEXT}"
    return f"{least:,}" if least == most else f"{least:,}-{most:,}"


#: A plan's most where it has none (``max_calls=UNBOUNDED``): a name for ``None`` that reads as
#: meant.
UNBOUNDED = None
#: How a plan's description names a missing most.
UNBOUNDED_TEXT = "unbounded"


def _most(value: int | None) -> float:
    """A most as a number (an unbounded one is infinite), for comparisons."""
    return math.inf if value is None else value


def _less(most: int | None, done: int) -> int | None:
    """``most - done`` (at least 0); an unbounded most stays unbounded."""
    return None if most is None else max(0, most - done)
