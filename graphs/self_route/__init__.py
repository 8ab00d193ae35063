"""Self-Route (Li et al., EMNLP 2024): RAG first; a declined question reads more."""

from graphs.self_route.config import SelfRouteConfig
from graphs.self_route.graph import build_graph, find_decline
from graphs.self_route.prompts import PROMPTS_VERSION, UNANSWERABLE_INSTRUCTION
from graphs.self_route.state import SelfRouteState

__all__ = [
    "PROMPTS_VERSION",
    "UNANSWERABLE_INSTRUCTION",
    "SelfRouteConfig",
    "SelfRouteState",
    "build_graph",
    "find_decline",
]
