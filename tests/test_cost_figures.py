"""Cost figures that say what they measure (#46 item 13): price tables that refuse what they cannot
read, cost limits that bind or are refused, the unit of a cost difference, a replayed answer's cost,
break-even points the table reproduces, and the workspace's price in its budgets."""

from __future__ import annotations

import csv
import json
import math

import pytest

from longctx.experiments.cli.app import main
from longctx.experiments.cli.options import budget_from_args
from longctx.experiments.cli.parser import build_parser
from longctx.experiments.planning.amortized_costs import (
    Amortization,
    amortization,
    amortized_rows,
    crossing_text,
    markdown_lines,
    shown_digits,
)
from longctx.experiments.planning.break_even import CostLine, break_evens, crossing_interval
from longctx.experiments.planning.prices import PRICE_KEYS, PriceTableError, parse_prices
from longctx.experiments.reports import comparison
from longctx.experiments.reports.html_report.amortized import amortized_section
from longctx.experiments.reports.html_report.winners import pick_winners
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
    code = main(
        [
            "answer",
            "--corpus",
            str(docs_folder),
            "--question",
            "code of site 1?",
            "--llm",
            "openai:gpt-4o-mini",
            "--prices",
            prices,
            "--max-calls",
            "3",
        ]
    )
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
        else [
            "--corpus",
            str(docs_folder),
            "--questions",
            str(questions),
            "--strategies",
            "rag",
            "--out",
            str(tmp_path / "out"),
        ]
    )
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
    # memagent over 3 documents at 300-token chunks sends a call per chunk and a final one; a price
    # of 1 USD per prompt token puts a 1-USD limit below the first call's prompt: refused before
    # any call
    prices = _prices(tmp_path, {"smollm2": {"prompt": 1e6, "completion": 0.0}})
    with RecordingServer(lambda request: "1001") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(
            [
                "answer",
                "--corpus",
                str(docs_folder),
                "--question",
                "code of site 1?",
                "--llm",
                "openai:smollm2",
                "--max-cost",
                "1",
                "--prices",
                prices,
            ]
        )
        refused, sent = capsys.readouterr().err, len(server.requests)
        paid = main(
            [
                "answer",
                "--corpus",
                str(docs_folder),
                "--question",
                "code of site 1?",
                "--llm",
                "openai:smollm2",
                "--max-cost",
                "1e9",
                "--prices",
                prices,
            ]
        )
    assert code == 2 and sent == 0 and "Budget exceeded before any call" in refused
    out = capsys.readouterr().out
    assert paid == 0 and len(server.requests) == 1
    assert (
        "Cost: $" in out
        and "at 'smollm2' (user price, USD per 1M tokens: 1e+06 prompt, 0 completion)" in out
    )


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


# -- break-even points -------------------------------------------------------------------------


def test_the_tables_own_figures_reproduce_every_break_even_point():
    # two per-question costs a few millionths of a dollar apart: at 6 decimals their gap is
    # 0.000009, not 0.00000889, and the table's own figures would put the crossing at 356 questions
    # instead of 360
    lines = [CostLine("raptor", 0.0032, 0.00001249), CostLine("memagent", 0.0, 0.00002138)]
    a = Amortization("USD", lines, break_evens(lines))
    (crossing,) = a.crossings()
    assert (crossing.kind, crossing.questions) == ("from", 360)
    rows = amortized_rows(a)
    shown = [CostLine(r["strategy"], r["index_per_corpus"], r["per_question"]) for r in rows]
    assert break_evens(shown) == a.break_evens and shown_digits(a) > 6
    assert crossing_text(a, crossing) == (
        "raptor is cheaper than memagent from 360 questions on (the lines cross at n = 359.96)"
    )
    page = amortized_section(a)
    assert f"${rows[0]['per_question']:,.{shown_digits(a)}f}" in page and "n = 359.96" in page


