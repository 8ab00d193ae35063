"""The strategy registry: name -> config class, graph builder and presets."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from retrieval import Registry


@dataclass(frozen=True)
class Strategy:
    """A registered strategy.

    Attributes:
        name: Registry name used by ``answer(strategy=...)`` and the CLI.
        config_cls: Frozen dataclass whose defaults are the paper's numbers.
        build_graph: ``config -> compiled LangGraph`` (dependencies come in the run context).
        uses_index: Whether the strategy needs a retrieval index built before it runs.
        presets: Named configs (e.g. LongBench v1's ``500x3``).
        description: One line for ``--help`` and the README.
        batched: The graph answers many questions in one resumable run (its module
            provides ``prepare_context``, ``initial_state`` and ``collect``).
    """

    name: str
    config_cls: type
    build_graph: Callable[[Any], Any]
    uses_index: bool
    presets: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    batched: bool = False

    def make_config(self, preset: str | None = None, **overrides: Any) -> Any:
        """The default (or preset) config with ``overrides``; unknown keys raise ``TypeError``."""
        if preset is not None and preset not in self.presets:
            raise KeyError(f"Strategy {self.name!r} has no preset {preset!r}; presets: {sorted(self.presets) or 'none'}")
        base = self.presets[preset] if preset else self.config_cls()
        valid = [f.name for f in dataclasses.fields(self.config_cls)]
        unknown = [k for k in overrides if k not in valid]
        if unknown:
            hints = [f"{k!r} (did you mean {close[0]!r}?)" if (close := difflib.get_close_matches(k, valid, n=1)) else repr(k) for k in unknown]
            raise TypeError(f"Unknown option(s) for strategy {self.name!r}: {', '.join(hints)}. Valid: {', '.join(valid)}")
        return dataclasses.replace(base, **overrides)


STRATEGIES: Registry[Strategy] = Registry("strategy")


def register_strategy(strategy: Strategy) -> Strategy:
    """Add ``strategy`` to :data:`STRATEGIES` (collisions raise)."""
    return STRATEGIES.register(strategy.name, strategy)
