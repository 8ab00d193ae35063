"""One small registry class for every kind of plug-in (retrievers, strategies, benchmarks, metrics).

It lives in the lowest layer so that every package can use it without breaking the
one-way dependency rule (experiments -> agents -> graphs -> memory, retrieval).
Modelled on lm-evaluation-harness's registry: decorator registration, collisions raise,
lookups suggest close names.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """A name -> object mapping that refuses silent overwrites and explains failed lookups."""

    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T] = {}

    def register(self, name: str, obj: T | None = None) -> Callable[[T], T] | T:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator."""
        if obj is None:
            return lambda o: self.register(name, o)
        existing = self._entries.get(name)
        if existing is not None and existing is not obj:
            raise ValueError(f"{self.kind} {name!r} is already registered to {existing!r}")
        self._entries[name] = obj
        return obj

    def get(self, name: str) -> T:
        """The entry called ``name``; an unknown name raises ``KeyError`` with suggestions."""
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise KeyError(f"Unknown {self.kind} {name!r}.{hint} Available: {', '.join(sorted(self._entries))}") from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
