"""The strategy registry object, importable without LangGraph: names and lazy targets only.

Each strategy package declares its names in its own ``plugin.toml`` (``graphs/rag/plugin.toml``)::

    [strategies.rag]
    target = "longctx.graphs.rag.graph:build_graph"   # imported on the first lookup of "rag"
    uses_index = true                         # read by `longctx index` without importing it

and registers its entry in code (``@STRATEGIES.register("rag", config_cls=..., ...)`` on its graph
builder, see :mod:`longctx.graphs.plugin.registry`), so ``longctx --help``, ``answer()``, the
report, the plan and the ceilings read one set of names, and a new package under ``graphs/`` needs
no line elsewhere. Third-party strategies are entry points of the ``longctx.strategies`` group.

A *variant* name (``rag@hybrid``: a strategy's name, ``@``, and a label) names one strategy run
with its own options beside others of the same strategy in one experiment: the registry looks
it up as its strategy (``STRATEGIES.get("rag@hybrid")`` is ``rag``'s entry), while a run's rows,
resume keys and report columns keep the whole name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from longctx.retrieval.contract.errors import ConfigError, UnknownName
from longctx.retrieval.contract.registry import Registry

if TYPE_CHECKING:
    from collections.abc import Mapping

    from longctx.graphs.plugin.registry import Strategy

#: What separates a strategy's name from a variant's label (``rag@hybrid``).
VARIANT_SEPARATOR = "@"
#: A variant's label: letters, digits, ``_`` and ``-`` (no ``.``: ``--option rag@hybrid.top_k=5``
#: splits the name from the option at the first dot).
_LABEL = re.compile(r"[A-Za-z0-9_-]+")


def split_variant(name: str) -> tuple[str, str | None]:
    """``"rag@hybrid"`` -> ``("rag", "hybrid")``; ``"rag"`` -> ``("rag", None)``.

    Raises:
        UnknownName: A name with ``@`` but no strategy before it or no valid label after it.
    """
    strategy, sep, label = name.partition(VARIANT_SEPARATOR)
    if not sep:
        return name, None
    if not strategy or not _LABEL.fullmatch(label):
        raise UnknownName(
            f"Strategy variant {name!r} must be STRATEGY@LABEL, the label of letters, digits, "
            "'_' or '-' (e.g. rag@hybrid)"
        )
    return strategy, label


def base_strategy(name: str) -> str:
    """The strategy a name runs: ``"rag"`` for ``"rag@hybrid"`` and for ``"rag"``."""
    return split_variant(name)[0]


def one_answer_strategy(name: str) -> str:
    """``name`` for one answer (``answer()``, a Workspace, ``longctx answer``/``index``): a variant
    refused.

    A variant's label names a column beside others of its strategy in one run, with its own
    ``--option NAME@LABEL.KEY=VALUE``; one answer has neither, so ``rag@x`` would run plain
    ``rag`` and drop the label without a word. It is refused instead, naming what to do.

    Raises:
        UnknownName: A malformed variant (:func:`split_variant`; a ``KeyError``).
        ConfigError: A variant (a ``ValueError``).
    """
    strategy, label = split_variant(name)
    if label is not None:
        raise ConfigError(
            f"Strategy {name!r} is a variant, for `longctx run --strategies` (a column beside "
            f"another of {strategy!r}'s, with its own --option {name}.KEY=VALUE); one answer runs "
            f"{strategy!r} with its options: use {strategy!r}"
        )
    return name


class StrategyRegistry(Registry["Strategy[Any]"]):
    """The :class:`~retrieval.contract.registry.Registry` of strategies, which looks a variant name
    up as its strategy."""

    def get(self, name: str) -> Strategy[Any]:
        """The entry of ``name``'s strategy (see :meth:`Registry.get`); a variant gives its
        strategy's entry."""
        return super().get(base_strategy(name))

    def check(self, name: str) -> None:
        """Raise the ``KeyError`` of :meth:`get` for an unknown strategy or a malformed variant,
        importing nothing."""
        super().check(base_strategy(name))

    def declared(self, name: str) -> Mapping[str, Any]:
        """The attributes declared with ``name``'s strategy."""
        return super().declared(base_strategy(name))

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            return super().__contains__(base_strategy(name))
        except KeyError:
            return False


#: name -> :class:`~graphs.plugin.registry.Strategy`; the entry type is built by
#: ``longctx.graphs.plugin.registry`` when first needed.
STRATEGIES = StrategyRegistry(
    "strategy",
    group="longctx.strategies",
    make_entry="longctx.graphs.plugin.registry:_strategy",
    packages=("longctx.graphs",),
)
