"""A strategy registered from outside the tree brings its own evidence ceiling and expected cost:
``longctx ceilings`` gives it a row and the run plan prices it, with no edit to the library."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from longctx.agents.api import estimate as estimate_bounds
from longctx.agents.run_plan import describe_plan, estimate, plan_for
from longctx.experiments.ceilings.measure import compute_ceilings, default_strategies, format_table
from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.metering.budget import CostPlan
from longctx.graphs.metering.costs import Calls, ExpectedCost, StrategyCosts
from longctx.graphs.plugin.ceiling import CeilingEnv, CeilingItem, EvidenceCeiling, Reach, reach_of
from longctx.graphs.plugin.config import option
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.scripted import ScriptedChatModel

BUILT_IN_ORDER = [
    "rag",
    "self_route",
    "self_ask",
    "search_agent",
    "pai",
    "pai_minus",
    "memagent",
    "full_context",
    "structured",
    "rlm",
    "raptor",
    "hipporag",
]


@dataclass(frozen=True, kw_only=True)
class HeadReaderConfig(StrategyConfig):
    """Reads the first documents of the corpus only."""

    documents_read: int = option(2, min=1)


@dataclass(frozen=True, kw_only=True)
class HeadCeiling(EvidenceCeiling):
    """Evidence among the first ``documents_read`` documents (no rank: after the built-in rules)."""

    def reach(self, cfg: Any, item: CeilingItem, env: CeilingEnv) -> Reach:
        return reach_of(
            item.evidence, (d.doc_id for d in item.corpus.documents[: cfg.documents_read])
        )

    def describe(self, cfg: Any, env: CeilingEnv, corpus_tokens: int | None = None) -> str:
        return f"evidence docs among the first {cfg.documents_read} documents"


def head_expected(cfg: Any, corpus_tokens: int, documents: int, window: int | None) -> ExpectedCost:
    """One call per question reading its documents (and 10 tokens of instructions); one setup call
    per corpus."""
    read = corpus_tokens * min(cfg.documents_read, documents) / documents
    return ExpectedCost(per_question=Calls(1, read + 10, 5), once=Calls(1, 100, 7))


def build_graph(config: HeadReaderConfig | None = None) -> Any:
    raise AssertionError("ceilings and plans never run the graph")


@pytest.fixture
def head_reader():
    """``head_reader`` registered as a plug-in registers itself; undone after the test (with what
    the test registers)."""
    with STRATEGIES.scoped(
        "head_reader",
        build_graph,
        config_cls=HeadReaderConfig,
        ceiling=HeadCeiling(),
        expected_cost=head_expected,
    ):
        yield "head_reader"


@dataclass
class Sample:
    sample_id: str
    corpus: Corpus
    question: Question
    metadata: dict


def test_a_plugin_strategy_gets_a_ceiling_row_after_the_built_in_ones(head_reader, tmp_path):
    corpus = Corpus.from_texts([f"Document {i} is about topic {i}. " * 20 for i in range(6)])
    samples = [
        Sample("a", corpus, Question(text="topic 1?"), {"evidence_doc_ids": ["1"]}),
        Sample("b", corpus, Question(text="topic 1 and 4?"), {"evidence_doc_ids": ["1", "4"]}),
    ]
    assert default_strategies() == [*BUILT_IN_ORDER, head_reader]
    ceilings = compute_ceilings(samples, cache_dir=tmp_path)
    assert [c.strategy for c in ceilings] == default_strategies()
    row = ceilings[-1]
    assert (row.complete_share, row.mean_share, row.questions) == (0.5, 0.75, 2)
    assert (
        row.rule == "evidence docs among the first 2 documents"
        and row.config["documents_read"] == 2
    )
    (wider,) = compute_ceilings(samples, [head_reader], {head_reader: {"documents_read": 5}})
    assert wider.complete_share == 1.0
    assert (
        "| head_reader | 50.0% | 75.0% | 2 | evidence docs among the first 2 documents |"
        in format_table(ceilings)
    )


def test_a_plugin_strategy_is_planned_by_its_own_expected_cost(head_reader):
    cfg = STRATEGIES.get(head_reader).make_config()
    plan = estimate(head_reader, cfg, corpus_tokens=600, documents=6, questions=4)
    assert (plan.calls, plan.prompt_tokens, plan.completion_tokens) == (
        4 + 1,
        4 * 210 + 100,
        4 * 5 + 7,
    )
    (planned,), _ = plan_for(
        {head_reader: cfg, "not_registered": cfg}, [(600, 6, 4)], ScriptedChatModel(replies=[])
    )
    assert planned == plan
    assert (
        "head_reader: 4 question(s), ~5 calls, ~940 prompt + ~27 completion tokens"
        in describe_plan([planned], "m", None)
    )


def test_a_plugin_without_hooks_is_skipped_not_guessed(head_reader):
    """No ceiling: a skipped row when asked for by name; no expected cost: left out of the plan, and
    estimate says why."""
    STRATEGIES.register("bare", build_graph, config_cls=HeadReaderConfig)
    corpus = Corpus.from_texts(["one", "two"])
    assert "bare" not in default_strategies()
    (row,) = compute_ceilings(
        [Sample("a", corpus, Question(text="?"), {"evidence_doc_ids": ["0"]})], ["bare"]
    )
    assert row.skipped == "no ceiling rule for this strategy" and row.complete_share is None
    cfg = STRATEGIES.get("bare").make_config()
    plans, _ = plan_for(
        {"bare": cfg, head_reader: cfg}, [(600, 6, 4)], ScriptedChatModel(replies=[])
    )
    assert [p.strategy for p in plans] == [head_reader]
    with pytest.raises(ValueError, match="'bare' registers no expected cost"):
        estimate("bare", cfg, corpus_tokens=600, documents=6, questions=4)


def test_a_plugin_declaring_one_half_of_its_costs_gets_a_clear_error_for_the_other(head_reader):
    """``costs=StrategyCosts(expected=...)`` (or the older ``expected_cost=``) is planned; asking
    for its bounds names what it lacks; giving the old and the new keyword together is refused."""
    STRATEGIES.register(
        "typical_only",
        build_graph,
        config_cls=HeadReaderConfig,
        costs=StrategyCosts(expected=head_expected),
    )
    cfg = STRATEGIES.get("typical_only").make_config()
    assert estimate("typical_only", cfg, corpus_tokens=600, documents=6, questions=4).calls == 5
    with pytest.raises(ValueError, match="'head_reader' declares no cost plan"):
        estimate_bounds(Corpus.from_texts(["one", "two"]), "?", strategy=head_reader)
    with pytest.raises(
        TypeError, match="give costs= or the older cost_plan= / expected_cost=, not both"
    ):
        STRATEGIES.register(
            "both",
            build_graph,
            config_cls=HeadReaderConfig,
            costs=StrategyCosts(expected=head_expected),
            cost_plan=lambda *a: None,
        )
    with pytest.raises(TypeError, match="a model .* or plan= / expected=, not both"):
        StrategyCosts(lambda *a: None, expected=head_expected)  # type: ignore[arg-type]


def test_self_route_falls_back_on_a_plugin_with_half_a_cost_model(head_reader):
    """A fallback with a typical cost only is planned (its typical cost stands in for its bounds)
    but refuses a budget check by name; one with bounds only is checked, and a run plan (no corpus
    to count) says why not."""
    corpus = Corpus.from_texts([f"Document {i} is about topic {i}. " * 20 for i in range(6)])
    cfg = STRATEGIES.get("self_route").make_config(fallback=head_reader)
    plan = estimate("self_route", cfg, corpus_tokens=600, documents=6, questions=2)
    assert plan.calls == 2 * (1 + 0.5 * 1)  # head_expected: 1 call a question
    with pytest.raises(ValueError, match="fallback 'head_reader' has no cost plan"):
        estimate_bounds(corpus, "?", strategy="self_route", fallback=head_reader)

    def head_plan(cfg: Any, corpus: Corpus, questions: Any, llm: Any) -> CostPlan:
        return CostPlan(
            strategy="bounds_only",
            questions=len(questions),
            calls=1,
            max_calls=3,
            prompt_tokens=100,
            max_prompt_tokens=300,
            completion_tokens=5,
            formula="1 to 3 calls",
        )

    STRATEGIES.register(
        "bounds_only", build_graph, config_cls=HeadReaderConfig, cost_plan=head_plan
    )
    bounds = estimate_bounds(corpus, "?", strategy="self_route", fallback="bounds_only")
    assert (bounds.calls, bounds.max_calls) == (1, 1 + 3)
    cfg = STRATEGIES.get("self_route").make_config(fallback="bounds_only")
    with pytest.raises(
        ValueError, match="fallback 'bounds_only' has no cost model .its bounds need the corpus"
    ):
        estimate("self_route", cfg, corpus_tokens=600, documents=6, questions=2)
