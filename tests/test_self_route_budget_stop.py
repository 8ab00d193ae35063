"""A budget stop inside one of Self-Route's legs keeps the steps the leg made before it (issue #47):
the answer is marked stopped and ends with what it has, as a single-graph strategy's does
(:mod:`longctx.graphs.metering.budget_stop`), at the scripted model."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from longctx import Budget, aanswer, answer
from longctx.graphs.metering.plan_check import BudgetMayStopWarning
from tests.scripted import ScriptedChatModel
from tests.test_self_route import QUESTION, memagent_model

#: Self-Route's own steps up to a declined question's fallback.
ROUTED = [("retrieve", None), ("check_answer", None), ("measure_context", None)]


def _nodes(result) -> list[tuple[str, str | None]]:
    return [(s["node"], s.get("leg")) for s in result.steps if s["node"] != "generate"]


def _answer(corpus, llm, budget: Budget, *, use_async: bool = False, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BudgetMayStopWarning)  # the plan's most passes the budget
        if use_async:
            return asyncio.run(
                aanswer(corpus, QUESTION, strategy="self_route", llm=llm, budget=budget, **options)
            )
        return answer(corpus, QUESTION, strategy="self_route", llm=llm, budget=budget, **options)


def test_a_stop_in_the_memagent_leg_keeps_the_chunks_it_read(planted_corpus, isolated_cache):
    """RAG declines (call 1), memagent reads two chunks (calls 2 and 3) and is refused the third:
    the two ``update_memory`` steps stay, under the leg's ``fallback`` head, before ``stopped``."""
    llm = memagent_model()
    options = {"chunk_tokens": 1000, "resume": False}
    result = _answer(
        planted_corpus, llm, Budget(max_llm_calls=3), fallback="memagent", fallback_options=options
    )
    assert len(llm.calls) == 3 and result.stopped == "budget" and result.answer == ""
    memagent = [("fallback", "memagent"), ("update_memory", "memagent")]
    assert _nodes(result)[:5] == [*ROUTED, *memagent]
    assert _nodes(result)[5:] == [*memagent[1:], ("final_answer", "memagent"), ("stopped", None)]
    assert "memagent fallback" in result.steps[-1]["reason"]
    assert result.usage.llm_calls == 3  # the leg's two calls counted with RAG's


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_stop_in_the_full_context_leg_keeps_its_prompt_step(planted_corpus, use_async):
    """RAG declines (call 1); the full-context leg builds its prompt and is refused its call: its
    ``build_prompt`` step (the truncation it made) stays, marked with the leg."""
    llm = ScriptedChatModel(replies=["unanswerable", "7421"], context_window=1000)
    result = _answer(
        planted_corpus,
        llm,
        Budget(max_llm_calls=1),
        use_async=use_async,
        fallback="full_context",
    )
    assert len(llm.calls) == 1 and result.stopped == "budget" and result.answer == ""
    leg = [("fallback", "full_context"), ("build_prompt", "full_context")]
    assert _nodes(result) == [*ROUTED, *leg, ("stopped", None)]
    assert next(s for s in result.steps if s["node"] == "build_prompt")["truncated"]
    assert "full_context fallback" in result.steps[-1]["reason"]
    assert result.usage.llm_calls == 1
