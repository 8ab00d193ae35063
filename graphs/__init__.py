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
use, so ``import longctx`` (and the CLI's ``--help``) loads no LangGraph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from longctx.retrieval.lazy import lazy_attributes

if TYPE_CHECKING:  # the lazy names below, for type checkers (nothing is imported at run time)
    from longctx.graphs.full_context import FullContextConfig
    from longctx.graphs.index.retrieval_settings import RetrievalSettings
    from longctx.graphs.memagent import MemAgentConfig
    from longctx.graphs.pai import PaiConfig
    from longctx.graphs.plugin.config import ConfigError, StrategyConfig
    from longctx.graphs.plugin.context import StrategyContext
    from longctx.graphs.plugin.presentation import StrategyPresentation
    from longctx.graphs.plugin.registry import (
        BatchRun,
        BatchSettings,
        Continuation,
        RayStage,
        SingleRun,
        Strategy,
    )
    from longctx.graphs.plugin.strategy_registry import STRATEGIES
    from longctx.graphs.rag import RagConfig
    from longctx.graphs.self_ask import SelfAskConfig
    from longctx.graphs.self_route import SelfRouteConfig

_EXPORTS = {
    "STRATEGIES": "longctx.graphs.plugin.strategy_registry",
    "ConfigError": "longctx.graphs.plugin.config",
    "StrategyConfig": "longctx.graphs.plugin.config",
    "StrategyContext": "longctx.graphs.plugin.context",
    "FullContextConfig": "longctx.graphs.full_context",
    "MemAgentConfig": "longctx.graphs.memagent",
    "PaiConfig": "longctx.graphs.pai",
    "StrategyPresentation": "longctx.graphs.plugin.presentation",
    "RagConfig": "longctx.graphs.rag",
    "RetrievalSettings": "longctx.graphs.index.retrieval_settings",
    **dict.fromkeys(
        ("BatchRun", "BatchSettings", "Continuation", "RayStage", "SingleRun", "Strategy"),
        "longctx.graphs.plugin.registry",
    ),
    "SelfAskConfig": "longctx.graphs.self_ask",
    "SelfRouteConfig": "longctx.graphs.self_route",
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

__getattr__, __dir__ = lazy_attributes("longctx.graphs", _EXPORTS, globals())
