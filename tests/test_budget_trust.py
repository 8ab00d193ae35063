"""Budgets as the server sees them (issue 35, items 10-13): one plan for estimate and refusal, no
request after a stop, usage of this call apart from the whole resumed run, and a resumable run
refused up front unless its checkpoint covers the rest."""

from __future__ import annotations

import gc
import json
import re
import time
import warnings

import pytest

from longctx import STRATEGIES, Budget, BudgetExceeded, answer, estimate, make_chat_model
from longctx.graphs.runtime.run import run_strategy
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Answer, as_question
from tests.recording_server import RecordingServer, prompt_of
from tests.test_async import server_world
from tests.test_pai import CHUNK, company_corpus

QUESTION = "Which company had the highest revenue?"


# -- 13. estimate and the refusal are the same plan ------------------------------------------------
@pytest.mark.parametrize("strategy", ["pai", "memagent"])
def test_estimate_without_a_model_is_the_plan_the_refusal_gives(
    strategy, isolated_cache, monkeypatch
):
    """Neither names a model: both plan for the one answer() would use (its tokenizer counts the
    templates and cuts MemAgent's chunks)."""
    monkeypatch.delenv("LONGCTX_LLM", raising=False)
    options = {"chunk_size": CHUNK} if strategy == "pai" else {"chunk_tokens": 200, "resume": False}
    plan = estimate(company_corpus(), QUESTION, strategy=strategy, **options)
    with pytest.raises(BudgetExceeded) as refused:
        answer(
            company_corpus(),
            QUESTION,
            strategy=strategy,
            budget=Budget(max_prompt_tokens=10),
            show_progress=False,
            **options,
        )
    said = re.search(r"~([\d,]+) prompt tokens > 10", str(refused.value))
    assert said is not None and int(said.group(1).replace(",", "")) == plan.prompt_tokens, (
        plan,
        str(refused.value),
    )


# -- 11. a stop means no request after it, and usage counts every request sent ---------------------
def _served_pai(server: RecordingServer, budget: Budget, use_async: bool) -> tuple[Answer, int]:
    """PAI's answer under ``budget`` against ``server``, and the requests the server had when the
    answer returned."""
    spec = STRATEGIES.get("pai")
    llm = make_chat_model("openai:rec", base_url=server.url, api_key="not-needed", max_retries=0)
    (result,) = run_strategy(
        spec,
        spec.make_config(None, chunk_size=CHUNK, concurrency=4),
        [as_question(QUESTION)],
        llm=llm,
        corpus=company_corpus(),
        budget=budget,
        use_async=use_async,
    )
    return result, len(server.requests)


@pytest.mark.parametrize(
    "use_async,latency,calls",
    [(True, 0.0, 3), (True, 0.05, 8), (False, 0.05, 8)],
    ids=["async-3", "async-slow-8", "threads-slow-8"],
)
def test_pai_stopped_by_its_budget_sends_nothing_after_and_counts_all_it_sent(
    use_async, latency, calls, isolated_cache
):
    """The budget stops PAI among its judges (1 decomposition, then 4 judges in flight at once): the
    calls already sent finish and are counted; none is sent after the stop, nor after answer()
    returned (the server is read again a moment later)."""
    with (
        RecordingServer(server_world, latency=latency) as server,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        result, at_return = _served_pai(server, Budget(max_llm_calls=calls), use_async)
        time.sleep(0.3)  # anything still running would reach the server now
        later = len(server.requests)
        gc.collect()  # an abandoned coroutine warns when it is collected
    assert result.stopped == "budget"
    # LangChain's events for the refused calls' other handlers are dropped, not reported as
    # never awaited
    assert not [w for w in caught if "never awaited" in str(w.message)], [
        str(w.message) for w in caught
    ]
    assert (
        later == at_return == calls
    )  # the guard let exactly the budget through, all before the answer came back
    assert (
        result.usage.llm_calls == later and result.usage.failed_calls == 0
    )  # every request sent is in the usage, each as a call that returned


# -- 12. usage of a resumed answer: this call's, and the whole run's apart -------------------------
def _memory_reply(request: dict) -> str:
    return (
        "Therefore, the answer is Gamma Inc."
        if prompt_of(request).rstrip().endswith("Your answer:")
        else "memory: revenue 101"
    )


MEMAGENT = {"chunk_tokens": 100, "concurrency": 1}  # 8 chunks of the company corpus: 9 calls


def _served(server: RecordingServer):
    return make_chat_model("openai:rec", base_url=server.url, api_key="not-needed", max_retries=0)


def _stopping_budget(llm) -> Budget:
    """A prompt-token budget the plan's least fits (not refused up front) but a real run passes: the
    memory each update carries is not in the least, so the run stops part-way, with its
    checkpoint kept."""
    plan = estimate(company_corpus(), QUESTION, strategy="memagent", llm=llm, **MEMAGENT)
    return Budget(max_prompt_tokens=plan.prompt_tokens + 20)


def test_a_resumed_answer_counts_the_calls_it_sent_and_keeps_the_runs_total_apart(isolated_cache):
    with RecordingServer(_memory_reply) as server:
        llm = _served(server)
        stopped = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            budget=_stopping_budget(llm),
            show_progress=False,
            **MEMAGENT,
        )
        first = len(server.requests)
        done = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            show_progress=False,
            **MEMAGENT,
        )
        second = len(server.requests) - first
        again = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            show_progress=False,
            **MEMAGENT,
        )
        assert len(server.requests) == first + second  # the replay sent nothing
    assert (
        stopped.stopped == "budget"
        and 0 < first
        and done.stopped is None
        and done.steps[-1]["resumed_from"]
    )
    assert (stopped.usage.llm_calls, done.usage.llm_calls, again.usage.llm_calls) == (
        first,
        second,
        0,
    )  # each call: what it sent
    assert (done.usage.earlier_llm_calls, again.usage.earlier_llm_calls) == (first, first + second)
    assert (
        done.usage.run_llm_calls == again.usage.run_llm_calls == first + second
    )  # the whole run, counted once
    sent = [
        len(prompt_of(r).split()) for r in server.requests
    ]  # the stub server reports a prompt's words as its tokens
    assert (stopped.usage.prompt_tokens, done.usage.prompt_tokens, again.usage.prompt_tokens) == (
        sum(sent[:first]),
        sum(sent[first:]),
        0,
    )
    assert (
        done.usage.run_prompt_tokens == sum(sent)
        and done.to_dict()["usage"]["run_llm_calls"] == first + second
    )


