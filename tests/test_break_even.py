"""Break-even points of amortized cost per question: a table of lines that cross at a whole
question, between two, never, or are one line; and the sentences the report prints."""

from __future__ import annotations

import pytest

from longctx.experiments.planning.break_even import BreakEven, CostLine, break_even, break_evens


@pytest.mark.parametrize(
    "a, b, kind, questions",
    [
        # an index of 1.30 and 0.01 a question against 0.105 a question: they cross at 13.7, so from
        # 14 on
        ((1.30, 0.01), (0.0, 0.105), "from", 14),
        ((0.0, 0.105), (1.30, 0.01), "until", 13),
        # crossing exactly on a whole number (1.3 / 0.1 = 13): equal at 13, cheaper from 14 on, the
        # other up to 12
        ((1.3, 0.1), (0.0, 0.2), "from", 14),
        ((0.0, 0.2), (1.3, 0.1), "until", 12),
        # zero index cost on both sides: the cheaper question wins at any number, the other never
        ((0.0, 0.05), (0.0, 0.10), "always", None),
        ((0.0, 0.10), (0.0, 0.05), "never", None),
        # equal slopes: the cheaper index wins always, the dearer never; identical lines are a tie
        ((0.5, 0.1), (0.7, 0.1), "always", None),
        ((0.7, 0.1), (0.5, 0.1), "never", None),
        ((0.5, 0.1), (0.5, 0.1), "same", None),
        # a flatter line already cheaper at the first question (its index is cheaper too): always
        ((0.1, 0.01), (0.2, 0.10), "always", None),
        # crossing between 1 and 2 questions: the flatter from 2 on, the steeper at 1 question only
        ((1.5, 0.0), (0.0, 1.0), "from", 2),
        ((0.0, 1.0), (1.5, 0.0), "until", 1),
        # crossing at exactly 1 question: equal at 1, so the flatter is cheaper from 2 on and the
        # steeper never
        ((1.0, 0.0), (0.0, 1.0), "from", 2),
        ((0.0, 1.0), (1.0, 0.0), "never", None),
        # tokens, not USD: the same rule (a 30,000-token tree saving 2,500 tokens a question: equal
        # at 12, cheaper from 13 on)
        ((30_000, 500), (0, 3_000), "from", 13),
    ],
)
def test_break_even_table(a, b, kind, questions):
    found = break_even(CostLine("a", *a), CostLine("b", *b))
    assert (found.kind, found.questions) == (kind, questions)
    if kind == "from":  # the rule itself: cheaper at that number and after, not at the one before
        la, lb = CostLine("a", *a), CostLine("b", *b)
        assert la.at(questions) < lb.at(questions) and la.at(questions + 100) < lb.at(
            questions + 100
        )
        assert questions == 1 or la.at(questions - 1) >= lb.at(questions - 1)


def test_a_sum_of_float_costs_that_misses_a_whole_crossing_by_rounding_still_crosses_there():
    # equal at 3 questions (0.3 / 3 = 0.1), but 0.3 / 0.1 is 2.9999999999999996 in floats
    found = break_even(CostLine("a", 0.3, 0.0), CostLine("b", 0.0, 0.1))
    assert (found.kind, found.questions) == ("from", 4)


def test_cost_per_question_shares_the_index_out():
    line = CostLine("raptor", index=1.0, per_question=0.1)
    assert [line.at(n) for n in (1, 2, 10)] == pytest.approx([1.1, 0.6, 0.2])
    with pytest.raises(ValueError):
        line.at(0)


def test_every_ordered_pair_and_its_sentence():
    lines = [
        CostLine("raptor", 1.3, 0.01),
        CostLine("memagent", 0.0, 0.105),
        CostLine("rag", 0.0, 0.105),
    ]
    found = {(x.strategy, x.other): x for x in break_evens(lines)}
    assert len(found) == 6
    assert (
        found[("raptor", "memagent")].sentence()
        == "raptor is cheaper than memagent from 14 questions on"
    )
    assert (
        found[("memagent", "raptor")].sentence()
        == "memagent is cheaper than raptor up to 13 questions"
    )
    assert (
        found[("rag", "memagent")].sentence()
        == "rag costs the same as memagent at any number of questions"
    )
    assert (
        BreakEven("a", "b", "always").sentence() == "a is cheaper than b at any number of questions"
    )
    assert BreakEven("a", "b", "never").sentence() == "a is never cheaper than b"
    assert BreakEven("a", "b", "until", 1).sentence() == "a is cheaper than b up to 1 question"
