"""Your corpus, your questions: a folder of PDFs and a questions file through several strategies."""

from __future__ import annotations

import json

import pytest

from benchmarks.stub_server import stub_server
from longctx.experiments.benchmarks import BenchmarkDataError, load_benchmark, score
from longctx.experiments.benchmarks.own import extract, read_questions
from longctx.experiments.cli.app import main as cli_main
from longctx.experiments.runner import read_rows
from tests.test_corpus import minimal_pdf
from tests.test_html_report import _chromium, answer_block, open_in_chromium, question_block

QUESTIONS = """id,question,answer,answer_type
rev,What was Halvorsen's revenue in 2023 in NOK billion?,4.7,number
hq,Where is Halvorsen headquartered?,Bergen,text
fleet,How many vessels does Halvorsen operate?,42,number
plans,What does management plan for 2024?,,
risks,Which risks does the report name?,,
"""


@pytest.fixture
def own_data(tmp_path):
    docs = tmp_path / "pdfs"
    docs.mkdir()
    (docs / "halvorsen.pdf").write_bytes(
        minimal_pdf("Halvorsen Maritime revenue 2023 was NOK 4.7 billion. HQ Bergen. 42 vessels.")
    )
    (docs / "kestrel.pdf").write_bytes(
        minimal_pdf("Kestrel Aviation revenue 2023 was EUR 1.2 billion. HQ Tampere.")
    )
    (docs / "sorrento.pdf").write_bytes(
        minimal_pdf("Sorrento Foods revenue 2023 was EUR 800 million. HQ Naples.")
    )
    questions = tmp_path / "questions.csv"
    questions.write_text(QUESTIONS)
    return docs, questions


def test_pdfs_and_a_questions_file_run_through_rag_memagent_and_pai_with_one_command(
    own_data, tmp_path, monkeypatch, capsys
):
    docs, questions = own_data
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with stub_server(latency=0.0, reply_tokens=5, tools=True, properties=1) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        code = cli_main(
            [
                "run",
                "--corpus",
                str(docs),
                "--questions",
                str(questions),
                "--strategies",
                "rag,memagent,pai",
                "--llm",
                "openai:stub",
                "--out",
                str(out),
                "--option",
                "memagent.chunk_tokens=200",
            ]
        )
    assert code == 0, capsys.readouterr().err
    rows = read_rows(out)
    assert len(rows) == 15 and all(r["status"] == "ok" for r in rows)
    assert {r["strategy"] for r in rows} == {"rag", "memagent", "pai"}
    assert cli_main(["report", str(out), "--no-plots"]) == 0
    scores = json.loads((out / "report" / "scores.json").read_text())
    assert {s["n_scored"] for s in scores.values()} == {3} and {
        s["n_unscored"] for s in scores.values()
    } == {2}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["benchmark"] == "own" and manifest["config"]["loader_options"][
        "corpus"
    ] == str(docs.resolve())


def test_the_corpus_is_shared_by_every_question(own_data):
    docs, questions = own_data
    samples = load_benchmark("own", questions, corpus=docs)
    assert len(samples) == 5 and len({id(s.corpus) for s in samples}) == 1
    assert [s.answers for s in samples][:3] == [("4.7",), ("Bergen",), ("42",)] and samples[
        3
    ].answers == ()


@pytest.mark.parametrize(
    ("prediction", "gold", "kind", "expected"),
    [
        ("Revenue was high. The answer is: 4.70", "4.7", "number", 100.0),
        ("The answer is: NOK 4.7 billion", "4.7", "number", 0.0),
        ("The answer is: Bergen, Norway", "Bergen", "text", 100.0),
        ("The answer is: 43", "42", "number", 0.0),
        ('The answer is: ["Bergen", "Oslo"]', '["Oslo", "Bergen"]', "list", 100.0),
    ],
)
def test_scoring_by_answer_type(own_data, prediction, gold, kind, expected, tmp_path):
    docs, _ = own_data
    q = tmp_path / "q.jsonl"
    q.write_text(
        json.dumps({"id": "a", "question": "?", "answer": gold, "answer_type": kind}) + "\n"
    )
    (sample,) = load_benchmark("own", q, corpus=docs)
    assert score("own", [(sample, prediction)])["per_sample"]["a"] == expected


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("id,answer\n1,2\n", "no 'question'"),
        ("id,question\na,x\na,y\n", "used twice"),
        ("question,answer_type\nx,money\n", "answer_type"),
        ("", "no questions"),
    ],
)
def test_bad_questions_files_are_explained(tmp_path, content, message):
    path = tmp_path / "q.csv"
    path.write_text(content)
    with pytest.raises(BenchmarkDataError, match=message):
        read_questions(path)


def test_cli_needs_both_paths(tmp_path, capsys):
    assert (
        cli_main(
            ["run", "--corpus", str(tmp_path), "--strategies", "rag", "--out", str(tmp_path / "o")]
        )
        == 2
    )
    assert "--questions" in capsys.readouterr().err


def test_extract_takes_the_last_answer_line():
    assert extract("The answer is: 1\n**The answer is: 2.**") == "2"


