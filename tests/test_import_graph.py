"""The import graph of the library, read from its source: no cycle and no upward import.

Every import that runs counts, at module level or inside a function: an import inside a function
only defers a cycle to run time, so importing every module in a fresh interpreter
(tests/test_architecture.py) passes while two modules still need each other. Imports under
``TYPE_CHECKING`` (annotations only, never run) count for the layers, not for cycles. Layers,
bottom first: ``experiments -> agents -> graphs -> memory -> retrieval``.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The packages, bottom layer first: a module imports its own layer and the ones below it.
LAYERS = ("retrieval", "memory", "graphs", "agents", "experiments")

#: Cycles known and not fixed yet, each as the ``(importer, imported)`` of an import that closes it,
#: commented with its owner: none since the merge of issue #36 (agents.chat_models <-> openai_chat
#: was the last). An entry that no longer closes a cycle fails the test, so the list cannot outlive
#: it.
KNOWN_CYCLE_EDGES: set[tuple[str, str]] = set()

#: Known upward imports (a lower layer importing a higher one), likewise: ``(importer, imported)``.
KNOWN_UPWARD_IMPORTS: set[tuple[str, str]] = set()

#: The imports of our own modules inside a function, each ``(importer, imported)``: such an
#: import is for a heavy or optional dependency (or a fast start), never to dodge a cycle (which
#: the cycle test sees anyway). An entry that is no longer imported so fails the test.
FUNCTION_LEVEL_IMPORTS = {
    ("longctx.retrieval.contract.corpus", "longctx.retrieval.readers"),
    ("longctx.retrieval.contract.corpus", "longctx.retrieval.tokens"),
    ("longctx.experiments.cli.commands", "longctx.experiments.reports.report"),
    ("longctx.experiments.cli.commands", "longctx.experiments.runner.ray_runner"),
    ("longctx.experiments.cli.corpus_commands", "longctx.retrieval.ray_index"),
    ("longctx.experiments.reports.report", "longctx.experiments.reports.plots"),
    # startup time: `longctx --help` and argument errors answer before the subcommands load
    # the engines
    ("longctx.experiments.cli.app", "longctx.experiments.cli.commands"),
    # langchain_core's retriever stack (~1 s) only for users who ask for a retriever:
    ("longctx.retrieval.index.types", "longctx.retrieval.langchain_retriever"),
    ("longctx.retrieval.contract.corpus", "longctx.retrieval.index"),
    ("longctx.retrieval.contract.corpus", "longctx.retrieval.chunking"),
    # langchain_openai and the openai SDK (~0.5 s) only for users of an openai: model:
    ("longctx.agents.chat_models", "longctx.agents.openai_chat"),
}


def module_files() -> dict[str, Path]:
    """Every module of the five packages, by dotted name (``longctx.graphs.rag``)."""
    found = {}
    for package in LAYERS:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(("longctx", *(parts[:-1] if parts[-1] == "__init__" else parts)))] = path
    return found


def _type_checking_imports(tree: ast.AST) -> set[int]:
    """``id``s of the import statements under ``if TYPE_CHECKING:``
    (or ``typing.TYPE_CHECKING``)."""
    found = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if (
            isinstance(test, ast.Name | ast.Attribute)
            and getattr(test, "id", getattr(test, "attr", "")) == "TYPE_CHECKING"
        ):
            found.update(
                id(sub)
                for stmt in node.body
                for sub in ast.walk(stmt)
                if isinstance(sub, ast.Import | ast.ImportFrom)
            )
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str, known: set[str]) -> list[str]:
    """The dotted names one import statement of a module of ``package`` names (not yet matched
    to ``known``): ``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
    module = (
        (f"{base}.{node.module}" if node.module else base) if node.level else (node.module or "")
    )
    return [
        f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
        for alias in node.names
    ]


def _known(targets: list[str], known: set[str], name: str) -> set[str]:
    """The longest prefix of each target that is in ``known``, ``name`` itself left out."""
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)
    return found


def imported_modules(
    name: str, source: str, *, is_package: bool, known: set[str], type_checking: bool = True
) -> set[str]:
    """The modules of ``known`` that module ``name`` imports anywhere in ``source``
    (``type_checking``: with those under ``if TYPE_CHECKING:``).

    ``from a.b import c`` names ``a.b.c`` when that is a module, else ``a.b``; ``import a.b.c``
    names the longest known prefix; relative imports are resolved against ``name``.
    """
    package = name if is_package else name.rpartition(".")[0]
    tree = ast.parse(source)
    skipped = set() if type_checking else _type_checking_imports(tree)
    targets = [
        target
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in skipped
        for target in _targets(node, package, known)
    ]
    return _known(targets, known, name)


def function_level_imports(
    name: str, source: str, *, is_package: bool, known: set[str]
) -> set[str]:
    """The modules of ``known`` that module ``name`` imports inside a function of ``source``,
    resolved as :func:`imported_modules` does (relative imports and ``import a.b`` too)."""
    package = name if is_package else name.rpartition(".")[0]
    targets = [
        target
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        for sub in ast.walk(node)
        if isinstance(sub, ast.Import | ast.ImportFrom)
        for target in _targets(sub, package, known)
    ]
    return _known(targets, known, name)


@functools.cache
def import_graph(*, type_checking: bool) -> dict[str, set[str]]:
    """Module -> the modules it imports, over the five packages (read once per session; not to be
    mutated)."""
    files = module_files()
    known = set(files)
    return {
        name: imported_modules(
            name,
            path.read_text(encoding="utf-8"),
            is_package=path.name == "__init__.py",
            known=known,
            type_checking=type_checking,
        )
        for name, path in files.items()
    }


