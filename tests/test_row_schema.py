"""Rows that stay usable (issue #35, 14-16): a strategy's self-referencing or massively shared
value is written small, a non-text answer is a failed row, and a row that is strict JSON but
unusable (absurd or mistyped usage, a prediction that is not text) is refused where it is read,
naming its file and line, so the report builds and a rerun answers that pair again."""

import json
import logging
from dataclasses import dataclass
from typing import Any

import pytest

from longctx.agents.jsonsafe import CYCLE, MAX_VALUES
from longctx.experiments.reports.report import build_report
from longctx.experiments.runner import (
    RESULTS_FILE,
    RunConfig,
    latest_rows,
    read_rows,
    run_experiment,
)
from longctx.experiments.runner.row_schema import MAX_COUNT, row_problem
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.plugin.nodes import linear_graph
from longctx.graphs.plugin.registry import Strategy
from tests.scripted import ScriptedChatModel
from tests.test_runner import V2, config


@dataclass(frozen=True, kw_only=True)
class OddConfig(StrategyConfig):
    """No options."""


def odd_answers(state, runtime):
    """Per sample: steps holding a list that holds itself twice and 22 levels of shared sub-lists
    (four million leaves); an answer that is a mapping; a plain answer."""
    sample = state["question"].metadata.get("sample_id", "v2-1")
    if sample == "v2-1":
        loop: list = []
        loop += [loop, loop]
        shared: Any = "leaf"
        for _ in range(22):
            shared = [shared, shared]
        return {
            "answer": "A",
            "raw": "The correct answer is (A)",
            "steps": [{"node": "odd", "loop": loop}, {"node": "odd", "shared": shared}],
        }
    if sample == "v2-2":
        return {"answer": {"a": 1}, "raw": {"a": 1}}
    return {"answer": "C", "raw": "The correct answer is (C)"}


@pytest.fixture
def odd_strategy(monkeypatch):
    build = lambda config=None: linear_graph("odd", dict, ("odd", odd_answers))  # noqa: E731
    monkeypatch.setitem(
        STRATEGIES._entries, "odd", Strategy(name="odd", build_graph=build, config_cls=OddConfig)
    )
    return RunConfig(benchmark="longbench_v2", strategies=("odd",), data_path=V2, llm_cache=False)


@pytest.mark.timeout(120)
def test_self_referencing_and_shared_values_write_small_and_a_mapping_answer_fails_its_row(
    tmp_path, odd_strategy
):
    counts = run_experiment(odd_strategy, tmp_path, llm=ScriptedChatModel(), show_progress=False)
    assert counts["ok"] == 2 and counts["failed"] == 1
    rows = {r["sample_id"]: r for r in read_rows(tmp_path)}
    loop, shared = rows["v2-1"]["steps"]
    assert loop["loop"] == [CYCLE, CYCLE]
    text = json.dumps(shared["shared"])
    assert text.count('"leaf"') < MAX_VALUES and "more items]" in text
    assert (tmp_path / RESULTS_FILE).stat().st_size < 20 * MAX_VALUES  # not the 4 million leaves
    assert rows["v2-2"]["status"] == "failed" and rows["v2-2"]["error"].startswith(
        "ResultNotWritable: its prediction is a dict, not text"
    )
    build_report(tmp_path, plots=False, html=False)
    again = run_experiment(odd_strategy, tmp_path, llm=ScriptedChatModel(), show_progress=False)
    assert again["skipped"] == 2 and again["failed"] == 1  # the failed row is retried, not skipped


def _run(tmp_path):
    cfg = config(strategies=("rag", "full_context"))
    run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)"),
        show_progress=False,
    )
    return cfg


def _edit(tmp_path, number: int, edit) -> None:
    """Apply ``edit`` to the row on line ``number`` of the results file, as a hand edit or an old
    writer would leave it."""
    path = tmp_path / RESULTS_FILE
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[number - 1])
    edit(row)
    lines[number - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    "field,value,words",
    [
        ("prompt_tokens", 1e308, "usage.prompt_tokens is 1e+308, not a whole number"),
        ("llm_calls", "many", "usage.llm_calls is 'many', not a whole number"),
        ("completion_tokens", -3, "usage.completion_tokens is -3"),
        ("seconds", float("inf"), "usage.seconds is inf"),
    ],
)
def test_absurd_usage_is_refused_naming_file_and_line_and_the_report_builds(
    tmp_path, caplog, field, value, words
):
    cfg = _run(tmp_path)
    for number in (
        1,
        2,
        3,
        4,
        5,
    ):  # both strategies: 1e308 tokens summed to inf, whose tie was empty (IndexError)
        _edit(tmp_path, number, lambda row: row["usage"].__setitem__(field, value))
    with caplog.at_level(logging.WARNING):
        result = build_report(tmp_path, plots=False, html=False)
    path = tmp_path / RESULTS_FILE
    assert (
        f"{path}, line 1: {words}" in caplog.text
        and f"{path}, line 5: " in caplog.text
        and f"{path}, line 6" not in caplog.text
    )
    assert (
        sum(r["missing"] for r in result["summary"]) == 5
    )  # the refused rows' pairs are shown as not answered
    counts = run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)"),
        show_progress=False,
    )
    assert counts["ok"] == 5 and counts["skipped"] == 1  # the rerun answers them again
    build_report(tmp_path, plots=False, html=False)


