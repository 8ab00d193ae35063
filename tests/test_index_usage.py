"""Index-time usage is first-class: the answer that paid for an index-time LLM pass carries its
calls and tokens in ``Usage.index_*``, answers that reused it carry zero, and rows, the summary
and the priced report keep them apart from each question's own."""

from __future__ import annotations

from types import SimpleNamespace

from longctx import answer_many
from longctx.experiments.planning.prices import Price, row_index_cost
from longctx.experiments.reports.html_report import strategy_costs, summary_table
from longctx.experiments.reports.summary import summary_row
from longctx.experiments.runner.row_schema import row_problem
from longctx.experiments.runner.rows import ok_row
from longctx.graphs.metering.usage import UsageTracker, index_time
from longctx.retrieval.contract import Usage
from tests.scripted import ScriptedChatModel
from tests.test_structured import SCHEMA, scripted, small_corpus


def test_structured_extraction_is_index_time_on_the_first_answer_only(tmp_path):
    llm = scripted(["SELECT company, revenue FROM facts ORDER BY company"] * 2)
    first, second = answer_many(
        small_corpus(),
        ["Revenue of each company?", "And again: revenue of each company?"],
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=1,
    )
    extractions = [c for c in llm.calls if c["prompt"].startswith("Extract rows")]
    assert len(extractions) == 3  # three documents, read once
    u = first.usage
    assert u.index_llm_calls == 3
    assert u.index_prompt_tokens == sum(len(c["prompt"].split()) for c in extractions) > 0
    assert 0 < u.index_completion_tokens < u.completion_tokens
    assert (
        u.llm_calls == 3 + 2
    )  # the index part is part of the answer's calls (SQL, final answer besides)
    assert (
        second.usage.index_llm_calls,
        second.usage.index_prompt_tokens,
        second.usage.llm_calls,
    ) == (0, 0, 2)


def test_index_usage_reaches_rows_summary_and_priced_report(tmp_path):
    llm = scripted(["SELECT company, revenue FROM facts ORDER BY company"] * 2)
    answers = answer_many(
        small_corpus(),
        ["Revenue of each company?", "And again: revenue of each company?"],
        strategy="structured",
        llm=llm,
        cache_dir=tmp_path,
        schema=SCHEMA,
        concurrency=1,
    )
    base = {
        "sample_id": "s",
        "benchmark": "own",
        "dataset": "own",
        "strategy": "structured",
        "corpus_tokens": 10,
        "corpus": "f",
        "metadata": {},
    }
    rows = [ok_row({**base, "sample_id": f"s{i}"}, a) for i, a in enumerate(answers)]
    assert all(row_problem(r) is None for r in rows)
    assert [r["usage"]["index_llm_calls"] for r in rows] == [3, 0]
    summary = summary_row(
        "own",
        "structured",
        {"rows": rows, "official": {}},
        {r["sample_id"]: SimpleNamespace(metadata={}) for r in rows},
    )
    assert (
        summary["index_llm_calls"] == 1.5
        and summary["index_prompt_tokens"] == rows[0]["usage"]["index_prompt_tokens"] / 2
    )
    price = Price(
        prompt=1_000_000.0, completion=0.0, source="user", key="m"
    )  # 1 USD a prompt token
    assert row_index_cost(rows[0], price) == rows[0]["usage"]["index_prompt_tokens"]
    assert row_index_cost(rows[1], price) == 0
    costs = strategy_costs(
        {"structured": {"rows": rows}}, {}, {rows[0]["config"]["llm"]: (1_000_000.0, 0.0)}
    )
    table = summary_table([summary], costs)
    assert table[0]["index_usd"] == rows[0]["usage"]["index_prompt_tokens"]
    assert (
        table[0]["total_usd"]
        == sum(r["usage"]["prompt_tokens"] for r in rows)
        > table[0]["index_usd"]
    )


def test_a_row_with_a_corrupt_index_count_is_refused():
    row = {
        "sample_id": "a",
        "strategy": "s",
        "status": "ok",
        "corpus_tokens": 1,
        "prediction": "x",
        "seconds": 0.1,
        "usage": {
            "llm_calls": 1,
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "index_llm_calls": -1,
        },
    }
    assert "index_llm_calls" in (row_problem(row) or "")


def test_tracker_counts_calls_inside_index_time_apart_and_sums_reported_usage():
    llm = ScriptedChatModel(reply_fn=lambda p: "two words")
    tracker = UsageTracker()
    llm.invoke("question time", config={"callbacks": [tracker]})
    with index_time():
        llm.invoke("index time call", config={"callbacks": [tracker]})
    u = tracker.usage
    assert (u.llm_calls, u.index_llm_calls, u.index_prompt_tokens, u.index_completion_tokens) == (
        2,
        1,
        3,
        2,
    )
    tracker.on_custom_event(
        "longctx.usage",
        Usage(llm_calls=4, prompt_tokens=40, index_llm_calls=4, index_prompt_tokens=40).to_dict(),
        run_id=None,
    )  # type: ignore[arg-type]
    assert (
        tracker.usage.llm_calls,
        tracker.usage.index_llm_calls,
        tracker.usage.index_prompt_tokens,
    ) == (6, 5, 43)
