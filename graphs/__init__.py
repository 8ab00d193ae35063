"""Strategies as LangGraph state machines, one package each, registered by name.

Every strategy package has the same shape (see ``graphs/README.md``): ``config.py`` (a
validated config whose defaults are the paper's numbers), ``prompts.py`` (verbatim
templates and their ``PROMPTS_VERSION``), ``graph.py`` (state, small node functions,
``build_graph`` registered with ``@STRATEGIES.register``) and, where a strategy needs
them, modules for its model calls. Dependencies (chat model, corpus, index) arrive
through the run context, so every graph runs offline against a scripted model in tests.
"""

from graphs import full_context, memagent, pai, rag, raptor, self_ask, self_route, structured
from graphs.config import ConfigError, StrategyConfig
from graphs.context import StrategyContext
from graphs.full_context import FullContextConfig
from graphs.memagent import MemAgentConfig
from graphs.pai import PaiConfig
from graphs.presentation import StrategyPresentation
from graphs.rag import RagConfig
from graphs.registry import STRATEGIES, BatchRun, BatchSettings, Continuation, RayStage, SingleRun, Strategy
from graphs.retrieval_settings import RetrievalSettings
from graphs.self_ask import SelfAskConfig
from graphs.self_route import SelfRouteConfig

#: The strategy packages, each registered on import.
STRATEGY_PACKAGES = (full_context, memagent, pai, rag, raptor, self_ask, self_route, structured)

__all__ = [
    "STRATEGIES",
    "STRATEGY_PACKAGES",
    "BatchRun",
    "BatchSettings",
    "ConfigError",
    "Continuation",
    "FullContextConfig",
    "MemAgentConfig",
    "PaiConfig",
    "RagConfig",
    "RayStage",
    "RetrievalSettings",
    "SelfAskConfig",
    "SelfRouteConfig",
    "SingleRun",
    "Strategy",
    "StrategyConfig",
    "StrategyContext",
    "StrategyPresentation",
]