def test_result_rows_of_a_stopped_then_resumed_unit_add_up_to_the_requests_sent(
    tmp_path, isolated_cache
):
    """The stopped row and the row that finished the run each carry their own calls: summed, as a
    report's cost sums them, nothing twice."""
    from longctx.experiments.reports.report import score_run
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": QUESTION, "answer": "Gamma Inc"}) + "\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    for d in company_corpus():
        (folder / f"{d.title}.txt").write_text(d.text)
    options = {"strategy_options": {"memagent": MEMAGENT}, "llm_cache": False}
    with RecordingServer(_memory_reply) as server:
        llm = _served(server)
        plan = estimate(
            Corpus.from_path(folder), QUESTION, strategy="memagent", llm=llm, **MEMAGENT
        )
        budget = Budget(max_prompt_tokens=plan.prompt_tokens + 20)
        run_experiment(
            RunConfig.for_corpus(folder, questions, ["memagent"], budget=budget, **options),
            tmp_path / "out",
            llm=llm,
            show_progress=False,
        )
        run_experiment(
            RunConfig.for_corpus(folder, questions, ["memagent"], **options),
            tmp_path / "out",
            llm=llm,
            show_progress=False,
        )
        sent = len(server.requests)
    rows = read_rows(tmp_path / "out")
    assert [r["stopped"] for r in rows] == ["budget", None] and rows[-1]["status"] == "ok"
    assert sum(r["usage"]["llm_calls"] for r in rows) == sent == rows[-1]["usage"]["run_llm_calls"]
    assert sum(r["usage"]["prompt_tokens"] for r in rows) == sum(
        len(prompt_of(r).split()) for r in server.requests
    )
    _, _, scored = score_run(
        tmp_path / "out"
    )  # what the report prices: the answer's calls from both rows, each once
    (answered,) = scored["memagent"]["rows"]
    assert answered["usage"]["llm_calls"] == sent and answered["usage"]["prompt_tokens"] == sum(
        r["usage"]["prompt_tokens"] for r in rows
    )


# -- 10. a resumable run is refused up front unless its checkpoint covers the difference -----------
def test_memagent_is_refused_before_any_call_by_a_budget_its_plan_cannot_fit(isolated_cache):
    """As every other strategy: a budget the whole run cannot fit sends nothing (it made 9 calls and
    returned an empty answer)."""
    with RecordingServer(_memory_reply) as server:
        llm = _served(server)
        plan = estimate(company_corpus(), QUESTION, strategy="memagent", llm=llm, **MEMAGENT)
        for budget in (
            Budget(max_llm_calls=0),
            Budget(max_llm_calls=plan.calls - 1),
            Budget(max_prompt_tokens=plan.prompt_tokens - 1),
        ):
            with pytest.raises(
                BudgetExceeded, match="Budget exceeded before any call: memagent plans"
            ):
                answer(
                    company_corpus(),
                    QUESTION,
                    strategy="memagent",
                    llm=llm,
                    budget=budget,
                    show_progress=False,
                    **MEMAGENT,
                )
        assert server.requests == []
        done = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            budget=Budget(max_llm_calls=plan.calls),
            show_progress=False,
            **MEMAGENT,
        )
        assert (
            done.stopped is None and len(server.requests) == plan.calls == done.usage.llm_calls
        )  # exactly the plan fits


