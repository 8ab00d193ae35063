"""The run context every strategy graph receives (LangGraph ``context_schema``)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from langchain_core.language_models import BaseChatModel

from longctx.graphs.metering.budget_left import UNLIMITED, BudgetLeft
from longctx.retrieval import Index
from longctx.retrieval.contract import Corpus
from longctx.retrieval.contract.errors import LongctxError

#: The strategy's config class (``RagConfig``, ``PaiConfig``...): ``StrategyContext[RagConfig]``
#: gives RAG's nodes a typed ``context.config``.
ConfigT = TypeVar("ConfigT")


class MissingIndex(LongctxError, RuntimeError):
    """A node that retrieves ran without a retrieval index in its run context."""


@dataclass(frozen=True)
class StrategyContext(Generic[ConfigT]):
    """Immutable per-run dependencies injected into every node (LangGraph ``context_schema``).

    Generic over the strategy's config type, so a node annotated
    ``runtime: Runtime[StrategyContext[RagConfig]]`` reads a typed ``runtime.context.config``.

    Attributes:
        llm: The chat model.
        config: The strategy's config object.
        corpus: The corpus being answered over.
        index: The retrieval index, for strategies that retrieve (:meth:`require_index`).
        cache_dir: Root of the on-disk cache (``None`` = ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``), for strategies that checkpoint a sub-run.
        budget: What the run's budget has left, read live from its guard (calls, prompt
            tokens and dollars left, ``None`` where unlimited:
            :class:`~graphs.metering.budget_left.BudgetLeft`), so an agent can plan its next turn; a
            run without a budget has :data:`UNLIMITED`.
    """

    llm: BaseChatModel
    config: ConfigT
    corpus: Corpus
    index: Index | None = None
    cache_dir: Path | None = None
    budget: BudgetLeft = UNLIMITED
    _gates: dict[Any, asyncio.Semaphore] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    def require_index(self) -> Index:
        """The run's retrieval index.

        Raises:
            MissingIndex: The run context has none (a retrieving strategy run without
                ``uses_index``, or a context built by hand without ``index=``).
        """
        if self.index is None:
            raise MissingIndex(
                f"{type(self.config).__name__}: this strategy retrieves, but its run context has "
                "no index (pass index= or register it with uses_index=True)"
            )
        return self.index

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
