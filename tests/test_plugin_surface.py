"""The plug-in import surface (issue #47): a strategy package imports the engine through
``longctx.graphs.plugin.api`` only (plus its own package, the contract
``longctx.retrieval.contract`` and third-party libraries)."""

from __future__ import annotations

from pathlib import Path

from tests.test_import_graph import ROOT, imported_modules, module_files

#: What a strategy package may import of the library besides its own package.
SURFACE = {"longctx.graphs.plugin.api", "longctx.retrieval.contract"}

#: The built-in strategies' imports beside :data:`SURFACE` that remain (issue #47): package -> the
#: library modules it imports; none is left (Self-Route, the last, reaches its legs through the
#: registry). The others were migrated (a name imported from
#: ``longctx.graphs.plugin.api``, added there when missing); an entry the package no longer needs
#: fails the test, so the list cannot outlive it. A package not listed (a new one) gets no
#: exception.
KNOWN_EXCEPTIONS: dict[str, set[str]] = {}


def library_imports(package_dir: Path, package: str) -> set[str]:
    """The library modules (``retrieval``, ``memory``, ``graphs``, ``agents``, ``experiments``) that
    the modules of ``package_dir`` (dotted name ``package``) import, outside their own package
    and :data:`SURFACE`."""
    known = set(module_files())
    found: set[str] = set()
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir).with_suffix("").parts
        name = ".".join((package, *(parts[:-1] if parts[-1] == "__init__" else parts)))
        found |= imported_modules(
            name,
            path.read_text(encoding="utf-8"),
            is_package=path.name == "__init__.py",
            known=known,
        )
    return {
        m for m in found if m not in SURFACE and m != package and not m.startswith(f"{package}.")
    }


def strategy_packages() -> dict[str, Path]:
    """The strategy packages under ``graphs/`` (a folder with a ``plugin.toml``)."""
    return {
        f"longctx.graphs.{d.name}": d
        for d in sorted((ROOT / "graphs").iterdir())
        if (d / "plugin.toml").is_file()
    }


def test_strategy_packages_import_only_the_plugin_surface():
    found = {name: library_imports(path, name) for name, path in strategy_packages().items()}
    extra = {name: sorted(mods - KNOWN_EXCEPTIONS.get(name, set())) for name, mods in found.items()}
    assert {k: v for k, v in extra.items() if v} == {}
    stale = {name: sorted(mods - found.get(name, set())) for name, mods in KNOWN_EXCEPTIONS.items()}
    assert {k: v for k, v in stale.items() if v} == {}, "an exception no longer needed: remove it"
