import json
import subprocess
import sys
from pathlib import Path

import pytest

from longctx.experiments.cli.app import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"


@pytest.mark.parametrize("args", [["--help"], ["answer", "--help"], ["index", "--help"]])
def test_help(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 0
    assert "usage: longctx" in capsys.readouterr().out


def test_console_script_is_installed():
    out = subprocess.run(
        [Path(sys.executable).parent / "longctx", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "answer" in out.stdout and "index" in out.stdout


def test_index_prebuilds_and_reports_the_cache(capsys, isolated_cache):
    assert main(["index", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    assert "5 documents" in out and "bm25 index at" in out and str(isolated_cache) in out


def test_index_with_tokens_and_dense(capsys):
    assert (
        main(
            [
                "index",
                str(EXAMPLES),
                "--retriever",
                "dense",
                "--chunk-unit",
                "tokens",
                "--chunk-size",
                "128",
            ]
        )
        == 0
    )
    assert "dense index at" in capsys.readouterr().out


@pytest.mark.e2e
def test_answer_prints_answer_evidence_and_usage(capsys):
    code = main(
        [
            "answer",
            "--corpus",
            str(EXAMPLES),
            "--question",
            "What was Halvorsen Maritime's revenue in 2023?",
            "--top-k",
            "2",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("Answer: ")
    assert "halvorsen-maritime-2023" in out.split("Evidence:")[1]
    assert "Usage: 1 LLM call(s)" in out


@pytest.mark.e2e
def test_answer_json_output(capsys):
    code = main(
        [
            "answer",
            "--corpus",
            str(EXAMPLES),
            "--question",
            "Where is Kestrel based?",
            "--top-k",
            "1",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["usage"]["llm_calls"] == 1 and len(data["evidence"]) == 1


def test_errors_are_reported_without_a_traceback(capsys, tmp_path):
    assert main(["answer", "--corpus", str(tmp_path / "missing"), "--question", "q"]) == 2
    assert "longctx: error: Corpus path does not exist" in capsys.readouterr().err
