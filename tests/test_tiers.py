"""The test tiers (issue #36 item 5): the table in tests/tiers.py names real tests, its markers are
applied at collection, and ``-m unit`` (make test-fast) keeps exactly the tests the table does
not list."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tiers import (
    LONGEST_FILES,
    MARKERS,
    NOT_UNIT,
    TIERS,
    file_order,
    stale_entries,
    tier_of,
)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def _test_functions(path: str) -> set[str]:
    tree = ast.parse((TESTS / path).read_text(encoding="utf-8"))
    return {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test_")
    }


def test_every_entry_names_a_test_of_its_file_under_a_registered_marker():
    registered = {
        line.split(":")[0].strip(' "')
        for line in re.findall(
            r'^\s+"[a-z0-9]+:[^"]*",?$', (ROOT / "pyproject.toml").read_text(), re.M
        )
    }
    for path, functions in TIERS.items():
        assert (TESTS / path).is_file(), path
        assert stale_entries(path, _test_functions(path)) == []
        assert set(functions.values()) <= set(MARKERS) <= registered, (path, registered)
    assert {"unit", "slow", "ray"} <= registered and set(NOT_UNIT) == {"slow", "ray", *MARKERS}


def test_a_listed_test_gets_its_marker_and_a_renamed_one_is_named():
    path, functions = next((p, f) for p, f in TIERS.items() if "*" not in f)
    name, marker = next(iter(functions.items()))
    assert tier_of(path, name) == marker and tier_of(path, "test_not_in_the_table") is None
    whole = next(p for p, f in TIERS.items() if "*" in f)
    assert tier_of(whole, "test_anything") == TIERS[whole]["*"]
    assert stale_entries(path, _test_functions(path) - {name}) == [f"{path}::{name}"]


def test_this_test_is_in_the_unit_tier(request):
    assert request.node.get_closest_marker("unit") is not None
    assert not any(request.node.get_closest_marker(m) for m in NOT_UNIT)


def test_the_unit_tier_of_a_file_is_what_the_table_does_not_list():
    """``pytest -m unit`` on a file with listed and unlisted tests collects the unlisted
    ones only."""
    path = "test_memagent_storage.py"
    listed = set(TIERS[path])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "-m",
            "unit",
            f"tests/{path}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    collected = {
        line.split("::")[1].split("[")[0]
        for line in out.stdout.splitlines()
        if line.startswith(f"tests/{path}::")
    }
    assert collected == _test_functions(path) - listed and listed and collected


@pytest.mark.parametrize("target", ["test-fast", "test", "test-all", "test-ray"])
def test_the_makefile_keeps_every_tier_target(target):
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^{target}: install", makefile, re.M), target
    assert "pytest -m unit" in makefile.split("test-fast: install", 1)[1].split("\n\n", 1)[0]


def test_the_longest_files_go_to_the_workers_first_then_the_files_with_most_tests():
    assert all((TESTS / path).is_file() for path in LONGEST_FILES)
    longest, second = LONGEST_FILES[:2]
    paths = [
        "test_a.py",
        "test_b.py",
        "test_b.py",
        second,
        longest,
        "test_c.py",
        "test_b.py",
        "test_c.py",
    ]
    assert file_order(paths) == [longest, second, "test_b.py", "test_c.py", "test_a.py"]


def test_pytest_xdist_keeps_the_collected_file_order(pytestconfig):
    """Its own order (most tests first) would hand the few-test, long files out last."""
    pytest.importorskip("xdist")
    assert pytestconfig.option.loadscopereorder is False


def test_a_pytest_xdist_worker_runs_openmp_on_its_share_of_the_cores():
    """torch, faiss and MKL start a thread per core in each worker unless told: on 2 cores, two
    workers' four threads spinning at OpenMP barriers ran MiniLM 15-20x slower."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2:
        pytest.skip("runs on a pytest-xdist worker (make test)")
    assert os.environ["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // workers))
