"""Metrics with the official semantics of each benchmark, behind one registry.

Every per-item metric is a pure function ``(prediction, ground_truth, **kwargs) -> float``
in [0, 1], registered in :data:`METRICS` where it is defined, under a stable name that
results record together with :data:`VERSIONS`::

    from experiments.metrics import METRICS
    METRICS.get("qa_f1")("The Eiffel Tower", "Eiffel Tower")  # 1.0
"""

from __future__ import annotations

from experiments.metrics import (
    answer_match,
    babilong,
    corpusqa,
    equivalence,
    judge,
    longbench_v1,
    longbench_v2,
    loong,
    lveval,
    memoryagentbench,
    memoryagentbench_judge,
    ruler_hqa,
    text,
)
from experiments.metrics.registry import METRICS

#: Metric-module versions, recorded with every score.
VERSIONS = {
    "text": text.VERSION,
    "longbench_v1": longbench_v1.VERSION,
    "longbench_v2": longbench_v2.VERSION,
    "lveval": lveval.VERSION,
    "loong": loong.VERSION,
    "corpusqa": corpusqa.VERSION,
    "ruler_hqa": ruler_hqa.VERSION,
    "equivalence": equivalence.VERSION,
    "judge": judge.VERSION,
    "answer_match": answer_match.VERSION,
    "memoryagentbench": memoryagentbench.VERSION,
    "memoryagentbench_judge": memoryagentbench_judge.VERSION,
    "babilong": babilong.VERSION,
}

__all__ = ["METRICS", "VERSIONS"]
