"""The plug-in registry: one ``Registry`` per kind of plug-in, entry points for third parties.

Part of the answer contract (:mod:`retrieval.contract`): standard library only, so every
package may import it.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar, overload

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What the decorator form of :meth:`Registry.register` takes and gives back unchanged.
D = TypeVar("D")


class Registry(Generic[T]):
    """A name -> plug-in mapping: decorator registration, collisions raise, lookups explain.

    Every kind of plug-in (strategies, retrievers, embedders, chat-model providers,
    benchmarks, metrics, synth domains) has one. Third-party packages add entries without
    editing this repository through an entry-point group (``[project.entry-points."<group>"]``
    in their ``pyproject.toml``): each entry point is loaded on the first lookup; it may
    register itself on import, or be the plug-in object, registered under the entry
    point's name (see :meth:`register`).

    Args:
        kind: What the entries are, for messages (``"strategy"``).
        group: Entry-point group scanned for third-party plug-ins (``"longctx.strategies"``).
        make_entry: Builds the stored entry when the decorator is given attributes,
            e.g. ``Strategy`` for ``@STRATEGIES.register("rag", config_cls=...)``.
    """

    def __init__(self, kind: str, *, group: str | None = None, make_entry: Callable[..., T] | None = None):
        self.kind = kind
        self.group = group
        self.make_entry = make_entry
        self._entries: dict[str, T] = {}
        self._plugins_loaded = group is None

    @overload
    def register(self, name: str, obj: None = None, **attrs: Any) -> Callable[[D], D]: ...
    @overload
    def register(self, name: str, obj: Any, **attrs: Any) -> Any: ...
    def register(self, name: str, obj: Any = None, **attrs: Any) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator.

        ``@REGISTRY.register("name")`` registers the decorated class or function itself;
        with attributes (``@STRATEGIES.register("rag", config_cls=RagConfig, ...)``) the
        stored entry is ``make_entry(name=name, <decorated>, **attrs)`` and the decorated
        object is returned unchanged. A second, different entry under one name raises.
        """
        if obj is None:
            return lambda o: (self.register(name, o, **attrs), o)[1]
        if attrs and self.make_entry is None:
            raise TypeError(f"The {self.kind} registry takes no attributes: {sorted(attrs)}")
        entry = self.make_entry(name, obj, **attrs) if attrs and self.make_entry else obj
        existing = self._entries.get(name)
        if existing is not None and existing is not entry and existing != entry:
            raise ValueError(f"{self.kind} {name!r} is already registered to {existing!r}")
        self._entries[name] = entry
        return entry

    def get(self, name: str) -> T:
        """The entry called ``name``; an unknown name raises ``KeyError`` with suggestions.

        Plug-ins are loaded only when the name is not registered yet, so lookups made while
        the library itself is importing never import a third-party package half-way.
        """
        if name not in self._entries:
            self._load_plugins()
        try:
            return self._entries[name]
        except KeyError:
            close = difflib.get_close_matches(name, self._entries, n=3)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise KeyError(f"Unknown {self.kind} {name!r}.{hint} Available: {', '.join(sorted(self._entries))}") from None

    def names(self) -> list[str]:
        """Registered names, sorted (third-party plug-ins included)."""
        self._load_plugins()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._load_plugins()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def _load_plugins(self) -> None:
        """Load the entry points of :attr:`group` once; a broken plug-in is logged, not fatal."""
        if self._plugins_loaded or self.group is None:
            return
        self._plugins_loaded = True
        from importlib import metadata  # standard library, but 20 ms: only when a plug-in is first looked up

        for ep in metadata.entry_points(group=self.group):
            try:
                obj = ep.load()
            except Exception as exc:  # noqa: BLE001 - a third-party package must not break the library
                log.warning("Cannot load %s plug-in %r (%s): %s: %s", self.kind, ep.name, ep.value, type(exc).__name__, exc)
                continue
            if ep.name not in self._entries and not _is_module(obj):
                self.register(ep.name, obj)


def _is_module(obj: Any) -> bool:
    return type(obj).__name__ == "module"
