"""Metrics with the official semantics of each benchmark, behind one registry.

Every per-item metric is a pure function ``(prediction, ground_truth, **kwargs) -> float``
in [0, 1], registered in :data:`METRICS` under a stable name so results can record
which metric (and :data:`VERSIONS`) produced a number::

    from experiments.metrics import METRICS
    METRICS.get("qa_f1")("The Eiffel Tower", "Eiffel Tower")  # 1.0
"""

from __future__ import annotations

from collections.abc import Callable

from experiments.metrics import corpusqa, equivalence, judge, longbench_v1, longbench_v2, loong, lveval, text
from retrieval.registry import Registry

#: name -> per-item metric ``(prediction, ground_truth, **kwargs) -> float``.
METRICS: Registry[Callable[..., float]] = Registry("metric")

for _name, _fn in {
    "qa_f1": text.qa_f1,
    "qa_f1_zh": text.qa_f1_zh,
    "rouge_l": text.rouge_l,
    "rouge_l_zh": text.rouge_l_zh,
    "classification": longbench_v1.classification_score,
    "retrieval": longbench_v1.retrieval_score,
    "retrieval_zh": longbench_v1.retrieval_zh_score,
    "count": longbench_v1.count_score,
    "code_sim": longbench_v1.code_sim_score,
    "lveval_qa_f1_gated": lveval.qa_f1_gated,
    "lveval_qa_f1_zh_gated": lveval.qa_f1_zh_gated,
    "lveval_rouge_zh_blacklist": lveval.rouge_zh_blacklist,
    "longbench_v2_choice": lambda prediction, ground_truth, **_: float(longbench_v2.extract_choice(prediction) == ground_truth),
    "corpusqa_equivalence": lambda prediction, ground_truth, **_: float(
        equivalence.equivalent(corpusqa.extract_answer(prediction), ground_truth)
    ),
}.items():
    METRICS.register(_name, _fn)

#: Metric-module versions, recorded with every score.
VERSIONS = {
    "text": text.VERSION,
    "longbench_v1": longbench_v1.VERSION,
    "longbench_v2": longbench_v2.VERSION,
    "lveval": lveval.VERSION,
    "loong": loong.VERSION,
    "corpusqa": corpusqa.VERSION,
    "equivalence": equivalence.VERSION,
    "judge": judge.VERSION,
}

__all__ = ["METRICS", "VERSIONS"]
