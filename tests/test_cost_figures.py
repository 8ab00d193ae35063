"""Cost figures that say what they measure (#46 item 13): price tables that refuse what they cannot
read, cost limits that bind or are refused, the unit of a cost difference, a replayed answer's cost,
break-even points the table reproduces, and the workspace's price in its budgets."""

from __future__ import annotations

import json

import pytest

from experiments import comparison
from experiments.cli import main
from experiments.cli_parser import build_parser
from experiments.command_options import budget_from_args
from experiments.html_report.winners import pick_winners
from experiments.prices import PRICE_KEYS, PriceTableError, parse_prices
from tests.recording_server import RecordingServer

DOCS = {
    "site0.txt": "Site 0 is in Oslo. Its vault code is 1000.",
    "site1.txt": "Site 1 is in Bergen. Its vault code is 1001.",
    "site2.txt": "Site 2 is in Tromso. Its vault code is 1002.",
}


@pytest.fixture
def docs_folder(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text)
    return folder


def _prices(tmp_path, table) -> str:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps(table))
    return str(path)


# -- price tables ------------------------------------------------------------------------------


def test_a_price_table_entry_with_an_unknown_key_is_refused_naming_the_known_keys():
    with pytest.raises(PriceTableError) as caught:
        parse_prices({"m": {"prompt": 1.0, "completion": 2.0, "cahced": 0.1}}, where="p.json")
    message = str(caught.value)
    assert "'cahced'" in message and "known keys: " + ", ".join(PRICE_KEYS) in message
    assert "\n" not in message
    assert parse_prices({"m": {"input": 1, "output": 2, "cached_input": 0.5}}) == {
        "m": (1.0, 2.0, 0.5)
    }


def test_cli_refuses_an_unknown_price_key_on_one_line(docs_folder, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://models.example.invalid/v1")  # never reached
    prices = _prices(tmp_path, {"gpt-4o-mini": {"prompt": 0.15, "complettion": 0.6}})
    code = main(["answer", "--corpus", str(docs_folder), "--question", "code of site 1?", "--llm", "openai:gpt-4o-mini",
                 "--prices", prices, "--max-calls", "3"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and "'complettion'" in err and "known keys" in err and err.count("\n") == 1


# -- cost limits -------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["answer", "run"])
def test_max_cost_on_a_free_local_server_is_refused_not_ignored(
    docs_folder, tmp_path, capsys, monkeypatch, command
):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # never reached: refused first
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "code of site 1?", "answer": "1001"}) + "\n")
    where = (
        ["--corpus", str(docs_folder), "--question", "code of site 1?"]
        if command == "answer"
        else ["--corpus", str(docs_folder), "--questions", str(questions), "--strategies", "rag", "--out", str(tmp_path / "out")]
    )  # fmt: skip
    code = main([command, *where, "--llm", "openai:smollm2", "--max-cost", "0.01"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--max-cost 0.01 would bind nothing: 'smollm2' is a local model (free)" in err
    assert "--prices FILE" in err


@pytest.mark.parametrize("command", ["answer", "run"])
def test_prices_give_max_cost_the_price_of_a_model_the_table_lacks(tmp_path, monkeypatch, command):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    prices = _prices(tmp_path, {"smollm2": {"prompt": 2.0, "completion": 8.0, "cached": 0.5}})
    where = (
        ["--corpus", "x", "--question", "q"]
        if command == "answer"
        else ["--corpus", "x", "--questions", "q.jsonl", "--strategies", "rag", "--out", "o"]
    )
    args = build_parser().parse_args(
        [command, *where, "--llm", "openai:smollm2", "--max-cost", "0.5", "--prices", prices]
    )
    budget, _ = budget_from_args(args, "openai:smollm2")
    assert budget is not None and budget.max_cost_usd == 0.5
    assert (budget.price.prompt, budget.price.completion, budget.price.cached) == (2.0, 8.0, 0.5)


def test_answer_stops_at_max_cost_priced_by_prices_on_a_loopback_server(
    docs_folder, tmp_path, capsys, monkeypatch, isolated_cache
):
    # memagent over 3 documents at 300-token chunks sends a call per chunk and a final one; a price of
    # 1 USD per prompt token puts a 1-USD limit below the first call's prompt: refused before any call
    prices = _prices(tmp_path, {"smollm2": {"prompt": 1e6, "completion": 0.0}})
    with RecordingServer(lambda request: "1001") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(["answer", "--corpus", str(docs_folder), "--question", "code of site 1?", "--llm", "openai:smollm2",
                     "--max-cost", "1", "--prices", prices])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and server.requests == [] and "Budget exceeded before any call" in err


# -- the unit of a difference in cost ----------------------------------------------------------


def _rows(values: dict[str, list[float]], key: str) -> tuple[list[dict], dict]:
    rows = [{"strategy": s, "score": 50.0, key: sum(v) / len(v)} for s, v in values.items()]
    per_question = {key: {s: {f"q{i}": x for i, x in enumerate(v)} for s, v in values.items()}}
    return rows, per_question


def test_costs_that_do_not_vary_are_said_so_not_sized_as_score_points():
    rows, per_question = _rows({"rag": [0.0] * 8, "full_context": [0.0] * 8}, "cost_usd")
    (cheapest,) = [w for w in pick_winners(rows, per_question) if w["metric"] == "cost_usd"]
    assert cheapest["strategies"] == [] and cheapest["detectable"] is None
    assert "detect" not in cheapest["note"]
    assert (
        "every strategy has the same value (0 USD) on every one of the 8 questions"
        in cheapest["note"]
    )


def test_a_cost_of_zero_or_one_is_no_right_or_wrong_answer():
    # 0/1 USD per question looks like 0/1 scores: McNemar's test and its 0-100 scale do not apply
    a, b = [1.0, 0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    (pair,) = comparison.pairwise(
        {"a": dict(enumerate(a)), "b": dict(enumerate(b))}, metric="cost_usd"
    )
    assert pair["test"].startswith("sign-flip")
    assert pair["detectable_difference"] is None or pair["detectable_difference"] <= 1.0
    (scored,) = comparison.pairwise({"a": dict(enumerate(a)), "b": dict(enumerate(b))})
    assert scored["test"] == "mcnemar-exact"  # scores of 0/1 are right or wrong answers
