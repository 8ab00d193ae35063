"""The plug-in registry: one ``Registry`` per kind of plug-in, entries declared by name and loaded
on first use.

Part of the answer contract (:mod:`longctx.retrieval.contract`): standard library only, so every
package may import it.

An entry is registered in one of two ways:

- directly: ``@REGISTRY.register("name", ...)`` on the object (or ``register("name", obj)``);
- lazily: ``register("name", target="package.module:attr")``, which imports nothing. The
  target's module is imported on the first lookup of that name; the entry is what importing it
  registers under the name (the decorator form), else the target's attribute itself.

Built-in entries are declared lazily in a ``plugin.toml`` file in the folder of the package they
belong to (``graphs/rag/plugin.toml``), read without importing the package; third-party packages
declare theirs as entry points. So every user of a registry (the CLI's ``--help``, ``answer()``,
the report, the plan) reads the same names, and a plug-in is added by files in its own package.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import logging
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar, overload

from longctx.retrieval.contract.errors import UnknownName

log = logging.getLogger(__name__)

T = TypeVar("T")
#: What the decorator form of :meth:`Registry.register` takes and gives back unchanged.
D = TypeVar("D")

#: The file in a package folder that declares the entries of that package, by registry section.
DECLARATIONS_FILE = "plugin.toml"


@dataclass(frozen=True)
class Declaration:
    """An entry known by name and target only: its module is imported on the first lookup
    of the name.

    Attributes:
        target: ``"module:attr"``, or ``"module"`` when importing the module registers the
            name itself.
        attrs: Attributes declared with the name, readable without importing anything (a strategy's
            ``uses_index``); the loaded entry must have the same values.
        source: Where it was declared (a ``plugin.toml`` path, an entry point), for messages.
        third_party: Declared by an installed package's entry point (not by this library): one
            that fails to import is left out of :meth:`Registry.available` instead of failing it.
    """

    target: str
    attrs: Mapping[str, Any] = field(default_factory=dict)
    source: str = "code"
    third_party: bool = False


class Registry(Generic[T]):
    """A name -> plug-in mapping: decorator or lazy registration, collisions raise, lookups explain.

    Every kind of plug-in (strategies, retrievers, embedders, chat-model providers,
    benchmarks, metrics, synth domains) has one. Third-party packages add entries without
    editing this repository through an entry-point group (``[project.entry-points."<group>"]``
    in their ``pyproject.toml``): each entry point is a lazy declaration under its name, its
    value the target (a module that registers the name on import, or the plug-in object).

    Args:
        kind: What the entries are, for messages (``"strategy"``).
        group: Entry-point group scanned for third-party plug-ins (``"longctx.strategies"``).
        make_entry: Builds the stored entry when the decorator is given attributes, e.g.
            ``Strategy`` for ``@STRATEGIES.register("rag", config_cls=...)``; a ``"module:attr"``
            string is imported when first needed (the registry itself stays light).
        packages: Packages whose folder and sub-package folders may hold a ``plugin.toml`` declaring
            built-in entries in the section named after :attr:`group` (``[strategies.rag]``).
    """

    def __init__(
        self,
        kind: str,
        *,
        group: str | None = None,
        make_entry: Callable[..., T] | str | None = None,
        packages: tuple[str, ...] = (),
    ):
        self.kind = kind
        self.group = group
        self.make_entry = make_entry
        self.packages = packages
        self._entries: dict[str, T | Declaration] = {}
        self._declared: dict[str, Declaration] = {}
        self._loaded: dict[str, T] = {}  # target -> its entry (kept when a test swaps _entries)
        self._declarations_read = self._reading = False
        self._lock = threading.RLock()
        self._frozen = False

    @overload
    def register(
        self, name: str, obj: None = None, *, target: None = None, **attrs: Any
    ) -> Callable[[D], D]: ...
    @overload
    def register(
        self, name: str, obj: Any = None, *, target: str | None = None, **attrs: Any
    ) -> Any: ...
    def register(
        self, name: str, obj: Any = None, *, target: str | None = None, **attrs: Any
    ) -> Any:
        """Register ``obj`` under ``name``; without ``obj``, return a decorator; with ``target``,
        declare it lazily.

        ``@REGISTRY.register("name")`` registers the decorated class or function itself;
        with attributes (``@STRATEGIES.register("rag", config_cls=RagConfig, ...)``) the
        stored entry is ``make_entry(name=name, <decorated>, **attrs)`` and the decorated
        object is returned unchanged. ``register("name", target="module:attr", **attrs)``
        imports nothing: ``attrs`` are the declared attributes the loaded entry must have.
        A second, different entry under one name raises ``ValueError``; a new name in a frozen
        registry raises ``RuntimeError``.
        """
        if target is not None:
            if obj is not None:
                raise TypeError(
                    f"Register {self.kind} {name!r} with an object or a target, not both"
                )
            self._declare(name, Declaration(target, dict(attrs)))
            return None
        if obj is None:
            return lambda o: (self.register(name, o, **attrs), o)[1]
        if attrs and self.make_entry is None:
            raise TypeError(f"The {self.kind} registry takes no attributes: {sorted(attrs)}")
        entry = self._make_entry()(name, obj, **attrs) if attrs else obj
        self._store(name, entry)
        return entry

    def get(self, name: str) -> T:
        """The entry called ``name``, its module imported if it was declared lazily.

        Raises:
            KeyError: An unknown name, with the closest names and the available ones.
        """
        entry = self._entries.get(name)
        if entry is None:
            self._read_declarations()
            entry = self._current(name)
        if entry is None:
            raise self._unknown(name)
        return self._load(name, entry) if isinstance(entry, Declaration) else entry

    def check(self, name: str) -> None:
        """Raise the ``KeyError`` of :meth:`get` for an unknown name, importing nothing."""
        if name not in self:
            raise self._unknown(name)

    def declared(self, name: str) -> Mapping[str, Any]:
        """The attributes declared with ``name``'s lazy target (empty when it was
        registered directly)."""
        self._read_declarations()
        found = self._declared.get(name)
        return found.attrs if found is not None else {}

    def names(self) -> list[str]:
        """Registered and declared names, sorted (third-party plug-ins included); nothing
        is imported."""
        self._read_declarations()
        return sorted({*self._entries, *self._declared})

    def available(self) -> list[str]:
        """The names whose entries load, sorted, each imported now: what listings over
        every entry use.

        A third-party plug-in that fails to import is logged (its package and the error) and left
        out, so one broken install does not break every listing (ceilings, the demo, ``index``);
        looking it up by name still raises its error. A built-in one that fails raises: a bug here.
        """
        loaded = []
        for name in self.names():
            try:
                self.get(name)
            except Exception as exc:
                declaration = self._declared.get(name)
                if declaration is None or not declaration.third_party:
                    raise
                log.warning(
                    "Leaving out the %s %r (%s): it failed to load: %s: %s",
                    self.kind,
                    name,
                    declaration.source,
                    type(exc).__name__,
                    exc,
                )
                continue
            loaded.append(name)
        return loaded

    def freeze(self) -> None:
        """Refuse new names from now on (a declared name may still load): the set of
        plug-ins is fixed."""
        self._read_declarations()
        self._frozen = True

    @contextlib.contextmanager
    def scoped(
        self, name: str, obj: Any = None, *, target: str | None = None, **attrs: Any
    ) -> Iterator[Any]:
        """Register ``name`` (as :meth:`register` does) for the ``with`` block only; frozen or not.

        On exit every entry registered inside the block is removed again, so a test's plug-in
        does not outlive the test. Yields what :meth:`register` returns (``None`` for a target).
        """
        self._read_declarations()
        entries, declared, frozen = dict(self._entries), dict(self._declared), self._frozen
        self._frozen = False
        try:
            yield self.register(name, obj, target=target, **attrs)
        finally:
            self._entries.clear()
            self._entries.update(entries)
            self._declared, self._frozen = declared, frozen

    def __contains__(self, name: object) -> bool:
        if name not in self._entries:
            self._read_declarations()
        return name in self._entries or name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def _make_entry(self) -> Callable[..., T]:
        """:attr:`make_entry`, imported the first time when it was given as a
        ``"module:attr"`` target."""
        make = self.make_entry
        if isinstance(make, str):
            make = self.make_entry = _import_target(make)
        if make is None:
            raise TypeError(f"The {self.kind} registry takes no attributes")
        return make

    def _current(self, name: str) -> T | Declaration | None:
        """``name``'s entry or declaration (a declaration survives a test swapping ``_entries``)."""
        entry = self._entries.get(name)
        return entry if entry is not None else self._declared.get(name)

    def _store(self, name: str, entry: T) -> None:
        existing = self._current(name)
        if isinstance(existing, Declaration):
            self._check_declared(name, existing, entry)
            self._loaded[existing.target] = entry
        elif existing is not None and existing is not entry and existing != entry:
            raise ValueError(f"{self.kind} {name!r} is already registered to {existing!r}")
        elif existing is None and self._frozen:
            raise RuntimeError(f"The {self.kind} registry is frozen: cannot register {name!r}")
        self._entries[name] = entry

    def _declare(self, name: str, declaration: Declaration) -> None:
        existing = self._entries.get(name)
        if isinstance(existing, Declaration) and existing.target != declaration.target:
            raise ValueError(
                f"{self.kind} {name!r} is already declared with target {existing.target!r} "
                f"({existing.source})"
            )
        if existing is None and self._frozen:
            raise RuntimeError(f"The {self.kind} registry is frozen: cannot declare {name!r}")
        self._declared[name] = declaration
        if existing is None or isinstance(existing, Declaration):
            self._entries[name] = declaration
        else:
            # registered before its declaration was read (its module
            # imported first): they must agree
            self._check_declared(name, declaration, existing)
            self._loaded[declaration.target] = existing

    def _check_declared(self, name: str, declaration: Declaration, entry: Any) -> None:
        for key, value in declaration.attrs.items():
            if getattr(entry, key, value) != value:
                raise ValueError(
                    f"{self.kind} {name!r}: {declaration.source} declares {key}={value!r}, its "
                    f"entry has {getattr(entry, key)!r}"
                )

    def _load(self, name: str, declaration: Declaration) -> T:
        """Import the target of ``name``'s declaration; the entry is what the import registered,
        else the attribute."""
        if declaration.target in self._loaded:
            entry = self._loaded[declaration.target]
        else:
            module, _, attr = declaration.target.partition(":")
            imported = importlib.import_module(module)
            now = self._entries.get(name)  # the import registered it (decorator form)?
            if now is not None and not isinstance(now, Declaration):
                return now
            if not attr:
                raise UnknownName(
                    f"{self.kind} {name!r}: importing {module!r} ({declaration.source}) "
                    f"registered no {self.kind} of that name"
                )
            entry = _attribute(imported, attr)
            self._check_declared(name, declaration, entry)
            self._loaded[declaration.target] = entry
        self._entries[name] = entry
        return entry

    def _unknown(self, name: str) -> UnknownName:
        names = self.names()
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        return UnknownName(f"Unknown {self.kind} {name!r}.{hint} Available: {', '.join(names)}")

    def _read_declarations(self) -> None:
        """Declare, once, the entries of the ``plugin.toml`` files of :attr:`packages` and the entry
        points of :attr:`group`.

        Under a lock, checked again inside it: a lookup while another thread reads waits for it.
        :meth:`_load` imports without our lock (Python's import lock runs a module once; ours held
        there could deadlock with a module that looks a name up as it is imported).
        """
        if self._declarations_read:
            return
        with self._lock:  # a second thread's first lookup waits here for the first's reading
            if self._declarations_read or self._reading:  # read, or being read by this thread
                return
            self._reading = True
            try:
                self._declare_all()
                self._declarations_read = True
            finally:
                self._reading = False

    def _declare_all(self) -> None:
        section = self.group.rpartition(".")[2] if self.group else None
        for path in declaration_files(self.packages) if section else ():
            for name, declaration in read_declarations(path, section or "").items():
                self._declare(name, declaration)
        if self.group is not None:
            from importlib import metadata  # standard library, but 20 ms: on the first lookup only

            for ep in metadata.entry_points(group=self.group):
                if ep.name not in self._entries and ep.name not in self._declared:
                    dist = ep.dist.name if ep.dist is not None else "an installed package"
                    self._declare(
                        ep.name,
                        Declaration(ep.value, {}, f"the entry point of {dist}", third_party=True),
                    )


