"""The command line's small frictions (#31 item 7): errors before work, clean messages, no
stray folders."""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.stub_server import stub_server
from longctx.experiments.cli.app import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_answer_rejects_a_bad_llm_before_reading_the_corpus(tmp_path, capsys):
    # the corpus path does not exist: an error about it would mean the corpus was read first
    assert (
        main(
            [
                "answer",
                "--corpus",
                str(tmp_path / "missing"),
                "--question",
                "q",
                "--llm",
                "nosuch:model",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "nosuch" in err and "Corpus path does not exist" not in err


def test_answer_rejects_a_bad_option_before_reading_the_corpus(tmp_path, capsys):
    assert (
        main(
            [
                "answer",
                "--corpus",
                str(tmp_path / "missing"),
                "--question",
                "q",
                "--option",
                "top_kk=3",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "top_kk" in err and "Corpus path does not exist" not in err


def test_a_run_with_a_missing_questions_file_leaves_no_folder(tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "run",
            "--corpus",
            str(EXAMPLES / "corpus"),
            "--questions",
            str(tmp_path / "nope.csv"),
            "--strategies",
            "rag",
            "--out",
            str(out),
        ]
    )
    assert code == 2
    assert "Questions file not found" in capsys.readouterr().err
    assert not out.exists()


def test_a_misspelled_strategy_is_named_without_stray_quotes(tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--corpus",
                str(EXAMPLES / "corpus"),
                "--questions",
                str(EXAMPLES / "questions.csv"),
                "--strategies",
                "rgs",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith(
        "longctx: error: Unknown strategy 'rgs'. Did you mean: rag?"
    ) and not err.endswith('"')
    assert not out.exists()


def test_report_without_plots_does_not_promise_plots(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    questions = tmp_path / "q.csv"
    questions.write_text(
        "id,question,answer\nrev,What was Halvorsen Maritime's revenue in 2023?,4.7\n"
    )
    with stub_server(latency=0.0, reply_tokens=5) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        args = [
            "run",
            "--corpus",
            str(EXAMPLES / "corpus"),
            "--questions",
            str(questions),
            "--strategies",
            "rag",
            "--llm",
            "openai:stub",
        ]
        assert main([*args, "--out", str(tmp_path / "run")]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "run"), "--no-plots", "--no-html"]) == 0
    out = capsys.readouterr().out
    assert "Tables and scores.json in" in out and "plots in" not in out
    assert not list((tmp_path / "run" / "report").glob("*.png"))
    # the core install (no plotting library): the tables and the HTML report all the same, and which
    # extra draws plots
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert main(["report", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    assert "Tables and scores.json in" in captured.out and "report.html" in captured.out
    assert "Plots skipped:" in captured.err and "pip install 'longctx-lab[plots]'" in captured.err
    assert not list((tmp_path / "run" / "report").glob("*.png"))
