"""The same question twice in one checkpointed MemAgent batch (``resume``, its default): read once
and its answer returned at every position, as a checkpointed single run's repeat is
(tests/test_answer_many_repeats.py); its calls counted once, by the run and by its plan. Before,
the batch read the corpus for each copy (6 calls against 3 over two chunks).
"""

from __future__ import annotations

import math

from longctx import Question, answer_many, estimate
from longctx.graphs.metering.budget import Budget
from longctx.graphs.prompts import format_documents
from longctx.retrieval import count_tokens
from tests.test_memagent import corpus_of, echo_model

CORPUS = corpus_of([6000])
#: The calls one question's run makes: a memory update per chunk, then the final answer.
CALLS = math.ceil(count_tokens(format_documents(CORPUS.documents)) / 5000) + 1


def test_a_repeated_question_is_read_once_and_returned_at_every_position(isolated_cache):
    llm = echo_model()
    first = Question(text="Which number?", metadata={"id": "a"})
    again = Question(text="Which number?", metadata={"id": "b"})  # the same run key
    answers = answer_many(CORPUS, [first, again], strategy="memagent", llm=llm, show_progress=False)
    assert CALLS == 3 and len(llm.calls) == CALLS  # before: 6, the corpus read for each copy
    assert answers[0].answer == answers[1].answer == "42"
    assert answers[0].steps == answers[1].steps
    assert [a.question for a in answers] == [first, again]  # each position's own question
    assert [a.usage.llm_calls for a in answers] == [CALLS, 0]  # sums count each call once


def test_a_repeat_beside_another_question_keeps_each_answer_in_place(isolated_cache):
    llm = echo_model()
    answers = answer_many(
        CORPUS, ["Which number?", "Other?", "Which number?"], strategy="memagent", llm=llm
    )
    assert len(llm.calls) == 2 * CALLS
    assert [a.question.text for a in answers] == ["Which number?", "Other?", "Which number?"]
    assert [a.usage.llm_calls for a in answers] == [CALLS, CALLS, 0]


def test_the_plan_counts_a_repeat_once(isolated_cache):
    """Estimated as it will run, and a budget of one question's calls lets the batch run."""
    questions: list[str | Question] = ["Which number?", "Which number?"]
    plan = estimate(CORPUS, questions, strategy="memagent", llm=echo_model())
    assert plan.calls == CALLS
    llm = echo_model()
    done = answer_many(
        CORPUS, questions, strategy="memagent", llm=llm, budget=Budget(max_llm_calls=CALLS)
    )
    assert [a.stopped for a in done] == [None, None] and len(llm.calls) == CALLS


def test_without_resume_a_repeat_is_read_again(isolated_cache):
    """An unkeyed run (``resume=False``) samples each position, as a single run without
    ``checkpoint`` does."""
    llm = echo_model()
    answer_many(CORPUS, ["Which number?"] * 2, strategy="memagent", llm=llm, resume=False)
    assert len(llm.calls) == 2 * CALLS
