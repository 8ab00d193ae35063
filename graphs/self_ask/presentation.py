"""How reports, plots and the demo show Self-Ask: its follow-up questions, their answers and the
transcript."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from longctx.graphs.plugin.api import Shown, StrategyPresentation, join, retrieval_view, tag, text


def _follow_up(question: Any) -> Any:
    return tag("p", "Follow-up: ", tag("span", text(question, 500), cls="follow"), cls="what")


def generation_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """What the generator wrote, and the follow-up question it asked."""
    if "generated" not in step:
        return Shown(join())
    follow = _follow_up(step["follow_up"]) if step.get("follow_up") else ""
    return Shown(
        join(follow, tag("pre", text(step.get("generated")))), frozenset({"generated", "follow_up"})
    )


def follow_up_answer_view(
    step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]
) -> Shown:
    """A follow-up question and its intermediate answer (the reader variant)."""
    answer = tag(
        "p", "Intermediate answer: ", tag("span", text(step.get("intermediate_answer")), cls="sub")
    )
    return Shown(
        join(_follow_up(step.get("follow_up")), answer),
        frozenset({"follow_up", "intermediate_answer"}),
    )


def transcript_view(step: Mapping[str, Any], _evidence: Mapping[Any, Mapping[str, Any]]) -> Shown:
    """The whole question-follow-up-answer transcript."""
    return Shown(
        join(
            tag("p", "Transcript", cls="what"),
            tag("pre", text(step.get("transcript")), cls="transcript"),
        ),
        frozenset({"transcript"}),
    )


PRESENTATION = StrategyPresentation(
    color="#8c564b",
    demo_options={"chunk_size": 60, "top_k": 3, "max_iterations": 2},
    step_views={
        "retrieve": retrieval_view,
        "retrieve_follow_up": retrieval_view,
        "generate": generation_view,
        "ask": generation_view,
        "answer_follow_up": follow_up_answer_view,
        "finish": transcript_view,
    },
)
