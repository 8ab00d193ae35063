"""One call of the run path (:func:`longctx.graphs.runtime.run.run_strategy` / ``arun_strategy``):
its options, and what the sync and async twins share (the run mode, the budget guard, the cache, the
index and its time, the effective config)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Generic, Required, TypedDict

from langchain_core.callbacks import Callbacks
from langchain_core.language_models import BaseChatModel

from longctx.graphs.calls.llm import has_native_async
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.metering.budget import Budget
from longctx.graphs.metering.budget_left import budget_left
from longctx.graphs.plugin.config import ConfigT
from longctx.graphs.plugin.context import StrategyContext
from longctx.graphs.plugin.registry import Strategy
from longctx.graphs.runtime.run_config import effective_config, with_budget
from longctx.retrieval import Index
from longctx.retrieval.contract import Answer, Corpus, Question
from longctx.retrieval.extras import require_all
from longctx.retrieval.index.waits import counting_waits


class RunOptions(TypedDict, total=False):
    """How :func:`~graphs.runtime.run.run_strategy` / :func:`~graphs.runtime.run.arun_strategy` run
    (``llm`` and ``corpus`` required).

    Attributes:
        llm: The chat model.
        corpus: The documents.
        index: A prebuilt index; built (or loaded from the cache) when the strategy needs one.
        preset: The preset the config came from, recorded with each answer.
        cache_dir: Root of the index cache and of batched runs' checkpoints.
        callbacks: Extra LangChain callbacks (a list, or a parent run's callback manager).
        concurrency: Questions in flight at once for single-question strategies (default 1; a
            batched strategy's own concurrency option bounds its calls instead).
        show_progress: Progress bars (index build, a batched run's steps); default off.
        key_prefix: Separates a batched run made for another purpose (Self-Route's leg).
        budget: Limits of the whole call (all questions together): the run stops issuing
            model calls before one would pass it, and the answers say ``stopped="budget"``.
        checkpoint: Checkpoint each single-question run's steps under ``cache_dir`` so a killed
            run resumes at its last finished step (:mod:`longctx.graphs.runtime.run_checkpoint`);
            default off.
    """

    llm: Required[BaseChatModel]
    corpus: Required[Corpus]
    index: Index | None
    preset: str | None
    cache_dir: str | Path | None
    callbacks: Callbacks
    concurrency: int
    show_progress: bool
    key_prefix: str | None
    budget: Budget | None
    checkpoint: bool


class RunSetup(Generic[ConfigT]):
    """One call of the run path: what its sync and async twins share; they differ only in how they
    wait."""

    def __init__(
        self, spec: Strategy[ConfigT], cfg: ConfigT, questions: list[Question], options: RunOptions
    ) -> None:
        if spec.needs is not None:  # every missing extra named at once, before any model call
            require_all(spec.needs(cfg), who=f"Strategy {spec.name!r}")
        self.started = time.perf_counter()
        self.spec, self.cfg, self.questions = spec, cfg, questions
        self.llm, self.corpus = options["llm"], options["corpus"]
        self.batch = spec.batch
        self.index = options.get("index")
        self.preset = options.get("preset")
        self.concurrency = options.get("concurrency", 1)
        self.show_progress = options.get("show_progress", False)
        self.key_prefix = options.get("key_prefix")
        self.checkpoint = options.get("checkpoint", False)
        # one guard for the whole call
        self.callbacks = with_budget(options.get("callbacks"), options.get("budget"), self.llm)
        cache_dir = options.get("cache_dir")
        self.cache = Path(cache_dir) if cache_dir else None
        self.index_seconds = 0.0
        self.index_waited = (
            0.0  # of the time indexing: waiting for another's build of the same index
        )
        self.effective: dict[str, Any] = {}

    def awaits(self, use_async: bool | None) -> bool:
        """Whether the sync entry point drives this run on the event loop (see ``run_strategy``'s
        ``use_async``)."""
        if self.batch is not None:
            return False
        return (
            self.spec.run_mode.async_fan_out and has_native_async(self.llm)
            if use_async is None
            else use_async
        )

    @property
    def needs_index(self) -> bool:
        """The strategy retrieves and no index was given."""
        return self.spec.uses_index and self.index is None

    def build_index(self) -> Index:
        """Build (or load from the cache) the index the config asks for.

        Raises:
            TypeError: The strategy is registered with ``uses_index=True`` but its config has no
                retrieval settings.
        """
        if not isinstance(self.cfg, RetrievalSettings):
            raise TypeError(
                f"Strategy {self.spec.name!r} uses an index, but its config "
                f"{type(self.cfg).__name__} is no RetrievalSettings"
            )
        # waiting for another's build of this index is not this run's
        with counting_waits() as wait:
            index = RetrievalService(
                settings=self.cfg, cache_dir=self.cache, show_progress=self.show_progress
            ).build_index(self.corpus)
        self.index_waited = wait.seconds
        return index

    def indexed(self, index: Index | None) -> None:
        """Record the run's index and the time it took to build or load (none when the run was given
        one or the strategy uses none; the wait for another run's build of it apart, as queued time,
        so a build is counted once), then what the answers will record as run."""
        made = self.needs_index
        self.index = index
        self.index_seconds = time.perf_counter() - self.started - self.index_waited if made else 0.0
        self.effective = effective_config(self.spec, self.cfg, self.llm, self.preset)

    def context(self, llm: BaseChatModel) -> StrategyContext[ConfigT]:
        """The run context of a single-question graph."""
        return StrategyContext(
            llm=llm,
            config=self.cfg,
            corpus=self.corpus,
            index=self.index,
            cache_dir=self.cache,
            budget=budget_left(self.callbacks),
        )

    def finish(self, answers: list[Answer]) -> list[Answer]:
        """``answers`` with the index time shared out (added to what an answer's own index-time
        build reported: RAPTOR's tree, HippoRAG's graph), and the wait for another's build of
        the index as queued time."""
        for a in answers:
            a.usage.index_seconds += self.index_seconds / len(answers)
            a.usage.seconds += self.index_seconds / len(answers)
            a.usage.queued_seconds += self.index_waited / len(answers)
        return answers
