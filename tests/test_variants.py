"""One run, one strategy twice: variants (``rag@bm25``, ``rag@hybrid``) each with its own options,
each its own column in the rows, the resume, the report, the paired table and the
break-even table."""

from __future__ import annotations

import csv
import json

import pytest

from longctx import Workspace, answer, answer_many, estimate, make_chat_model
from longctx.agents.interop import as_runnable
from longctx.experiments.cli.app import main
from longctx.experiments.runner import RunConfig, read_rows
from longctx.experiments.runner.variants import variant_options
from longctx.graphs.plugin.strategy_registry import STRATEGIES, base_strategy
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer, prompt_of

DOCS = {
    "harbour.txt": (
        "The harbour authority of Velmora repainted the lighthouse in 2019. Its keeper is Ansel "
        "Dray."
    ),
    "orchard.txt": (
        "The Brannock orchard harvested 412 tonnes of apples in 2021, a record for the valley."
    ),
    "theatre.txt": (
        "The Quillon theatre reopened in 2022 with a new symphony by composer Ilse Varga."
    ),
    "road.txt": (
        "Engineers resurfaced the Tarn mountain road in 2020 and added guard rails on its bends."
    ),
}
QUESTIONS = """id,question,answer,answer_type
keeper,Who is the keeper of the Velmora lighthouse?,Ansel Dray,text
tonnes,How many tonnes of apples did the Brannock orchard harvest in 2021?,412,number
composer,Which composer wrote the symphony of the Quillon theatre?,Ilse Varga,text
"""
ANSWERS = {"Velmora": "Ansel Dray", "Brannock": "412", "Quillon": "Ilse Varga"}


def reply(request: dict) -> str:
    question = prompt_of(request).rsplit("Question:", 1)[-1]
    return next((a for key, a in ANSWERS.items() if key in question), "unknown")


def test_two_variants_of_rag_run_resume_and_report_as_two_columns(tmp_path, monkeypatch, capsys):
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text)
    (tmp_path / "questions.csv").write_text(QUESTIONS)
    out = tmp_path / "run"
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    argv = [
        "run",
        "--corpus",
        str(docs),
        "--questions",
        str(tmp_path / "questions.csv"),
        "--llm",
        "openai:rec",
        "--out",
        str(out),
        "--strategies",
        "rag@bm25,rag@hybrid",
        "--option",
        "rag.top_k=2",
        "--option",
        "rag@hybrid.retriever=hybrid",
        "--option",
        'rag@hybrid.retriever_options={"dense": "openai", "dense_options": {"model": "rec"}}',
        "--yes",
        "--no-llm-cache",
    ]
    with RecordingServer(reply) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        assert main(argv) == 0, capsys.readouterr().err
        asked, embedded = len(server.requests), len(server.embedding_requests)
        assert main(argv) == 0  # the rerun resumes: both variants' answers are done
        assert (len(server.requests), len(server.embedding_requests)) == (asked, embedded)
    assert "6 already done" in capsys.readouterr().out
    rows = read_rows(out)
    assert asked == len(rows) == 6 and embedded > 0  # only the hybrid variant embeds
    by = {name: [r for r in rows if r["strategy"] == name] for name in ("rag@bm25", "rag@hybrid")}
    assert all(len(mine) == 3 and all(r["status"] == "ok" for r in mine) for mine in by.values())
    assert {r["config"]["strategy"] for r in rows} == {"rag"}
    assert {r["config"]["retriever"] for r in by["rag@bm25"]} == {"bm25"}
    assert {r["config"]["retriever"] for r in by["rag@hybrid"]} == {"hybrid"}
    assert {r["config"]["top_k"] for r in rows} == {2}  # rag's own option reaches both variants
    assert all(
        set(e["components"]) == {"bm25", "openai"} for r in by["rag@hybrid"] for e in r["evidence"]
    )
    assert all("components" not in e for r in by["rag@bm25"] for e in r["evidence"])

    assert main(["report", str(out), "--no-plots"]) == 0
    report = out / "report"
    with open(report / "summary.csv", encoding="utf-8") as f:
        summary = {r["strategy"]: r for r in csv.DictReader(f)}
    assert set(summary) == {"rag@bm25", "rag@hybrid"}
    assert set(json.loads((report / "scores.json").read_text())) == {"rag@bm25", "rag@hybrid"}
    with open(report / "pairwise.csv", encoding="utf-8") as f:
        pairs = list(csv.DictReader(f))
    assert [(p["strategy_a"], p["strategy_b"], p["n"]) for p in pairs] == [
        ("rag@bm25", "rag@hybrid", "3")
    ]
    amortized = (report / "amortized_cost.md").read_text()
    assert "rag@bm25" in amortized and "rag@hybrid" in amortized
    html = (report / "report.html").read_text()
    assert 'data-strategy="rag@bm25"' in html and 'data-strategy="rag@hybrid"' in html


def test_a_strategys_options_reach_its_variants_under_their_own():
    options = {"rag": {"top_k": 2, "retriever": "bm25"}, "rag@h": {"retriever": "hybrid"}}
    assert variant_options(["rag@b", "rag@h", "full_context"], options) == {
        "rag@b": {"top_k": 2, "retriever": "bm25"},
        "rag@h": {"top_k": 2, "retriever": "hybrid"},
    }
    assert variant_options(["rag", "rag@h"], options) == {  # rag runs too: its own stay
        "rag": options["rag"],
        "rag@h": {"top_k": 2, "retriever": "hybrid"},
    }
    config = RunConfig(benchmark="own", strategies=("rag@b", "rag@h"), strategy_options=options)
    assert config.strategies == ("rag@b", "rag@h") and config.strategy_options["rag@h"] == {
        "top_k": 2,
        "retriever": "hybrid",
    }
    assert STRATEGIES.get("rag@h") is STRATEGIES.get("rag") and "rag@h" in STRATEGIES
    assert base_strategy("memagent@small") == "memagent"


@pytest.mark.parametrize(
    ("strategies", "options", "error", "message"),
    [
        (("rag@",), {}, KeyError, "must be STRATEGY@LABEL"),
        (("rag@a.b",), {}, KeyError, "must be STRATEGY@LABEL"),
        (("@x",), {}, KeyError, "must be STRATEGY@LABEL"),
        (("nope@x",), {}, KeyError, "Unknown strategy 'nope'"),
        (("rag@a",), {"rag@b": {"top_k": 2}}, ValueError, "not being run: ['rag@b']"),
        (("rag@a",), {"rag@a": {"top_kk": 2}}, Exception, "top_kk"),
    ],
)
def test_bad_variants_and_their_options_fail_before_any_work(strategies, options, error, message):
    with pytest.raises(error) as caught:
        RunConfig(benchmark="own", strategies=strategies, strategy_options=options)
    assert message in str(caught.value)


def test_the_command_line_names_a_bad_variant_on_one_line(tmp_path, capsys):
    (tmp_path / "d.txt").write_text("text")
    (tmp_path / "q.csv").write_text("question\nWhat?\n")
    argv = [
        "run",
        "--corpus",
        str(tmp_path / "d.txt"),
        "--questions",
        str(tmp_path / "q.csv"),
        "--strategies",
        "rag@v1.2",
        "--out",
        str(tmp_path / "run"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "must be STRATEGY@LABEL" in err and "Traceback" not in err


def test_one_answer_refuses_a_variant_before_any_call(tmp_path, monkeypatch):
    """A variant's label names a column beside another of its strategy's in a run; one answer has
    no such column and no variant options, so ``rag@x`` there is refused, not run as ``rag``."""
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    corpus = Corpus.from_texts(DOCS.values(), DOCS)
    with RecordingServer(reply) as server:
        llm = make_chat_model("openai:rec", base_url=server.url, api_key="k")
        for call in (
            lambda: answer(corpus, "Who keeps the lighthouse?", strategy="rag@x", llm=llm),
            lambda: answer_many(corpus, ["Who?"], strategy="rag@x", llm=llm),
            lambda: estimate(corpus, "Who?", strategy="rag@x", llm=llm),
            lambda: Workspace(corpus, llm=llm, strategy="rag@x"),
            lambda: Workspace(corpus, llm=llm).answer("Who?", strategy="rag@x"),
            lambda: Workspace(corpus, llm=llm).compare("Who?", strategies=["rag", "rag@x"]),
            lambda: as_runnable(corpus, strategy="rag@x", llm=llm),
        ):
            with pytest.raises(ValueError, match=r"'rag@x' is a variant.*longctx run.*'rag'"):
                call()
        assert server.requests == [] and server.embedding_requests == []


def test_longctx_answer_refuses_a_variant_on_one_line(tmp_path, capsys):
    (tmp_path / "d.txt").write_text("text")
    argv = [
        "answer",
        "--corpus",
        str(tmp_path / "d.txt"),
        "--question",
        "What?",
        "--strategy",
        "rag@x",
        "--llm",
        "openai:m",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "'rag@x' is a variant" in err and "longctx run" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