def test_a_small_gap_over_few_answers_is_given_with_the_range_of_its_crossing():
    # 8 questions over one corpus each: structured builds once (1,000 tokens), then about 97 tokens
    # a question against full_context's 100: a 3% gap, well inside the answers' spread
    def rows(tokens: list[int], index: int) -> list[dict]:
        return [
            {
                "status": "ok",
                "sample_id": f"q{i}",
                "corpus": "c",
                "usage": {
                    "prompt_tokens": t + (index if i == 0 else 0),
                    "completion_tokens": 0,
                    "index_llm_calls": int(i == 0 and index > 0),
                    "index_prompt_tokens": index if i == 0 else 0,
                },
            }
            for i, t in enumerate(tokens)
        ]

    per_strategy = {
        "structured": {"rows": rows([87, 107, 92, 102, 97, 97, 82, 112], 1_000)},
        "full_context": {"rows": rows([90, 110, 95, 105, 100, 100, 85, 115], 0)},
    }
    a = amortization(per_strategy, {})
    assert a is not None and a.unit == "tokens"
    (crossing,) = a.crossings()
    assert (crossing.questions, crossing.crossing) == (334, pytest.approx(1_000 / 3))
    low, high = crossing_interval(*a.lines)
    assert 0 < low < crossing.crossing and high == math.inf  # the gap's interval reaches 0
    assert crossing_text(a, crossing).endswith(
        f"(the lines cross at n = 333.33; 95% interval {low:,.2f} to never: the per-question gap, "
        "3.0% of full_context's, is a mean over 8 and 8 answers)"
    )
    assert "95% interval" in "\n".join(markdown_lines(a, amortized_rows(a)))


def _cost_usd(out) -> float:
    """The USD per question of the run's one strategy, in its report's amortized table."""
    with open(out / "report" / "amortized_cost.csv", encoding="utf-8") as f:
        row = next(csv.DictReader(f))
    assert row["unit"] == "USD"
    return float(row["per_question"])


def test_a_runs_price_table_is_kept_in_its_folder_for_its_report(
    docs_folder, tmp_path, capsys, monkeypatch, isolated_cache
):
    """``run --prices`` keeps the table beside the manifest; ``report`` of that run prices at it
    without ``--prices`` (the loopback server is local: free at the built-in table), and an
    explicit ``--prices`` wins; the report names the table it used."""
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "code of site 1?", "answer": "1001"}) + "\n")
    given = tmp_path / "given" / "prices.json"
    given.parent.mkdir()
    given.write_text(json.dumps({"smollm2": {"prompt": 1e6, "completion": 0}}))
    out = tmp_path / "out"
    with RecordingServer(lambda request: "1001") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        assert (
            main(
                [
                    "run",
                    "--corpus",
                    str(docs_folder),
                    "--questions",
                    str(questions),
                    "--strategies",
                    "rag",
                    "--llm",
                    "openai:smollm2",
                    "--out",
                    str(out),
                    "--prices",
                    str(given),
                    "--yes",
                ]
            )
            == 0
        )
    given.unlink()  # the report reads the run's own copy
    assert json.loads((out / "prices.json").read_text()) == {
        "smollm2": {"prompt": 1e6, "completion": 0.0}
    }
    capsys.readouterr()
    assert main(["report", str(out), "--no-plots", "--no-html"]) == 0
    assert f"Prices: the table the run was given ({out / 'prices.json'})" in capsys.readouterr().out
    kept = _cost_usd(out)
    assert kept > 0  # each prompt token at 1 USD, not a local model's 0
    other = _prices(tmp_path, {"smollm2": {"prompt": 2e6, "completion": 0}})
    assert main(["report", str(out), "--no-plots", "--no-html", "--prices", other]) == 0
    assert f"Prices: {other} (--prices)" in capsys.readouterr().out
    assert _cost_usd(out) == pytest.approx(2 * kept)
    (out / "prices.json").unlink()  # a run given no table: the built-in one, said so
    assert main(["report", str(out), "--no-plots", "--no-html"]) == 0
    assert "Prices: built-in list prices as of" in capsys.readouterr().out
