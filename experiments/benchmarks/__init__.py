"""Benchmark loaders behind one registry, with their official prompts and scoring.

    from longctx.experiments.benchmarks import load_benchmark
    from longctx.experiments import score
    samples = load_benchmark("longbench_v2")            # $LONGCTX_DATA_DIR/longbench_v2/data.json
    preds = {s.sample_id: my_model(s) for s in samples}  # None marks a failed call
    score("longbench_v2", preds, samples=samples)

Every module of this package is imported here
(:func:`~retrieval.contract.registry.import_submodules`), and registers its benchmark where it is
defined, so a new benchmark is one new module and nothing else; third-party benchmarks join through
the ``longctx.benchmarks`` entry-point group.

Registered: ``longbench`` (v1, 21 datasets), ``longbench_e``, ``longbench_v2``, ``lveval``,
``loong``, ``corpusqa``, ``ruler_hqa`` (MemAgent's RULER-HotpotQA), ``memoryagentbench`` (one
context, many questions), ``babilong`` (0 to 10M tokens), ``oolong``
(OOLONG-synth and OOLONG-real: aggregation over many records) and ``synth`` (a folder from
``longctx synth``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longctx.experiments.benchmarks.base import (
    BENCHMARKS,
    BenchmarkDataError,
    BenchmarkSpec,
    Sample,
)
from longctx.experiments.benchmarks.predictions import Prediction, pair_predictions
from longctx.experiments.metrics import VERSIONS
from longctx.retrieval.contract.registry import import_submodules

import_submodules(__name__)  # each benchmark module registers itself


def load_benchmark(name: str, path: str | Path | None = None, **options: Any) -> list[Sample]:
    """Samples of benchmark ``name`` from ``path`` (default ``$LONGCTX_DATA_DIR/<benchmark>``).

    ``options`` go to the benchmark's loader (``datasets=``, and ``lengths=`` for LV-Eval,
    ``seed=``/``shuffle=`` for Loong). Each question carries the benchmark's protocol
    (official prompt, answer and input budgets), which every strategy follows.
    """
    spec = BENCHMARKS.get(name)
    return [spec.with_protocol(s) for s in spec.load(path, **options)]


def full_context_prompt(sample: Sample) -> str:
    """The official full-context prompt for ``sample`` (before middle truncation)."""
    return BENCHMARKS.get(sample.benchmark).prompt(sample)


def score(benchmark: str, predictions: Any, *, samples: Any = None, **options: Any) -> dict:
    """Score predictions with the benchmark's official aggregation; a plain dict.

    Args:
        benchmark: Registry name (``longbench``, ``longbench_e``, ``longbench_v2``,
            ``lveval``, ``loong``, ``corpusqa``).
        predictions: :class:`Prediction` objects, ``(sample_or_id, text[, error])``
            tuples, or a ``{sample_id: text}`` mapping; ``None`` text marks a failed call.
        samples: The loaded samples, needed when predictions name samples by id.
        **options: Scorer options: ``judge=`` (Loong, CorpusQA), ``all_answers=`` (LV-Eval).

    Returns:
        The benchmark's aggregates plus ``benchmark``, ``version`` and ``metric_versions``.
    """
    spec = BENCHMARKS.get(benchmark)
    pairs = pair_predictions(predictions, samples)
    wrong = sorted({s.benchmark for s, _ in pairs} - {benchmark})
    if wrong:
        raise ValueError(f"Predictions for {wrong} samples cannot be scored as {benchmark!r}.")
    return {
        "benchmark": benchmark,
        "version": spec.version,
        "metric_versions": dict(VERSIONS),
    } | spec.score(pairs, **options)


__all__ = [
    "BENCHMARKS",
    "BenchmarkDataError",
    "BenchmarkSpec",
    "Prediction",
    "Sample",
    "full_context_prompt",
    "load_benchmark",
    "score",
]
