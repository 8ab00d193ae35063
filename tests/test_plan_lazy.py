"""A budget-less ``answer`` computes no cost plan: nothing would read it (no budget to check, no
resumed plan, no confirmation), and MemAgent's plan is a tokenization pass over the whole corpus.
With a budget the plan is computed once, before any call. A strategy whose plan may have no most
still has its plan read without a budget: :class:`UnboundedCostWarning` needs it (issue #47
item 4)."""

from __future__ import annotations

import pytest

from longctx import Budget, answer
from longctx.graphs import STRATEGIES
from longctx.graphs.memagent import cost_model as memagent_cost_model
from longctx.graphs.metering.costs import CorpusShape
from tests.scripted import ScriptedChatModel
from tests.test_cost_contract import SHAPES, WINDOWS, asked, cases, corpus
from tests.test_memagent import corpus_of, echo_model

CHUNK = 100


@pytest.fixture
def planned(monkeypatch):
    """How often MemAgent's plan cut the corpus into chunks (its tokenization pass)."""
    seen = []
    real = memagent_cost_model.memagent_chunks

    def counting(*args, **kwargs):
        seen.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(memagent_cost_model, "memagent_chunks", counting)
    return seen


def test_a_budget_less_answer_computes_no_plan(planned, isolated_cache):
    result = answer(
        corpus_of([600]),
        "q",
        strategy="memagent",
        llm=echo_model(),
        chunk_tokens=CHUNK,
        show_progress=False,
    )
    assert result.stopped is None and planned == []


def test_an_answer_with_a_budget_computes_its_plan_once(planned, isolated_cache):
    answer(
        corpus_of([600]),
        "q",
        strategy="memagent",
        llm=echo_model(),
        chunk_tokens=CHUNK,
        show_progress=False,
        budget=Budget(max_llm_calls=100),
    )
    assert planned == [1]


@pytest.mark.parametrize("name,preset", cases())
def test_a_strategy_declared_always_bounded_plans_a_most(name, preset):
    """What lets a budget-less answer skip the plan holds: the plan of a strategy declared
    ``always_bounded`` has a most over every shape, window and question count the contract checks
    (self_route's depends on its fallback's: not declared)."""
    spec = STRATEGIES.get(name)
    assert spec.costs.always_bounded == (name != "self_route")
    if not spec.costs.always_bounded:
        return
    cfg = spec.make_config(preset)
    for documents, each in SHAPES:
        c = corpus(documents, each)
        for window in WINDOWS:
            llm = ScriptedChatModel(replies=[], context_window=window) if window else None
            for k in (1, 5):
                plan = spec.costs.model(cfg, CorpusShape.of(c), asked(k), llm=llm, window=window)
                assert not plan.bounds.unbounded, (documents, each, window, k)
