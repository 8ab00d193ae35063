"""What the LLM judges send, checked on a recording server: the official parameters of
Loong's (``temperature 0.0``) and CorpusQA's (``temperature 0.0, n=1``) judge calls, Loong's
failed generations judged as ``""``, and the official denominators beside ours."""

from __future__ import annotations

import json
from pathlib import Path

from longctx import experiments
from longctx.agents.chat_models import make_chat_model
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.cli.app import main
from longctx.experiments.runner import RunConfig, run_experiment
from tests.recording_server import RecordingServer, prompt_of
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"
EMPTY_ANSWER = (
    "[The Start of Assistant's Predicted Answer]\n\n[The End of Assistant's Predicted Answer]"
)


def _rating(request: dict) -> str:
    return (
        "Evaluation evidence: empty.\nRating: [[1]]"
        if EMPTY_ANSWER in prompt_of(request)
        else "Fine.\nRating: [[80]]"
    )


def test_loong_judge_runs_at_temperature_zero_and_judges_a_failed_generation_as_empty():
    samples = load_benchmark("loong", FIXTURES / "loong")
    with RecordingServer(_rating) as server:
        judge = make_chat_model(
            "openai:gpt-4-turbo-2024-04-09", base_url=server.url, max_retries=0, temperature=0.7
        )
        result = experiments.score(
            "loong",
            [(samples[0], "GammaCo"), (samples[1], "attention"), (samples[2], None)],
            judge=judge,
        )
    assert len(server.requests) == 3  # the failed generation is judged too, as official
    for request in server.requests:
        assert (
            request["temperature"] == 0.0 and "n" not in request
        )  # gpt4.yaml run_args, over the model's own 0.7
        assert [m["role"] for m in request["messages"]] == ["user"]
    assert sum(EMPTY_ANSWER in prompt_of(r) for r in server.requests) == 1
    assert (
        result["n_failed"] == 1
        and result["n_effective"] == 3
        and result["parse_success_rate"] == 1.0
    )
    assert (
        result["avg_score"] == round((80 + 80 + 1) / 3, 2)
        and result["per_sample"][samples[2].sample_id] == 1.0
    )


def test_corpusqa_judge_sends_temperature_zero_and_n_one_and_reports_the_official_denominator():
    samples = load_benchmark("corpusqa", FIXTURES / "corpusqa")
    with RecordingServer(lambda request: "Same value. [[YES]]") as server:
        judge = make_chat_model("openai:deepseek-v3", base_url=server.url, max_retries=0)
        result = experiments.score(
            "corpusqa",
            {"financial_en_1": "The answer is: 200.75", "financial_en_2": None},
            samples=samples,
            judge=judge,
        )
    (request,) = (
        server.requests
    )  # a failed inference never reaches the judge (eval.py never sees it)
    assert request["temperature"] == 0.0 and request["n"] == 1
    assert [m["role"] for m in request["messages"]] == ["system", "user"]
    assert (
        request["messages"][1]["content"].startswith("\nProblem: ")
        and "Answer 1: 200.75\n" in request["messages"][1]["content"]
    )
    assert (result["overall"], result["overall_micro"], result["n_failed"]) == (50.0, 50.0, 1)
    official = result["official_drops_failed"]
    assert (official["overall"], official["overall_micro"], official["domains"], official["n"]) == (
        100.0,
        100.0,
        {"financial_en": 100.0},
        1,
    )


def test_report_judge_sends_the_official_parameters_and_shows_the_official_denominator(
    tmp_path, monkeypatch, capsys
):
    """``longctx report --judge`` on a CorpusQA run with one failed call: every judge request
    carries ``temperature 0.0, n=1``, and the summary shows both denominators, labelled."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    samples = load_benchmark("corpusqa", FIXTURES / "corpusqa")
    failing = samples[1].question.text

    def reply(prompt: str) -> str:
        if failing in prompt:
            raise RuntimeError("server down")
        return "The answer is: 200.75"

    cfg = RunConfig(
        benchmark="corpusqa",
        strategies=("full_context",),
        data_path=str(FIXTURES / "corpusqa"),
        llm_cache=False,
    )
    llm = ScriptedChatModel(reply_fn=reply)
    run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    with RecordingServer(lambda request: "Equivalent. [[YES]]") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("LONGCTX_MAX_RETRIES", "0")
        assert (
            main(
                [
                    "report",
                    str(tmp_path / "run"),
                    "--judge",
                    "openai:deepseek-v3",
                    "--no-plots",
                    "--no-html",
                ]
            )
            == 0
        )
    assert len(server.requests) == 1  # the failed call is not judged
    assert all(r["temperature"] == 0.0 and r["n"] == 1 for r in server.requests)
    summary = (tmp_path / "run" / "report" / "summary.csv").read_text().splitlines()
    header, row = summary[0].split(","), dict(zip(summary[0].split(","), summary[1].split(",")))
    assert header[:3] == ["strategy", "score", "score_official_denominator"]
    assert (float(row["score"]), float(row["score_official_denominator"]), row["failed"]) == (
        50.0,
        100.0,
        "1",
    )
    scores = json.loads((tmp_path / "run" / "report" / "scores.json").read_text())["full_context"]
    assert (
        scores["official_drops_failed"]["n"] == 1
        and "score_official_denominator" in capsys.readouterr().out
    )
