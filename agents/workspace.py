"""A :class:`Workspace`: one corpus opened once, for interactive use (a notebook, an app, a job).

    ws = Workspace("examples/corpus", llm="openai:gpt-4o-mini", price=(0.15, 0.60))
    ws.answer("Where is Vantaa Robotics based?")                 # rag; the BM25 index is built here
    ws.answer("Who runs Kestrel Aviation?", top_k=3)             # the same index, held in memory
    ws.compare("Which company grew most?", strategies=["rag", "memagent"]) # side by side, with cost
    ws.estimate("Which company grew most?", strategy="memagent") # before any call
    ws.add("new_reports/") # later answers see the new documents

The chat model, the cache folder and the corpus are fixed when the workspace is made; each
index a strategy asks for (retriever, chunking) is built or loaded on first use and kept, so
later questions and strategies sharing it skip even the cache lookup (the first answer's
usage carries the build time). ``add`` swaps in the larger corpus and drops the held indexes,
so the next answer indexes (or loads) the new corpus.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from longctx.agents.api import aanswer_many, answer_many
from longctx.agents.api import estimate as estimate_plan
from longctx.agents.chat_models import make_chat_model
from longctx.agents.comparison import Comparison
from longctx.agents.corpus_merge import merged
from longctx.agents.events import Event
from longctx.agents.streaming import astream_answer, stream_answer
from longctx.graphs import STRATEGIES
from longctx.graphs.calls.llm import model_id
from longctx.graphs.index.retrieval_service import RetrievalService
from longctx.graphs.index.retrieval_settings import RetrievalSettings
from longctx.graphs.metering.budget import Budget, BudgetExceeded, CostPlan
from longctx.graphs.plugin.strategy_registry import one_answer_strategy
from longctx.retrieval import Index, default_cache_dir
from longctx.retrieval.contract import Answer, Corpus, CorpusError, Document, Question, as_question
from longctx.retrieval.contract.errors import ConfigError, OptionError
from longctx.retrieval.duplicates import checked_duplicates
from longctx.retrieval.index.waits import counting_waits, waited_for
from longctx.retrieval.readers import read_path

Paths = str | Path | Document | Iterable[str | Path | Document]


class Workspace:
    """One corpus, one chat model and one cache folder, with the indexes it needs held in memory.

    Args:
        corpus: A :class:`~retrieval.contract.Corpus`, or a file or folder to read (as
            ``Corpus.from_path``).
        llm: A chat model or spec (``"openai:MODEL"``, ``"embedded"``); ``None``: ``$LONGCTX_LLM``
            or the embedded default, resolved once, here.
        strategy: The strategy ``answer`` and ``estimate`` use when none is named.
        cache_dir: Root of the index cache and checkpoints (default ``$LONGCTX_CACHE_DIR`` or
            ``~/.cache/longctx``, resolved once, here).
        price: ``(prompt, completion)`` or ``(prompt, completion, cached)`` USD per 1M tokens of the
            model (or an ``longctx.experiments.planning.prices.Price``), for the USD column of
            :meth:`compare` (priced as the report prices) and for a budget's ``max_cost_usd``
            (``Budget(max_cost_usd=0.05)`` needs no price of its own here).
        show_progress: Progress bars while indexing and reading (default: when stderr is a
            terminal).
        duplicates: ``"drop"`` (default): a document whose text equals one already read is left out,
            here and in :meth:`add`, with a warning naming both; ``"keep"`` keeps every copy.
    """

    def __init__(
        self,
        corpus: Corpus | str | Path,
        *,
        llm: str | BaseChatModel | None = None,
        strategy: str = "rag",
        cache_dir: str | Path | None = None,
        price: Any = None,
        show_progress: bool | None = None,
        duplicates: str = "drop",
    ) -> None:
        self.duplicates = checked_duplicates(duplicates)
        if isinstance(corpus, (str, Path)):
            corpus = Corpus.from_path(
                corpus, show_progress=bool(show_progress), duplicates=duplicates
            )
        if not isinstance(corpus, Corpus):
            raise OptionError(f"corpus must be a Corpus or a path, got {type(corpus).__name__}")
        STRATEGIES.get(one_answer_strategy(strategy))  # unknown names fail here, with suggestions
        self.strategy = strategy
        # validated: a graphs.metering.pricing.TokenPrice or None
        self.price = Budget(price=price).price
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self.show_progress = show_progress
        self.llm = make_chat_model(llm)
        self._corpus = corpus
        self._indexes: dict[str, Index] = {}
        self._lock = threading.RLock()
        #: Indexes this workspace built or loaded (a repeated question or strategy adds none).
        self.index_loads = 0

    @property
    def corpus(self) -> Corpus:
        """The documents answered over (:meth:`add` replaces it with a larger one)."""
        return self._corpus

    def __repr__(self) -> str:
        return (
            f"Workspace({len(self._corpus)} documents, llm={model_id(self.llm).split(' @ ')[0]!r}, "
            f"strategy={self.strategy!r}, indexes held={len(self._indexes)})"
        )

    # -- answering ------------------------------------------------------------------
    def answer(
        self,
        question: str | Question,
        *,
        strategy: str | None = None,
        preset: str | None = None,
        budget: Budget | None = None,
        callbacks: Any = None,
        **options: Any,
    ) -> Answer:
        """:func:`longctx.agents.answer` over this workspace's corpus, model and cache, on its held
        index.

        ``budget`` and ``callbacks`` pass through; ``**options`` are the strategy's config fields.
        """
        return self.answer_many(
            [question],
            strategy=strategy,
            preset=preset,
            budget=budget,
            callbacks=callbacks,
            **options,
        )[0]

    def answer_many(
        self,
        questions: Sequence[str | Question],
        *,
        strategy: str | None = None,
        preset: str | None = None,
        budget: Budget | None = None,
        callbacks: Any = None,
        concurrency: int | None = None,
        **options: Any,
    ) -> list[Answer]:
        """:func:`longctx.agents.answer_many` (several questions, one run) on this workspace."""
        name, qs, corpus, held, built = self._prepare(questions, strategy, preset, options)
        started = time.perf_counter()
        with counting_waits() as wait:
            index = held() if built else held
        indexing = time.perf_counter() - started if built else 0.0
        answers = answer_many(
            corpus,
            qs,
            strategy=name,
            llm=self.llm,
            preset=preset,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
            concurrency=concurrency,
            index=index,
            callbacks=callbacks,
            budget=self._budget(budget),
            **options,
        )
        return _with_index_time(answers, indexing, wait.seconds)

    async def aanswer(
        self,
        question: str | Question,
        *,
        strategy: str | None = None,
        preset: str | None = None,
        budget: Budget | None = None,
        callbacks: Any = None,
        **options: Any,
    ) -> Answer:
        """:meth:`answer` for async code (see :func:`longctx.agents.aanswer`); an index build runs
        in a worker thread."""
        name, qs, corpus, held, built = self._prepare([question], strategy, preset, options)
        started = time.perf_counter()
        # the worker thread copies this context: its waits count here
        with counting_waits() as wait:
            index = await asyncio.to_thread(held) if built else held
        indexing = time.perf_counter() - started if built else 0.0
        answers = await aanswer_many(
            corpus,
            qs,
            strategy=name,
            llm=self.llm,
            preset=preset,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
            index=index,
            callbacks=callbacks,
            budget=self._budget(budget),
            **options,
        )
        return _with_index_time(answers, indexing, wait.seconds)[0]

    def stream_answer(
        self, question: str | Question, *, strategy: str | None = None, **options: Any
    ) -> Iterator[Event]:
        """:func:`longctx.agents.stream_answer` on this workspace's corpus, model and cache: the
        run's events, then the answer (its index comes from the cache, where an earlier answer put
        it)."""
        name = self._checked(question, strategy, options)
        options = {**options, "budget": self._budget(options.get("budget"))}
        return stream_answer(
            self._corpus,
            question,
            strategy=name,
            llm=self.llm,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
            **options,
        )

    def astream_answer(
        self, question: str | Question, *, strategy: str | None = None, **options: Any
    ) -> AsyncIterator[Event]:
        """:meth:`stream_answer` for async code (:func:`longctx.agents.astream_answer`)."""
        name = self._checked(question, strategy, options)
        options = {**options, "budget": self._budget(options.get("budget"))}
        return astream_answer(
            self._corpus,
            question,
            strategy=name,
            llm=self.llm,
            cache_dir=self.cache_dir,
            show_progress=self.show_progress,
            **options,
        )

    def compare(
        self,
        question: str | Question,
        *,
        strategies: Sequence[str] | Mapping[str, Mapping[str, Any]] = ("rag", "full_context"),
        budget: Budget | None = None,
        callbacks: Any = None,
    ) -> Comparison:
        """One question answered by each strategy in turn, side by side with calls, tokens, seconds
        and USD.

        ``strategies`` is a list of names, or a mapping name -> that strategy's options
        (``{"rag": {"top_k": 3}, "memagent": {"chunk_tokens": 400}}``). Every name and option is
        checked before the first call. ``budget`` applies to each strategy's answer on its own; a
        strategy whose plan cannot fit it is refused up front and shows its reason in ``error``.
        """
        q = as_question(question)
        wanted = (
            {name: {} for name in strategies}
            if not isinstance(strategies, Mapping)
            else {k: dict(v) for k, v in strategies.items()}
        )
        if not wanted:
            raise ConfigError(
                "compare needs at least one strategy, e.g. strategies=['rag', 'full_context']"
            )
        for name, options in wanted.items():
            # unknown names and options fail before any call
            STRATEGIES.get(one_answer_strategy(name)).make_config(None, **options)
        result = Comparison(question=q, price=self.price, order=list(wanted))
        for name, options in wanted.items():
            try:
                result.answers[name] = self.answer(
                    q, strategy=name, budget=budget, callbacks=callbacks, **options
                )
            except BudgetExceeded as exc:
                result.errors[name] = str(exc)
        return result

    def estimate(
        self,
        question: str | Question | list[str | Question],
        *,
        strategy: str | None = None,
        preset: str | None = None,
        **options: Any,
    ) -> CostPlan:
        """What :meth:`answer` would spend, before any call (:func:`longctx.agents.estimate`, with
        this workspace's model for its tokenizer and window); ``plan.cost_usd(ws.price)`` gives
        USD."""
        return estimate_plan(
            self._corpus,
            question,
            strategy=strategy or self.strategy,
            llm=self.llm,
            preset=preset,
            **options,
        )

    def _budget(self, budget: Budget | None) -> Budget | None:
        """``budget`` with this workspace's price where it sets ``max_cost_usd`` and carries no
        price of its own."""
        if budget is None or budget.price is not None or self.price is None:
            return budget
        return dataclasses.replace(budget, price=self.price)

    # -- the corpus -------------------------------------------------------------------
    def add(self, paths: Paths) -> list[str]:
        """Add files, folders (read as ``Corpus.from_path`` reads them) or :class:`Document`
        objects.

        A document whose text is already present (under any id) is skipped, with a warning
        naming it (kept with ``duplicates="keep"``); a file read again from the
        same path with new text replaces its old version; a new file whose id (its name under
        the folder given) is taken by another file's gets its path as id. The held indexes are
        dropped, so the next answer indexes the new corpus: documents only appended grow the
        cached index by a segment (``longctx.retrieval.index``: the new documents alone are
        indexed); a replaced document rebuilds it.

        Returns:
            The ids of the documents added or replaced (empty when nothing changed).

        Raises:
            CorpusError: A path that does not exist or cannot be read.
        """
        items = [paths] if isinstance(paths, (str, Path, Document)) else list(paths)
        if not items:
            raise ConfigError("Nothing to add: give a file, a folder, or a list of them")
        read: list[Document] = []
        for item in items:
            if isinstance(item, Document):
                read.append(item)
                continue
            path = Path(item).expanduser()
            if not path.exists():
                raise CorpusError(f"Cannot add {item}: no such file or folder")
            read.extend(read_path(path, show_progress=bool(self.show_progress)))
        with self._lock:
            documents, changed = merged(self._corpus.documents, read, self.duplicates)
            if changed:
                self._corpus = Corpus(documents)
                self._indexes.clear()
        return changed

    def _checked(self, question: str | Question, strategy: str | None, options: dict) -> str:
        """The strategy's name, once the question, the name and the options are checked (a stream
        fails here, not mid-way)."""
        name = strategy or self.strategy
        as_question(question)
        config = {
            k: v
            for k, v in options.items()
            if k not in ("preset", "budget", "callbacks", "streaming")
        }
        STRATEGIES.get(name).make_config(options.get("preset"), **config)
        return name

    # -- indexes ------------------------------------------------------------------------
    def _prepare(
        self,
        questions: Sequence[str | Question],
        strategy: str | None,
        preset: str | None,
        options: dict,
    ) -> tuple:
        """Checked inputs: the strategy name, the questions, the corpus, and its held index (or a
        function building it, and True); the corpus and the index are taken together, so an ``add``
        meanwhile cannot mix them."""
        name = strategy or self.strategy
        if isinstance(questions, (str, Question)):
            raise OptionError("answer_many takes a list of questions")
        qs = [as_question(q) for q in questions]
        spec = STRATEGIES.get(one_answer_strategy(name))
        cfg = spec.make_config(preset, **options)
        with self._lock:
            corpus = self._corpus
        if not qs or not spec.uses_index or not isinstance(cfg, RetrievalSettings):
            return name, qs, corpus, None, False
        key = json.dumps(
            {
                "retriever": cfg.retriever,
                "options": dict(cfg.retriever_options),
                "chunking": cfg.chunking().as_dict(),
            },
            sort_keys=True,
            default=str,
        )
        with self._lock:
            corpus, held = self._corpus, self._indexes.get(key)
        if held is not None:
            return name, qs, corpus, held, False

        def build() -> Index:
            with waited_for(self._lock):  # another thread's build of it: waited, not built here
                if key in self._indexes:
                    return self._indexes[key]
                index = RetrievalService(
                    settings=cfg, cache_dir=self.cache_dir, show_progress=bool(self.show_progress)
                ).build_index(corpus)
                if self._corpus is corpus:  # not replaced by add() meanwhile
                    self._indexes[key] = index
                self.index_loads += 1
                return index

        return name, qs, corpus, build, True


def _with_index_time(answers: list[Answer], seconds: float, waited: float = 0.0) -> list[Answer]:
    """The answers with the time spent building or loading their index shared out over them
    (the run path saw a ready index, so it counted none); of ``seconds``, ``waited`` for another
    thread's build of it is queued time (that build is counted once, by the answer that made it)."""
    for a in answers:
        a.usage.index_seconds += (seconds - waited) / len(answers)
        a.usage.seconds += (seconds - waited) / len(answers)
        a.usage.queued_seconds += waited / len(answers)
    return answers