def test_a_checkpoint_that_covers_the_difference_lets_the_rest_run(isolated_cache):
    """A run that failed at its 6th request keeps 5 calls: a budget of the rest resumes it, one call
    less is refused; a finished run replays under any budget."""
    seen = [0]

    def failing_once(request: dict) -> str:
        seen[0] += 1
        if seen[0] == 6:
            raise ConnectionError("the server fell over")  # the client sees the connection drop
        return _memory_reply(request)

    with RecordingServer(failing_once) as server:
        llm = _served(server)
        plan = estimate(company_corpus(), QUESTION, strategy="memagent", llm=llm, **MEMAGENT)
        with pytest.raises(Exception, match="(?i)connection"):
            answer(
                company_corpus(),
                QUESTION,
                strategy="memagent",
                llm=llm,
                show_progress=False,
                **MEMAGENT,
            )
        first = len(server.requests)
        rest = plan.calls - (first - 1)  # the failed request left nothing in the checkpoint
        with pytest.raises(
            BudgetExceeded,
            match=(
                rf"less the {first - 1} calls its checkpoint holds\); over the budget: {rest:,} "
                rf"calls > {rest - 1}"
            ),
        ):
            answer(
                company_corpus(),
                QUESTION,
                strategy="memagent",
                llm=llm,
                budget=Budget(max_llm_calls=rest - 1),
                show_progress=False,
                **MEMAGENT,
            )
        assert len(server.requests) == first
        done = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            budget=Budget(max_llm_calls=rest),
            show_progress=False,
            **MEMAGENT,
        )
        assert done.stopped is None and len(server.requests) - first == rest == done.usage.llm_calls
        replay = answer(
            company_corpus(),
            QUESTION,
            strategy="memagent",
            llm=llm,
            budget=Budget(max_llm_calls=0),
            show_progress=False,
            **MEMAGENT,
        )
        assert (
            len(server.requests) == first + rest
            and replay.answer == done.answer
            and replay.usage.llm_calls == 0
        )


@pytest.mark.parametrize(
    "calls,step,left",
    [
        (0, 0, (9, 210, 21)),  # nothing held: the whole plan
        (3, 1, (6, 100 + 10, 10 + 1)),  # step 0 (3 calls) done
        (4, 1, (5, 10, 1)),  # step 1 partly done: none of its tokens claimed, the final step's are
        (9, 2, (0, 0, 0)),  # finished: a replay
        (4, None, (5, 0, 0)),  # another run's steps (continued from an earlier corpus): calls only
    ],
)
def test_a_plan_after_a_checkpoint_counts_only_the_steps_left(calls, step, left):
    from longctx.graphs.metering.budget import CostPlan

    steps = (
        (3, 100, 10),
        (3, 100, 10),
        (3, 10, 1),
    )  # three questions: two chunk steps, then their final calls
    plan = CostPlan(
        strategy="memagent",
        questions=3,
        calls=9,
        max_calls=9,
        prompt_tokens=210,
        max_prompt_tokens=5_000,
        completion_tokens=21,
        formula="f",
        steps=steps,
    )
    after = plan.after(calls, step)
    assert (after.calls, after.prompt_tokens, after.completion_tokens) == left
    assert (
        after.max_calls == after.calls
        and after.prompt_tokens <= after.max_prompt_tokens <= plan.max_prompt_tokens
    )


def test_a_pairs_rows_add_up_to_its_spend_each_row_once():
    from longctx.experiments.planning.spend import latest_with_spend

    def row(sample: str, status: str, calls: int | None) -> dict:
        usage = (
            None
            if calls is None
            else {
                "llm_calls": calls,
                "prompt_tokens": 10 * calls,
                "completion_tokens": calls,
                "run_llm_calls": 99,
            }
        )
        return {
            "sample_id": sample,
            "strategy": "memagent",
            "status": status,
            **({"usage": usage} if usage else {}),
        }

    rows = [
        row("a", "ok", 4),
        row("b", "ok", 2),
        row("b", "failed", None),
        row("b", "ok", 3),
        row("c", "failed", None),
    ]
    latest = latest_with_spend(rows)
    assert latest[("a", "memagent")] == rows[0]  # one row: as it is
    assert {
        k: latest[("b", "memagent")]["usage"][k]
        for k in ("llm_calls", "prompt_tokens", "total_tokens", "usage_rows", "run_llm_calls")
    } == {
        "llm_calls": 5,
        "prompt_tokens": 50,
        "total_tokens": 55,
        "usage_rows": 2,
        "run_llm_calls": 99,
    }
    assert "usage" not in latest[("c", "memagent")] and latest_with_spend([]) == {}
    assert len(latest_with_spend([row(str(i % 100), "ok", 1) for i in range(10_000)])) == 100
