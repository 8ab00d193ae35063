"""Budgets (issue 29): cost plans before any call, up-front refusal, a clean stop
mid-run, resume."""

from __future__ import annotations

import asyncio
import json

import pytest

from longctx import Budget, BudgetExceeded, aanswer, answer, answer_many, estimate
from longctx.experiments.cli.app import main
from longctx.graphs.metering.budget import BudgetReached, CostPlan
from longctx.graphs.metering.budget_guard import BudgetGuard
from longctx.retrieval import Corpus
from tests.recording_server import RecordingServer
from tests.scripted import ScriptedChatModel
from tests.test_memagent import corpus_of, echo_model, format_documents, section_in

CHUNK = 100  # MemAgent chunk_tokens: a ~1,950-token stream is 20 chunks, 21 calls


def twenty_chunks() -> Corpus:
    corpus = corpus_of([1460])
    plan = estimate(
        corpus, "q", strategy="memagent", llm=echo_model(), chunk_tokens=CHUNK
    )  # the tokenizer of the model that runs
    assert plan.calls == 21, plan
    return corpus


def stopping_budget(corpus: Corpus, questions: str | list[str], llm) -> Budget:
    """Prompt tokens the plan's least fits (not refused up front) but the run passes: the memory
    each update carries is not in the least."""
    return Budget(
        max_prompt_tokens=estimate(
            corpus, questions, strategy="memagent", llm=llm, chunk_tokens=CHUNK
        ).prompt_tokens
        + 40
    )


def test_memagent_stops_at_its_budget_and_resumes_with_a_larger_one(isolated_cache):
    corpus = twenty_chunks()
    first = echo_model()
    stopped = answer(
        corpus,
        "q",
        strategy="memagent",
        llm=first,
        chunk_tokens=CHUNK,
        budget=stopping_budget(corpus, "q", first),
        show_progress=False,
    )
    k = len(first.calls)
    assert 0 < k < 21
    assert stopped.stopped == "budget" and stopped.to_dict()["stopped"] == "budget"
    assert [s["chunk"] for s in stopped.steps if s["node"] == "update_memory"] == list(
        range(k)
    )  # what was done

    second = echo_model()
    done = answer(
        corpus,
        "q",
        strategy="memagent",
        llm=second,
        chunk_tokens=CHUNK,
        budget=Budget(max_llm_calls=21 - k),
        show_progress=False,
    )
    assert (
        len(second.calls) == 21 - k
    )  # only the remaining calls: the checkpoint covers the rest of the plan
    assert done.stopped is None and done.answer == "42"
    assert done.steps[-1]["resumed_from"] == k
    sections = [section_in(c["prompt"]) for c in first.calls + second.calls[:-1]]
    assert "".join(sections) == format_documents(corpus.documents)  # every chunk read once


def test_async_memagent_stops_at_its_budget(isolated_cache):
    corpus = twenty_chunks()
    model = echo_model()
    budget = stopping_budget(corpus, "q", model)
    result = asyncio.run(
        aanswer(
            corpus,
            "q",
            strategy="memagent",
            llm=model,
            chunk_tokens=CHUNK,
            budget=budget,
            show_progress=False,
        )
    )
    k = len(model.calls)
    assert 0 < k < 21 and result.stopped == "budget"
    with pytest.raises(
        BudgetExceeded, match=f"less the {k} calls its checkpoint holds"
    ):  # one call short of the rest: refused before any call
        asyncio.run(
            aanswer(
                corpus,
                "q",
                strategy="memagent",
                llm=model,
                chunk_tokens=CHUNK,
                budget=Budget(max_llm_calls=21 - k - 1),
                show_progress=False,
            )
        )
    assert len(model.calls) == k


def test_the_budget_bounds_all_questions_together(isolated_cache):
    corpus = twenty_chunks()
    model = echo_model()
    with pytest.raises(
        BudgetExceeded, match="42 calls > 41"
    ):  # 21 calls each fit, both together do not
        answer_many(
            corpus,
            ["q1", "q2"],
            strategy="memagent",
            llm=model,
            chunk_tokens=CHUNK,
            budget=Budget(max_llm_calls=41),
            show_progress=False,
        )
    results = answer_many(
        corpus,
        ["q1", "q2"],
        strategy="memagent",
        llm=model,
        chunk_tokens=CHUNK,
        concurrency=1,
        budget=stopping_budget(corpus, ["q1", "q2"], model),
        show_progress=False,
    )
    assert 0 < len(model.calls) < 42 and [r.stopped for r in results] == ["budget", "budget"]


DOCS = Corpus.from_texts(
    [
        f"Report {i}. The vault code of site {i} is {1000 + i}. "
        + "Filler words about the weather and the harbour. " * 60
        for i in range(6)
    ],
    titles=[f"site {i}" for i in range(6)],
)


