"""Variants: one strategy run twice or more in one experiment, each with its own options.

A variant name is a strategy's name, ``@`` and a label (``rag@bm25``, ``rag@hybrid``); the
strategy registry looks it up as its strategy (:mod:`longctx.graphs.plugin.strategy_registry`), and
the run keeps the whole name as the row's ``strategy``: its resume key, its report column, its side
of every paired test and break-even point. Options are given per variant (``--option
rag@hybrid.retriever=hybrid``); options given under the strategy's own name apply to each of
its variants too, below the variant's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from longctx.graphs.plugin.strategy_registry import base_strategy


def variant_options(
    strategies: Sequence[str], options: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each run name's options: its strategy's (when the run holds a variant of it) under its own.

    ``options`` may name a strategy that is run only as variants (``rag`` for ``rag@a, rag@b``);
    its options then go to each variant and are not kept under its own name.

    Raises:
        KeyError: A malformed variant name (``rag@``, ``rag@a.b``).
        ValueError: Options for a name that is not run, nor the strategy of a variant that is.
    """
    bases = {base_strategy(name) for name in strategies}
    unknown = sorted(set(options) - set(strategies) - bases)
    if unknown:
        raise ValueError(f"strategy_options name strategies not being run: {unknown}")
    merged = {}
    for name in strategies:
        base = base_strategy(name)
        own = {**(options.get(base, {}) if base != name else {}), **options.get(name, {})}
        if name in options or base in options:
            merged[name] = own
    return merged
