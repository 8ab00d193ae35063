"""What a strategy's prompts for different questions over one corpus share at their start.

A provider's prompt cache (OpenAI's, vLLM's automatic prefix caching) and the embedded model's
kept context skip the part of a prompt that an earlier request began with. Questions asked over
one corpus profit only where each question's prompt starts with the same long text: full context
puts the corpus first and the question last, so questions 2..N read the corpus from the cache;
MemAgent puts the question before every chunk (its paper's order), RAG's retrieved chunks differ
per question, so they do not. A strategy declares it on its registry entry (``prompt_sharing=``);
the run plan (:mod:`longctx.agents.run_plan`) says from it which strategies can profit and by about
how many tokens, and the report shows what the server actually reported (``cached_prompt_tokens``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from longctx.graphs.plugin.config import StrategyConfig


def _always(cfg: StrategyConfig) -> float:
    return 1.0


@dataclass(frozen=True)
class PromptSharing:
    """The long text a strategy's prompts start with, the same for every question over one corpus.

    Attributes:
        what: That text, in words (``"the corpus text (truncated to the window)"``).
        share: ``config -> float``: the typical share of questions whose calls start with it
            (1.0: every question; Self-Route: the questions RAG declines, when its fallback is full
            context).
        options: Config overrides that put the shared text first where the strategy's default keeps
            its paper's order (PAI: ``judge_order="chunk_first"``); applied to runs whose prompts
            are ours (own corpora, ``BenchmarkSpec.shared_first``), never to a benchmark's, and not
            over an option or preset the user chose. Empty when the text already comes first.
    """

    what: str
    share: Callable[[Any], float] = _always  # Any: each strategy's share reads its own config class
    options: Mapping[str, Any] = field(default_factory=dict)


def shared_prompt_tokens(
    sharing: PromptSharing | None,
    cfg: StrategyConfig,
    corpus_tokens: int,
    questions: int,
    per_question_prompt: float,
) -> float:
    """Prompt tokens a prompt cache can serve over one corpus's ``questions``: every question after
    the first reads the shared text (the corpus, no longer than a question's typical prompt,
    ``per_question_prompt``) from the cache, as often as its calls start with it; 0 for a strategy
    that declares no shared start, or for one question."""
    if sharing is None or questions < 2:
        return 0.0
    return (
        (questions - 1)
        * min(corpus_tokens, per_question_prompt)
        * max(0.0, min(1.0, sharing.share(cfg)))
    )


def shared_first_options(sharing: PromptSharing | None, user: Mapping[str, Any]) -> dict[str, Any]:
    """``user``'s options for a run whose prompts are ours, with the strategy's shared-first options
    under them (the user's own choice wins; a preset keeps its own settings)."""
    if sharing is None or not sharing.options or "preset" in user:
        return dict(user)
    return {**sharing.options, **user}
