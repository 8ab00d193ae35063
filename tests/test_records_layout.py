"""The structured strategy's store is a module of its own below ``graphs`` (issue 36, item 3):
``longctx.memory.records`` loads no graph or agent code, the strategy's package shares the validated
call with PAI instead of importing PAI."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_records_store_loads_no_graph_or_agent_module():
    code = "import json, sys; import longctx.memory.records; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout)
    assert "longctx.memory.records.database" in loaded and "longctx.memory.records.cache" in loaded
    assert [m for m in loaded if m.split(".")[0] in ("graphs", "agents", "experiments")] == []


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, at any level of the file."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_the_structured_strategy_imports_nothing_of_pai():
    """Its calls go through ``longctx.graphs.calls.validated_call`` and its retry note is
    ``longctx.graphs.prompts``'s, not PAI's."""
    found = {
        f"{p.name}: {m}"
        for p in sorted((ROOT / "graphs" / "structured").glob("*.py"))
        for m in _imports(p)
        if m == "longctx.graphs.pai" or m.startswith("longctx.graphs.pai.")
    }
    assert found == set()
