"""Inject once, ask many: a run groups a context's questions per strategy, and the report splits
cost per context and per question."""

from __future__ import annotations

from pathlib import Path

import pytest

from longctx.experiments.benchmarks import load_benchmark
from longctx.experiments.planning.context_costs import context_costs, per_context_table
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import RunConfig, read_rows, run_experiment
from longctx.experiments.runner.units import work_units
from longctx.graphs.runtime.run_setup import RunSetup
from tests.scripted import ScriptedChatModel

DATA = Path(__file__).parent / "fixtures" / "benchmarks" / "memoryagentbench"
SUBSETS = ("ruler_qa1_197K", "factconsolidation_sh_6k")  # two contexts, three questions each


@pytest.fixture(scope="module")
def samples():
    return load_benchmark("memoryagentbench", DATA, datasets=list(SUBSETS))


def test_work_units_group_every_strategy_by_context_only_when_asked(samples):
    todo = [(s, name) for s in samples for name in ("rag", "full_context", "memagent")]
    default = work_units(todo)
    assert sorted(len(g) for n, g in default if n == "rag") == [1] * 6  # a unit per question
    assert sorted(len(g) for n, g in default if n == "memagent") == [
        3,
        3,
    ]  # batched: one pass per context, as before
    grouped = work_units(todo, inject_once=True)
    assert sorted((n, len(g)) for n, g in grouped) == sorted(
        [(n, 3) for n in ("rag", "full_context", "memagent") for _ in range(2)]
    )
    assert all(len({s.corpus.fingerprint for s in g}) == 1 for _, g in grouped)


@pytest.mark.parametrize(("inject_once", "builds"), [(False, 6), (True, 2)])
def test_rag_builds_its_index_once_per_context_when_injected_once(
    tmp_path, monkeypatch, inject_once, builds
):
    calls: list[str] = []
    original = RunSetup.build_index

    def counted(self):  # the real build, counted
        calls.append(self.corpus.fingerprint)
        return original(self)

    monkeypatch.setattr(RunSetup, "build_index", counted)
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Town-78")
    cfg = RunConfig(
        benchmark="memoryagentbench",
        strategies=("rag",),
        data_path=str(DATA),
        datasets=SUBSETS,
        llm_cache=False,
        concurrency=1,
        inject_once=inject_once,
    )
    run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    assert len(calls) == builds and len(set(calls)) == 2
    rows = read_rows(tmp_path)
    assert (
        len(rows) == 6
        and {r["status"] for r in rows} == {"ok"}
        and len({r["corpus"] for r in rows}) == 2
    )


def test_report_shows_cost_per_context_and_per_question(tmp_path):
    llm = ScriptedChatModel(reply_fn=lambda prompt: "Answer: Town-78")
    cfg = RunConfig(
        benchmark="memoryagentbench",
        strategies=("rag", "full_context"),
        data_path=str(DATA),
        datasets=SUBSETS,
        llm_cache=False,
        inject_once=True,
    )
    run_experiment(cfg, tmp_path, llm=llm, show_progress=False)
    result = build_report(tmp_path, plots=False, html=False)
    table = {r["strategy"]: r for r in result["per_context"]}
    assert set(table) == {"rag", "full_context"}
    assert {
        (r["contexts"], r["questions"], r["questions_per_context"]) for r in table.values()
    } == {(2, 6, 3.0)}
    assert (
        table["rag"]["index_seconds_per_context"] > 0
        and table["full_context"]["index_seconds_per_context"] == 0
    )
    assert table["rag"]["llm_calls_per_question"] == 1.0
    assert (tmp_path / "report" / "per_context.md").is_file()


def test_cost_split_arithmetic_and_the_shapes_without_a_table():
    rows = [
        {
            "status": "ok",
            "corpus": c,
            "seconds": 3.0,
            "usage": {"index_seconds": 2.0, "llm_calls": 1, "prompt_tokens": 10},
        }
        for c in "aab"
    ]
    rows.append({"status": "failed", "corpus": "b", "seconds": 9.0})
    cost = context_costs("rag", rows)
    assert cost is not None
    assert (
        cost["contexts"],
        cost["questions"],
        cost["index_seconds_per_context"],
        cost["seconds_per_question"],
        cost["seconds_per_question_all_in"],
    ) == (2, 3, 3.0, 1.0, 3.0)
    assert context_costs("rag", []) is None
    one_each = {"rag": {"rows": [{"status": "ok", "corpus": c, "seconds": 1.0} for c in "abc"]}}
    assert per_context_table(one_each) == []  # a question per context: nothing shared, no table
    assert per_context_table({}) == []
