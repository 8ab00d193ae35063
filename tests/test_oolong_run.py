"""OOLONG as a first-class benchmark: ``longctx run`` with ``--inject-once`` (a window's questions
in one unit, the official ``--batch_by_context_window``), the report's task group x length table
with its breakdowns and official overall, and the official-format export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx import answer
from longctx.agents.chat_models import make_chat_model
from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.reports.export import export_official
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment
from longctx.experiments.runner.units import work_units
from tests import oolong_cases as cases
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> list:
    root = tmp_path_factory.mktemp("oolong")
    (root / "synth").mkdir()
    with (root / "synth" / "test.jsonl").open("w", encoding="utf-8") as f:
        for row in cases.synth_rows():
            f.write(json.dumps(row) + "\n")
    return load_benchmark("oolong", root, datasets=["synth"], max_context_len=8192)


def test_inject_once_puts_a_windows_questions_in_one_unit(samples: list) -> None:
    units = work_units([(s, "full_context") for s in samples], inject_once=True)
    windows = {s.metadata["context_window_id"] for s in samples}
    assert len(units) == len(windows) == 4
    assert all(len({s.metadata["context_window_id"] for s in group}) == 1 for _, group in units)


def test_run_report_and_export(tmp_path: Path, samples: list) -> None:
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Label: spam")
    config = RunConfig(
        benchmark="oolong", strategies=("full_context",), llm_cache=False, inject_once=True
    )
    run_experiment(config, tmp_path, llm=llm, samples=samples, show_progress=False)
    result = build_report(tmp_path, samples=samples, plots=False)
    page = Path(result["html"]).read_text(encoding="utf-8")
    assert "<h2>Score per task x length</h2>" in page and "qa1-qa5" not in page
    scores = json.loads((tmp_path / "report" / "scores.json").read_text())["full_context"]
    assert set(scores["tasks"]) == {"counting", "user", "timeline"}
    assert scores["lengths"] == ["2K", "8K"]
    # "spam" is the gold of the label questions only: one task of five
    assert scores["breakdowns"]["answer type"]["ANSWER_TYPE.LABEL"] == 100.0
    assert scores["breakdowns"]["answer type"]["ANSWER_TYPE.NUMERIC"] == 0.0
    table = (tmp_path / "report" / "by_task_length.md").read_text()
    assert "| counting | 33.33 | 33.33 |" in table
    assert "Official overall (synth, `overall.txt`): 4/20 = 0.2" in table
    assert "| source dataset | score |" in table
    written = export_official(tmp_path, tmp_path / "official", samples=samples)
    folder = tmp_path / "official" / "results" / "synth" / "full_context"
    lines = [json.loads(x) for x in (folder / "full_output.jsonl").read_text().splitlines()]
    assert [f.lines for f in written["full_context"]] == [20]
    assert sum(line["score"] for line in lines) == 4
    assert (folder / "overall.txt").read_text() == (
        "Overall score for full_context on 20 examples: 4/20 = 0.2"
    )


def test_full_context_sends_the_official_system_text_and_one_user_turn(samples: list) -> None:
    sample = samples[0]
    with RecordingServer(lambda request: "Label: spam") as server:
        llm = make_chat_model("openai:smollm2", base_url=server.url, max_retries=0)
        answer(sample.corpus, sample.question, strategy="full_context", llm=llm)
    (request,) = server.requests
    assert request["messages"] == [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": sample.corpus[0].text + "\n" + sample.question.text},
    ]