class _Tarjan:
    """Tarjan's strongly connected components over ``graph``, iterative (the graph is deep enough
    to matter for recursion)."""

    def __init__(self, graph: dict[str, set[str]]) -> None:
        self.graph = graph
        self.index: dict[str, int] = {}
        self.low: dict[str, int] = {}
        self.stack: list[str] = []
        self.on_stack: set[str] = set()
        self.found: list[list[str]] = []

    def _enter(self, node: str, work: list) -> None:
        self.index[node] = self.low[node] = len(self.index)
        self.stack.append(node)
        self.on_stack.add(node)
        work.append((node, iter(sorted(self.graph[node]))))

    def _leave(self, node: str) -> None:
        """Pop ``node``'s component off the stack when ``node`` is its root."""
        if self.low[node] != self.index[node]:
            return
        component = []
        while True:
            member = self.stack.pop()
            self.on_stack.discard(member)
            component.append(member)
            if member == node:
                break
        if len(component) > 1:
            self.found.append(sorted(component))

    def visit(self, start: str) -> None:
        work: list = []
        self._enter(start, work)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    self.low[work[-1][0]] = min(self.low[work[-1][0]], self.low[node])
                self._leave(node)
            elif child not in self.index:
                self._enter(child, work)
            elif child in self.on_stack:
                self.low[node] = min(self.low[node], self.index[child])


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    tarjan = _Tarjan(graph)
    for name in sorted(graph):
        if name not in tarjan.index:
            tarjan.visit(name)
    return tarjan.found


def layer(module: str) -> int:
    """The layer of ``module``'s package (0: retrieval, the bottom)."""
    return LAYERS.index(module.split(".")[1])


def test_the_graph_sees_imports_inside_functions_and_relative_imports():
    source = (
        "import longctx.retrieval.tokens\nfrom . import sibling\ndef f():\n"
        "    from longctx.retrieval.index import build_index\n    from ..chunking import Chunk\n"
    )
    known = {
        "longctx.retrieval.tokens",
        "longctx.retrieval.index",
        "longctx.retrieval.pkg.sibling",
        "longctx.retrieval.chunking",
        "longctx.retrieval.pkg.mod",
    }
    assert imported_modules("longctx.retrieval.pkg.mod", source, is_package=False, known=known) == {
        "longctx.retrieval.tokens",
        "longctx.retrieval.index",
        "longctx.retrieval.pkg.sibling",
        "longctx.retrieval.chunking",
    }
    guarded = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from longctx.retrieval.index import Index\nimport longctx.retrieval.chunking\n"
    )
    assert imported_modules(
        "longctx.retrieval.pkg.mod", guarded, is_package=False, known=known, type_checking=False
    ) == {"longctx.retrieval.chunking"}
    assert imported_modules(
        "longctx.retrieval.pkg.mod", guarded, is_package=False, known=known
    ) == {
        "longctx.retrieval.index",
        "longctx.retrieval.chunking",
    }
    assert function_level_imports(
        "longctx.retrieval.pkg.mod", source, is_package=False, known=known
    ) == {"longctx.retrieval.index", "longctx.retrieval.chunking"}
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_module_import_graph_has_no_cycle():
    graph = import_graph(type_checking=False)  # what runs: an import under TYPE_CHECKING never does
    stale = sorted(edge for edge in KNOWN_CYCLE_EDGES if edge[1] not in graph.get(edge[0], set()))
    pruned = {
        name: {d for d in deps if (name, d) not in KNOWN_CYCLE_EDGES}
        for name, deps in graph.items()
    }
    found = cycles(pruned)
    assert found == [], (
        "import cycles (every import that runs, inside functions too):\n"
        + "\n".join(" <-> ".join(c) for c in found)
    )
    closing = {
        edge for edge in KNOWN_CYCLE_EDGES if any(set(edge) <= set(c) for c in cycles(graph))
    }
    assert stale == [] and closing == KNOWN_CYCLE_EDGES, (
        f"allow-listed edges that close no cycle now: {sorted(KNOWN_CYCLE_EDGES - closing)}"
    )


def test_no_module_imports_a_higher_layer():
    graph = import_graph(type_checking=True)
    upward = sorted(
        (name, dep) for name, deps in graph.items() for dep in deps if layer(dep) > layer(name)
    )
    assert sorted(set(upward) - KNOWN_UPWARD_IMPORTS) == [], (
        f"upward imports ({' -> '.join(reversed(LAYERS))}): {upward}"
    )
    assert KNOWN_UPWARD_IMPORTS <= set(upward), (
        f"allow-listed upward imports that are gone: {sorted(KNOWN_UPWARD_IMPORTS - set(upward))}"
    )


def test_function_level_imports_of_our_own_modules_are_the_listed_ones():
    """Function-level imports are for optional or heavy dependencies only, never to dodge a cycle;
    the list is exact, so an entry outlives no import."""
    files = module_files()
    known = set(files)
    found = {
        (name, target)
        for name, path in files.items()
        for target in function_level_imports(
            name,
            path.read_text(encoding="utf-8"),
            is_package=path.name == "__init__.py",
            known=known,
        )
    }
    assert sorted(found - FUNCTION_LEVEL_IMPORTS) == [], "function-level imports not on the list"
    assert sorted(FUNCTION_LEVEL_IMPORTS - found) == [], (
        "listed function-level imports that are gone"
    )
