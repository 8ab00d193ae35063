"""One idea per module: no module of the library (``agents/``, ``experiments/``, ``graphs/``,
``retrieval/``, ``memory/``) over about 400 lines (prompt tables and the benchmark scripts of
``benchmarks`` aside), and no import inside a function of ``agents/`` or ``experiments/`` that
closes an import cycle (such an import hides a cycle from the module-level check)."""

from __future__ import annotations

import ast

from tests.test_architecture import ROOT, _module_level_imports, _modules

#: The packages held to the cycle rule (``retrieval``'s own cycle is its item of issue #36).
CHECKED = ("agents", "experiments")
#: The packages held to the line rule: the whole library.
LIBRARY = ("agents", "experiments", "graphs", "retrieval", "memory")
MAX_LINES = 400


def _checked_files(packages: tuple[str, ...] = CHECKED) -> list:
    return [
        p
        for package in packages
        for p in sorted((ROOT / package).rglob("*.py"))
        if "perf" not in p.parts and "prompts" not in p.stem
    ]


def test_no_module_of_the_library_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in _checked_files(LIBRARY)
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def _function_level_imports(path) -> set[str]:
    """First-party modules ``path`` imports inside its functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom) and sub.module and sub.level == 0:
                    found.add(sub.module)
                elif isinstance(sub, ast.Import):
                    found.update(a.name for a in sub.names)
    return found


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        m = todo.pop()
        if m == goal:
            return True
        if m not in seen:
            seen.add(m)
            todo.extend(graph.get(m, ()))
    return False


def test_no_import_inside_a_function_closes_a_cycle():
    """A function-level import is for a heavy or optional dependency, never a module that imports its importer back."""
    modules = set(_modules())
    graph = {m: {d for d in _module_level_imports(m) if d in modules and d != m} for m in modules}
    cycles = []
    for path in _checked_files():
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for target in sorted(_function_level_imports(path) & modules):
            if target != name and _reaches(graph, target, name):
                cycles.append(f"{name} -> {target}")
    assert cycles == []
