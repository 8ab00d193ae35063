"""The typed contracts between the strategies and the run path: every single-question strategy's
state extends ``AnswerState`` (the keys the run path reads, with the same types and the ``steps``
reducer); ``Send`` payloads are the typed tasks their nodes declare; the cost APIs take their many
numbers by keyword only."""

from __future__ import annotations

import typing

import pytest

from longctx.graphs import STRATEGIES
from longctx.graphs.memagent.graph import collect, fan_out, final_answer, update_memory
from longctx.graphs.memagent.state import MemoryTask
from longctx.graphs.metering.budget import CostPlan
from longctx.graphs.metering.costs import (
    PLACEHOLDER_QUESTION,
    CorpusShape,
    per_question_plan,
    retrieved_prompt,
)
from longctx.graphs.pai.graph import route_sub_answers, sub_answer
from longctx.graphs.pai.judging import judge, route_judges
from longctx.graphs.pai.state import JudgeTask, SubAnswerTask
from longctx.graphs.plugin.answer_state import AnswerState, BatchAnswer
from longctx.retrieval import Chunk, Hit

SINGLE = sorted(name for name in STRATEGIES if not STRATEGIES.get(name).batched)


def hints(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls, include_extras=True)


@pytest.mark.parametrize("name", SINGLE)
def test_every_single_question_state_has_the_answer_keys_the_run_path_reads(name):
    spec = STRATEGIES.get(name)
    schema = spec.build_graph(spec.make_config()).builder.state_schema
    own, contract = hints(schema), hints(AnswerState)
    assert {k: own.get(k) for k in contract} == contract, (
        f"{name}: {schema.__name__} does not extend AnswerState"
    )


def test_the_built_in_single_question_strategies_are_all_checked():
    assert {
        "rag",
        "full_context",
        "self_route",
        "self_ask",
        "pai",
        "pai_minus",
        "structured",
        "raptor",
        "hipporag",
    } <= set(SINGLE)


def sample_hits(n: int) -> list[Hit]:
    chunks = [
        Chunk(
            chunk_id=i,
            doc_id=f"d{i}",
            doc_index=i,
            title=f"T{i}",
            text=f"text {i}",
            position=0,
            num_tokens=2,
        )
        for i in range(n)
    ]
    return [Hit(chunk=c, score=1.0, rank=r) for r, c in enumerate(chunks)]


def test_pai_sends_the_tasks_its_nodes_declare():
    hits = sample_hits(2)
    subs = [
        {"text": "A?", "metric": "m", "subject": "s"},
        {"text": "B?", "metric": None, "subject": None},
    ]
    judges = route_judges(
        {"sub_questions": subs, "candidates": [hits, hits[1:]], "tool_mode": "json"}
    )
    answers = route_sub_answers({"sub_questions": subs, "kept": [[hits[0].chunk], []]})
    assert (
        typing.get_type_hints(judge)["task"] is JudgeTask
        and typing.get_type_hints(sub_answer)["task"] is SubAnswerTask
    )
    assert all(set(s.arg) == set(hints(JudgeTask)) for s in judges) and len(judges) == 2
    assert (
        all(set(s.arg) == set(hints(SubAnswerTask)) for s in answers)
        and answers[1].arg["sub_question"] == subs[1]
    )


def test_memagent_sends_the_task_its_nodes_declare_and_collects_a_batch_answer():
    state = {
        "questions": [{"problem": "Q?", "instruction": None}],
        "memories": {"0": "m"},
        "chunk_index": 0,
        "n_chunks": 1,
    }
    (send,) = fan_out(state)
    assert set(send.arg) == set(hints(MemoryTask))
    assert (
        typing.get_type_hints(update_memory)["task"] is MemoryTask
        and typing.get_type_hints(final_answer)["task"] is MemoryTask
    )
    assert typing.get_type_hints(collect)["return"] is BatchAnswer
    assert set(collect({**state, "finals": {"0": "The answer is x"}}, 0)) == set(hints(BatchAnswer))


def test_the_cost_apis_take_their_numbers_by_keyword_only():
    with pytest.raises(TypeError):
        CostPlan("s", 1, 1, 1, 10, 10, 5, "f")  # type: ignore[misc]
    with pytest.raises(TypeError):
        per_question_plan("s", [], 1, 1, 10, 10, 5, "f")  # type: ignore[misc]
    with pytest.raises(TypeError):
        retrieved_prompt(lambda q: q.text, "s", "t", [], CorpusShape((10,)), 1, 10)  # type: ignore[misc]
    plan = per_question_plan(
        "s",
        [PLACEHOLDER_QUESTION] * 2,
        calls=1,
        max_calls=2,
        prompt_tokens=10,
        max_prompt_tokens=20,
        completion_tokens=5,
        formula="f",
    )
    assert (
        plan.questions,
        plan.calls,
        plan.max_calls,
        plan.prompt_tokens,
        plan.max_prompt_tokens,
        plan.completion_tokens,
    ) == (2, 2, 4, 20, 40, 10)


@pytest.mark.parametrize("name", ["rag", "memagent"])
def test_a_cost_model_takes_the_model_and_window_by_keyword_only(name):
    spec = STRATEGIES.get(name)
    model, cfg, shape = spec.costs.model, spec.make_config(), CorpusShape.even(1_000, 2)
    with pytest.raises(TypeError):
        model(cfg, shape, [PLACEHOLDER_QUESTION], None, 8_192)
    with pytest.raises(TypeError):
        spec.costs.typical(cfg, 1_000, 2)
    assert model(cfg, shape, [PLACEHOLDER_QUESTION], window=8_192).typical == spec.costs.typical(
        cfg, corpus_tokens=1_000, documents=2, window=8_192
    )
