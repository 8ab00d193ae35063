"""The run plan's typical cost calibrated from earlier answers with the same settings (issue #47
item 4)."""

from __future__ import annotations

import dataclasses

from longctx.experiments.planning.cost_calibration import calibrate
from longctx.experiments.planning.plan import plan_experiment
from longctx.experiments.runner import RunConfig, latest_rows, read_rows, run_experiment
from longctx.graphs import STRATEGIES
from tests.scripted import ScriptedChatModel
from tests.test_runner import V2, v2_samples


def _config(**options) -> RunConfig:
    return RunConfig(
        benchmark="longbench_v2",
        strategies=("rag",),
        data_path=V2,
        llm_cache=False,
        concurrency=1,
        strategy_options={"rag": {"top_k": 2, **options}},
    )


def test_the_plan_of_the_questions_left_is_calibrated_from_the_answers_made(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)")
    samples = v2_samples()
    run_experiment(dataclasses.replace(_config(), limit=2), tmp_path, llm=llm, show_progress=False)
    rows = list(latest_rows(read_rows(tmp_path)).values())
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows)
    (modelled,), _ = plan_experiment(
        _config(), samples, llm, None, calibrate=False
    )  # all 3, the model's guess
    (plan,), _ = plan_experiment(_config(), samples, llm, tmp_path, calibrate=False)  # the one left
    left = next(s for s in samples if s.sample_id not in {r["sample_id"] for r in rows})
    cfg = STRATEGIES.get("rag").make_config(top_k=2)
    guess = STRATEGIES.get("rag").costs.typical(
        cfg, corpus_tokens=left.corpus.num_tokens, documents=len(left.corpus)
    )
    used = sum(r["usage"]["prompt_tokens"] for r in rows)
    predicted = sum(
        STRATEGIES.get("rag")
        .costs.typical(cfg, corpus_tokens=s.corpus.num_tokens, documents=len(s.corpus))
        .per_question.prompt_tokens
        for s in samples
        if s.sample_id != left.sample_id
    )
    assert (plan.questions, plan.calibrated_from, modelled.calibrated_from) == (1, 2, 0)
    assert (
        plan.prompt_tokens
        == guess.per_question.prompt_tokens * used / predicted
        != guess.per_question.prompt_tokens
    )
    assert plan.calls == 1  # rag makes the one call its model says


def test_no_calibration_from_answers_stopped_by_a_budget_or_of_unknown_corpora():
    cfg = STRATEGIES.get("rag").make_config()
    row = {
        "sample_id": "a",
        "status": "ok",
        "usage": {"llm_calls": 1, "prompt_tokens": 500, "completion_tokens": 9},
    }
    assert (
        calibrate(
            "rag", cfg, [{**row, "stopped": "budget"}, {**row, "sample_id": "b"}], {"a": (1000, 2)}
        )
        is None
    )
    found = calibrate("rag", cfg, [row], {"a": (1000, 2)})
    assert found is not None and (found.answers, found.calls) == (1, 1.0)
