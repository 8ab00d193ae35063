"""Structured beside the other strategies in one report: with the scripted true-record extractor it
answers every synthetic question at 128K, and the report shows each strategy's evidence ceiling."""

from __future__ import annotations

from pathlib import Path

import pytest

from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment
from longctx.experiments.synth import SynthConfig, generate, parse_tokens
from tests.scripted_tools import ToolScriptedChatModel
from tests.test_structured import TruthModel


def _dispatch(truth: TruthModel):
    def reply(prompt: str, tools):
        if (
            prompt.startswith(
                ("A question will be answered", "Extract rows", "Every document", "The query ran")
            )
            or "<result>" in prompt
        ):
            return truth(prompt, tools)
        params = tools[0]["function"]["parameters"]["properties"] if tools else {}
        if "keep_context" in params:
            return [{"keep_context": False}]
        if "metric" in params:
            return [{"metric": "revenue", "subject": "the companies"}]
        return "The answer is: unknown"

    return reply


def _synth(root: Path, size: str) -> Path:
    out = root / f"fin-{size}"
    generate(
        SynthConfig(domain="finance", target_tokens=parse_tokens(size), seed=0, num_questions=14),
        out,
    )
    return out


@pytest.mark.parametrize("size", ["128K", pytest.param("1M", marks=pytest.mark.slow)])
def test_structured_answers_every_question_and_the_report_shows_ceilings(
    size, tmp_path, monkeypatch
):
    """The table of docs/structured.md: the true-record extractor answers every question; the
    report gives each strategy's ceiling, and at 1M no other strategy can see a question's
    complete evidence at its defaults."""
    synth = _synth(tmp_path, size)
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    samples = load_benchmark("synth", synth)
    llm = ToolScriptedChatModel(reply_fn=_dispatch(TruthModel(synth)))
    cfg = RunConfig(
        benchmark="synth",
        strategies=("structured", "rag", "memagent", "pai"),
        data_path=str(synth),
        llm_cache=False,
        strategy_options={"pai": {"judge_mode": "prefilter"}},
    )
    run_experiment(cfg, tmp_path / "run", llm=llm, samples=samples, show_progress=False)
    report = build_report(tmp_path / "run", samples=samples, plots=False)
    rows = {r["strategy"]: r for r in report["summary"]}
    assert rows["structured"]["score"] == 100.0 and rows["structured"]["ceiling"] == 100.0
    assert all("ceiling" in rows[name] for name in ("rag", "memagent", "pai"))
    assert rows["structured"]["ceiling"] >= max(
        rows[name]["ceiling"] for name in ("rag", "memagent", "pai")
    )
    if size == "1M":
        assert all(rows[name]["ceiling"] == 0.0 for name in ("rag", "memagent", "pai"))
    summary = (tmp_path / "run" / "report" / "summary.md").read_text()
    assert all(
        f"| {name} |" in summary for name in ("structured", "rag", "memagent", "pai")
    )  # one table


@pytest.mark.parametrize("benchmark", ["synth", "corpusqa", "loong"])
def test_longctx_run_structured_offline_against_a_stub_server(benchmark, tmp_path, monkeypatch):
    """``longctx run --strategies structured`` on each corpus benchmark, from the repository's
    fixtures (synth: a generated corpus) through an OpenAI-compatible stub with tool calls:
    every row answers, with a planned schema, one extraction call per document and the SQL step."""
    import json

    from benchmarks.stub_server import stub_server
    from longctx.experiments.cli.app import main

    data = Path(__file__).parent / "fixtures" / "benchmarks" / benchmark
    if benchmark == "synth":
        data = tmp_path / "synth"
        generate(
            SynthConfig(
                domain="finance", target_tokens=parse_tokens("32K"), seed=0, num_questions=2
            ),
            data,
        )
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with stub_server(0.0, reply_tokens=5, tools=True) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        code = main(
            [
                "run",
                "--benchmark",
                benchmark,
                "--data",
                str(data),
                "--strategies",
                "structured",
                "--llm",
                "openai:stub",
                "--limit",
                "2",
                "--out",
                str(tmp_path / "run"),
            ]
        )
    assert code == 0
    rows = [
        json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 2 and all(
        r["status"] == "ok" and r["strategy"] == "structured" for r in rows
    )
    for r in rows:
        steps = {s["node"]: s for s in r["steps"]}
        assert steps["plan"]["source"] == "model" and "degraded" not in steps["plan"]
        m, red = steps["map"], steps["reduce"]["extraction"]
        assert m["documents"] >= 1 and red["degraded_documents"] == []
        assert red["extracted"] + red["shared"] + red["cached"] == m["documents"]
        assert "query" in steps and "format_answer" in steps


def test_the_summary_counts_answers_that_ran_degraded(tmp_path):
    from longctx.experiments.reports.summary import summary_row

    ok = {
        "status": "ok",
        "usage": {"llm_calls": 1, "prompt_tokens": 1, "completion_tokens": 1},
        "seconds": 1.0,
        "sample_id": "a",
    }
    rows = [
        {**ok, "steps": [{"node": "plan", "degraded": "no valid schema"}]},
        {**ok, "sample_id": "b", "steps": [{"node": "plan"}]},
        {"status": "failed", "sample_id": "c", "steps": [{"degraded": "x"}]},
    ]
    from types import SimpleNamespace

    sample = SimpleNamespace(metadata={})
    row = summary_row(
        "own", "structured", {"official": {}, "rows": rows}, {"a": sample, "b": sample, "c": sample}
    )
    assert row["degraded"] == 1 and row["missing"] == 0 and row["failed"] == 1
