"""The contract between a strategy's two cost figures: the typical cost the run plan prints
(``agents.run_plan``) lies within the bounds the budget check uses (``agents.estimate``), per
question and for a whole run, for every built-in strategy, its presets and default config, over
corpora of few and many documents, small and large, and several context windows."""

from __future__ import annotations

import functools

import pytest

from agents.run_plan import estimate as typical
from graphs import STRATEGIES
from retrieval import Corpus
from retrieval.contract import Question
from tests.scripted import ScriptedChatModel

BUILT_IN = ["rag", "self_route", "self_ask", "pai", "pai_minus", "memagent", "full_context", "structured"]
#: (documents, tokens of each): one short document, a few pages, many mid-sized reports, a few long ones.
SHAPES = [(1, 300), (6, 500), (40, 1_500), (4, 50_000)]
#: The model's context window (``None``: not known, the config's default).
WINDOWS = [None, 8_192, 128_000]
QUESTION = Question(text="What is the vault code of site 3?")


@functools.cache
def corpus(documents: int, tokens: int) -> Corpus:
    """``documents`` documents of about ``tokens`` cl100k tokens each (" vault" is one token)."""
    return Corpus.from_texts([f"Report {i}." + " vault" * tokens for i in range(documents)])


def cases() -> list[tuple[str, str | None]]:
    return [(name, preset) for name in BUILT_IN for preset in [None, *sorted(STRATEGIES.get(name).presets)]]


def violations(name: str, preset: str | None) -> list[str]:
    """Every (shape, window, questions) where the typical calls or prompt tokens leave the plan's bounds."""
    spec = STRATEGIES.get(name)
    cfg = spec.make_config(preset)
    found = []
    for documents, each in SHAPES:
        c = corpus(documents, each)
        for window in WINDOWS:
            llm = ScriptedChatModel(replies=[], context_window=window) if window else None
            for k in (1, 5):
                bounds = spec.cost_plan(cfg, c, [QUESTION] * k, llm)
                plan = typical(name, cfg, c.num_tokens, len(c), k, window)
                for what, least, value, most in (("calls", bounds.calls, plan.calls, bounds.max_calls),
                                                  ("prompt tokens", bounds.prompt_tokens, plan.prompt_tokens, bounds.max_prompt_tokens)):  # fmt: skip
                    if not least <= value <= most:
                        found.append(f"{documents} docs x {each:,} tokens, window {window}, {k} question(s): {what} {value:,.0f} not in [{least:,}, {most:,}]")
    return found


@pytest.mark.parametrize("name,preset", cases())
def test_the_typical_cost_lies_within_the_plans_bounds(name, preset):
    found = violations(name, preset)
    assert not found, f"{name} ({preset or 'default'}): {len(found)} violations:\n" + "\n".join(found)
