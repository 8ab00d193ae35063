"""BrowseComp-Plus's official evaluator on our export agrees with our scorer
(``tests/browsecomp_plus_official.py`` ran texttron/BrowseComp-Plus @ 97c637c
``scripts_evaluation/evaluate_run.py`` unchanged on the export of :func:`cases`, its judge at the
recording stub, and wrote the fixture): our export is the one it read, byte for byte; our accuracy,
evidence recall, calibration error and tool calls per query are its summary's; each query's verdict
is the one it parsed; and the judge requests we send are the ones it sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx.agents.chat_models import make_chat_model
from longctx.experiments.benchmarks import score
from longctx.experiments.benchmarks.predictions import row_prediction
from tests import browsecomp_plus_official as official
from tests.recording_server import RecordingServer

FIXTURE = json.loads(
    (Path(__file__).parent / "fixtures" / "browsecomp_plus" / "official_eval.json").read_text(
        encoding="utf-8"
    )
)


@pytest.fixture(scope="module")
def data():
    return official.cases()


@pytest.fixture(scope="module")
def judged(data):
    """Our scorer over the rows, its judge at the stub replying as the official run's did."""
    with RecordingServer(official.reply_for(data)) as server:
        judge = make_chat_model(
            f"openai:{official.JUDGE_MODEL}", base_url=server.url, max_retries=0, api_key="stub"
        )
        result = score(
            "browsecomp_plus",
            [row_prediction(r) for r in data["rows"]],
            samples=official.samples(data),
            judge=judge,
        )
        requests = sorted(server.requests, key=lambda r: int(official.query_of(r, data)))
    return result, requests


def test_our_export_is_the_run_directory_the_official_evaluator_read(data, tmp_path):
    ours = official.export(data, tmp_path)
    assert {n: official.sha256(t) for n, t in ours.items()} == FIXTURE["export_sha256"]
    for name, text in FIXTURE["export_whole"].items():
        assert ours[name] == text


def test_our_figures_are_the_official_summary(judged):
    result, _ = judged
    summary = FIXTURE["summary"]
    for key in ("Accuracy (%)", "Recall (%)", "Calibration Error (%)", "avg_tool_stats"):
        assert result[key] == summary[key], key
    assert summary["Calibration Error (%)"] > 0 and result["n"] == 420
    assert result["search_calls"] == summary["avg_tool_stats"]["search"]
    per_query = {str(q["query_id"]): q for q in summary["per_query_metrics"]}
    for row in result["per_query"]:
        official_row = per_query[row["query_id"]]
        assert bool(row["correct"]) == official_row["correct"]
        recall = round(row["recall"] * 100.0, 2)
        assert recall == official_row["recall"], row["query_id"]


def test_each_verdict_is_the_one_the_official_parser_read(judged):
    result, _ = judged
    for row in result["per_query"]:
        theirs = FIXTURE["judge_results"][row["query_id"]]
        assert row["correct"] == theirs.get("correct"), row["query_id"]
        if not theirs.get("parse_error"):
            assert row["confidence"] == theirs["confidence"]
            assert row["extracted_final_answer"] == theirs["extracted_final_answer"]


def test_our_judge_requests_are_the_official_ones(judged):
    _, requests = judged
    assert [official.sha256(official.canonical(r)) for r in requests] == FIXTURE["requests_sha256"]
    assert requests[: official.WHOLE] == FIXTURE["requests_whole"]


OPENAI_FIXTURE = json.loads(
    (
        Path(__file__).parent / "fixtures" / "browsecomp_plus" / "official_eval_openai.json"
    ).read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def judged_openai(data):
    """Our scorer with ``evaluate_with_openai.py``'s judge (``tests/browsecomp_openai_official.py``
    ran it unchanged), its OpenAI model at the stub replying as the official run's did."""
    from tests import browsecomp_openai_official as openai_official

    with RecordingServer(openai_official.reply_for(data)) as server:
        judge = make_chat_model(
            f"openai:{openai_official.JUDGE_MODEL}",
            base_url=server.url,
            max_retries=0,
            api_key="stub",
        )
        result = score(
            "browsecomp_plus",
            [row_prediction(r) for r in data["rows"]],
            samples=official.samples(data),
            judge=judge,
            judge_setting="evaluate_with_openai",
        )
        requests = sorted(server.requests, key=lambda r: int(openai_official.query_of(r, data)))
    return result, requests


def test_the_openai_judges_requests_are_the_official_ones(judged_openai):
    """One Responses API request per judged answer: model, max_output_tokens 1024 and the
    prompt of search_agent/prompts.py's GRADER_TEMPLATE as the ``input`` string, byte for byte."""
    result, requests = judged_openai
    assert [official.sha256(official.canonical(r)) for r in requests] == OPENAI_FIXTURE[
        "requests_sha256"
    ]
    assert requests[: official.WHOLE] == OPENAI_FIXTURE["requests_whole"]
    assert result["judge_setting"] == "evaluate_with_openai" and result["n_judge_errors"] == 0


def test_the_openai_judges_figures_and_verdicts_are_the_official_ones(judged_openai):
    result, _ = judged_openai
    summary = OPENAI_FIXTURE["summary"]
    for key in ("Accuracy (%)", "Recall (%)", "Calibration Error (%)", "avg_tool_stats"):
        assert result[key] == summary[key], key
    for row in result["per_query"]:
        theirs = OPENAI_FIXTURE["judge_results"][row["query_id"]]
        assert row["correct"] == theirs.get("correct"), row["query_id"]
        if not theirs.get("parse_error"):
            assert row["confidence"] == theirs["confidence"]
            assert row["extracted_final_answer"] == theirs["extracted_final_answer"]


def test_the_openai_judge_needs_an_openai_model(data):
    from tests.scripted import ScriptedChatModel

    with pytest.raises(TypeError, match="Responses API"):
        score(
            "browsecomp_plus",
            [row_prediction(r) for r in data["rows"][:5]],
            samples=official.samples(data)[:5],
            judge=ScriptedChatModel(reply_fn=lambda prompt: "correct: yes"),
            judge_setting="evaluate_with_openai",
        )
    with pytest.raises(ValueError, match="judge_setting"):
        score(
            "browsecomp_plus",
            [row_prediction(data["rows"][1])],
            samples=official.samples(data)[1:2],
            judge_setting="gpt",
        )
