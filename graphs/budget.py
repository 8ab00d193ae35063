"""Spending limits of one call: a :class:`Budget`, a strategy's :class:`CostPlan`, and the guard.

A budget is checked twice. Up front, the strategy's cost plan (calls and prompt tokens from the
corpus size and its config, before any call) is compared with it: a plan that cannot fit is
refused with :class:`BudgetExceeded` (a checkpointed run's plan less what its checkpoint already
holds, :meth:`CostPlan.after`). During the run, :class:`BudgetGuard` (a LangChain callback,
like :class:`graphs.cancel.CancelGuard`) counts every chat-model call as it starts and raises
:class:`BudgetReached` before the call that would pass a limit; the run path turns that into an
answer marked ``stopped="budget"`` with what was done (MemAgent's checkpoint keeps its chunks).

Money needs a price. The report's price table lives in ``experiments.prices``, above this layer
(experiments -> agents -> graphs), so the budget takes the price as a parameter
(:attr:`Budget.price`, USD per 1M prompt and completion tokens) and the CLI fills it from that
table for the model it runs; a library caller passes it (``experiments.prices.price_for(model)``
gives it) or leaves ``max_cost_usd`` unset.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult


class BudgetExceeded(ValueError):
    """A call whose cost plan cannot fit its budget, refused before any model call (the message has the plan)."""


class BudgetReached(Exception):
    """Raised inside a run before the model call that would pass its budget; the run path stops there."""


def _price_pair(price: Any) -> tuple[float, float] | None:
    """``(prompt, completion)`` USD per 1M tokens from a pair or an object with ``prompt`` / ``completion``."""
    if price is None:
        return None
    if hasattr(price, "prompt") and hasattr(price, "completion"):
        price = (price.prompt, price.completion)
    try:
        prompt, completion = (float(v) for v in price)
    except (TypeError, ValueError):
        raise ValueError(f"Budget price must be (prompt, completion) USD per 1M tokens, got {price!r}") from None
    if prompt < 0 or completion < 0 or math.isnan(prompt + completion):
        raise ValueError(f"Budget price must be non-negative USD per 1M tokens, got {price!r}")
    return prompt, completion


@dataclass(frozen=True)
class Budget:
    """At most this much for one call of ``answer`` / ``answer_many`` (all its questions together).

    Attributes:
        max_llm_calls: Model calls (a call is counted when it starts, cached replays included).
        max_prompt_tokens: Prompt tokens sent, counted with the model's tokenizer before each call.
        max_cost_usd: USD at :attr:`price` (prompt tokens before each call, completion tokens as replies come back).
        price: ``(prompt, completion)`` USD per 1M tokens of the model (or an ``experiments.prices.Price``);
            needed by ``max_cost_usd``. A parameter because the price table sits above this layer.
    """

    max_llm_calls: int | None = None
    max_prompt_tokens: int | None = None
    max_cost_usd: float | None = None
    price: Any = None

    def __post_init__(self) -> None:
        for name in ("max_llm_calls", "max_prompt_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ValueError(f"Budget {name} must be a non-negative whole number, got {value!r}")
        cost = self.max_cost_usd
        if cost is not None and (isinstance(cost, bool) or not isinstance(cost, (int, float)) or cost < 0 or math.isnan(cost)):
            raise ValueError(f"Budget max_cost_usd must be a non-negative number, got {cost!r}")
        object.__setattr__(self, "price", _price_pair(self.price))
        if cost is not None and self.price is None:
            raise ValueError(
                "Budget max_cost_usd needs the model's price: Budget(max_cost_usd=..., price=(prompt, completion)) in USD per 1M tokens "
                "(experiments.prices.price_for(model) reads the report's table)"
            )

    @property
    def limited(self) -> bool:
        """Whether any limit is set."""
        return any(v is not None for v in (self.max_llm_calls, self.max_prompt_tokens, self.max_cost_usd))

    def cost(self, prompt_tokens: float, completion_tokens: float) -> float:
        """USD of these tokens at :attr:`price` (0 without a price)."""
        if self.price is None:
            return 0.0
        usd: float = (prompt_tokens * self.price[0] + completion_tokens * self.price[1]) / 1_000_000
        return usd

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
    """The part of a :class:`CostPlan` spent at index time: what a strategy builds once per corpus and later
    questions reuse (RAPTOR's tree, structured's records; ``Usage.index_*`` when it runs), counted as the plan
    counts (at least / at most); nothing of it is sent when it is cached already.

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
        return {"what": self.what, "calls": self.calls, "max_calls": self.max_calls, "prompt_tokens": self.prompt_tokens,
                "max_prompt_tokens": self.max_prompt_tokens, "completion_tokens": self.completion_tokens}  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class CostPlan:
    """What a strategy will spend on a corpus, known before its first call.

    ``calls`` / ``prompt_tokens`` are the least the run makes (every strategy's fixed part);
    ``max_calls`` / ``max_prompt_tokens`` the most (retries, follow-ups, a fallback, every
    extracted property); equal where the count is fixed (rag, full_context, memagent).
    ``completion_tokens`` is the most the least run may generate (its calls' answer budgets).
    Token counts are estimates (the corpus in the model's tokens plus the prompt templates).

    Attributes:
        strategy: The strategy's name.
        questions: Questions the plan covers.
        calls: Model calls at least.
        max_calls: Model calls at most.
        prompt_tokens: Prompt tokens at least (estimate).
        max_prompt_tokens: Prompt tokens at most (estimate).
        completion_tokens: Completion tokens the least run may generate at most.
        formula: How the counts follow from the corpus and the config (the README's formula).
        details: Strategy-specific facts (MemAgent: its chunks).
        steps: For a batched run (MemAgent), per step in order (its closing answers last), ``(calls, prompt tokens at
            least, completion tokens)`` of all questions together, summing to the counts above: what lets a resumed
            run's plan count only the steps it has left (:meth:`after`); empty where the run has no steps.
        index: The part of the counts above spent at index time, once per corpus (its cost model's declaration;
            ``None``: it declares none, every question pays its own way); the rest is question time.
    """

    strategy: str
    questions: int
    calls: int
    max_calls: int
    prompt_tokens: int
    max_prompt_tokens: int
    completion_tokens: int
    formula: str
    details: dict[str, Any] = field(default_factory=dict)
    steps: tuple[tuple[int, int, int], ...] = field(default=(), repr=False)
    index: IndexWork | None = None

    def __post_init__(self) -> None:
        i = self.index
        if i is not None and not (i.calls <= self.calls and i.max_calls <= self.max_calls and i.prompt_tokens <= self.prompt_tokens
                                  and i.max_prompt_tokens <= self.max_prompt_tokens and i.completion_tokens <= self.completion_tokens):  # fmt: skip
            raise ValueError(f"{self.strategy}'s index-time part {i.to_dict()} exceeds its plan's counts")

    def scaled(self, questions: int) -> CostPlan:
        """The plan for ``questions`` questions answered one by one (each runs the whole plan but its index part, built once)."""
        k = questions / max(self.questions, 1)
        i = self.index

        def part(total: int, once: int) -> int:
            return once + math.ceil((total - once) * k)

        return CostPlan(
            strategy=self.strategy, questions=questions, calls=part(self.calls, i.calls if i else 0),
            max_calls=part(self.max_calls, i.max_calls if i else 0), prompt_tokens=part(self.prompt_tokens, i.prompt_tokens if i else 0),
            max_prompt_tokens=part(self.max_prompt_tokens, i.max_prompt_tokens if i else 0),
            completion_tokens=part(self.completion_tokens, i.completion_tokens if i else 0), formula=self.formula, details=dict(self.details),
            index=i,
        )  # fmt: skip

    @property
    def question_calls(self) -> tuple[int, int]:
        """Model calls at question time, at least and at most (the plan's less its index part)."""
        i = self.index
        return (self.calls - i.calls, self.max_calls - i.max_calls) if i else (self.calls, self.max_calls)

    @property
    def question_prompt_tokens(self) -> tuple[int, int]:
        """Prompt tokens at question time, at least and at most (the plan's less its index part)."""
        i = self.index
        return (self.prompt_tokens - i.prompt_tokens, self.max_prompt_tokens - i.max_prompt_tokens) if i else (self.prompt_tokens, self.max_prompt_tokens)

    def cost_usd(self, price: Any) -> float | None:
        """USD of the least run at ``price`` (``(prompt, completion)`` per 1M tokens), ``None`` without one."""
        pair = _price_pair(price)
        if pair is None:
            return None
        return (self.prompt_tokens * pair[0] + self.completion_tokens * pair[1]) / 1_000_000

    def over(self, budget: Budget) -> list[str]:
        """The limits of ``budget`` the least run already passes (empty: it may fit)."""
        problems = []
        if budget.max_llm_calls is not None and self.calls > budget.max_llm_calls:
            problems.append(f"{self.calls:,} call{'' if self.calls == 1 else 's'} > {budget.max_llm_calls:,}")
        if budget.max_prompt_tokens is not None and self.prompt_tokens > budget.max_prompt_tokens:
            problems.append(f"~{self.prompt_tokens:,} prompt tokens > {budget.max_prompt_tokens:,}")
        cost = self.cost_usd(budget.price)
        if budget.max_cost_usd is not None and cost is not None and cost > budget.max_cost_usd:
            problems.append(f"~${cost:,.4f} > ${budget.max_cost_usd:,.2f}")
        return problems

    def after(self, calls: int, step: int | None = None) -> CostPlan:
        """What is left of this plan when a checkpoint already holds ``calls`` calls (a resumed run does not make them
        again), the first ``step`` of its :attr:`steps` finished (``None``: not known, as for a run continued from an
        earlier corpus's). Calls: those less ``calls``. Tokens: those of the steps left, a step partly done left out, so
        the least stays a lower bound; without the steps (a plug-in, or ``step`` unknown) no least is claimed (0)."""
        if calls <= 0:
            return self
        if self.steps and step is not None:
            done = sum(c for c, _, _ in self.steps[:step])
            rest = self.steps[step + 1 :] if calls > done else self.steps[step:]  # a step partly done counts none of its tokens
            prompt, completion = sum(p for _, p, _ in rest), sum(t for _, _, t in rest)
            most = self.max_prompt_tokens - (self.prompt_tokens - prompt)  # the steps done sent at least their least
        else:
            prompt, completion, most = 0, 0, self.max_prompt_tokens
        return CostPlan(
            strategy=self.strategy, questions=self.questions, calls=max(0, self.calls - calls), max_calls=max(0, self.max_calls - calls),
            prompt_tokens=prompt, max_prompt_tokens=max(prompt, most), completion_tokens=completion,
            formula=f"{self.formula}; less the {calls:,} call{'' if calls == 1 else 's'} its checkpoint holds",
            details={**self.details, "checkpointed_calls": calls},
        )  # fmt: skip

    def describe(self) -> str:
        """One line: calls and tokens (a range where they vary) and the formula."""
        calls = f"{self.calls:,}" if self.calls == self.max_calls else f"{self.calls:,}-{self.max_calls:,}"
        tokens = f"~{self.prompt_tokens:,}" if self.prompt_tokens == self.max_prompt_tokens else f"~{self.prompt_tokens:,}-{self.max_prompt_tokens:,}"
        per = f" for {self.questions} questions" if self.questions != 1 else ""
        line = f"{self.strategy} plans {calls} call{'' if self.max_calls == 1 else 's'} and {tokens} prompt tokens{per} ({self.formula})"
        i = self.index
        if i is None or i.max_calls == 0:
            return line
        (asked, asked_most), (read, read_most) = self.question_calls, self.question_prompt_tokens
        return (f"{line}; index time, once per corpus ({i.what}; nothing when cached): {_range(i.calls, i.max_calls)} calls and "
                f"~{_range(i.prompt_tokens, i.max_prompt_tokens)} prompt tokens; question time: {_range(asked, asked_most)} calls and "
                f"~{_range(read, read_most)} prompt tokens")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "strategy": self.strategy, "questions": self.questions, "calls": self.calls, "max_calls": self.max_calls,
            "prompt_tokens": self.prompt_tokens, "max_prompt_tokens": self.max_prompt_tokens,
            "completion_tokens": self.completion_tokens, "formula": self.formula, **({"details": self.details} if self.details else {}),
            **({"index": self.index.to_dict()} if self.index is not None else {}),
        }  # fmt: skip


