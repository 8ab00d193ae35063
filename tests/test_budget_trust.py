"""Budgets as the server sees them (issue 35, items 10-13): one plan for estimate and refusal, no request after a stop,
usage of this call apart from the whole resumed run, and a resumable run refused up front unless its checkpoint covers the rest."""

from __future__ import annotations

import re
import time

import pytest

from agents import STRATEGIES, Budget, BudgetExceeded, answer, estimate, make_chat_model
from graphs.run import run_strategy
from retrieval.contract import Answer, as_question
from tests.recording_server import RecordingServer
from tests.test_async import server_world
from tests.test_pai import CHUNK, company_corpus

QUESTION = "Which company had the highest revenue?"


# -- 13. estimate and the refusal are the same plan ---------------------------------------------------------
@pytest.mark.parametrize("strategy", ["pai", "memagent"])
def test_estimate_without_a_model_is_the_plan_the_refusal_gives(strategy, isolated_cache, monkeypatch):
    """Neither names a model: both plan for the one answer() would use (its tokenizer counts the templates and cuts MemAgent's chunks)."""
    monkeypatch.delenv("LONGCTX_LLM", raising=False)
    options = {"chunk_size": CHUNK} if strategy == "pai" else {"chunk_tokens": 200, "resume": False}
    plan = estimate(company_corpus(), QUESTION, strategy=strategy, **options)
    with pytest.raises(BudgetExceeded) as refused:
        answer(company_corpus(), QUESTION, strategy=strategy, budget=Budget(max_prompt_tokens=10), show_progress=False, **options)
    said = re.search(r"~([\d,]+) prompt tokens > 10", str(refused.value))
    assert said is not None and int(said.group(1).replace(",", "")) == plan.prompt_tokens, (plan, str(refused.value))


# -- 11. a stop means no request after it, and usage counts every request sent ------------------------------
def _served_pai(server: RecordingServer, budget: Budget, use_async: bool) -> tuple[Answer, int]:
    """PAI's answer under ``budget`` against ``server``, and the requests the server had when the answer returned."""
    spec = STRATEGIES.get("pai")
    llm = make_chat_model("openai:rec", base_url=server.url, api_key="not-needed", max_retries=0)
    (result,) = run_strategy(spec, spec.make_config(None, chunk_size=CHUNK, concurrency=4), [as_question(QUESTION)], llm=llm, corpus=company_corpus(),
                             budget=budget, use_async=use_async)  # fmt: skip
    return result, len(server.requests)


@pytest.mark.parametrize("use_async", [True, False], ids=["async", "threads"])
@pytest.mark.parametrize("latency", [0.0, 0.05])
@pytest.mark.parametrize("calls", [3, 8])
def test_pai_stopped_by_its_budget_sends_nothing_after_and_counts_all_it_sent(use_async, latency, calls, isolated_cache):
    """The budget stops PAI among its judges (1 decomposition, then 4 judges in flight at once): the calls already sent finish and are
    counted; none is sent after the stop, nor after answer() returned (the server is read again a moment later)."""
    with RecordingServer(server_world, latency=latency) as server:
        result, at_return = _served_pai(server, Budget(max_llm_calls=calls), use_async)
        time.sleep(0.3)  # anything still running would reach the server now
        later = len(server.requests)
    assert result.stopped == "budget"
    assert later == at_return == calls  # the guard let exactly the budget through, all before the answer came back
    assert result.usage.llm_calls == later and result.usage.failed_calls == 0  # every request sent is in the usage, each as a call that returned
