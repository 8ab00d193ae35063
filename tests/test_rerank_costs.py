"""Rerank calls as a cost (issue 39): the plan and ``estimate`` count them, budgets count and stop
them as model calls (checked at the local rerank server), and the report shows them beside the
chat calls."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from longctx import Budget, BudgetExceeded, aanswer, answer, estimate
from longctx.graphs.metering.budget import BudgetReached
from longctx.graphs.metering.budget_guard import RERANK_END_EVENT, RERANK_EVENT, BudgetGuard
from tests.registries import retrieving_strategies
from tests.rerank_server import RerankServer, token_count
from tests.scripted import ScriptedChatModel
from tests.test_rerank import QUESTION, corpus, server_options

FOLLOW_UP = "Follow up: Who keeps the harbour lighthouse?\n"


@pytest.mark.parametrize("interface", ["sync", "async"])
def test_a_budget_stops_a_rerank_call_before_its_request(interface):
    llm = ScriptedChatModel(replies=[FOLLOW_UP, "So the final answer is: the keeper\n"])
    with RerankServer() as server:
        # self_ask: rerank the question's candidates (call 1), ask (call 2, a follow-up), rerank the
        # follow-up's: call 3, refused
        options = {
            "strategy": "self_ask",
            "llm": llm,
            "top_k": 2,
            "rerank": "server",
            "rerank_options": server_options(server),
            "budget": Budget(max_llm_calls=2),
        }
        result = (
            answer(corpus(), QUESTION, **options)
            if interface == "sync"
            else asyncio.run(aanswer(corpus(), QUESTION, **options))
        )
        sent = list(server.requests)
    assert result.stopped == "budget" and "2 calls" in result.steps[-1]["reason"]
    assert (
        len(sent) == 1 and sent[0]["query"] == QUESTION
    )  # the follow-up's rerank request was never sent
    assert len(server.requests) == 1  # nor after the answer returned
    assert (result.usage.rerank_calls, result.usage.llm_calls) == (1, 1)


def test_rerank_tokens_count_against_the_token_budget():
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    with RerankServer() as server:
        options = {
            "strategy": "rag",
            "llm": llm,
            "top_k": 2,
            "rerank": "server",
            "rerank_options": server_options(server),
        }
        plan = estimate(corpus(), QUESTION, **options)
        assert plan.rerank is not None and plan.rerank.tokens > 0
        # the chat call alone fits, not with the rerank call's tokens: refused before any request
        with pytest.raises(
            BudgetExceeded,
            match=(
                rf"~{plan.prompt_tokens + plan.rerank.tokens:,} prompt tokens > "
                rf"{plan.prompt_tokens:,}"
            ),
        ):
            answer(
                corpus(), QUESTION, budget=Budget(max_prompt_tokens=plan.prompt_tokens), **options
            )
    assert server.requests == [] and llm.calls == []


@pytest.mark.parametrize("limit", ["tokens", "cost"])
def test_the_guard_reserves_a_rerank_calls_tokens_and_their_cost_at_the_rerankers_price(limit):
    words = {
        "query": "who keeps it",
        "documents": ["the keeper keeps the lamp", "a bakery"],
    }  # 3 + 5, 3 + 2 words: 13 tokens
    budget = (
        Budget(max_prompt_tokens=20)
        if limit == "tokens"
        else Budget(max_cost_usd=20.0, price=(0.0, 0.0), rerank_price=(1e6, 0.0))
    )
    guard = BudgetGuard(budget, count=lambda text: len(text.split()))
    guard.on_custom_event(RERANK_EVENT, words, run_id=uuid4())
    assert (guard.calls, guard.rerank_calls, guard.rerank_tokens, guard.prompt_tokens) == (
        1,
        1,
        13,
        0,
    )
    with pytest.raises(
        BudgetReached,
        match="20 prompt tokens" if limit == "tokens" else r"\$20.00 \(\$13.0000 spent\)",
    ):
        guard.on_custom_event(RERANK_EVENT, words, run_id=uuid4())
    guard.on_custom_event("another event", words, run_id=uuid4())  # not a rerank call: not counted
    assert guard.calls == 1


def test_the_plan_counts_rerank_calls_documents_and_tokens():
    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    plain = estimate(corpus(), QUESTION, strategy="rag", llm=llm, top_k=2)
    plan = estimate(
        corpus(),
        QUESTION,
        strategy="rag",
        llm=llm,
        top_k=2,
        rerank="server",
        rerank_options={"base_url": "http://127.0.0.1:9/v1"},
        rerank_candidates=4,
    )
    assert plain.rerank is None and (plan.calls, plan.prompt_tokens) == (
        plain.calls,
        plain.prompt_tokens,
    )
    assert plan.rerank is not None and (plan.rerank.calls, plan.rerank.max_calls) == (1, 1)
    assert (
        plan.rerank.documents == plan.rerank.max_documents == 4
    )  # rerank_candidates of the corpus's 6 chunks
    assert plan.rerank.tokens > 0 and "1 rerank call (4 documents" in plan.describe()
    with pytest.raises(BudgetExceeded, match=r"2 calls \(1 of them rerank calls\) > 1"):
        answer(
            corpus(),
            QUESTION,
            strategy="rag",
            llm=llm,
            top_k=2,
            rerank="server",
            rerank_options={"base_url": "http://127.0.0.1:9/v1"},
            budget=Budget(max_llm_calls=1),
        )
    assert llm.calls == []


def test_the_run_plan_prints_rerank_calls_beside_the_model_calls():
    from longctx.agents.run_plan import describe_plan, plan_for
    from longctx.graphs.rag import RagConfig

    llm = ScriptedChatModel(reply_fn=lambda prompt: "x")
    shape = [(corpus().num_tokens, len(corpus()), 3)]  # 3 questions over the test corpus
    reranked = RagConfig(
        top_k=2,
        rerank="server",
        rerank_options={"base_url": "http://127.0.0.1:9/v1"},
        rerank_candidates=4,
    )
    (plan,), _ = plan_for({"rag": reranked}, shape, llm, calibrate=False)
    (plain,), _ = plan_for({"rag": RagConfig(top_k=2)}, shape, llm, calibrate=False)
    assert (
        (plan.calls, plan.prompt_tokens)
        == (plain.calls, plain.prompt_tokens)
        == (3, plain.prompt_tokens)
    )
    assert (plan.rerank_calls, plan.rerank_documents, plain.rerank_calls) == (
        3,
        12,
        0,
    ) and plan.rerank_tokens > 0
    assert "~3 rerank calls (~12 documents" in describe_plan([plan], "scripted", None)
    assert "rerank" not in describe_plan([plain], "scripted", None)


def test_max_cost_prices_the_reranker_from_the_table_and_refuses_an_unpriced_hosted_one():
    from longctx.experiments.planning.prices import rerank_price

    hosted = {
        "rerank": "server",
        "rerank_options": {"model": "rerank-v3.5", "base_url": "https://rerank.example.com/v1"},
    }
    local = {
        "rerank": "server",
        "rerank_options": {"model": "bge", "base_url": "http://127.0.0.1:8012/v1"},
    }
    assert rerank_price([hosted], {"rerank-v3.5": (0.05, 0.0)}).prompt == 0.05
    assert (
        rerank_price([local, {"rerank": "cross-encoder", "rerank_options": {"model": "/m"}}, {}])
        is None
    )  # local: free
    with pytest.raises(
        ValueError, match="--max-cost needs the price of the reranker 'rerank-v3.5'"
    ):
        rerank_price([hosted])


def test_the_report_shows_rerank_calls_tokens_and_their_cost_beside_the_model_calls(tmp_path):
    import json

    from longctx.experiments.reports.report import build_report
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment
    from tests.test_rerank import DOCS

    data = tmp_path / "longbench"
    data.mkdir()
    record = {
        "input": QUESTION,
        "context": "\n".join(DOCS),
        "answers": ["the keeper"],
        "length": 80,
        "dataset": "hotpotqa",
        "language": "en",
        "all_classes": None,
        "_id": "q0",
    }
    (data / "hotpotqa.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    with RerankServer() as server:
        options = {
            "rag": {"rerank": "server", "rerank_options": server_options(server), "top_k": 2}
        }
        cfg = RunConfig(
            benchmark="longbench",
            strategies=("rag", "full_context"),
            data_path=str(data),
            datasets=("hotpotqa",),
            llm_cache=False,
            strategy_options=options,
        )
        run_experiment(
            cfg,
            tmp_path / "run",
            llm=ScriptedChatModel(reply_fn=lambda prompt: "the keeper"),
            show_progress=False,
        )
    tokens = next(r for r in read_rows(tmp_path / "run") if r["strategy"] == "rag")["usage"][
        "rerank_tokens"
    ]
    priced = build_report(
        tmp_path / "run",
        plots=False,
        prices={"bge-reranker-v2-m3": {"prompt": 2.0, "completion": 0.0}},
    )
    rows = {r["strategy"]: r for r in priced["summary"]}
    assert (
        rows["rag"]["rerank_calls"],
        rows["rag"]["rerank_tokens"],
        rows["rag"]["rerank_usd"],
    ) == (1, tokens, round(tokens * 2.0 / 1e6, 8))
    assert "rerank_calls" not in rows["full_context"]  # it reranks nothing
    summary_md = (tmp_path / "run" / "report" / "summary.md").read_text()
    header = summary_md.splitlines()[0].split(" | ")
    assert {"rerank_calls", "rerank_tokens", "rerank_usd"} <= set(header)
    html = (tmp_path / "run" / "report" / "report.html").read_text()
    assert all(f"<th>{c}</th>" in html for c in ("rerank_calls", "rerank_tokens", "rerank_usd"))
    assert f"1 rerank calls, {tokens} tokens" in html  # the drill-down's usage line
    free = build_report(
        tmp_path / "run", plots=False
    )  # the reranker on loopback: free, no cost column
    assert (
        "rerank_usd" not in {k for r in free["summary"] for k in r}
        and free["summary"][0]["rerank_calls"] == 1
    )


@pytest.mark.parametrize("strategy", retrieving_strategies())
def test_the_rerank_calls_a_run_sends_lie_within_its_plan(strategy):
    from tests.test_cost_bounds_hold import QUESTION as ASKED
    from tests.test_cost_bounds_hold import examples, model

    llm = model(strategy)
    with RerankServer() as server:
        options = {
            "strategy": strategy,
            "llm": llm,
            "rerank": "server",
            "rerank_options": server_options(server),
            "rerank_candidates": 5,
            **({"judge_mode": "prefilter"} if strategy == "pai" else {}),
        }
        plan = estimate(examples(), ASKED, **options)
        result = answer(examples(), ASKED, show_progress=False, **options)
    assert (
        plan.rerank is not None
        and plan.rerank.calls
        <= len(server.requests)
        == result.usage.rerank_calls
        <= plan.rerank.max_calls
    )
    assert (
        plan.rerank.documents
        <= sum(len(r["documents"]) for r in server.requests)
        <= plan.rerank.max_documents
    )


@pytest.mark.parametrize(
    ("reported", "spent"),
    [
        (20, 20.0),  # the reranker read more tokens than counted: settled up
        (5, 5.0),  # fewer: settled down
        (0, 13.0),  # none reported: the reservation stands
    ],
)
def test_a_rerank_calls_cost_is_settled_at_the_tokens_its_reranker_reported(reported, spent):
    words = {
        "query": "who keeps it",
        "documents": ["the keeper keeps the lamp", "a bakery"],
        "call": "c1",
    }
    guard = BudgetGuard(
        Budget(max_cost_usd=100.0, price=(0.0, 0.0), rerank_price=(1e6, 0.0)),
        count=lambda text: len(text.split()),
    )
    guard.on_custom_event(RERANK_EVENT, words, run_id=uuid4())
    assert guard.spent_usd == pytest.approx(13.0)  # reserved at the 13 tokens counted
    guard.on_custom_event(RERANK_END_EVENT, {"call": "c1", "tokens": reported}, run_id=uuid4())
    assert guard.spent_usd == pytest.approx(spent)
    guard.on_custom_event(RERANK_END_EVENT, {"call": "c1", "tokens": 50}, run_id=uuid4())
    assert guard.spent_usd == pytest.approx(spent)  # settled once


def test_the_rerank_stage_ends_each_announced_call_with_the_tokens_its_server_reported():
    events: list[tuple[str, dict]] = []

    class Events(BaseCallbackHandler):
        def on_custom_event(self, name, data, **kwargs):
            if name in (RERANK_EVENT, RERANK_END_EVENT):
                events.append((name, data))

    llm = ScriptedChatModel(reply_fn=lambda prompt: "the keeper")
    with RerankServer() as server:
        options = {
            "strategy": "rag",
            "llm": llm,
            "top_k": 2,
            "rerank": "server",
            "rerank_options": server_options(server),
        }
        result = answer(corpus(), QUESTION, callbacks=[Events()], **options)
        (sent,) = server.requests
    reported = sum(token_count(sent["query"], d) for d in sent["documents"])  # the server's usage
    (start, began), (end, ended) = events
    assert (start, end) == (RERANK_EVENT, RERANK_END_EVENT)
    assert ended == {"call": began["call"], "tokens": reported} and reported > 0
    assert result.usage.rerank_tokens == reported


def test_a_reranking_fallbacks_rerank_calls_lie_within_self_routes_plan():
    replies = iter(["unanswerable"])  # the route declines; the fallback (rag, reranking) answers
    llm = ScriptedChatModel(reply_fn=lambda prompt: next(replies, "the keeper"))
    with RerankServer() as server:
        options = {
            "strategy": "self_route",
            "llm": llm,
            "top_k": 2,
            "context_window": 200,
            "max_new_tokens": 16,
            "fallback": "rag",
            "fallback_options": {
                "top_k": 2,
                "rerank": "server",
                "rerank_options": server_options(server),
            },
        }
        plan = estimate(corpus(), QUESTION, **options)
        result = answer(corpus(), QUESTION, show_progress=False, **options)
    assert [s["strategy"] for s in result.steps if s["node"] == "fallback"] == [
        "rag"
    ]  # it declined
    assert plan.rerank is not None  # None before: the fallback's rerank calls were not planned
    assert (
        plan.rerank.calls
        == 0
        < len(server.requests)
        == result.usage.rerank_calls
        <= plan.rerank.max_calls
    )
