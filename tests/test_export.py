"""``longctx export --format official``: a run's answers in each benchmark's official
prediction files.

The expected files under ``tests/fixtures/export/<benchmark>/`` are written by hand in
the shapes the official scripts write and read: LongBench ``pred.py`` / ``eval.py``
(``pred, answers, all_classes, length``), LongBench v2 ``pred.py`` / ``result.py`` (the
item, ``response, pred, judge``; failed calls never written), LV-Eval ``prediction.py``
/ ``evaluation.py`` (``pred, answers, gold_ans, input, all_classes, length``), Loong
``step2`` / ``step3`` (the item plus ``generate_response``, ``""`` on failure), CorpusQA
``infer.py`` / ``eval.py`` (``id, question, answer, response, model``; failed calls never
written) and MemAgent ``ruler_hqa.py`` / ``visualize.py`` (the item without context,
``response, answer, pred, judge_*``; failed calls never written).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longctx.experiments.cli.app import main
from longctx.experiments.reports.export import export_official
from longctx.experiments.runner import RunConfig, run_experiment
from tests.scripted import ScriptedChatModel

FIXTURES = Path(__file__).parent / "fixtures"
EXPECTED = FIXTURES / "export"

#: benchmark -> (data folder, run options, {prompt substring: reply, or None for a failed call})
CASES = {
    "longbench": (
        "longbench",
        {"datasets": ("hotpotqa", "trec")},
        {
            "Where was Ada born?": "London",
            "Where was Bob born?": None,
            "capital of France": "Location",
        },
    ),
    "longbench_e": (
        "longbench",
        {"datasets": ("hotpotqa",)},
        {"Where was Ada born?": "London", "Where was Bob born?": None},
    ),
    "longbench_v2": (
        "longbench_v2",
        {},
        {"report 1?": "The correct answer is (A)", "report 2?": None, "report 3?": "I think B"},
    ),
    "lveval": (
        "lveval",
        {"datasets": ("hotpotwikiqa_mixup", "cmrc_mixup"), "loader_options": {"lengths": ["16k"]}},
        {"Where was Ada born?": "London", "艾达出生在哪里": None},
    ),
    "loong": (
        "loong",
        {},
        {"highest revenue": "GammaCo", "What is studied?": None, "谁是原告": "甲"},
    ),
    "corpusqa": (
        "corpusqa",
        {},
        {"total revenue": "The answer is: 200.75", "above 500 million": None},
    ),
    "ruler_hqa": (
        "ruler_hqa",
        {},
        {
            "Document 1:\nCats\nCats purr when content.\n\nDocument 2:\nAda": (
                "<think>the answer is London</think>Therefore, the answer is **Paris**"
            ),
            "Document 1:\nBob Marley": "Therefore, the answer is London.",
            "Is Bob Marley a cat?": None,
        },
    ),
}


def _replying(replies: dict[str, str | None]):
    def reply(prompt: str) -> str:
        for needle, text in replies.items():
            if needle in prompt:
                if text is None:
                    raise ConnectionError("server went away")
                return text
        raise AssertionError(f"no scripted reply for {prompt[:200]!r}")

    return reply


def _run(benchmark: str, out: Path) -> Path:
    folder, options, replies = CASES[benchmark]
    cfg = RunConfig(
        benchmark=benchmark,
        strategies=("full_context",),
        data_path=str(FIXTURES / "benchmarks" / folder),
        llm_cache=False,
        **options,
    )
    run_experiment(
        cfg, out, llm=ScriptedChatModel(reply_fn=_replying(replies)), show_progress=False
    )
    return out


def _tree(root: Path) -> dict[str, list[dict]]:
    """Every ``.jsonl`` under ``root``: relative path -> parsed lines."""
    return {
        str(p.relative_to(root)): [
            json.loads(line) for line in p.read_text(encoding="utf-8").splitlines()
        ]
        for p in sorted(root.rglob("*.jsonl"))
    }


@pytest.mark.parametrize("benchmark", sorted(CASES))
def test_export_writes_the_official_layout(tmp_path, benchmark):
    run = _run(benchmark, tmp_path / "run")
    written = export_official(run, tmp_path / "official")
    assert _tree(tmp_path / "official") == _tree(EXPECTED / benchmark)
    assert {str(f.path.relative_to(tmp_path / "official")) for f in written["full_context"]} == set(
        _tree(EXPECTED / benchmark)
    )
    dropped = sum(f.omitted_failed for f in written["full_context"])
    assert dropped == (
        1 if benchmark in ("longbench_v2", "corpusqa", "ruler_hqa") else 0
    )  # where the official script skips failures


def test_cli_export_prints_the_official_command(tmp_path, capsys):
    run = _run("longbench", tmp_path / "run")
    assert main(["export", str(run), "--format", "official"]) == 0
    out = capsys.readouterr().out
    official = (run / "official").resolve()
    assert "full_context: 3 answers in 2 file(s)" in out
    assert f"cd {official} && python <LongBench>/LongBench/eval.py --model full_context" in out
    assert _tree(run / "official") == _tree(EXPECTED / "longbench")


def test_export_refuses_what_has_no_official_format(tmp_path, capsys):
    assert main(["export", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
    (tmp_path / "manifest.json").write_text(
        json.dumps({"config": {"benchmark": "synth", "strategies": ["rag"]}, "invocations": []})
    )
    with pytest.raises(ValueError, match="no official prediction format"):
        export_official(tmp_path)


def test_longbench_v2_cot_lines_carry_the_reasoning_reply_as_response_cot(tmp_path):
    """``pred.py --cot`` writes ``response_cot`` (the first call's reply, stripped) before
    ``response``; a strategy that answers in one call made no reasoning call, so its
    ``response_cot`` is ``null``."""

    def reply(prompt: str) -> str:
        if prompt.endswith("Let\u2019s think step by step:"):
            return "  Report 1 names 2019, so A.  "
        return "notes" if prompt.endswith("Updated memory:\n") else "The correct answer is (A)"

    cfg = RunConfig(
        benchmark="longbench_v2",
        strategies=("full_context", "memagent"),
        data_path=str(FIXTURES / "benchmarks" / "longbench_v2"),
        llm_cache=False,
        limit=1,
        loader_options={"setting": "cot"},
    )
    run_experiment(
        cfg, tmp_path / "run", llm=ScriptedChatModel(reply_fn=reply), show_progress=False
    )
    export_official(tmp_path / "run", tmp_path / "official")
    tree = _tree(tmp_path / "official")
    (full,), (memagent,) = tree["results/full_context.jsonl"], tree["results/memagent.jsonl"]
    assert list(full)[-5:] == [
        "context",
        "response_cot",
        "response",
        "pred",
        "judge",
    ]  # pred.py's key order
    assert (full["response_cot"], full["response"], full["pred"], full["judge"]) == (
        "Report 1 names 2019, so A.",
        "The correct answer is (A)",
        "A",
        True,
    )
    assert memagent["response_cot"] is None and memagent["pred"] == "A"
