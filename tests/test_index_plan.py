"""The plan before a run gives index time apart from question time: ``longctx.agents.estimate`` (the
bounds) and the run plan (the typical counts) show what a strategy builds once per corpus, as its
cost model declares it, and the index calls they plan are the ones a run then counts
in ``Usage.index_*``."""

from __future__ import annotations

import pytest

from longctx import answer_many, estimate
from longctx.agents.run_plan import describe_plan
from longctx.agents.run_plan import estimate as run_plan
from longctx.graphs import STRATEGIES
from longctx.graphs.metering.budget import CostPlan, IndexWork
from longctx.graphs.metering.costs import Calls, ExpectedCost
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel
from tests.test_structured import SCHEMA, scripted, small_corpus

QUESTIONS = ["Revenue of each company?", "And again: revenue of each company?"]


def test_structureds_estimate_plans_the_extraction_a_run_counts_as_index_time(tmp_path):
    plan = estimate(
        small_corpus(),
        QUESTIONS,
        strategy="structured",
        schema=SCHEMA,
        llm=ScriptedChatModel(reply_fn=lambda p: "x"),
    )
    assert plan.index is not None and (plan.index.calls, plan.index.what) == (
        3,
        "the records of 3 document windows",
    )
    assert plan.question_calls == (
        plan.calls - 3,
        plan.max_calls - plan.index.max_calls,
    ) and plan.question_calls[0] == 2 * len(QUESTIONS)
    assert (
        "index time, once per corpus (the records of 3 document windows; nothing when cached): 3-"
        in plan.describe()
    )
    assert plan.to_dict()["index"]["calls"] == 3
    llm = scripted(["SELECT company, revenue FROM facts ORDER BY company"] * 2)
    first, second = answer_many(
        small_corpus(),
        QUESTIONS,
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=1,
    )
    assert (first.usage.index_llm_calls, second.usage.index_llm_calls) == (
        plan.index.calls,
        0,
    )  # what was planned is what ran, once


def test_the_run_plan_prints_structureds_extraction_apart_from_its_questions():
    cfg = STRATEGIES.get("structured").make_config(schema=SCHEMA)
    plan = run_plan("structured", cfg, 3_000, 3, 4)
    assert (
        plan.index_calls == 3 and plan.calls - plan.index_calls == 2 * 4
    )  # 3 windows once; SQL and the answer per question
    assert (
        0 < plan.index_prompt_tokens < plan.prompt_tokens
        and 0 < plan.index_completion_tokens < plan.completion_tokens
    )
    text = describe_plan([plan + plan], "m", None)  # two corpora: each builds its own
    assert "structured: 8 question(s), ~22 calls" in text
    assert (
        "of which at index time, once per corpus and reused by later questions (nothing when "
        "cached): ~6 calls" in text
    )
    assert "at question time ~16 calls" in text


def test_raptors_tree_is_index_time_and_a_strategy_that_builds_nothing_plans_none():
    corpus = Corpus.from_texts([f"Report {i}." + " The vault is here." * 600 for i in range(4)])
    tree = estimate(
        corpus,
        "What is the vault code?",
        strategy="raptor",
        llm=ScriptedChatModel(reply_fn=lambda p: "x"),
    )
    assert (
        tree.index is not None and tree.index.calls == 1 < tree.index.max_calls
    )  # at least one summary while the tree is not cached (none once it is)
    assert tree.question_calls == (1, 1)
    planned = run_plan(
        "raptor", STRATEGIES.get("raptor").make_config(), corpus.num_tokens, len(corpus), 5
    )
    assert planned.index_calls > 0 and planned.calls - planned.index_calls == 5
    rag = estimate(
        corpus,
        "What is the vault code?",
        strategy="rag",
        llm=ScriptedChatModel(reply_fn=lambda p: "x"),
    )
    assert (
        rag.index is None
        and rag.question_calls == (rag.calls, rag.max_calls)
        and "index time" not in rag.describe()
    )
    assert (
        run_plan(
            "rag", STRATEGIES.get("rag").make_config(), corpus.num_tokens, len(corpus), 5
        ).index_calls
        == 0
    )


def test_an_index_part_larger_than_its_whole_is_refused():
    with pytest.raises(ValueError, match="index-time part"):
        CostPlan(
            strategy="s",
            questions=1,
            calls=1,
            max_calls=1,
            prompt_tokens=10,
            max_prompt_tokens=10,
            completion_tokens=5,
            formula="f",
            index=IndexWork(
                what="w",
                calls=2,
                max_calls=2,
                prompt_tokens=0,
                max_prompt_tokens=0,
                completion_tokens=0,
            ),
        )
    with pytest.raises(ValueError, match="index-time part"):
        ExpectedCost(Calls(1, 10, 1), once=Calls(1, 10, 1), index=Calls(2, 10, 1))


def test_scaling_a_plan_to_more_questions_keeps_its_index_part_once():
    index = IndexWork(
        what="w",
        calls=4,
        max_calls=8,
        prompt_tokens=400,
        max_prompt_tokens=800,
        completion_tokens=40,
    )
    one = CostPlan(
        strategy="s",
        questions=1,
        calls=5,
        max_calls=9,
        prompt_tokens=500,
        max_prompt_tokens=900,
        completion_tokens=50,
        formula="f",
        index=index,
    )
    three = one.scaled(3)
    assert (
        three.calls,
        three.max_calls,
        three.prompt_tokens,
        three.completion_tokens,
        three.index,
    ) == (7, 11, 700, 70, index)
