"""A prompt template never changes without its version being bumped
(see ``tests/prompt_goldens.py``)."""

from __future__ import annotations

import json

import pytest

from longctx.graphs import STRATEGIES
from tests.prompt_goldens import PROMPT_MODULES, golden_path, snapshot


@pytest.mark.parametrize("module_name", sorted(PROMPT_MODULES))
def test_templates_match_their_golden_copy_or_the_version_was_bumped(module_name):
    path = golden_path(module_name)
    assert path.exists(), (
        f"no golden copy of {module_name}: run python -m tests.prompt_goldens --update"
    )
    golden = json.loads(path.read_text(encoding="utf-8"))
    current = snapshot(module_name)
    assert current["templates"], f"{module_name} holds no templates"
    changed = sorted(
        k
        for k in {*golden["templates"], *current["templates"]}
        if golden["templates"].get(k) != current["templates"].get(k)
    )
    if current["version"] == golden["version"]:
        assert not changed, (
            f"{module_name}: {changed} changed without a version bump; bump it, then run python "
            "-m tests.prompt_goldens --update"
        )
    else:
        pytest.fail(
            f"{module_name}: version {golden['version']} -> {current['version']}: refresh the "
            "goldens (python -m tests.prompt_goldens --update)"
        )


def test_every_strategy_records_its_prompts_version():
    for name in STRATEGIES.names():
        assert isinstance(STRATEGIES.get(name).prompts_version, int)
