"""The report scores each sample once: an LLM judge sees every prediction exactly one time."""

from __future__ import annotations

from longctx import Question
from longctx.experiments.benchmarks import Sample
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, run_experiment
from longctx.retrieval import Corpus
from tests.scripted import ScriptedChatModel


def test_llm_judge_is_called_once_per_prediction(tmp_path):
    corpus = Corpus.from_texts(["Acme revenue 2023: 12 million."], titles=["acme"])
    samples = [
        Sample(
            sample_id=f"s{i}",
            benchmark="synth",
            dataset="finance",
            corpus=corpus,
            question=Question(text=f"Acme revenue {i}?", instruction='Reply "The answer is: X".'),
            answers=("12",),
            metadata={"question": f"Acme revenue {i}?", "difficulty": "easy" if i else "hard"},
        )
        for i in range(3)
    ]
    cfg = RunConfig(benchmark="synth", strategies=("rag", "full_context"), llm_cache=False)
    run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The answer is: 12"),
        samples=samples,
        show_progress=False,
    )
    judge = ScriptedChatModel(reply_fn=lambda p: "The two answers are the same: [[YES]]")
    report = build_report(tmp_path, samples=samples, judge=judge, plots=False)
    assert len(judge.calls) == len(samples) * 2
    assert {r["strategy"] for r in report["summary"]} == {"rag", "full_context"}
