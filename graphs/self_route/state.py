"""What evolves during one Self-Route answer: RAG's state and the route taken."""

from __future__ import annotations

from longctx.graphs.plugin.api import PromptState


class SelfRouteState(PromptState, total=False):
    """RAG's state (its leg runs RAG's nodes: the prompt state) and what routing adds.

    Attributes:
        declined: The RAG reply declined (:func:`longctx.graphs.self_route.graph.find_decline`).
        fits: The full-context prompt of a declined question fits the model's window.
    """

    declined: bool
    fits: bool


__all__ = ["SelfRouteState"]
