"""The report's cost per question over one corpus: from a real run of structured (whose extraction
is index time) beside full context on a scripted model, ``amortized_cost.md``, ``report.html`` and
the plot give each strategy's line and the question count from which structured is the
cheaper one."""

from __future__ import annotations

from longctx import Question
from longctx.experiments.benchmarks import Sample
from longctx.experiments.planning.amortized_costs import amortization
from longctx.experiments.planning.break_even import CostLine
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.retrieval import Corpus
from tests.test_structured import DOCS, SCHEMA, scripted

#: Enough text beside each report's facts that reading the corpus again per question costs more than
#: structured's SQL and answer.
FILLER = " The board met and discussed the weather, the harbour and the canteen." * 60


def test_the_report_says_from_how_many_questions_structured_is_cheaper_than_full_context(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("LONGCTX_CACHE_DIR", str(tmp_path / "cache"))
    corpus = Corpus.from_texts([text + FILLER for text in DOCS.values()], titles=list(DOCS))
    samples = [
        Sample(
            sample_id=f"s{i}",
            benchmark="synth",
            dataset="finance",
            corpus=corpus,
            question=Question(text=f"Revenue of each company ({i})?"),
            answers=("1250",),
            metadata={"question": f"Revenue of each company ({i})?", "difficulty": "easy"},
        )
        for i in range(3)
    ]
    cfg = RunConfig(
        benchmark="synth",
        strategies=("structured", "full_context"),
        llm_cache=False,
        concurrency=1,
        strategy_options={"structured": {"schema": SCHEMA}},
    )
    run_experiment(
        cfg,
        tmp_path / "run",
        llm=scripted(["SELECT company, revenue FROM facts ORDER BY company"] * 3),
        samples=samples,
        show_progress=False,
    )
    rows = read_rows(tmp_path / "run")
    built = [r for r in rows if r["usage"].get("index_llm_calls")]
    assert [r["strategy"] for r in built] == [
        "structured"
    ]  # one answer paid for the extraction; the others reused it

    report = build_report(tmp_path / "run", samples=samples)
    lines = {line.strategy: line for line in report["amortized"].lines}
    assert report["amortized"].unit == "tokens"  # the scripted model has no price
    index = sum(
        r["usage"]["index_prompt_tokens"] + r["usage"]["index_completion_tokens"] for r in built
    )
    assert lines["structured"].index == index > 0 and lines["full_context"].index == 0
    # the first whole number of questions at which structured costs less per question, by the
    # rows themselves
    first = next(
        n for n in range(1, 10_000) if lines["structured"].at(n) < lines["full_context"].at(n)
    )
    assert first > 1
    sentence = f"structured is cheaper than full_context from {first} questions on"
    folder = tmp_path / "run" / "report"
    md = (folder / "amortized_cost.md").read_text()
    assert (
        f"- {sentence} (the lines cross at n = " in md and "| full_context | up to " in md
    )  # full_context's row of the break-even matrix
    assert "| structured | tokens |" in md
    assert (
        (folder / "amortized_cost.csv")
        .read_text()
        .startswith("strategy,unit,index_per_corpus,per_question,at_1,")
    )
    page = (folder / "report.html").read_text()
    assert (
        'id="amortized"' in page
        and sentence in page
        and "Cost per question vs questions asked over one corpus" in page
    )
    assert (folder / "cost_per_question.png").stat().st_size > 0


def test_priced_rows_give_usd_lines_and_an_index_is_shared_over_the_corpora_that_built_one():
    def row(corpus: str, prompt: int, index: int) -> dict:
        return {
            "status": "ok",
            "sample_id": f"{corpus}{prompt}{index}",
            "corpus": corpus,
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": 0,
                "index_llm_calls": int(index > 0),
                "index_prompt_tokens": index,
            },
        }

    rows = [
        row("a", 1_100, 1_000),
        row("a", 100, 0),
        row("b", 1_100, 1_000),
        row("b", 100, 0),
    ]  # two corpora, each built once
    per_strategy = {"raptor": {"rows": rows}, "rag": {"rows": [row("a", 300, 0)]}}
    priced = {
        "raptor": {"total_usd": 2.5, "index_usd": 2.0},
        "rag": {"total_usd": 0.25, "index_usd": 0.0},
    }
    usd = amortization(per_strategy, priced)
    assert usd is not None and usd.unit == "USD"
    assert usd.lines == [CostLine("raptor", 1.0, 0.125), CostLine("rag", 0.0, 0.25)]
    assert [b.sentence() for b in usd.crossings()] == [
        "raptor is cheaper than rag from 9 questions on"
    ]  # 1.0 / 0.125 = 8: equal at 8
    unpriced = amortization(
        per_strategy, {"raptor": {"total_usd": None, "index_usd": None}, "rag": priced["rag"]}
    )
    assert unpriced is not None and unpriced.unit == "tokens"
    assert unpriced.lines == [CostLine("raptor", 1_000, 100), CostLine("rag", 0, 300)]
    assert amortization({"rag": {"rows": []}}, {}) is None
