"""One import namespace (#50): the wheel installs ``longctx`` and nothing else at the top level, so
the library installs beside packages that own the generic names its folders have (the OpenAI Agents
SDK installs a top-level ``agents``), and no module of ours imports a folder by its bare name."""

from __future__ import annotations

import ast
import functools
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("agents", "retrieval", "memory", "graphs", "experiments")


def _built_wheel(tmp_path: Path) -> Path:
    """The wheel of the working tree, built from a copy (the build writes beside its sources)."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for folder in (*FOLDERS, "longctx"):
        shutil.copytree(ROOT / folder, source / folder, symlinks=True, ignore=ignore)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel


def test_the_wheel_holds_longctx_only_and_its_command_and_declarations(tmp_path):
    wheel = _built_wheel(tmp_path)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = zipfile.ZipFile(wheel).namelist()
    dist_info = f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    assert {n.split("/")[0] for n in names} == {"longctx", dist_info}
    assert {f"longctx/{f}/__init__.py" for f in FOLDERS} <= set(names)
    # every strategy package's registry declarations ship with it; the speed benchmarks do not
    declared = {p.parent.name for p in (ROOT / "graphs").glob("*/plugin.toml")}
    assert {f"longctx/graphs/{d}/plugin.toml" for d in declared} <= set(names)
    assert not [n for n in names if n.startswith(("longctx/benchmarks", "benchmarks/", "tests/"))]
    entry_points = zipfile.ZipFile(wheel).read(f"{dist_info}/entry_points.txt").decode()
    assert "longctx = longctx.experiments.cli.app:main" in entry_points


def test_longctx_imports_beside_another_top_level_agents_package(tmp_path):
    """A package owning the name ``agents`` (the Agents SDK's) stays the one ``import agents``
    finds, and ``longctx`` imports beside it; run outside the checkout, as an installed
    user runs."""
    site = tmp_path / "site"
    (site / "agents").mkdir(parents=True)
    (site / "agents" / "__init__.py").write_text("OWNER = 'someone else'\n")
    code = (
        "import agents, longctx\n"
        "from longctx import Corpus, answer\n"
        "import longctx.agents.api as api\n"
        "assert agents.OWNER == 'someone else' and api.answer is answer, agents.__file__\n"
        "missing = [n for n in longctx.__all__ if getattr(longctx, n, None) is None]\n"
        "assert missing == [], missing\n"
        "print('ok', longctx.__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok longctx", out.stderr[-2000:]


@pytest.mark.parametrize("folder", [*FOLDERS, "tests", "benchmarks", "examples"])
def test_no_module_imports_a_folder_by_its_bare_name(folder):
    """``import graphs`` works only from a checkout and loads a second copy of every module beside
    ``longctx.graphs`` (two registries, two caches): every import names the namespace."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            found += [
                f"{path.relative_to(ROOT)}:{node.lineno} {n}"
                for n in names
                if n.split(".")[0] in FOLDERS
            ]
    assert found == [], "\n".join(found)


def test_a_cached_reply_is_keyed_by_no_module_path_of_ours():
    """The reply cache keys a call by LangChain's ``llm_string``: it names ChatOpenAI's own path,
    not the module of our subclass, so moving modules (as the namespace move did) re-pays no
    cached answer."""
    from longctx import make_chat_model

    llm = make_chat_model("openai:m", base_url="http://127.0.0.1:9/v1", api_key="sk-test")
    key = llm._get_llm_string(stop=None)
    assert '"ChatOpenAI"' in key and "longctx" not in key and "openai_chat" not in key, key


@pytest.mark.slow
def test_the_wheel_installs_beside_the_openai_agents_sdk_in_a_fresh_environment(tmp_path):
    """The issue's proof, as a user meets it: a fresh virtual environment, the built wheel and the
    OpenAI Agents SDK (which owns the top-level name ``agents``) installed from the package index;
    both import, each its own, and the console script runs. Needs the package index: slow tier."""
    wheel = _built_wheel(tmp_path)
    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=300)
    python = env_dir / "bin" / "python"
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel), "openai-agents"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    code = (
        "import agents, longctx\n"
        "from longctx import answer\n"
        "assert hasattr(agents, 'Runner') and 'site-packages/agents' in agents.__file__\n"
        "print(longctx.__file__)\n"
    )
    out = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0 and "site-packages/longctx" in out.stdout, out.stderr[-2000:]
    help_text = subprocess.run(
        [str(env_dir / "bin" / "longctx"), "--help"], capture_output=True, text=True, timeout=300
    )
    assert help_text.returncode == 0 and "usage: longctx" in help_text.stdout, help_text.stderr


@functools.cache
def _submodules(folder: str) -> frozenset[str]:
    """The modules and sub-packages directly in ``folder`` (``graphs`` -> ``runtime``, ...)."""
    found = {p.stem for p in (ROOT / folder).glob("*.py") if p.stem != "__init__"}
    return frozenset(found | {p.parent.name for p in (ROOT / folder).glob("*/__init__.py")})


@pytest.mark.parametrize("folder", ["tests", "benchmarks", "examples"])
def test_no_submodule_is_reached_as_an_attribute_of_a_package_imported_bare(folder):
    """``from longctx import graphs`` then ``graphs.runtime.run_batched`` works only when some other
    import has loaded ``run_batched``: a file passes in the suite and fails alone (two files did
    after the namespace move). A module is imported by its own name instead."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bound = {
            (a.asname or a.name): a.name
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and node.module == "longctx"
            for a in node.names
            if a.name in FOLDERS
        }
        found += [
            f"{path.relative_to(ROOT)}:{node.lineno} {node.value.id}.{node.attr}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in bound
            and node.attr in _submodules(bound[node.value.id])
        ]
    assert found == [], "\n".join(found)
