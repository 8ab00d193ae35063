"""Strategies as LangGraph state machines, one package each, registered by name.

Every strategy package has the same shape (see ``graphs/README.md``): ``plugin.toml`` (the names
it registers and their targets, read without importing it), ``config.py`` (a validated config
whose defaults are the paper's numbers), ``prompts.py`` (verbatim templates and their
``PROMPTS_VERSION``), ``graph.py`` (state, small node functions, ``build_graph`` registered with
``@STRATEGIES.register``) and, where a strategy needs them, modules for its model calls.
Dependencies (chat model, corpus, index) arrive through the run context, so every graph runs
offline against a scripted model in tests.

No strategy package is imported here: :data:`STRATEGIES` finds them through their ``plugin.toml``
and imports one on the first lookup of its name, and the names below load their module on first
use, so ``import graphs`` (and the CLI's ``--help``) loads no LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from graphs.config import ConfigError, StrategyConfig
    from graphs.context import StrategyContext
    from graphs.full_context import FullContextConfig
    from graphs.memagent import MemAgentConfig
    from graphs.pai import PaiConfig
    from graphs.presentation import StrategyPresentation
    from graphs.rag import RagConfig
    from graphs.registry import BatchRun, BatchSettings, Continuation, RayStage, SingleRun, Strategy
    from graphs.retrieval_settings import RetrievalSettings
    from graphs.self_ask import SelfAskConfig
    from graphs.self_route import SelfRouteConfig
    from graphs.strategy_registry import STRATEGIES

_EXPORTS = {
    "STRATEGIES": "graphs.strategy_registry",
    "ConfigError": "graphs.config",
    "StrategyConfig": "graphs.config",
    "StrategyContext": "graphs.context",
    "FullContextConfig": "graphs.full_context",
    "MemAgentConfig": "graphs.memagent",
    "PaiConfig": "graphs.pai",
    "StrategyPresentation": "graphs.presentation",
    "RagConfig": "graphs.rag",
    "RetrievalSettings": "graphs.retrieval_settings",
    **dict.fromkeys(
        ("BatchRun", "BatchSettings", "Continuation", "RayStage", "SingleRun", "Strategy"),
        "graphs.registry",
    ),
    "SelfAskConfig": "graphs.self_ask",
    "SelfRouteConfig": "graphs.self_route",
}

__all__ = [
    "STRATEGIES",
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

__getattr__, __dir__ = lazy_attributes("graphs", _EXPORTS, globals())