@pytest.mark.parametrize(
    "strategy,config", [("rag", {}), ("full_context", {}), ("memagent", {"chunk_tokens": 400})]
)
def test_estimate_matches_the_calls_made(isolated_cache, strategy, config):
    model = ScriptedChatModel(reply_fn=lambda prompt: "1003")
    plan = estimate(
        DOCS, "What is the vault code of site 3?", strategy=strategy, llm=model, **config
    )
    result = answer(
        DOCS,
        "What is the vault code of site 3?",
        strategy=strategy,
        llm=model,
        show_progress=False,
        **config,
    )
    assert plan.calls == plan.max_calls == len(model.calls) == result.usage.llm_calls
    assert plan.prompt_tokens > 0 and isinstance(plan, CostPlan)


def test_memagent_plan_follows_the_readme_formula():
    plan = estimate(DOCS, "q", strategy="memagent", chunk_tokens=400)
    assert plan.calls == plan.details["chunks"] + 1
    assert plan.details["chunks"] >= DOCS.num_tokens // 400


def test_pai_plan_counts_judges_per_chunk():
    plan = estimate(DOCS, "q", strategy="pai", judge_mode="exhaustive", chunk_size=256)
    chunks = plan.details["judged_chunks"]
    assert (
        chunks >= 2 and plan.calls == chunks + 2 and plan.max_calls > plan.calls
    )  # decomposition, judges, summary (no kept chunk: no sub-answer)
    prefilter = estimate(DOCS, "q", strategy="pai", judge_mode="prefilter", chunk_size=256, top_k=1)
    assert prefilter.details["judged_chunks"] == 1


def test_a_plan_over_the_budget_is_refused_before_any_call(isolated_cache):
    model = ScriptedChatModel(reply_fn=lambda prompt: "x")
    with pytest.raises(
        BudgetExceeded, match=r"rag plans 1 call and .* over the budget: 1 call > 0"
    ):
        answer(
            DOCS,
            "q",
            strategy="rag",
            llm=model,
            budget=Budget(max_llm_calls=0),
            show_progress=False,
        )
    with pytest.raises(BudgetExceeded, match="prompt tokens > 100"):
        answer(
            DOCS,
            "q",
            strategy="full_context",
            llm=model,
            budget=Budget(max_prompt_tokens=100),
            show_progress=False,
        )
    with pytest.raises(BudgetExceeded, match=r"\$"):
        answer(
            DOCS,
            "q",
            strategy="full_context",
            llm=model,
            budget=Budget(max_cost_usd=0.0001, price=(2.5, 10.0)),
            show_progress=False,
        )
    assert model.calls == []
    assert issubclass(BudgetExceeded, ValueError)


def test_a_single_run_reaching_its_budget_returns_what_was_done(isolated_cache):
    """self_ask's plan may fit (1 call at least) but its follow-ups pass the budget: it
    stops cleanly."""
    model = ScriptedChatModel(reply_fn=lambda prompt: "Follow up: What is the code?")
    result = answer(
        DOCS,
        "q",
        strategy="self_ask",
        llm=model,
        budget=Budget(max_llm_calls=2),
        show_progress=False,
    )
    assert len(model.calls) == 2 and result.usage.llm_calls == 2
    assert result.stopped == "budget" and result.steps[-1]["node"] == "stopped"


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"max_llm_calls": -1}, "non-negative whole number"),
        ({"max_prompt_tokens": 1.5}, "whole number"),
        ({"max_cost_usd": 1, "price": "cheap"}, "USD per 1M"),
    ],
)
def test_bad_budgets_are_one_line_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Budget(**kwargs)


def test_guard_counts_tokens_and_cost_before_each_call():
    words = lambda text: len(text.split())  # noqa: E731
    tokens = BudgetGuard(Budget(max_prompt_tokens=10), count=words)
    tokens.on_llm_start({}, ["one two three"])
    assert (tokens.calls, tokens.prompt_tokens) == (1, 3)
    with pytest.raises(BudgetReached, match="10 prompt tokens"):
        tokens.on_llm_start({}, ["one two three four five six seven eight"])
    with pytest.raises(BudgetReached):  # once reached, every later call is refused
        tokens.on_llm_start({}, ["x"])
    assert tokens.calls == 1
    cost = BudgetGuard(
        Budget(max_cost_usd=1.0, price=(100_000.0, 0.0)), count=words
    )  # $0.10 a prompt token
    cost.on_llm_start({}, ["a b c"])
    cost.on_llm_start({}, ["a b c d e"])
    assert cost.spent_usd == pytest.approx(0.8)
    with pytest.raises(BudgetReached, match=r"\$1.00"):
        cost.on_llm_start({}, ["a b c"])


