"""Experiments: the ``longctx`` command line, benchmark loaders, metrics and runners.

``longctx.experiments.score(benchmark, predictions, samples=...)`` scores predictions with the
official aggregation of LongBench v1/-E/v2, LV-Eval, Loong, CorpusQA or a synthetic
corpus; loaders live in :mod:`longctx.experiments.benchmarks`, per-item metrics in
:mod:`longctx.experiments.metrics`. Benchmark scripts live under ``benchmarks`` in the
source tree (not in the installed package). ``score`` loads the benchmarks on first use
(PEP 562), so the command line starts without them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the lazy name below, for type checkers
    from longctx.experiments.benchmarks import score

__all__ = ["score"]


def __getattr__(name: str) -> Any:
    """Load ``score`` from :mod:`longctx.experiments.benchmarks` on first use (PEP 562)."""
    if name != "score":
        raise AttributeError(f"module 'experiments' has no attribute {name!r}")
    value = importlib.import_module("longctx.experiments.benchmarks").score
    globals()[name] = value
    return value
