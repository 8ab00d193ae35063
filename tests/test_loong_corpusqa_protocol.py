"""Loong and CorpusQA generation as their official loops run it, checked on a recording server:
temperature 0.0 (every Loong model config, CorpusQA ``infer.py``) over a strategy's own, and
Loong's 128,000-token input budget (``run.sh`` at HEAD)."""

from __future__ import annotations

from pathlib import Path

import pytest

from longctx.agents.chat_models import make_chat_model
from longctx.experiments.benchmarks import BenchmarkDataError, load_benchmark
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from tests.recording_server import RecordingServer

FIXTURES = Path(__file__).parent / "fixtures" / "benchmarks"


@pytest.mark.parametrize(
    "benchmark, max_input", [("loong", 128_000), ("corpusqa", 1_000_000 - 192)]
)  # CorpusQA: the window rule
def test_generation_runs_at_the_official_temperature_and_input_budget(
    tmp_path, monkeypatch, benchmark, max_input
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    with RecordingServer(lambda request: "The answer is: 1") as server:
        llm = make_chat_model("openai:rec", base_url=server.url, max_retries=0)
        cfg = RunConfig(
            benchmark=benchmark,
            strategies=("rag", "full_context"),
            data_path=str(FIXTURES / benchmark),
            limit=1,
            llm_cache=False,
            strategy_options={
                "rag": {"temperature": 0.7},
                "full_context": {"context_window": 1_000_000},
            },
        )
        run_experiment(cfg, tmp_path / "run", llm=llm, show_progress=False)
    assert len(server.requests) == 2 and {r["temperature"] for r in server.requests} == {
        0.0
    }  # rag's own 0.7 is overridden
    rows = {r["strategy"]: r for r in read_rows(tmp_path / "run")}
    assert (
        rows["full_context"]["status"] == "ok"
        and rows["full_context"]["steps"][0]["max_input_tokens"] == max_input
    )


def test_corpusqa_without_files_points_to_the_hub_dataset(tmp_path):
    with pytest.raises(BenchmarkDataError, match="hub dataset Tongyi-Zhiwen/CorpusQA"):
        load_benchmark("corpusqa", tmp_path)
