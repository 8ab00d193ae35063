"""The strategy registry object, importable without LangGraph: names and lazy targets only.

Each strategy package declares its names in its own ``plugin.toml`` (``graphs/rag/plugin.toml``)::

    [strategies.rag]
    target = "graphs.rag.graph:build_graph"   # imported on the first lookup of "rag"
    uses_index = true                         # read by `longctx index` without importing it

and registers its entry in code (``@STRATEGIES.register("rag", config_cls=..., ...)`` on its graph
builder, see :mod:`graphs.registry`), so ``longctx --help``, ``answer()``, the report, the plan and
the ceilings read one set of names, and a new package under ``graphs/`` needs no line elsewhere.
Third-party strategies are entry points of the ``longctx.strategies`` group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval.registry import Registry

if TYPE_CHECKING:
    from graphs.registry import Strategy

#: name -> :class:`~graphs.registry.Strategy`; the entry type is built by ``graphs.registry`` when first needed.
STRATEGIES: Registry[Strategy[Any]] = Registry(
    "strategy",
    group="longctx.strategies",
    make_entry="graphs.registry:_strategy",
    packages=("graphs",),
)
