"""How reports and the demo show HippoRAG: the facts the filter kept among the candidates, the
linked phrases that seeded PPR, and the passages ranked first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, join, tag


def _fact(f: Any) -> str:
    return "(" + " | ".join(str(x) for x in f) + ")"


def facts_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The filtered triples: those kept, and how many candidates the question was linked to."""
    kept = step.get("kept") or []
    shown = ", ".join(_fact(f) for f in kept) or "none (dense ranking)"
    return Shown(
        tag("p", f"kept {len(kept)} of {len(step.get('candidates') or [])} linked facts: {shown}"),
        frozenset({"kept", "candidates"}),
    )


def ppr_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The linked phrases with their seed weights, then the top passages with their PPR (or dense)
    scores."""
    phrases = ", ".join(f"{p} ({w:.3g})" for p, w in step.get("linked") or []) or "none"
    top = (
        ", ".join(
            f"#{t['passage']} {t['doc_id']} ({t['score']:.3g})" for t in step.get("top") or []
        )
        or "none"
    )
    html = join(
        tag("p", f"linked phrases: {phrases}"),
        tag("p", f"{step.get('mode', 'ppr')} top passages: {top}"),
    )
    return Shown(html, frozenset({"linked", "top", "mode"}))


PRESENTATION = StrategyPresentation(
    color="#7f7f7f",
    demo_options={"retrieval_top_k": 20, "openie_max_tokens": 256},
    step_views={"recognize": facts_view, "ppr": ppr_view},
)
