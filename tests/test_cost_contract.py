"""The contract of a strategy's cost model: the typical cost the run plan prints
(``longctx.agents.run_plan``) lies within the bounds the budget check uses
(``longctx.agents.estimate``), per question and for a whole run, its index-time part too, for every
built-in strategy, its presets and default config, over corpora of few and many documents, small and
large, and several context windows; and the run plan prints what the model's typical half says."""

from __future__ import annotations

import functools

import pytest

from longctx.agents.api import estimate as bounds_of
from longctx.agents.run_plan import estimate as typical
from longctx.agents.strategy_plan import with_index_calls
from longctx.graphs import STRATEGIES
from longctx.graphs.metering.budget import IndexWork
from longctx.graphs.metering.costs import CorpusShape, Costs
from longctx.retrieval import Corpus
from longctx.retrieval.contract import Question
from tests.registries import built_in
from tests.scripted import ScriptedChatModel

BUILT_IN = built_in(STRATEGIES)
#: (documents, tokens of each): one short document, a few pages, many mid-sized reports, a few long
#: ones.
SHAPES = [(1, 300), (6, 500), (40, 1_500), (4, 50_000)]
#: The model's context window (``None``: not known, the config's default).
WINDOWS = [None, 8_192, 128_000]
QUESTION = Question(text="What is the vault code of site 3?")
#: A longer multiple-choice question with its own output instruction (the bounds take the least and
#: most over the questions).
CHOICE = Question(
    text="Which site keeps the vault whose code is the largest of the six reports?",
    choices={"A": "site 1", "B": "site 3", "C": "site 5"},
    instruction='Format your response as follows: "The correct answer is (insert answer here)".',
)


def asked(k: int) -> list[Question]:
    """``k`` questions: the short one alone, or short and multiple-choice ones alternating."""
    return [QUESTION] if k == 1 else [(QUESTION, CHOICE)[i % 2] for i in range(k)]


@functools.cache
def corpus(documents: int, tokens: int) -> Corpus:
    """``documents`` documents of about ``tokens`` cl100k tokens each (" vault" is one token)."""
    return Corpus.from_texts([f"Report {i}." + " vault" * tokens for i in range(documents)])


def cases() -> list[tuple[str, str | None]]:
    return [
        (name, preset)
        for name in BUILT_IN
        for preset in [None, *sorted(STRATEGIES.get(name).presets)]
    ]


def violations(name: str, preset: str | None) -> list[str]:
    """Every (shape, window, questions) where the typical calls or prompt tokens leave the bounds,
    both from one call of the strategy's model on the same corpus and questions (the real documents,
    and the even split of their size the run plan assumes)."""
    spec = STRATEGIES.get(name)
    assert spec.costs is not None and spec.costs.model is not None, (
        f"{name} registers no cost model"
    )
    cfg = spec.make_config(preset)
    found = []
    for documents, each in SHAPES:
        c = corpus(documents, each)
        for window in WINDOWS:
            llm = ScriptedChatModel(replies=[], context_window=window) if window else None
            for k in (1, 5):
                for shape in (CorpusShape.of(c), CorpusShape.even(c.num_tokens, len(c))):
                    costs: Costs = spec.costs.model(cfg, shape, asked(k), llm=llm, window=window)
                    b, t = costs.bounds, costs.typical
                    calls = t.per_question.calls * k + t.once.calls
                    prompt = t.per_question.prompt_tokens * k + t.once.prompt_tokens
                    i = b.index or IndexWork(
                        what="",
                        calls=0,
                        max_calls=0,
                        prompt_tokens=0,
                        max_prompt_tokens=0,
                        completion_tokens=0,
                    )
                    for what, least, value, most in (
                        ("calls", b.calls, calls, b.max_calls),
                        ("prompt tokens", b.prompt_tokens, prompt, b.max_prompt_tokens),
                        ("index calls", i.calls, t.index.calls, i.max_calls),
                        (
                            "index prompt tokens",
                            i.prompt_tokens,
                            t.index.prompt_tokens,
                            i.max_prompt_tokens,
                        ),
                    ):
                        if not least <= value <= most:
                            found.append(
                                f"{documents} docs x {each:,} tokens, window {window}, {k} "
                                f"question(s), {'real' if shape.corpus else 'even'}: {what} "
                                f"{value:,.0f} not in [{least:,}, {most:,}]"
                            )
    return found


@pytest.mark.parametrize("name,preset", cases())
def test_the_typical_cost_lies_within_the_plans_bounds(name, preset):
    found = violations(name, preset)
    assert not found, f"{name} ({preset or 'default'}): {len(found)} violations:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_run_plan_and_the_budget_read_the_same_model(name):
    """``longctx.agents.estimate`` gives the model's bounds; the run plan its typical half (a
    placeholder question, an even split)."""
    spec = STRATEGIES.get(name)
    cfg = spec.make_config()
    c = corpus(6, 500)
    llm = ScriptedChatModel(reply_fn=lambda prompt: "x")  # never called: its tokenizer counts both
    # two questions, not one twice: a checkpointed MemAgent run reads a repeat once
    bounds = spec.costs.model(cfg, CorpusShape.of(c), [QUESTION, CHOICE], llm=llm).bounds
    if spec.index_calls is not None:  # the index calls a fresh cache still needs count in the least
        bounds = with_index_calls(spec, cfg, c, llm, None, bounds)
    assert bounds_of(c, [QUESTION, CHOICE], strategy=name, llm=llm) == bounds
    t = spec.costs.typical(cfg, corpus_tokens=c.num_tokens, documents=len(c), window=8_192)
    plan = typical(name, cfg, c.num_tokens, len(c), 3, 8_192)
    assert (plan.calls, plan.prompt_tokens) == (
        3 * t.per_question.calls + t.once.calls,
        3 * t.per_question.prompt_tokens + t.once.prompt_tokens,
    )
