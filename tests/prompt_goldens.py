"""Golden copies of every prompt template, so a template never changes without its version.

Each module below holds prompt templates as upper-case string constants (or dicts of
them) and a version: ``PROMPTS_VERSION`` for strategies, ``VERSION`` for benchmarks. The
golden file ``tests/golden/prompts/<module>.json`` keeps the version and every template's
text. ``tests/test_prompt_goldens.py`` fails when a template differs from its golden copy
while the version is unchanged; after bumping the version, refresh the goldens with::

    python -m tests.prompt_goldens --update
"""

from __future__ import annotations

import argparse
import importlib
import json
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).parent / "golden" / "prompts"

#: module -> the name of its version constant
PROMPT_MODULES = {
    "longctx.graphs.prompts": "PROMPTS_VERSION",
    "longctx.graphs.rag.prompts": "PROMPTS_VERSION",
    "longctx.graphs.full_context.prompts": "PROMPTS_VERSION",
    "longctx.graphs.memagent.prompts": "PROMPTS_VERSION",
    "longctx.graphs.pai.prompts": "PROMPTS_VERSION",
    "longctx.graphs.self_ask.prompts": "PROMPTS_VERSION",
    "longctx.graphs.self_route.prompts": "PROMPTS_VERSION",
    "longctx.graphs.structured.prompts": "PROMPTS_VERSION",
    "longctx.graphs.raptor.prompts": "PROMPTS_VERSION",
    "longctx.graphs.hipporag.prompts": "PROMPTS_VERSION",
    "longctx.graphs.rlm.prompts": "PROMPTS_VERSION",
    "longctx.experiments.benchmarks.longbench_v1": "VERSION",
    "longctx.experiments.benchmarks.longbench_v2": "VERSION",
    "longctx.experiments.benchmarks.lveval": "VERSION",
    "longctx.experiments.benchmarks.corpusqa": "VERSION",
    "longctx.experiments.benchmarks.synth": "VERSION",
    "longctx.experiments.benchmarks.own": "VERSION",
    "longctx.experiments.benchmarks.ruler_hqa": "VERSION",
    "longctx.experiments.benchmarks.babilong": "VERSION",
    "longctx.experiments.metrics.loong": "VERSION",
    "longctx.experiments.metrics.corpusqa": "VERSION",
}


def templates(module_name: str) -> dict[str, Any]:
    """The module's prompt templates: upper-case constants that are strings, or dicts/tuples
    of strings."""
    module = importlib.import_module(module_name)
    found: dict[str, Any] = {}
    for name, value in vars(module).items():
        if not name.isupper() or name.endswith("VERSION"):
            continue
        if isinstance(value, str) and len(value) > 20:
            found[name] = value
        elif (
            isinstance(value, dict)
            and value
            and all(isinstance(v, str) and len(v) > 20 for v in value.values())
        ):
            found[name] = dict(sorted(value.items()))
    return found


def snapshot(module_name: str) -> dict[str, Any]:
    """What the golden file of ``module_name`` holds: its version and templates."""
    module = importlib.import_module(module_name)
    return {
        "version": getattr(module, PROMPT_MODULES[module_name]),
        "templates": templates(module_name),
    }


def golden_path(module_name: str) -> Path:
    """Where the golden copy of ``module_name`` lives."""
    return GOLDEN_DIR / f"{module_name.removeprefix('longctx.')}.json"


def update() -> None:
    """Rewrite every golden file from the current templates."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    for name in PROMPT_MODULES:
        golden_path(name).write_text(
            json.dumps(snapshot(name), indent=2, ensure_ascii=False, sort_keys=True) + "\n",
            encoding="utf-8",
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--update", action="store_true", help="rewrite the golden files")
    if parser.parse_args().update:
        update()
