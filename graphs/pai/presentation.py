"""How reports, plots and the demo show PAI and PAI-: properties or sub-questions, the chunks kept
per sub-question, the sub-answers and the conclusion."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, bullets, join, tag, text


def decomposition_view(
    step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]
) -> Shown:
    """The properties (``extract_properties``) and the sub-questions made of them, or made directly
    (PAI-)."""
    items = step.get("items") or []
    props = [
        join(tag("b", i.get("metric")), " of ", tag("b", i.get("subject")))
        if "metric" in i
        else i.get("sub_question", i)
        for i in items
    ]
    parts = (
        [tag("p", "Properties", cls="what"), bullets(props)]
        if step.get("node") == "extract_properties"
        else []
    )
    parts += [
        tag("p", "Sub-questions", cls="what"),
        bullets(text(q) for q in step.get("sub_questions") or []),
    ]
    if step.get("degraded"):
        parts.append(tag("p", step["degraded"], cls="fail"))
    return Shown(join(*parts), frozenset({"items", "sub_questions", "degraded"}))


def judge_view(step: Mapping[str, Any], evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """Per sub-question: how many chunks the judge kept of those it judged, with their text."""
    blocks = []
    for sq in step.get("per_sub_question") or []:
        chunks = []
        for cid in sq.get("kept_chunk_ids") or []:
            ev = evidence.get(cid)
            seen = (
                join(
                    " ",
                    tag("span", ev.get("title"), cls="title"),
                    ": ",
                    tag("span", text(ev.get("snippet"), 300), cls="snippet"),
                )
                if ev
                else ""
            )
            chunks.append(join(f"chunk {cid}", seen))
        malformed = f" ({sq['malformed']} malformed verdicts)" if sq.get("malformed") else ""
        blocks.append(
            tag(
                "li",
                tag("b", text(sq.get("sub_question"), 500)),
                f": kept {sq.get('kept')} of {sq.get('judged')} chunks{malformed}",
                bullets(chunks) if chunks else "",
            )
        )
    return Shown(
        join(tag("p", "Kept chunks per sub-question", cls="what"), tag("ul", *blocks, cls="kept")),
        frozenset({"per_sub_question"}),
    )


def sub_answer_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """Each sub-question with its answer."""
    items = [
        join(
            tag("b", text(a.get("sub_question"), 500)),
            " → ",
            tag("span", text(a.get("text")), cls="sub"),
        )
        for a in step.get("sub_answers") or []
    ]
    return Shown(
        join(tag("p", "Sub-answers", cls="what"), bullets(items)), frozenset({"sub_answers"})
    )


def summarize_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The conclusion drawn from the sub-answers."""
    return Shown(
        join(tag("p", "Conclusion", cls="what"), tag("pre", text(step.get("conclusion")))),
        frozenset({"conclusion"}),
    )


STEP_VIEWS = {
    "extract_properties": decomposition_view,
    "generate_sub_questions": decomposition_view,
    "judge": judge_view,
    "sub_answer": sub_answer_view,
    "summarize": summarize_view,
}
PRESENTATION = StrategyPresentation(
    color="#d62728",
    demo_options={
        "judge_mode": "prefilter",
        "top_k": 2,
        "max_items": 2,
        "chunk_unit": "words",
        "chunk_size": 60,
    },
    step_views=STEP_VIEWS,
)
#: PAI- (no properties): not in the demo, which shows PAI itself.
MINUS_PRESENTATION = StrategyPresentation(color="#9467bd", step_views=STEP_VIEWS)
