"""Strategies as LangGraph state machines, one module each, registered by name.

Each module defines its config (paper defaults), its state, small node functions and
``build_graph(config)``; dependencies (chat model, corpus, index) arrive through the
run context, so every graph runs offline against a scripted chat model in tests.
"""

from graphs import full_context, memagent, pai, rag, self_ask, self_route  # noqa: F401  (modules register their strategies)
from graphs.full_context import FullContextConfig
from graphs.memagent import MemAgentConfig
from graphs.pai import PaiConfig
from graphs.rag import RagConfig, RetrievalSettings
from graphs.registry import STRATEGIES, Strategy, register_strategy
from graphs.self_ask import SelfAskConfig
from graphs.self_route import SelfRouteConfig
from graphs.types import Question, StrategyContext, as_question

__all__ = [
    "STRATEGIES",
    "FullContextConfig",
    "MemAgentConfig",
    "PaiConfig",
    "Question",
    "RagConfig",
    "RetrievalSettings",
    "SelfAskConfig",
    "SelfRouteConfig",
    "Strategy",
    "StrategyContext",
    "as_question",
    "register_strategy",
]
