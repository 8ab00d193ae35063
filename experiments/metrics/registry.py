"""The metric registry: name -> per-item metric ``(prediction, ground_truth, **kwargs) -> float``.

Metrics register where they are defined (``@METRICS.register("qa_f1")``); scorers look
them up by name (each benchmark's official dataset -> metric map names them), so the
registry is the one place a metric is found. Third-party metrics join through the
``longctx.metrics`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable

from longctx.retrieval.contract import Registry

METRICS: Registry[Callable[..., float]] = Registry("metric", group="longctx.metrics")
