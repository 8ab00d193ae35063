"""The full-context baseline's settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longctx.graphs.plugin.api import StrategyConfig, option


@dataclass(frozen=True, kw_only=True)
class FullContextConfig(StrategyConfig):
    """Full-context baseline.

    Attributes:
        context_window: Model window in tokens; ``None`` asks the model (the embedded
            model reports its own), else 128000 (GPT-4o class; LongBench v2 truncates to 120000).
        max_new_tokens: Answer budget, subtracted from the window (a benchmark's protocol overrides
            it).
        prompt_reserve_tokens: Room for chat-template tokens around the prompt.
        temperature: 0 = greedy (a benchmark's protocol overrides it).
        prompt: ``"benchmark"``: the benchmark's official full-context prompt and truncation
            budget when the question carries a protocol; ``"ours"``: our template always.
    """

    context_window: int | None = option(None, min=1)
    default_context_window: int = option(
        128_000, min=1, source="LongBench v2 model2maxlen: 120000 for 128k models"
    )
    max_new_tokens: int = option(128, min=1, source="LongBench v2 pred.py max_tokens=128")
    prompt_reserve_tokens: int = option(64, min=0)
    temperature: float = option(0.0, min=0.0)
    prompt: Literal["benchmark", "ours"] = option(
        "benchmark", source="the benchmark's official prompt when the question carries one"
    )