@pytest.mark.skipif(
    _chromium() is None, reason="no Chromium installed (apt-get install -y chromium)"
)
def test_own_corpus_report_opens_in_headless_chromium(own_data, tmp_path, monkeypatch):
    """The Done-when of the own-corpus road: PDFs + a questions file -> one command -> a report a
    browser opens."""
    docs, questions = own_data
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    with stub_server(latency=0.0, reply_tokens=5, tools=True, properties=1) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        assert (
            cli_main(
                [
                    "run",
                    "--corpus",
                    str(docs),
                    "--questions",
                    str(questions),
                    "--strategies",
                    "rag,memagent,pai",
                    "--llm",
                    "openai:stub",
                    "--out",
                    str(out),
                    "--option",
                    "memagent.chunk_tokens=200",
                ]
            )
            == 0
        )
    assert cli_main(["report", str(out)]) == 0
    dom, console = open_in_chromium((out / "report" / "report.html").as_uri() + "#q-rev", tmp_path)
    assert console == [] and 'data-ready="1"' in dom and '<table class="summary">' in dom
    block = question_block(dom, "rev")
    for strategy in ("rag", "memagent", "pai"):
        answer = answer_block(block, strategy)
        assert '<pre class="ans">' in answer and 'class="step"' in answer, strategy
    assert '<div class="evidence">' in answer_block(block, "rag")


ADM_REPLIES = {
    "q1": 'The package "base-passwd-README" is not available.',
    "q2": "Ask the administrator.",
    "q3": "The adm group can read it.",
}


def test_gold_phrase_inside_other_words_scores_wrong_and_the_drilldown_shows_the_rule(tmp_path):
    """Issue #30's three answers to "Which group can read /var/log?" (gold adm): wrong, wrong,
    right, through a real run and report; each answer's card says which rule decided it."""
    from longctx.experiments.reports.report import build_report
    from longctx.experiments.runner import RunConfig, run_experiment
    from tests.scripted_tools import ToolScriptedChatModel

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "logs.md").write_text("Members of the adm group can read the files under /var/log.\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            json.dumps(
                {"id": k, "question": f"Which group can read /var/log? ({k})", "answer": "adm"}
            )
            + "\n"
            for k in ADM_REPLIES
        )
    )
    samples = load_benchmark("own", questions, corpus=docs)

    def reply(prompt, tools):
        return next(text for k, text in ADM_REPLIES.items() if f"({k})" in prompt)

    out = tmp_path / "run"
    cfg = RunConfig(benchmark="own", strategies=("full_context",), llm_cache=False)
    run_experiment(
        cfg, out, llm=ToolScriptedChatModel(reply_fn=reply), samples=samples, show_progress=False
    )
    build_report(out, samples=samples, plots=False)
    scores = json.loads((out / "report" / "scores.json").read_text())["full_context"]
    assert scores["per_sample"] == {"q1": 0.0, "q2": 0.0, "q3": 100.0}
    assert scores["match_rule"] == {"q1": None, "q2": None, "q3": "phrase"}
    page = (out / "report" / "report.html").read_text()
    assert (
        page.count('data-rule="none"') == 2
        and page.count('data-rule="phrase"') == 1
        and "matched: phrase" in page
    )


@pytest.mark.parametrize(
    ("prediction", "question", "expected", "rule"),
    [
        ("adm, sudo or root", "Which group can read /var/log?", 0.0, None),
        ("adm, sudo or root", "Which groups can read /var/log?", 100.0, "phrase"),
        ("The answer is: not adm", "Which group can read /var/log?", 0.0, None),
        ("The answer is: adm", "Which group can read /var/log?", 100.0, "exact"),
    ],
)
def test_several_candidates_are_credited_only_when_the_question_asks_for_a_list(
    own_data, tmp_path, prediction, question, expected, rule
):
    docs, _ = own_data
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "a", "question": question, "answer": "adm"}) + "\n")
    (sample,) = load_benchmark("own", q, corpus=docs)
    result = score("own", [(sample, prediction)])
    assert (result["per_sample"]["a"], result["match_rule"]["a"]) == (expected, rule)


def test_compare_prints_the_paired_table_of_two_runs_of_the_same_questions(tmp_path, capsys):
    """Two models on the same 24 questions: `longctx compare` pairs them question by question."""
    from longctx.experiments.runner import RunConfig, run_experiment
    from tests.scripted_tools import ToolScriptedChatModel

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "codes.md").write_text("".join(f"Item {i} has code C{i}.\n" for i in range(24)))
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        "".join(
            json.dumps(
                {"id": f"i{i}", "question": f"What is the code of item {i}?", "answer": f"C{i}"}
            )
            + "\n"
            for i in range(24)
        )
    )

    def model(right_until: int) -> ToolScriptedChatModel:
        def reply(prompt, tools):
            i = int(prompt.rsplit("code of item ", 1)[1].split("?")[0])
            return f"C{i}" if i < right_until else "I do not know."

        return ToolScriptedChatModel(reply_fn=reply)

    folders = []
    for name, right in (("strong", 24), ("weak", 4)):
        out = tmp_path / name
        cfg = RunConfig.for_corpus(docs, questions, ("full_context",), llm_cache=False)
        run_experiment(cfg, out, llm=model(right), show_progress=False)
        folders.append(str(out))
    capsys.readouterr()
    assert cli_main(["compare", *folders, "--out", str(tmp_path / "pairs.csv")]) == 0
    printed = capsys.readouterr().out
    line = next(x for x in printed.splitlines() if x.startswith("| full_context @ strong"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert (
        cells[1] == "full_context @ weak"
        and cells[2] == "24"
        and float(cells[5]) == pytest.approx(100 * 20 / 24, abs=0.01)
    )
    assert (
        float(cells[9]) < 1e-4 and cells[10] == "mcnemar-exact"
    )  # 20 discordant pairs, all one way: p = 2 / 2^20
    assert "strategy_a" in (tmp_path / "pairs.csv").read_text()
    assert cli_main(["compare", folders[0]]) == 2 and "two run folders" in capsys.readouterr().err
