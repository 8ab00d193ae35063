"""``longctx compare`` pairs a question across runs only when id, text and corpus all match, and
says what it left out."""

from __future__ import annotations

import json

import pytest

from longctx.experiments.cli.app import main as cli_main
from longctx.experiments.reports.report import compare_runs
from longctx.experiments.runner import RunConfig, run_experiment
from tests.scripted_tools import ToolScriptedChatModel

QUESTIONS = [
    ("q1", "Which company had the highest revenue in 2023?", "Halvorsen"),
    ("q2", "Where is Halvorsen headquartered?", "Bergen"),
    ("q3", "Where is Kestrel headquartered?", "Tampere"),
    ("q4", "Where is Sorrento headquartered?", "Naples"),
]
REPORTS = {
    "halvorsen.md": "Halvorsen revenue 2023: NOK 4.7 billion. HQ Bergen.",
    "kestrel.md": "Kestrel revenue 2023: EUR 1.2 billion. HQ Tampere.",
    "sorrento.md": "Sorrento revenue 2023: EUR 0.8 billion. HQ Naples.",
}


def _run(tmp_path, name: str, questions, reports=REPORTS) -> str:
    docs = tmp_path / f"{name}-docs"
    docs.mkdir()
    for file, text in reports.items():
        (docs / file).write_text(text)
    qfile = tmp_path / f"{name}.jsonl"
    qfile.write_text(
        "".join(json.dumps({"id": i, "question": q, "answer": a}) + "\n" for i, q, a in questions)
    )
    out = tmp_path / name
    model = ToolScriptedChatModel(reply_fn=lambda prompt, tools: "Bergen")
    run_experiment(
        RunConfig.for_corpus(docs, qfile, ("full_context",), llm_cache=False),
        out,
        llm=model,
        show_progress=False,
    )
    return str(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    renamed = [("q1", "Which company is best 1?", "Halvorsen"), *QUESTIONS[1:]]
    edited = {**REPORTS, "kestrel.md": "Kestrel revenue 2023: EUR 1.3 billion. HQ Tampere."}
    return {
        "base": _run(tmp, "base", QUESTIONS),
        "renamed": _run(tmp, "renamed", renamed),
        "edited": _run(tmp, "edited", QUESTIONS),
        "other_corpus": _run(tmp, "other_corpus", QUESTIONS, edited),
        "fewer": _run(tmp, "fewer", QUESTIONS[:3]),
    }


def test_a_question_id_reused_for_another_question_is_not_paired(runs, capsys):
    assert cli_main(["compare", runs["base"], runs["renamed"]]) == 0
    out = capsys.readouterr().out
    row = next(x for x in out.splitlines() if x.startswith("| full_context @ base"))
    assert [c.strip() for c in row.strip("|").split("|")][
        2
    ] == "3"  # q2-q4; the old pairing by id counted 4
    assert "base vs renamed: 3 questions paired; left out 1 whose question text differs." in out


def test_the_same_questions_over_an_edited_corpus_are_not_paired(runs):
    result = compare_runs([runs["base"], runs["other_corpus"]])
    assert [r["n"] for r in result.pairs] == [0] and result.pairs[0]["p_value"] is None
    assert result.dropped == [
        "base vs other_corpus: 0 questions paired; left out 4 whose corpus differs."
    ]


def test_identical_questions_pair_fully_and_questions_of_one_run_only_are_counted(runs, capsys):
    same = compare_runs([runs["base"], runs["edited"]])
    assert [r["n"] for r in same.pairs] == [4] and same.dropped == []
    assert (
        cli_main(["compare", runs["base"], runs["edited"]]) == 0
        and "Every question id matched." in capsys.readouterr().out
    )
    fewer = compare_runs([runs["base"], runs["fewer"]])
    assert [r["n"] for r in fewer.pairs] == [3] and fewer.dropped == [
        "base vs fewer: 3 questions paired; left out 1 that only one run has."
    ]
