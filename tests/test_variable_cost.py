"""Variable cost plans (issue #47): an unbounded most a budget must cap, a warning when the most may
not fit, and the tool schemas PAI and the structured strategy send counted in their plans."""

from __future__ import annotations

import json
import warnings

import pytest

from longctx.graphs import STRATEGIES
from longctx.graphs.metering.budget import UNBOUNDED, Budget, BudgetExceeded, CostPlan
from longctx.graphs.metering.costs import CorpusShape
from longctx.graphs.metering.plan_check import (
    BudgetMayStopWarning,
    UnboundedCostWarning,
    capped,
    check_plan,
)
from longctx.graphs.pai import prompts as pai_prompts
from longctx.graphs.structured.functions import SCHEMA_FUNCTION
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from longctx.retrieval.tokens import count_tokens


def _plan(least: int = 2, most: int | None = 10) -> CostPlan:
    return CostPlan(
        strategy="loop",
        questions=1,
        calls=least,
        max_calls=most,
        prompt_tokens=100 * least,
        max_prompt_tokens=None if most is None else 100 * most,
        completion_tokens=10,
        formula="a loop",
    )


def test_the_least_refuses_and_the_most_warns():
    with pytest.raises(BudgetExceeded):
        check_plan(_plan(), Budget(max_llm_calls=1))
    with pytest.warns(BudgetMayStopWarning, match="may stop loop .*10 calls > 5"):
        check_plan(_plan(), Budget(max_llm_calls=5))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_plan(_plan(), Budget(max_llm_calls=10, max_prompt_tokens=1000))


def test_an_unbounded_plan_needs_a_budget_that_caps_it():
    plan = _plan(most=UNBOUNDED)
    assert plan.unbounded and "2-unbounded calls" in plan.describe()
    assert plan.to_dict()["max_calls"] is None and plan.scaled(3).max_calls is None
    assert plan.after(1).max_calls is None and plan.after(1).calls == 1
    with pytest.warns(UnboundedCostWarning, match="no upper bound"):
        check_plan(plan, None)
    with warnings.catch_warnings():  # the flag that refuses it: Python's own
        warnings.simplefilter("error", UnboundedCostWarning)
        with pytest.raises(UnboundedCostWarning):
            check_plan(plan, Budget())
        check_plan(plan, Budget(max_cost_usd=1.0, price=(1, 1)))  # any cap will do
    with pytest.raises(BudgetExceeded):
        check_plan(plan, Budget(max_llm_calls=1))
    held = capped(plan, Budget(max_llm_calls=6))
    assert (held.max_calls, held.max_prompt_tokens) == (6, None)
    assert held.details["capped_by"] == "budget: 6 calls"
    assert capped(_plan(), Budget(max_llm_calls=60)) == _plan()  # a most below the cap stays


def _schema(function) -> int:
    return count_tokens(json.dumps([dict(function)]))


def test_pai_and_structured_plans_count_their_tool_schemas():
    """The schemas the guard counts (PAI's property 159 cl100k tokens, its judge 95, sub-question
    102; structured's schema function 491) are in the plans' most, so a budget at the most is not
    stopped early."""
    corpus = Corpus.from_texts(["alpha beta " * 400, "gamma delta " * 400], titles=["A", "B"])
    shape, q = CorpusShape.of(corpus), [Question(text="Which is larger?")]
    figures = {}
    for name in ("pai", "pai_minus", "structured"):
        spec = STRATEGIES.get(name)
        plan = spec.costs.model(spec.make_config(), shape, q).bounds
        figures[name] = plan.details["tool_schema_tokens"]
        assert plan.max_prompt_tokens > sum(figures[name].values())
    assert figures["pai"] == {
        "decompose": _schema(pai_prompts.PROPERTY_FUNCTION) + 1,
        "judge": _schema(pai_prompts.KEEP_CONTEXT_FUNCTION) + 1,
    }
    assert figures["pai_minus"]["decompose"] == _schema(pai_prompts.SUB_QUESTION_FUNCTION) + 1
    assert figures["structured"] == {"plan": _schema(SCHEMA_FUNCTION) + 1}
    assert (
        figures["pai"]["decompose"],
        figures["pai"]["judge"],
        figures["structured"]["plan"],
    ) == (
        160,
        96,
        492,
    )


def test_the_cli_says_a_plan_warning_in_one_line(tmp_path, monkeypatch, capsys, isolated_cache):
    from longctx import estimate
    from longctx.experiments.cli.app import main
    from tests.recording_server import RecordingServer

    folder = tmp_path / "docs"
    folder.mkdir()
    for i in range(3):
        (folder / f"site{i}.txt").write_text(f"Site {i} has the vault code {1000 + i}. " * 40)
    with RecordingServer(lambda request: "1002") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        plan = estimate(
            Corpus.from_path(folder), "code of site 2?", strategy="rag", llm="openai:rec"
        )
        assert plan.prompt_tokens < plan.max_prompt_tokens  # a budget between them may stop it
        code = main(
            [
                "answer",
                "--corpus",
                str(folder),
                "--question",
                "code of site 2?",
                "--llm",
                "openai:rec",
                "--strategy",
                "rag",
                "--max-tokens",
                str(plan.prompt_tokens),
                "--json",
            ]
        )
    err = capsys.readouterr().err.strip().splitlines()
    said = [line for line in err if "warning" in line.lower()]
    assert code == 0 and len(said) == 1, err
    assert said[0].startswith("longctx: warning: the budget may stop rag before it ends")
    assert not any("plan_check.py" in line or "warnings.warn" in line for line in err)


def test_a_plan_with_an_index_part_is_capped_with_it():
    from longctx.graphs.metering.budget import IndexWork

    tree = IndexWork(
        what="a tree",
        calls=0,
        max_calls=40,
        prompt_tokens=0,
        max_prompt_tokens=4000,
        completion_tokens=0,
    )
    plan = CostPlan(
        strategy="raptor",
        questions=1,
        calls=1,
        max_calls=41,
        prompt_tokens=100,
        max_prompt_tokens=4100,
        completion_tokens=10,
        formula="a tree and an answer",
        index=tree,
    )
    held = capped(plan, Budget(max_llm_calls=5))
    assert (held.max_calls, held.index.max_calls, held.max_prompt_tokens) == (5, 5, 4100)
    with pytest.warns(BudgetMayStopWarning):
        check_plan(_plan(most=10), Budget(max_prompt_tokens=500))


def test_the_cli_says_each_strategys_plan_warning_once_not_once_per_unit(capsys):
    """A run checks each unit's plan, each with its own figures: the command says it once
    per strategy."""
    from longctx.experiments.cli.app import _show_warning

    def unshown(*args: object, **kwargs: object) -> None:
        raise AssertionError("a plan warning went to Python's own printer")

    said: set = set()
    for strategy, calls in (("rag", 10), ("rag", 12), ("pai", 10), ("rag", 14)):
        warning = BudgetMayStopWarning(
            f"the budget may stop {strategy}: {calls} calls > 5", strategy
        )
        _show_warning(unshown, said, warning, BudgetMayStopWarning, "plan_check.py", 1)
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        "longctx: warning: the budget may stop rag: 10 calls > 5",
        "longctx: warning: the budget may stop pai: 10 calls > 5",
    ]
