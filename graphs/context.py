"""The run context every strategy graph receives (LangGraph ``context_schema``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from retrieval import Index
from retrieval.contract import Corpus


@dataclass(frozen=True)
class StrategyContext:
    """Immutable per-run dependencies injected into every node (LangGraph ``context_schema``).

    Attributes:
        llm: The chat model.
        config: The strategy's config object.
        corpus: The corpus being answered over.
        index: The retrieval index, for strategies that retrieve.
        cache_dir: Root of the on-disk cache (``None`` = ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``), for strategies that checkpoint a sub-run.
    """

    llm: BaseChatModel
    config: Any
    corpus: Corpus
    index: Index | None = None
    cache_dir: Path | None = None
    _gates: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def call_gate(self, limit: int) -> asyncio.Semaphore:
        """The run's semaphore of ``limit`` model calls in flight on the running event loop.

        A node task that makes several calls at once (PAI judges one chunk for every
        sub-question) holds it per call, so calls in flight stay within the run's
        concurrency whatever the tasks' sizes.
        """
        key = (asyncio.get_running_loop(), limit)
        gate = self._gates.get(key)
        if gate is None:
            gate = self._gates[key] = asyncio.Semaphore(limit)
        return gate
