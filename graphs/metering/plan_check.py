"""A cost plan against a budget, before any model call: refuse, warn, or cap.

- The least run passes a limit: refused (:class:`~graphs.metering.budget.BudgetExceeded`): no run
could fit.
- The most run passes a limit: :class:`BudgetMayStopWarning`: the run may be stopped before it ends
  (an answer marked ``stopped="budget"``), said before the first call rather than found after it.
- The plan has no most (``CostPlan(max_calls=None)``, an agent that loops until it is done) and no
  budget caps calls, prompt tokens or USD: :class:`UnboundedCostWarning`. A warning, not a refusal,
  so a free local model may be run open-ended; a caller who wants it refused turns the warning into
  an error with Python's own switch (``warnings.simplefilter("error", UnboundedCostWarning)``,
  ``python -W error::graphs.metering.plan_check.UnboundedCostWarning``), as pytest and CI users
  already do.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

from longctx.graphs.metering.budget import Budget, BudgetExceeded, CostPlan


class PlanWarning(UserWarning):
    """A cost plan's warning to the user (the CLI prints it as one line: :attr:`one_line`, once per
    strategy and kind in a command: a run checks each unit's plan, with its own figures)."""

    one_line = True

    def __init__(self, message: str, strategy: str = "") -> None:
        super().__init__(message)
        self.strategy = strategy


class UnboundedCostWarning(PlanWarning):
    """A plan with no most run without a budget that caps it (turn into an error to refuse such
    runs)."""


class BudgetMayStopWarning(PlanWarning):
    """A plan whose most passes the budget: the run may be stopped (``stopped="budget"``) before it
    ends."""


def capped(plan: CostPlan, budget: Budget | None) -> CostPlan:
    """``plan`` with its most cut to what ``budget`` lets run (calls and prompt tokens; an unbounded
    most becomes the budget's), noted in ``details["capped_by"]``: what a run can spend at most
    under that budget. A budget of USD only caps no count: the plan is returned unchanged."""
    if budget is None:
        return plan
    most_calls = _cut(plan.max_calls, budget.max_llm_calls)
    most_tokens = _cut(plan.max_prompt_tokens, budget.max_prompt_tokens)
    if (most_calls, most_tokens) == (plan.max_calls, plan.max_prompt_tokens):
        return plan
    calls = None if most_calls is None else max(plan.calls, most_calls)
    tokens = None if most_tokens is None else max(plan.prompt_tokens, most_tokens)
    i = plan.index  # its most is part of the plan's: cut with it
    index = i and dataclasses.replace(
        i,
        max_calls=int(min(i.max_calls, math.inf if calls is None else calls)),
        max_prompt_tokens=int(min(i.max_prompt_tokens, math.inf if tokens is None else tokens)),
    )
    return dataclasses.replace(
        plan,
        max_calls=calls,
        max_prompt_tokens=tokens,
        index=index,
        details={**plan.details, "capped_by": f"budget: {budget.describe()}"},
    )


def _cut(most: int | None, limit: int | None) -> int | None:
    """A most under a limit: the smaller (an unbounded most is the limit; no limit leaves it)."""
    if limit is None:
        return most
    return limit if most is None else min(most, limit)


def check_plan(plan: CostPlan, budget: Budget | None) -> None:
    """Refuse up front a plan whose least run cannot fit ``budget``; warn when its most may not
    (:class:`BudgetMayStopWarning`) or when it has no most and no budget caps it
    (:class:`UnboundedCostWarning`).

    Raises:
        BudgetExceeded: With the plan and the limits its least run passes.
    """
    if plan.unbounded and (budget is None or not budget.limited):
        warnings.warn(
            UnboundedCostWarning(
                f"{plan.strategy}'s cost has no upper bound ({plan.describe()}) and no budget "
                "caps it: pass budget=Budget(max_llm_calls=..., max_prompt_tokens=... or "
                "max_cost_usd=...) (--max-calls / --max-tokens / --max-cost)",
                plan.strategy,
            ),
            stacklevel=2,
        )
    if budget is None or not budget.limited:
        return
    problems = plan.over(budget)
    if problems:
        raise BudgetExceeded(
            f"Budget exceeded before any call: {plan.describe()}; over the budget: "
            f"{', '.join(problems)}"
        )
    over = []
    # an unbounded plan's budget is its cap
    if plan.max_calls is not None and plan.max_prompt_tokens is not None:
        most = dataclasses.replace(plan, calls=plan.max_calls, prompt_tokens=plan.max_prompt_tokens)
        over = most.over(budget)
    if over:
        warnings.warn(
            BudgetMayStopWarning(
                f"the budget may stop {plan.strategy} before it ends: {plan.describe()}; "
                f"its most run passes {', '.join(over)} (the answer is then marked stopped=budget)",
                plan.strategy,
            ),
            stacklevel=2,
        )