@pytest.fixture
def docs_folder(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, doc in enumerate(DOCS):
        (folder / f"site{i}.txt").write_text(doc.text)
    return folder


def test_cli_refuses_a_plan_over_max_calls_on_one_line(
    docs_folder, capsys, monkeypatch, isolated_cache
):
    with RecordingServer(lambda request: "1003") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        code = main(
            [
                "answer",
                "--corpus",
                str(docs_folder),
                "--question",
                "code of site 3?",
                "--llm",
                "openai:smollm2",
                "--max-calls",
                "0",
            ]
        )
    err = capsys.readouterr().err
    assert code == 2 and server.requests == []
    last = err.strip().splitlines()[-1]  # after the progress bar of reading the files
    assert (
        last.startswith("longctx: error: Budget exceeded before any call: rag plans 1 call and")
        and "over the budget: 1 call > 0" in last
    )


def test_cli_stops_memagent_at_max_tokens_and_says_so(
    docs_folder, capsys, monkeypatch, isolated_cache
):
    with RecordingServer(
        lambda request: "memory: the vault code of site 3 is 1003, says its report"
    ) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        plan = estimate(
            Corpus.from_path(docs_folder),
            "code of site 3?",
            strategy="memagent",
            llm="openai:smollm2",
            chunk_tokens=300,
        )
        prices = (
            docs_folder.parent / "prices.json"
        )  # a local server is free: --max-cost needs its price
        prices.write_text(json.dumps({"smollm2": {"prompt": 0.001, "completion": 0.001}}))
        argv = [
            "answer",
            "--corpus",
            str(docs_folder),
            "--question",
            "code of site 3?",
            "--llm",
            "openai:smollm2",
            "--strategy",
            "memagent",
            "--option",
            "chunk_tokens=300",
            "--max-cost",
            "1",
            "--prices",
            str(prices),
            "--json",
        ]
        refused = main([*argv, "--max-calls", str(plan.calls - 1)])
        assert (
            refused == 2
            and server.requests == []
            and "memagent plans" in capsys.readouterr().err.strip().splitlines()[-1]
        )
        code = main(
            [*argv, "--max-tokens", str(plan.prompt_tokens + 20)]
        )  # the least fits, the memory each update carries does not
    out = capsys.readouterr()
    assert (
        code == 0 and 0 < len(server.requests) < plan.calls
    )  # $1 at $0.001 per 1M tokens does not stop it
    assert (
        json.loads(out.out)["stopped"] == "budget"
        and f"Stopped: the run reached its budget ({plan.prompt_tokens + 20:,} prompt tokens"
        in out.err
    )


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--max-calls", "-1"], "Budget max_llm_calls must be a non-negative whole number"),
        (["--max-cost", "5"], "--max-cost needs the price of 'mystery-model'"),
    ],
)
def test_cli_budget_errors_are_one_line(docs_folder, tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.setenv(
        "OPENAI_BASE_URL", "http://models.example.invalid/v1"
    )  # never reached: the error comes first
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "code of site 3?", "answer": "1003"}) + "\n")
    code = main(
        [
            "run",
            "--corpus",
            str(docs_folder),
            "--questions",
            str(questions),
            "--strategies",
            "rag",
            "--llm",
            "openai:mystery-model",
            "--out",
            str(tmp_path / "out"),
            *argv,
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_run_rows_keep_stopped_and_a_rerun_answers_them_again(
    docs_folder, tmp_path, isolated_cache, caplog
):
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment

    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "code of site 3?", "answer": "1003"}) + "\n")
    model = echo_model()
    options = {"strategy_options": {"memagent": {"chunk_tokens": 300}}}
    plan = estimate(
        Corpus.from_path(docs_folder),
        "code of site 3?",
        strategy="memagent",
        llm=model,
        chunk_tokens=300,
    )
    stopped = RunConfig.for_corpus(
        docs_folder,
        questions,
        ["memagent"],
        budget=Budget(max_prompt_tokens=plan.prompt_tokens + 20),
        **options,
    )
    run_experiment(stopped, tmp_path / "out", llm=model, show_progress=False)
    assert [r["stopped"] for r in read_rows(tmp_path / "out")] == ["budget"] and 0 < len(
        model.calls
    ) < plan.calls
    assert "BudgetReached" not in caplog.text  # a planned stop, not a callback failure
    run_experiment(
        RunConfig.for_corpus(docs_folder, questions, ["memagent"], **options),
        tmp_path / "out",
        llm=model,
        show_progress=False,
    )
    rows = read_rows(tmp_path / "out")
    assert [r["stopped"] for r in rows] == ["budget", None] and rows[-1]["answer"].endswith("42.")
    assert (
        len(model.calls)
        == estimate(
            Corpus.from_path(docs_folder), "q", strategy="memagent", llm=model, chunk_tokens=300
        ).calls
    )  # resumed: no call twice


def test_async_single_run_stops_at_its_budget(isolated_cache):
    model = ScriptedChatModel(reply_fn=lambda prompt: "Follow up: What is the code?")
    result = asyncio.run(
        aanswer(DOCS, "q", strategy="self_ask", llm=model, budget=Budget(max_llm_calls=3))
    )
    assert len(model.calls) == 3 and result.stopped == "budget"


def test_self_route_stops_when_its_fallback_reaches_the_budget(isolated_cache):
    """RAG declines (1 call), the memagent fallback reads 1 chunk and reaches the budget: the whole
    answer is stopped."""
    model = ScriptedChatModel(reply_fn=lambda prompt: "unanswerable")
    result = answer(
        DOCS,
        "q",
        strategy="self_route",
        llm=model,
        fallback="memagent",
        fallback_options={"chunk_tokens": 300},
        context_window=600,
        budget=Budget(max_llm_calls=2),
    )
    assert len(model.calls) == 2 and result.stopped == "budget"
