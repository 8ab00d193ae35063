"""Structured beside the other strategies in one report: with the scripted true-record extractor it
answers every synthetic question at 128K, and the report shows each strategy's evidence ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.benchmarks import load_benchmark
from experiments.report import build_report
from experiments.runner import RunConfig, run_experiment
from experiments.synth import SynthConfig, generate, parse_tokens
from tests.scripted_tools import ToolScriptedChatModel
from tests.test_structured import TruthModel


def _dispatch(truth: TruthModel):
    def reply(prompt: str, tools):
        if prompt.startswith(("A question will be answered", "Extract rows", "Every document", "The query ran")) or "<result>" in prompt:
            return truth(prompt, tools)
        params = tools[0]["function"]["parameters"]["properties"] if tools else {}
        if "keep_context" in params:
            return [{"keep_context": False}]
        if "metric" in params:
            return [{"metric": "revenue", "subject": "the companies"}]
        return "The answer is: unknown"

    return reply


@pytest.fixture(scope="module")
def synth(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synth") / "fin-128k"
    generate(SynthConfig(domain="finance", target_tokens=parse_tokens("128K"), seed=0, num_questions=6), out)
    return out


def test_structured_answers_every_question_and_the_report_shows_ceilings(synth, tmp_path, monkeypatch):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    samples = load_benchmark("synth", synth)
    llm = ToolScriptedChatModel(reply_fn=_dispatch(TruthModel(synth)))
    cfg = RunConfig(benchmark="synth", strategies=("structured", "rag", "memagent", "pai"), data_path=str(synth), llm_cache=False,
                    strategy_options={"pai": {"judge_mode": "prefilter"}})
    run_experiment(cfg, tmp_path / "run", llm=llm, samples=samples, show_progress=False)
    report = build_report(tmp_path / "run", samples=samples, plots=False)
    rows = {r["strategy"]: r for r in report["summary"]}
    assert rows["structured"]["score"] == 100.0
    assert all("ceiling" in rows[name] for name in ("structured", "rag", "memagent", "pai"))
    assert rows["structured"]["ceiling"] >= rows["rag"]["ceiling"]
