"""What one experiment runs (:class:`RunConfig`: a benchmark, the strategies, the model), checked
before any work, and the samples it selects."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longctx import STRATEGIES, Budget
from longctx.experiments.benchmarks import BENCHMARKS, load_benchmark
from longctx.experiments.runner.variants import variant_options
from longctx.graphs.calls.prompt_sharing import shared_first_options

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """One experiment: a benchmark, the strategies to compare, the model.

    Attributes:
        benchmark: Registry name (``longbench_v2``, ``lveval``, ``synthetic``, ...).
        strategies: Strategy registry names, compared on the same samples, or variants
            (``rag@hybrid``: a strategy, ``@``, a label), each its own column with its own options.
        llm: Chat model spec (``embedded``, ``openai:MODEL``); ignored when a model
            object is passed.
        data_path: Where the benchmark's files are (default ``$LONGCTX_DATA_DIR/<benchmark>``).
        datasets: Subsets of the benchmark (e.g. LongBench dataset names); all when empty.
        limit: First N samples only.
        concurrency: (sample, strategy) pairs in flight at once.
        strategy_options: Per-strategy config overrides, e.g. ``{"rag": {"top_k": 5}}``, or per
            variant (``{"rag@hybrid": {"retriever": "hybrid"}}``); a strategy's own apply to each of
            its variants too, under the variant's
            (:func:`longctx.experiments.runner.variants.variant_options`). For own corpora
            (``BenchmarkSpec.shared_first``) each strategy's shared-first options go under them
            (:func:`longctx.graphs.calls.prompt_sharing.shared_first_options`; PAI's
            ``judge_order="chunk_first"``).
        llm_cache: Replay temperature-0 calls from ``<out>/llm_cache.sqlite``.
        loader_options: Options of the benchmark's loader, e.g. ``{"lengths": ["16k"]}`` for
            LV-Eval or ``{"seed": 1}`` for Loong.
        budget: Limits of each work unit (a sample x strategy, or a batched strategy's group of
            questions over one corpus): a plan over it fails its rows before any call; a unit
            that reaches it keeps rows marked ``stopped``, which a rerun answers again
            (MemAgent resumes).
        inject_once: "Inject once, ask many": every strategy answers all questions over one corpus
            in one work unit, so its index (or tree, or extraction) is built or loaded once per
            context and shared; MemAgent still reads the stream once per question. Off: a unit per
            question (a failure fails one row; the index is still cached on disk per corpus).
    """

    benchmark: str
    strategies: tuple[str, ...]
    llm: str | None = None
    data_path: str | None = None
    datasets: tuple[str, ...] = ()
    limit: int | None = None
    concurrency: int = 2
    strategy_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    llm_cache: bool = True
    loader_options: Mapping[str, Any] = field(default_factory=dict)
    budget: Budget | None = None
    inject_once: bool = False

    @classmethod
    def for_corpus(
        cls, corpus: str | Path, questions: str | Path, strategies: Sequence[str], **options: Any
    ) -> RunConfig:
        """Your own documents and questions file (see :mod:`longctx.experiments.benchmarks.own`)."""
        loader = {**dict(options.pop("loader_options", {})), "corpus": str(Path(corpus).resolve())}
        return cls(
            benchmark="own",
            data_path=str(Path(questions).resolve()),
            strategies=tuple(strategies),
            loader_options=loader,
            **options,
        )

    def __post_init__(self) -> None:
        if not self.strategies:
            raise ValueError("Give at least one strategy to run.")
        unique = tuple(dict.fromkeys(self.strategies))
        if len(unique) < len(self.strategies):  # each pair is answered (and paid for) once
            log.warning(
                "Strategies named more than once run once: %s",
                ", ".join(sorted({s for s in self.strategies if self.strategies.count(s) > 1})),
            )
        object.__setattr__(self, "strategies", unique)
        object.__setattr__(
            self, "strategy_options", variant_options(self.strategies, self.strategy_options)
        )
        if (
            self.benchmark in BENCHMARKS and BENCHMARKS.get(self.benchmark).shared_first
        ):  # our prompts: the shared text goes first
            shared = {
                name: shared_first_options(
                    STRATEGIES.get(name).prompt_sharing, self.strategy_options.get(name, {})
                )
                for name in self.strategies
            }
            object.__setattr__(
                self,
                "strategy_options",
                {name: options for name, options in shared.items() if options},
            )
        for name in self.strategies:  # unknown names, options and values fail before any work
            STRATEGIES.get(name).make_config(**dict(self.strategy_options.get(name, {})))
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("limit must be at least 1")


def select_samples(config: RunConfig, samples: Sequence[Any] | None) -> list[Any]:
    """The run's samples: preloaded ones, or the benchmark's, cut to ``config.limit``."""
    if samples is None:
        return run_samples(dataclasses.asdict(config))
    return list(samples)[: config.limit] if config.limit else list(samples)


def run_samples(config: Mapping[str, Any]) -> list[Any]:
    """The samples a run's config (a :class:`RunConfig` as a dict, e.g. from its
    manifest) selects."""
    options = dict(config.get("loader_options") or {})
    if config.get("datasets"):
        options["datasets"] = list(config["datasets"])
    samples = load_benchmark(config["benchmark"], config.get("data_path"), **options)
    return samples[: config["limit"]] if config.get("limit") else samples
