"""The questions an evidence ceiling is measured on: samples that name their evidence.

Evidence is documents (``evidence_doc_ids``, with a synthetic corpus's records when its
``facts.sqlite`` is at hand) or sentences (``metadata["evidence_spans"]``: generated BABILong's
supporting facts, counted per task x length); a sample that names neither is left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from longctx.experiments.synth.records import load_records
from longctx.graphs.plugin.ceiling import CeilingItem, EvidenceSpan

#: Why a benchmark's samples name no evidence, in the error when none does.
NO_EVIDENCE = {
    "babilong": (
        "BABILong's released files carry input, question and target only, not the supporting "
        "facts: ceilings need samples generated with 'python -m longctx.experiments.babilong_gen' "
        "(they record where each supporting fact is)"
    ),
}


def _spans_item(s: Any, meta: dict[str, Any]) -> CeilingItem:
    """A question whose evidence is sentences (``metadata["evidence_spans"]``: BABILong's supporting
    facts, OOLONG's records), per task (OOLONG: task group) x length."""
    spans = tuple(EvidenceSpan(d, a, b) for d, a, b in meta["evidence_spans"])
    task = meta.get("task_group") or s.dataset
    cell = (str(task), str(meta["length"])) if "length" in meta else None
    return CeilingItem(
        s.sample_id,
        s.corpus,
        s.question,
        tuple(dict.fromkeys(x.doc_id for x in spans)),
        spans=spans,
        cell=cell,
    )


def items_from_samples(samples: Iterable[Any]) -> list[CeilingItem]:
    """Questions that name their evidence: documents (``evidence_doc_ids`` attribute or
    metadata), with synth records when known, or sentences (``metadata["evidence_spans"]``,
    generated BABILong)."""
    records_by_path: dict[str, dict] = {}
    out = []
    for s in samples:
        meta = dict(getattr(s, "metadata", {}) or {})
        if meta.get("evidence_spans") is not None:
            out.append(_spans_item(s, meta))
            continue
        evidence = getattr(s, "evidence_doc_ids", None) or meta.get("evidence_doc_ids")
        if not evidence:
            continue
        recs = None
        path = meta.get("path")
        if path and (Path(path) / "facts.sqlite").exists():
            if path not in records_by_path:
                records_by_path[path] = load_records(path)
            recs = records_by_path[path].get(s.sample_id)
        difficulty = getattr(s, "difficulty", None) or meta.get("difficulty")
        out.append(
            CeilingItem(
                s.sample_id,
                s.corpus,
                s.question,
                tuple(evidence),
                difficulty,
                recs.records if recs else None,
                recs.sub_questions if recs else None,
            )
        )
    return out


def names_evidence(sample: Any) -> bool:
    """Whether ``sample`` names its evidence (documents or sentences)."""
    meta = dict(getattr(sample, "metadata", {}) or {})
    return bool(
        getattr(sample, "evidence_doc_ids", None)
        or meta.get("evidence_doc_ids")
        or meta.get("evidence_spans")
    )
