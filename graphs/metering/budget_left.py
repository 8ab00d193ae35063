"""What a run's budget has left, as its strategy sees it: ``runtime.context.budget``.

An agent that plans its next turn reads the live figures of the run's
:class:`~graphs.metering.budget_guard.BudgetGuard` (one guard for the whole call of ``answer`` /
``answer_many``, all its questions together): calls, prompt tokens and dollars left, ``None``
where the budget sets no limit. A run without a budget gets :data:`UNLIMITED` (everything ``None``).
"""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.callbacks import BaseCallbackManager, Callbacks

from longctx.graphs.metering.budget_guard import BudgetGuard


@dataclass(frozen=True)
class BudgetLeft:
    """A read-only view of a run's budget guard (``None``: the run has no budget).

    The figures are read when asked, so they move as the run's calls start and end: a call is
    counted when it starts (its prompt tokens and their cost reserved), its cost settled at its
    server's usage when it ends. The guard counts completion tokens, and settles costs, only
    under a dollar limit (``max_cost_usd``); without one, :attr:`completion_tokens` stays 0.
    """

    guard: BudgetGuard | None = None

    @property
    def limited(self) -> bool:
        """Whether the run has a budget at all."""
        return self.guard is not None

    @property
    def reached(self) -> str | None:
        """Why the budget stopped the run (the limit reached), ``None`` while it has not."""
        return self.guard.reached if self.guard is not None else None

    @property
    def calls(self) -> int:
        """Model calls counted so far (rerank calls included)."""
        return self.guard.calls if self.guard is not None else 0

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens counted so far (counted only under a token or dollar limit)."""
        return self.guard.prompt_tokens + self.guard.rerank_tokens if self.guard is not None else 0

    @property
    def completion_tokens(self) -> int:
        """Completion tokens of the calls that ended (counted only under a dollar limit)."""
        return self.guard.completion_tokens if self.guard is not None else 0

    @property
    def spent_usd(self) -> float:
        """Dollars counted so far (:attr:`BudgetGuard.spent_usd`)."""
        return self.guard.spent_usd if self.guard is not None else 0.0

    @property
    def calls_left(self) -> int | None:
        """Model calls the budget still allows, ``None`` where it sets no call limit."""
        limit = self.guard.budget.max_llm_calls if self.guard is not None else None
        return None if limit is None else max(0, limit - self.calls)

    @property
    def prompt_tokens_left(self) -> int | None:
        """Prompt tokens the budget still allows, ``None`` where it sets no token limit."""
        limit = self.guard.budget.max_prompt_tokens if self.guard is not None else None
        return None if limit is None else max(0, limit - self.prompt_tokens)

    @property
    def completion_tokens_left(self) -> int | None:
        """Always ``None``: a :class:`~graphs.metering.budget.Budget` limits no completion tokens
        (a call's answer is bounded by its own ``max_tokens``); kept so an agent reads every figure
        alike."""
        return None

    @property
    def usd_left(self) -> float | None:
        """Dollars the budget still allows, ``None`` where it sets no dollar limit."""
        limit = self.guard.budget.max_cost_usd if self.guard is not None else None
        return None if limit is None else max(0.0, limit - self.spent_usd)


#: The handle of a run without a budget: nothing counted, nothing limited.
UNLIMITED = BudgetLeft()


def budget_left(callbacks: Callbacks) -> BudgetLeft:
    """The handle of the budget guard among ``callbacks`` (a list or a callback manager),
    :data:`UNLIMITED` when there is none."""
    handlers = callbacks.handlers if isinstance(callbacks, BaseCallbackManager) else callbacks
    for handler in handlers or ():
        if isinstance(handler, BudgetGuard):
            return BudgetLeft(handler)
    return UNLIMITED
