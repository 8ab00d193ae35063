"""PAI checkpointed and stopped by its budget among its judges, then resumed with a larger one: the
resumed call asks only the judges the budget refused (none answered is paid twice) and finishes the
answer as an uninterrupted run does."""

from __future__ import annotations

from collections import Counter

from longctx.graphs.metering.budget import Budget
from tests.test_pai import calls_of, model, run

#: Paid before the budget stops the run: the properties' extraction and 13 judges (of 36; the
#: least run PAI plans is 14 calls).
PAID = 14


def test_a_resume_after_a_budget_stop_among_the_judges_asks_only_the_refused_ones(isolated_cache):
    """The resumed call sends exactly what an uninterrupted run sends less what the stopped one
    paid (the refused judges, the sub-answers, the conclusion) and gives that run's answer."""
    whole_llm = model()
    whole = run(whole_llm)
    llm = model()
    first = run(llm, checkpoint=True, budget=Budget(max_llm_calls=PAID))
    assert first.stopped == "budget" and len(llm.calls) == PAID
    resumed = run(llm, checkpoint=True, budget=Budget(max_llm_calls=500))
    sent = Counter(c["prompt"] for c in llm.calls[PAID:])
    rest = Counter(c["prompt"] for c in whole_llm.calls) - Counter(
        c["prompt"] for c in llm.calls[:PAID]
    )
    assert len(calls_of(whole_llm, "Query: ")) > PAID  # the budget stopped the run among its judges
    assert sum(rest.values()) == len(whole_llm.calls) - PAID
    assert sent == rest
    assert resumed.stopped is None and resumed.answer == whole.answer
    assert resumed.usage.earlier_llm_calls == PAID
    assert resumed.usage.llm_calls == len(whole_llm.calls) - PAID
    assert resumed.steps == whole.steps


def test_a_resume_its_budget_stops_again_among_the_judges_stops_and_a_third_call_finishes(
    isolated_cache,
):
    """A resumed call whose own budget refuses some re-asked judges stops (it does not ask them
    again in a loop); the next call asks only those and finishes the answer."""
    whole_llm = model()
    whole = run(whole_llm)
    llm = model()
    assert run(llm, checkpoint=True, budget=Budget(max_llm_calls=PAID)).stopped == "budget"
    again = run(llm, checkpoint=True, budget=Budget(max_llm_calls=PAID))  # 14 of the 23 refused
    assert again.stopped == "budget" and len(llm.calls) == 2 * PAID
    assert len(calls_of(llm, "Query: ")) == 2 * PAID - 1
    done = run(llm, checkpoint=True)
    assert done.stopped is None and done.answer == whole.answer and done.steps == whole.steps
    assert Counter(c["prompt"] for c in llm.calls) == Counter(c["prompt"] for c in whole_llm.calls)


def test_a_resume_after_a_budget_stop_among_the_sub_answers_asks_only_the_refused_ones(
    isolated_cache,
):
    """38 calls paid (the extraction, 36 judges, 1 of 3 sub-answers): the resumed call sends the 2
    refused sub-answers and the conclusion, and gives an uninterrupted run's answer."""
    whole_llm = model()
    whole = run(whole_llm)
    llm = model()
    assert run(llm, checkpoint=True, budget=Budget(max_llm_calls=38)).stopped == "budget"
    assert len(calls_of(llm, "Answer the sub-question")) == 1 and len(llm.calls) == 38
    resumed = run(llm, checkpoint=True)
    sent = [c["prompt"] for c in llm.calls[38:]]
    assert len(sent) == 3 and len(whole_llm.calls) == 41
    assert Counter(c["prompt"] for c in llm.calls) == Counter(c["prompt"] for c in whole_llm.calls)
    assert resumed.stopped is None and resumed.answer == whole.answer
    assert resumed.steps == whole.steps and resumed.usage.earlier_llm_calls == 38
