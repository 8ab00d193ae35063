"""Budgets as the server sees them (issue 35, items 10-13): one plan for estimate and refusal, no request after a stop,
usage of this call apart from the whole resumed run, and a resumable run refused up front unless its checkpoint covers the rest."""

from __future__ import annotations

import re

import pytest

from agents import Budget, BudgetExceeded, answer, estimate
from tests.test_pai import CHUNK, company_corpus

QUESTION = "Which company had the highest revenue?"


# -- 13. estimate and the refusal are the same plan ---------------------------------------------------------
@pytest.mark.parametrize("strategy", ["pai", "memagent"])
def test_estimate_without_a_model_is_the_plan_the_refusal_gives(strategy, isolated_cache, monkeypatch):
    """Neither names a model: both plan for the one answer() would use (its tokenizer counts the templates and cuts MemAgent's chunks)."""
    monkeypatch.delenv("LONGCTX_LLM", raising=False)
    options = {"chunk_size": CHUNK} if strategy == "pai" else {"chunk_tokens": 200, "resume": False}
    plan = estimate(company_corpus(), QUESTION, strategy=strategy, **options)
    with pytest.raises(BudgetExceeded) as refused:
        answer(company_corpus(), QUESTION, strategy=strategy, budget=Budget(max_prompt_tokens=10), show_progress=False, **options)
    said = re.search(r"~([\d,]+) prompt tokens > 10", str(refused.value))
    assert said is not None and int(said.group(1).replace(",", "")) == plan.prompt_tokens, (plan, str(refused.value))
