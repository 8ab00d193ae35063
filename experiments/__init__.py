"""Experiments: the ``longctx`` command line, benchmark loaders, metrics and runners.

``experiments.score(benchmark, predictions, samples=...)`` scores predictions with the
official aggregation of LongBench v1/-E/v2, LV-Eval, Loong, CorpusQA or a synthetic
corpus; loaders live in :mod:`experiments.benchmarks`, per-item metrics in
:mod:`experiments.metrics`. Benchmark scripts live under ``experiments/perf`` in the
source tree (not in the installed package).
"""

from __future__ import annotations

from experiments.benchmarks import score

__all__ = ["score"]
