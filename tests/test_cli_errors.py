"""User errors on the command line: one line on stderr, exit code 2, no traceback."""

import pytest

from longctx.experiments.cli.app import main
from tests.test_runner import V2

QUESTIONS = {
    "no_question_column": "text,answer\nWhat?,A\n",
    "duplicate_ids": "id,question\n1,What?\n1,Why?\n",
}


def _one_line_error(capsys, argv, *words):
    assert main(argv) == 2
    err = capsys.readouterr().err  # progress bars may come first
    line = err.rstrip("\n").split("\n")[-1]
    assert (
        line.startswith("longctx: error: ")
        and err.count("longctx:") == 1
        and "Traceback" not in err
    ), err
    for word in words:
        assert word in line, err


@pytest.mark.parametrize(
    "name,words",
    [
        ("no_question_column", ["row 1: no 'question'"]),
        ("duplicate_ids", ["row 2: id '1' is used twice"]),
    ],
)
def test_a_bad_questions_file(tmp_path, capsys, name, words):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Alpha reported revenue.")
    questions = tmp_path / "q.csv"
    questions.write_text(QUESTIONS[name])
    argv = [
        "run",
        "--corpus",
        str(tmp_path / "docs"),
        "--questions",
        str(questions),
        "--strategies",
        "rag",
        "--out",
        str(tmp_path / "run"),
    ]
    _one_line_error(capsys, argv, str(questions), *words)


def test_missing_benchmark_data(tmp_path, capsys):
    argv = [
        "run",
        "--benchmark",
        "synth",
        "--data",
        str(tmp_path / "nothing"),
        "--strategies",
        "rag",
        "--out",
        str(tmp_path / "run"),
    ]
    _one_line_error(capsys, argv, "holds no generated corpus")


def test_an_embedder_that_cannot_be_made(tmp_path, capsys, monkeypatch, isolated_cache):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    (tmp_path / "a.txt").write_text("Alpha reported revenue.")
    _one_line_error(
        capsys,
        ["index", str(tmp_path / "a.txt"), "--retriever", "openai"],
        "OpenAI embeddings need OPENAI_API_KEY",
    )


def test_report_on_a_missing_folder(tmp_path, capsys):
    _one_line_error(
        capsys, ["report", str(tmp_path / "nope")], str(tmp_path / "nope"), "is not a folder"
    )


def test_report_on_a_folder_that_is_not_a_run(tmp_path, capsys):
    _one_line_error(capsys, ["report", str(tmp_path)], "manifest.json does not exist")


def test_report_on_a_corrupt_manifest(tmp_path, capsys):
    (tmp_path / "manifest.json").write_text('{"config": ')
    _one_line_error(
        capsys,
        ["report", str(tmp_path)],
        "manifest.json is unreadable",
        "rerun the same 'longctx run' command",
    )


def test_an_unknown_benchmark_is_named_without_quotes_around_the_message(tmp_path, capsys):
    _one_line_error(
        capsys,
        ["run", "--benchmark", "longbench_v3", "--strategies", "rag", "--out", str(tmp_path)],
        "error: Unknown benchmark 'longbench_v3'",
    )


def test_a_message_over_several_lines_is_printed_on_one(tmp_path, capsys, monkeypatch):
    from longctx.experiments.benchmarks import BenchmarkDataError
    from longctx.experiments.runner import config as run_config

    def unreadable(*args, **kwargs):
        raise BenchmarkDataError(
            "LV-Eval: loading failed (HTTPError: 503\nService Unavailable\n). Put the file at X."
        )

    monkeypatch.setattr(run_config, "load_benchmark", unreadable)
    argv = ["run", "--benchmark", "lveval", "--strategies", "rag", "--out", str(tmp_path)]
    _one_line_error(capsys, argv, "(HTTPError: 503 Service Unavailable ). Put the file at X.")


def test_duplicate_strategies_on_the_command_line_run_once(tmp_path, capsys, monkeypatch, caplog):
    from benchmarks.stub_server import stub_server

    with stub_server(latency=0.0) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        argv = [
            "run",
            "--benchmark",
            "longbench_v2",
            "--data",
            V2,
            "--strategies",
            "full_context,full_context",
            "--llm",
            "openai:stub",
            "--limit",
            "1",
            "--no-llm-cache",
            "--out",
            str(tmp_path),
        ]
        assert main(argv) == 0
    assert (
        "1 answers in" in capsys.readouterr().out
        and "more than once run once: full_context" in caplog.text
    )


