"""Self-Route's settings (Li et al. 2024) and its full-context leg's config."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from longctx.graphs.plugin.api import STRATEGIES, ConfigError, RetrievalSettings, option


@dataclass(frozen=True, kw_only=True)
class SelfRouteConfig(RetrievalSettings):
    """Self-Route with Li et al.'s retrieval defaults and a fallback for corpora beyond the window.

    Attributes:
        order: Order of the retrieved chunks in the prompt (see ``rag``).
        max_new_tokens / temperature: Budget and sampling of every answer call.
        context_window / default_context_window / prompt_reserve_tokens: The full-context
            leg's window, as in :class:`~graphs.full_context.FullContextConfig`.
        fallback: Strategy for declined questions whose corpus exceeds the window:
            ``full_context`` (the paper: the middle-truncated window) or, our option for
            4M-10M-token corpora (preset ``beyond-window``), ``memagent``, which reads every token.
        fallback_options: Config fields of the fallback strategy (e.g. ``{"chunk_tokens": 4000}``).
        full_context_prompt: The full-context leg's prompt: the benchmark's official one, or ours.
    """

    chunk_size: int = option(
        300, min=1, source="Li et al. 2024 (arXiv 2407.16833), setup: 300-word chunks"
    )
    top_k: int = option(5, min=1, source="Li et al. 2024 (arXiv 2407.16833), setup: top-5 chunks")
    order: Literal["document", "rank"] = option(
        "rank", source="retrieval rank, as LongBench v1's RAG (document order is our option)"
    )
    max_new_tokens: int = option(128, min=1, source="LongBench v2 pred.py max_tokens=128")
    temperature: float = option(0.0, min=0.0)
    context_window: int | None = option(None, min=1)
    default_context_window: int = option(
        128_000, min=1, source="LongBench v2 model2maxlen: 120000 for 128k models"
    )
    prompt_reserve_tokens: int = option(64, min=0)
    fallback: str = option(
        "full_context", source="Li et al. 2024: declined queries get the (truncated) full context"
    )
    fallback_options: Mapping[str, Any] = option({})
    full_context_prompt: Literal["benchmark", "ours"] = option(
        "benchmark", source="the benchmark's official prompt, as full_context"
    )

    def check(self) -> None:
        """Retrieval settings as for RAG; the fallback must be another registered strategy with
        valid options."""
        super().check()
        if self.fallback == "self_route":
            raise ConfigError(
                "Option 'fallback': self_route cannot be its own fallback; use 'memagent' or "
                "'full_context'"
            )
        try:
            STRATEGIES.get(self.fallback).make_config(**dict(self.fallback_options))
        except (KeyError, TypeError, ConfigError) as exc:
            raise ConfigError(f"Option 'fallback'/'fallback_options': {exc}") from None

    def full_context(self) -> Any:
        """The config of the full-context leg (same window, answer budget and sampling), made by
        the registered ``full_context`` strategy."""
        return STRATEGIES.get("full_context").make_config(
            context_window=self.context_window,
            default_context_window=self.default_context_window,
            max_new_tokens=self.max_new_tokens,
            prompt_reserve_tokens=self.prompt_reserve_tokens,
            temperature=self.temperature,
            prompt=self.full_context_prompt,
        )
