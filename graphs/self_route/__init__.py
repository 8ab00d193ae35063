"""Self-Route (Li et al., EMNLP 2024): RAG first; a declined question reads more."""

from longctx.graphs.self_route.config import SelfRouteConfig
from longctx.graphs.self_route.graph import build_graph, find_decline
from longctx.graphs.self_route.prompts import PROMPTS_VERSION, UNANSWERABLE_INSTRUCTION
from longctx.graphs.self_route.state import SelfRouteState

__all__ = [
    "PROMPTS_VERSION",
    "UNANSWERABLE_INSTRUCTION",
    "SelfRouteConfig",
    "SelfRouteState",
    "build_graph",
    "find_decline",
]
