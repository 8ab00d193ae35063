"""The same question twice in one checkpointed batch (``answer_many(..., checkpoint=True)``): both
positions are one run (one run key, one lock, one checkpoint), answered once and returned at both,
its calls counted once; resumed, the batch pays only what its one checkpoint had not. Before, the
second position found the first's lock and the batch raised ``RunInUse``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from longctx import aanswer_many, answer_many
from longctx.graphs.metering.budget import Budget
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.loop_strategy import NAME, TURNS, register
from tests.scripted import ScriptedChatModel
from tests.scripted_tools import ToolScriptedChatModel, named_call


def _loop_model(calls: list[int]) -> ToolScriptedChatModel:
    """The test loop's scripted turns, each a tool call until the last (the turn: the tool results
    in the prompt, plus one); ``calls`` counts the calls of every run."""

    def reply(prompt: str, tools: Any) -> Any:
        calls.append(1)
        turn = prompt.count(" people") + 1
        if turn >= TURNS:
            return f"answer after {turn - 1} tool results"
        return [named_call("population", city="Arden")]

    return ToolScriptedChatModel(reply_fn=reply)


def test_a_question_asked_twice_is_answered_once_and_returned_at_both_positions(isolated_cache):
    register()
    calls: list[int] = []
    first = Question(text="Sum the cities.", metadata={"id": "a"})
    again = Question(text="Sum the cities.", metadata={"id": "b"})  # the same run key
    other = Question(text="Count the cities.")
    answers = answer_many(
        Corpus.from_texts(["x"]),
        [first, other, again],
        strategy=NAME,
        llm=_loop_model(calls),
        checkpoint=True,
    )
    assert len(calls) == 2 * TURNS  # two runs: the repeat made no call
    assert answers[0].answer == answers[2].answer and answers[0].steps == answers[2].steps
    assert [a.question for a in answers] == [first, other, again]  # each position's own question
    assert (answers[0].usage.llm_calls, answers[2].usage.llm_calls) == (TURNS, 0)
    assert sum(a.usage.llm_calls for a in answers) == len(calls)  # sums count each call once


def test_a_batch_with_a_repeat_stopped_by_its_budget_resumes_paying_only_the_rest(isolated_cache):
    register()
    calls: list[int] = []
    corpus, questions = Corpus.from_texts(["x"]), ["Sum the cities.", "Sum the cities."]
    stopped = answer_many(
        corpus,
        questions,
        strategy=NAME,
        llm=_loop_model(calls),
        checkpoint=True,
        budget=Budget(max_llm_calls=3),
    )
    assert [a.stopped for a in stopped] == ["budget", "budget"] and len(calls) == 3
    done = answer_many(corpus, questions, strategy=NAME, llm=_loop_model(calls), checkpoint=True)
    assert len(calls) == TURNS  # resumed once: turns 4-6, never paid twice
    assert [a.stopped for a in done] == [None, None]
    assert done[0].answer == done[1].answer == f"answer after {TURNS - 1} tool results"
    assert (done[0].usage.llm_calls, done[0].usage.earlier_llm_calls) == (3, 3)
    assert (done[1].usage.llm_calls, done[1].usage.earlier_llm_calls) == (0, 0)


def test_the_async_twin_answers_a_repeat_once_too(isolated_cache):
    model = ScriptedChatModel(replies=["Paris", "Rome"])
    corpus = Corpus.from_texts(["Paris is in France.", "Rome is in Italy."])
    questions: list[str | Question] = ["Capital of France?", "Capital of Italy?"] * 2
    answers = asyncio.run(
        aanswer_many(
            corpus, questions, strategy="full_context", llm=model, checkpoint=True, concurrency=1
        )
    )
    assert len(model.calls) == 2
    assert [a.answer for a in answers] == ["Paris", "Rome", "Paris", "Rome"]
    assert [a.usage.llm_calls for a in answers] == [1, 1, 0, 0]


def test_without_checkpoint_a_repeat_is_asked_again(isolated_cache):
    """No run key without ``checkpoint``: each position is its own call (to sample twice)."""
    model = ScriptedChatModel(replies=["Paris", "Lyon"])
    answers = answer_many(
        Corpus.from_texts(["Paris is in France."]),
        ["Capital of France?"] * 2,
        strategy="full_context",
        llm=model,
        concurrency=1,
    )
    assert len(model.calls) == 2 and {a.answer for a in answers} == {"Paris", "Lyon"}


def test_a_budget_plans_a_repeat_once(isolated_cache):
    """6 calls planned a question: two positions of one question fit a 6-call budget (one run);
    ``estimate`` plans them as the run will make them."""
    from longctx import estimate
    from longctx.graphs import STRATEGIES
    from tests.loop_strategy import LoopConfig, build_graph
    from tests.test_single_checkpoint import PLANNED, _six_calls

    if PLANNED not in STRATEGIES:
        STRATEGIES.register(PLANNED, build_graph, config_cls=LoopConfig, cost_plan=_six_calls)
    calls: list[int] = []
    corpus, questions = Corpus.from_texts(["x"]), ["Sum the cities.", "Sum the cities."]
    options: dict[str, Any] = {"strategy": PLANNED, "checkpoint": True}
    assert estimate(corpus, list(questions), llm=_loop_model(calls), **options).calls == TURNS
    done = answer_many(
        corpus, questions, llm=_loop_model(calls), budget=Budget(max_llm_calls=TURNS), **options
    )
    assert [a.stopped for a in done] == [None, None] and len(calls) == TURNS