def _range(least: int, most: int) -> str:
    """``12`` or ``12-40``, with thousands separators."""
    return f"{least:,}" if least == most else f"{least:,}-{most:,}"


def check_plan(plan: CostPlan, budget: Budget | None) -> None:
    """Refuse up front a plan that cannot fit ``budget``.

    Raises:
        BudgetExceeded: With the plan and the limits it passes.
    """
    if budget is None or not budget.limited:
        return
    problems = plan.over(budget)
    if problems:
        raise BudgetExceeded(f"Budget exceeded before any call: {plan.describe()}; over the budget: {', '.join(problems)}")


class BudgetGuard(BaseCallbackHandler):
    """Counts a run's chat-model calls as they start and stops the one that would pass the budget.

    Thread-safe: a call's prompt tokens (and their cost) are reserved when it starts, so calls
    in flight together cannot overshoot. ``spent`` says what was counted so far.
    """

    raise_error = True
    run_inline = True

    def __init__(self, budget: Budget, count: Callable[[str], int]) -> None:
        self.budget = budget
        self.count = count
        self._lock = threading.Lock()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.reached: str | None = None

    @property
    def spent_usd(self) -> float:
        """USD counted so far at the budget's price."""
        return self.budget.cost(self.prompt_tokens, self.completion_tokens)

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], **kwargs: Any) -> None:
        """Reserve this call, or raise :class:`BudgetReached` if it would pass a limit."""
        self._start("\n".join(str(m.content) for batch in messages for m in batch))

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        """The same for a completion model."""
        self._start("\n".join(prompts))

    def _start(self, prompt: str) -> None:
        b = self.budget
        tokens = self.count(prompt) if (b.max_prompt_tokens is not None or b.max_cost_usd is not None) else 0
        with self._lock:
            why = None
            if self.reached is not None:
                why = self.reached
            elif b.max_llm_calls is not None and self.calls + 1 > b.max_llm_calls:
                why = f"{b.max_llm_calls:,} calls"
            elif b.max_prompt_tokens is not None and self.prompt_tokens + tokens > b.max_prompt_tokens:
                why = f"{b.max_prompt_tokens:,} prompt tokens ({self.prompt_tokens:,} sent, the next call has {tokens:,})"
            elif b.max_cost_usd is not None and self.spent_usd + b.cost(tokens, 0) > b.max_cost_usd:
                why = f"${b.max_cost_usd:,.2f} (${self.spent_usd:,.4f} spent)"
            if why is not None:
                self.reached = why
                raise BudgetReached(f"budget reached: {why}; {self.calls:,} calls made")
            self.calls += 1
            self.prompt_tokens += tokens

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the reply's completion tokens (for the cost)."""
        if self.budget.max_cost_usd is None:
            return
        tokens = 0
        for batch in response.generations:
            for gen in batch:
                usage = getattr(getattr(gen, "message", None), "usage_metadata", None) or {}
                tokens += usage.get("output_tokens") or self.count(gen.text)
        with self._lock:
            self.completion_tokens += tokens


class _QuietBudgetStop(logging.Filter):
    """Drops LangChain's warning about a callback that raised when it is the guard's planned stop
    (the answer says ``stopped="budget"``; a warning per stopped run would read as a failure)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(isinstance(a, str) and a.startswith("BudgetReached(") for a in (record.args or ()))


logging.getLogger("langchain_core.callbacks.manager").addFilter(_QuietBudgetStop())