def declaration_files(packages: tuple[str, ...]) -> list[Path]:
    """The ``plugin.toml`` files in the folders of ``packages`` and of their direct
    sub-packages, found without importing any of them (an imported package's ``__path__`` is
    read as it is now)."""
    found = []
    for package in packages:
        module = sys.modules.get(package)
        spec = None if module is not None else importlib.util.find_spec(package)
        folders = list(
            getattr(module, "__path__", None)
            or (spec.submodule_search_locations if spec else None)
            or []
        )
        for folder in map(Path, folders):
            candidates = [
                folder / DECLARATIONS_FILE,
                *sorted(folder.glob(f"*/{DECLARATIONS_FILE}")),
            ]
            found += [p for p in candidates if p.is_file()]
    return found


def read_declarations(path: Path, section: str) -> dict[str, Declaration]:
    """The declarations of ``path``'s ``[section]`` table: ``name = "module:attr"`` or a table
    ``[section.name]`` with ``target`` and declared attributes."""
    import tomllib  # standard library: read only where a registry first lists its names

    table = tomllib.loads(path.read_text(encoding="utf-8")).get(section, {})
    found = {}
    for name, value in table.items():
        attrs = dict(value) if isinstance(value, dict) else {"target": value}
        target = attrs.pop("target", None)
        if not isinstance(target, str):
            raise ValueError(f"{path}: [{section}] {name!r} needs a target 'module:attr'")
        found[name] = Declaration(target, attrs, str(path))
    return found


def import_submodules(package: str) -> list[ModuleType]:
    """Import every module of ``package`` (not its sub-packages' modules), in name order: a
    kind whose plug-ins register on import (benchmarks, metrics) is then complete without a
    list of them."""
    folders = importlib.import_module(package).__path__
    return [
        importlib.import_module(f"{package}.{info.name}")
        for info in sorted(pkgutil.iter_modules(folders), key=lambda i: i.name)
        if not info.ispkg
    ]


def _import_target(target: str) -> Any:
    module, _, attr = target.partition(":")
    return _attribute(importlib.import_module(module), attr)


def _attribute(module: ModuleType, attr: str) -> Any:
    obj: Any = module
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj
