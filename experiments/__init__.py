"""Experiments: the ``longctx`` command line, benchmark loaders, metrics and runners.

``experiments.score(benchmark, predictions, samples=...)`` scores predictions with the
official aggregation of LongBench v1/-E/v2, LV-Eval, Loong or CorpusQA; loaders live
in :mod:`experiments.benchmarks`, per-item metrics in :mod:`experiments.metrics`.
The CLI and the performance scripts under ``experiments.perf`` are here too.
"""

from __future__ import annotations

from typing import Any


def score(benchmark: str, predictions: Any, *, samples: Any = None, **options: Any) -> dict:
    """Score predictions on ``benchmark``; see :func:`experiments.benchmarks.score`.

    Imported lazily so that ``import experiments`` (the CLI entry point) stays cheap.
    """
    from experiments.benchmarks import score as _score

    return _score(benchmark, predictions, samples=samples, **options)


__all__ = ["score"]
