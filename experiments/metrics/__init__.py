"""Metrics with the official semantics of each benchmark, behind one registry.

Every per-item metric is a pure function ``(prediction, ground_truth, **kwargs) -> float``
in [0, 1], registered in :data:`METRICS` where it is defined, under a stable name that
results record together with :data:`VERSIONS`::

    from longctx.experiments.metrics import METRICS
    METRICS.get("qa_f1")("The Eiffel Tower", "Eiffel Tower")  # 1.0
"""

from __future__ import annotations

from longctx.experiments.metrics.registry import METRICS
from longctx.retrieval.contract.registry import import_submodules

#: Metric-module versions (each module's ``VERSION``), recorded with every score; every
#: module of this package is imported here and registers its metrics, so a new metric
#: module needs no line elsewhere.
VERSIONS: dict[str, int] = {
    module.__name__.rpartition(".")[2]: module.VERSION
    for module in import_submodules(__name__)
    if hasattr(module, "VERSION")
}

__all__ = ["METRICS", "VERSIONS"]
