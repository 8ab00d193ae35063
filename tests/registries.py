"""The built-in names of a registry, for the tests of "every strategy / benchmark / metric /
retriever": read from the registry, so a plug-in added to the tree is tested without editing a
list, and a plug-in package installed beside the library (an entry point) is left out."""

from __future__ import annotations

from importlib import metadata

from longctx.retrieval.contract import Registry


def built_in(registry: Registry) -> list[str]:
    """The sorted names ``registry`` holds from this library, importing none of their modules."""
    installed = {ep.name for ep in metadata.entry_points(group=registry.group or "")}
    return [name for name in registry.names() if name not in installed]


def retrieving_strategies() -> list[str]:
    """The built-in strategies that search an index (``uses_index`` in their ``plugin.toml``): the
    ones a retriever's or a reranker's options reach."""
    from longctx.graphs import STRATEGIES

    return [n for n in built_in(STRATEGIES) if STRATEGIES.declared(n).get("uses_index")]
