"""The cost plan's bounds hold for real runs: every built-in strategy, run on a small corpus with a
scripted model, makes at least the plan's least calls and prompt tokens and at most its most, prompt
tokens counted as the budget guard counts them (the model's tokenizer over each call's messages);
and a budget of exactly what a run sends is not refused up front (the least is a true lower bound)
and lets the run finish."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longctx import Budget, answer, estimate
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import tokenizer_for
from longctx.graphs.calls.prompt_text import counted_prompt
from longctx.graphs.metering.budget import CostPlan
from longctx.retrieval import Corpus
from tests.registries import built_in
from tests.scripted import ScriptedChatModel
from tests.scripted_tools import ToolScriptedChatModel

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "corpus"
QUESTION = "What was Kestrel Aviation's revenue in 2023?"
BUILT_IN = built_in(STRATEGIES)


def examples() -> Corpus:
    return Corpus.from_path(EXAMPLES)


def reply(prompt: str, tools: Any = None) -> Any:
    """One reply for every strategy's calls: no rows, no kept chunk, a short answer."""
    if prompt.startswith("Extract rows"):
        return [{"records": []}]
    if prompt.startswith("Every document"):
        return "SELECT COUNT(*) FROM facts"
    if prompt.startswith(
        "Identify the key properties"
    ):  # PAI's decomposition (JSON mode), right the first time
        return json.dumps({"items": [{"metric": "revenue", "subject": "Kestrel Aviation"}]})
    if prompt.startswith("Break the query below"):  # PAI-'s
        return json.dumps({"items": [{"sub_question": "What was Kestrel Aviation's revenue?"}]})
    if (
        "keep_context" in prompt
    ):  # PAI's judge (JSON mode): nothing kept, so no sub-answer is called
        return json.dumps({"keep_context": False})
    return "42"


def model(strategy: str) -> ScriptedChatModel | ToolScriptedChatModel:
    if strategy == "structured":
        return ToolScriptedChatModel(reply_fn=reply)
    return ScriptedChatModel(reply_fn=reply, report_usage=False)


def run(
    strategy: str, corpus: Corpus, cache: Path, budget: Budget | None = None
) -> tuple[CostPlan, int, int, Any]:
    """The plan, then a real run: ``(plan, calls, prompt tokens as the guard counts
    them, answer)``."""
    llm = model(strategy)
    plan = estimate(corpus, QUESTION, strategy=strategy, llm=llm)
    options = {"cache_dir": cache} if strategy == "structured" else {}
    result = answer(
        corpus, QUESTION, strategy=strategy, llm=llm, budget=budget, show_progress=False, **options
    )
    count = tokenizer_for(llm).count
    # the guard counts a call's messages with its tool schemas and tool-call arguments
    sent = [counted_prompt(c["messages"], c) if "messages" in c else c["prompt"] for c in llm.calls]
    return plan, len(llm.calls), sum(count(text) for text in sent), result


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """A new cache folder per run (no checkpoint or record cache carried from one run to
    the next)."""
    made = iter(range(100))

    def folder() -> Path:
        path = tmp_path / f"cache{next(made)}"
        monkeypatch.setenv("LONGCTX_CACHE_DIR", str(path))
        from longctx.retrieval import index as index_module

        index_module.clear_memory_cache()
        return path

    return folder


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_a_real_run_lies_within_the_plans_bounds(strategy, fresh):
    plan, calls, tokens, result = run(strategy, examples(), fresh())
    assert result.stopped is None
    assert plan.calls <= calls <= plan.max_calls, plan
    assert plan.prompt_tokens <= tokens <= plan.max_prompt_tokens, plan


@pytest.mark.parametrize("strategy", BUILT_IN)
def test_a_budget_of_exactly_what_a_run_sends_is_not_refused(strategy, fresh):
    _, calls, tokens, first = run(strategy, examples(), fresh())
    _, again, sent, result = run(
        strategy, examples(), fresh(), Budget(max_llm_calls=calls, max_prompt_tokens=tokens)
    )
    assert result.stopped is None and result.answer == first.answer
    assert (again, sent) == (calls, tokens)


def test_rag_and_full_context_plan_within_a_few_tokens_of_what_they_send(fresh):
    """Their templates are counted from the real prompts: the bounds bracket the sent
    tokens closely."""
    for strategy in ("rag", "full_context"):
        plan, _, tokens, _ = run(strategy, examples(), fresh())
        assert plan.prompt_tokens <= tokens <= plan.max_prompt_tokens
        assert (
            tokens - plan.prompt_tokens < 0.05 * tokens
            and plan.max_prompt_tokens - tokens < 0.1 * tokens
        ), plan


def test_pai_without_kept_chunks_makes_no_sub_answer_call(fresh):
    """Judges that keep nothing: decomposition, judges and the summary only, as the least counts."""
    plan, calls, _, result = run("pai", examples(), fresh())
    answers = [a for s in result.steps if s["node"] == "sub_answer" for a in s["sub_answers"]]
    assert answers and not any(a["called"] for a in answers)
    assert calls == 1 + plan.details["judged_chunks"] + 1 == plan.calls


@pytest.mark.parametrize("window", [400, 900])
def test_a_truncated_full_context_prompt_lies_within_the_bounds(window, fresh):
    """Cut to the window's input budget: the bounds hold around the cut prompt, re-encoded as the
    guard counts it."""
    fresh()
    llm = ScriptedChatModel(reply_fn=reply, report_usage=False)
    plan = estimate(examples(), QUESTION, strategy="full_context", llm=llm, context_window=window)
    answer(
        examples(),
        QUESTION,
        strategy="full_context",
        llm=llm,
        context_window=window,
        show_progress=False,
    )
    sent = tokenizer_for(llm).count(llm.calls[0]["prompt"])
    assert plan.prompt_tokens <= sent <= plan.max_prompt_tokens < window