def _own_run_argv(tmp_path, questions, out):
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "a.txt").write_text("Alpha reported revenue.")
    return [
        "run",
        "--corpus",
        str(tmp_path / "docs"),
        "--questions",
        str(questions),
        "--strategies",
        "rag",
        "--out",
        str(out),
        "--yes",
    ]


@pytest.mark.parametrize("inside", [False, True], ids=["the-file", "a-folder-under-it"])
def test_run_out_on_an_existing_file(tmp_path, capsys, inside):
    """Issue #35, 18: ``--out EXISTING_FILE`` printed a 23-line traceback (after calibrating
    the model)."""
    questions = tmp_path / "q.csv"
    questions.write_text("question\nWhat did Alpha report?\n")
    taken = tmp_path / "taken"
    taken.write_text("not a folder")
    argv = _own_run_argv(tmp_path, questions, taken / "run" if inside else taken)
    _one_line_error(capsys, argv, f"{taken} is a file, not a folder")


def test_a_result_folder_that_cannot_be_created_is_named(tmp_path, capsys):
    questions = tmp_path / "q.csv"
    questions.write_text("question\nWhat did Alpha report?\n")
    out = tmp_path / ("x" * 300)  # longer than a file name may be
    _one_line_error(
        capsys,
        _own_run_argv(tmp_path, questions, out),
        f"Cannot create the result folder {out}: File name too long",
    )


@pytest.mark.parametrize(
    "text,words",
    [
        (
            'question,answer\n"What did Alpha report?,A\nWho?,B\n',
            ["is not well-formed CSV: a quote opened on line 2 is never closed"],
        ),
        (
            'question,answer\nWhat?,A\n"Who" else,B\n',
            ["is not well-formed CSV: line 3: ',' expected after '\"'"],
        ),
    ],
    ids=["unterminated-quote", "text-after-a-quote"],
)
def test_a_malformed_csv_is_refused_naming_the_line(tmp_path, capsys, text, words):
    """An unterminated quote swallowed every later line into one question, accepted as such."""
    questions = tmp_path / "q.csv"
    questions.write_text(text)
    _one_line_error(
        capsys, _own_run_argv(tmp_path, questions, tmp_path / "run"), str(questions), *words
    )


@pytest.mark.parametrize(
    "name,content,words",
    [
        (
            "q.jsonl",
            b'{"question": "What?"}\n{"question": "Who?"\n',
            ["q.jsonl, line 2: not JSON (Expecting ',' delimiter"],
        ),
        ("q.json", b'[{"question": "What?"},]', ["q.json, line 1: not JSON (Expecting value"]),
        ("q.jsonl", b'{"question": "caf\xe9"}\n', ["q.jsonl is not UTF-8 text"]),
    ],
    ids=["jsonl", "json", "latin-1"],
)
def test_a_questions_file_that_is_not_json_is_named(tmp_path, capsys, name, content, words):
    questions = tmp_path / name
    questions.write_bytes(content)
    _one_line_error(capsys, _own_run_argv(tmp_path, questions, tmp_path / "run"), *words)


def test_a_benchmark_file_that_is_not_json_is_named(tmp_path, capsys):
    (tmp_path / "data.json").write_text('[{"_id": "x", "question": ')
    argv = [
        "run",
        "--benchmark",
        "longbench_v2",
        "--data",
        str(tmp_path),
        "--strategies",
        "rag",
        "--out",
        str(tmp_path / "run"),
    ]
    _one_line_error(capsys, argv, f"{tmp_path / 'data.json'}, line 1: not JSON")


@pytest.mark.parametrize(
    "manifest", ['{"config": ', '{"invocations": []}'], ids=["torn", "no-config"]
)
def test_export_on_a_corrupt_manifest_is_named(tmp_path, capsys, manifest):
    (tmp_path / "manifest.json").write_text(manifest)
    _one_line_error(
        capsys,
        ["export", str(tmp_path)],
        str(tmp_path / "manifest.json"),
        "rerun the same 'longctx run' command",
    )
