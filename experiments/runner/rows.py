"""What a result row holds: the fields every row of a (sample, strategy) pair carries, and an
answer or a failure on top of them."""

from __future__ import annotations

import traceback
from typing import Any


def base_row(sample: Any, strategy: str) -> dict[str, Any]:
    """The fields every row of ``sample`` x ``strategy`` carries, ok or failed."""
    return {
        "sample_id": sample.sample_id,
        "benchmark": sample.benchmark,
        "dataset": sample.dataset,
        "strategy": strategy,
        "corpus_tokens": sample.corpus.num_tokens,
        # which questions share a context (cost per context in the report)
        "corpus": sample.corpus.fingerprint,
        "metadata": {
            k: v
            for k, v in dict(sample.metadata).items()
            if isinstance(v, (str, int, float, bool, type(None)))
        },
    }


def ok_row(base: dict[str, Any], result: Any) -> dict[str, Any]:
    """A finished answer as a row that explains itself: prediction, usage, evidence, steps and
    the effective config (preset, model, tokenizer, prompt versions; secrets redacted)."""
    return {
        **base,
        "status": "ok",
        "prediction": result.raw,
        "answer": result.answer,
        "usage": result.usage.to_dict(),
        "seconds": round(result.usage.seconds, 3),
        "queued_seconds": round(
            result.usage.queued_seconds, 3
        ),  # waiting for a model shared with other answers
        "evidence_doc_ids": sorted({e.doc_id for e in result.evidence}),
        "evidence": [
            {
                "doc_id": e.doc_id,
                "title": e.title,
                "chunk_id": e.chunk_id,
                "score": e.score,
                "snippet": e.text[:300],
                **({"components": e.components} if e.components else {}),
            }
            for e in result.evidence
        ],  # fused/reranked: each stage's rank and score
        "route": next((s.get("route") for s in result.steps if "route" in s), None),
        "steps": [dict(s) for s in result.steps],
        "config": result.config,
        "messages": list(
            getattr(result, "messages", None) or []
        ),  # the last call's prompt, for the drill-down
        "stopped": getattr(
            result, "stopped", None
        ),  # "budget": the unit reached its budget; a rerun answers it again
    }


def failed_row(
    sample: Any, strategy: str, exc: BaseException, seconds: float, *, what: str = ""
) -> dict[str, Any]:
    """The row of a pair that failed with ``exc`` (the exception being handled)."""
    return {
        **base_row(sample, strategy),
        "status": "failed",
        "error": f"{what}{type(exc).__name__}: {exc}",
        "traceback": traceback.format_exc(limit=8)[-4000:],
        "seconds": round(seconds, 3),
    }