def test_an_ok_row_whose_prediction_is_not_text_is_refused_and_answered_again(tmp_path, caplog):
    """A row the old runner wrote (status ok, prediction ``{"a": 1}``) made every report fail and
    every rerun skip it."""
    cfg = _run(tmp_path)
    _edit(tmp_path, 3, lambda row: row.update(prediction={"a": 1}))
    with caplog.at_level(logging.WARNING):
        assert len(latest_rows(read_rows(tmp_path))) == 5
    assert (
        f"{tmp_path / RESULTS_FILE}, line 3: prediction is a JSON object, not text" in caplog.text
    )
    build_report(tmp_path, plots=False, html=False)
    counts = run_experiment(
        cfg,
        tmp_path,
        llm=ScriptedChatModel(reply_fn=lambda p: "The correct answer is (A)"),
        show_progress=False,
    )
    assert counts["ok"] == 1 and counts["skipped"] == 5


def test_a_whole_last_line_that_is_not_a_usable_row_is_named_not_called_torn(tmp_path, caplog):
    _run(tmp_path)
    _edit(tmp_path, 6, lambda row: row["usage"].update(llm_calls=True))
    path = tmp_path / RESULTS_FILE
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    with caplog.at_level(logging.WARNING):
        assert len(read_rows(tmp_path)) == 5
    assert f"{path}, line 6: usage.llm_calls is True" in caplog.text and "torn" not in caplog.text


def _ok_row(**changes):
    row = {
        "sample_id": "q1",
        "strategy": "rag",
        "status": "ok",
        "corpus_tokens": 10,
        "prediction": "A",
        "seconds": 0.5,
        "usage": {"llm_calls": 1, "prompt_tokens": 10, "completion_tokens": 2, "seconds": 0.5},
    }
    return {**row, **changes}


@pytest.mark.parametrize(
    "row,problem",
    [
        (_ok_row(), None),
        (
            _ok_row(usage={"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0}, seconds=0),
            None,
        ),  # nothing spent is fine
        (_ok_row(corpus_tokens=MAX_COUNT - 1), None),
        (_ok_row(seconds=-1e-17), None),  # an answer's time less its time queued, rounded
        (_ok_row(seconds=-1.0), "seconds is -1.0, not a number of seconds"),
        (_ok_row(corpus_tokens=MAX_COUNT), "corpus_tokens is 1000000000000, not a whole number"),
        (_ok_row(corpus_tokens=-1), "corpus_tokens is -1"),
        (_ok_row(prediction=None), "prediction is null or missing, not text"),
        (_ok_row(answer=["A"]), "answer is a JSON array, not text"),
        (_ok_row(seconds="1.0"), "seconds is '1.0', not a number of seconds"),
        (
            _ok_row(usage={"llm_calls": 1, "prompt_tokens": 10}),
            "usage.completion_tokens is null or missing",
        ),
        (
            _ok_row(usage={"llm_calls": 1.5, "prompt_tokens": 10, "completion_tokens": 2}),
            "usage.llm_calls is 1.5",
        ),
        (
            {
                "sample_id": "q1",
                "strategy": "rag",
                "status": "failed",
                "corpus_tokens": 10,
                "error": "ValueError: x",
            },
            None,
        ),
        (
            {
                "sample_id": "q1",
                "strategy": "rag",
                "status": "failed",
                "corpus_tokens": 10,
                "error": {"x": 1},
            },
            "error is a JSON object, not text",
        ),
    ],
)
def test_row_problem_names_what_is_wrong(row, problem):
    found = row_problem(row)
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_a_long_string_held_many_times_is_redacted_once_and_written_within_the_row_limit(
    monkeypatch,
):
    import longctx.retrieval.redaction as redaction
    from longctx.agents.jsonsafe import MAX_TOTAL_CHARS
    from longctx.experiments.runner.results_file import row_line

    scanned = []
    real = redaction._redact
    monkeypatch.setattr(
        redaction,
        "_redact",
        lambda text, pattern: (
            scanned.append(len(text) if isinstance(text, str) else 0) or real(text, pattern)
        ),
    )
    cell = "y" * 1_000_000
    line, status = row_line(_ok_row(answer="A", steps=[{"node": "sql", "cells": [cell] * 100}]))
    assert status == "ok" and len(line) < MAX_TOTAL_CHARS + 10_000
    assert (
        scanned.count(len(cell)) == 1
    )  # not 100 times: 100 MB of scanning for one megabyte of text
