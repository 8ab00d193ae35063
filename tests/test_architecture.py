"""The shape the architecture promises: every module imports in a fresh interpreter, a contract
module at the bottom of the import graph, one registration idiom, and third-party plug-ins through
entry points. The import graph itself (no cycle, no upward import, the function-level imports) is
read from the source in tests/test_import_graph.py."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.test_import_graph import LAYERS as PACKAGES
from tests.test_import_graph import ROOT, module_files


def _modules() -> list[str]:
    """Every importable module of the library, in dependency order (bottom layer first), the Ray
    modules aside (the ``[ray]`` extra)."""
    return [
        n
        for n in module_files()
        if not n.startswith(
            ("longctx.retrieval.ray_index", "longctx.experiments.runner.ray_runner")
        )
    ]


def _run(code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.parametrize("order", ["forward", "reverse"])
def test_every_module_imports_in_a_fresh_interpreter(order):
    modules = _modules() if order == "forward" else list(reversed(_modules()))
    _run("import importlib\nfor name in " + repr(modules) + ":\n    importlib.import_module(name)")


#: The answer contract: ``longctx.retrieval.contract`` re-exports the modules that define it.
CONTRACT_MODULES = (
    "longctx.retrieval.contract.answer",
    "longctx.retrieval.contract",
    "longctx.retrieval.contract.corpus",
    "longctx.retrieval.contract.document",
    "longctx.retrieval.contract.errors",
    "longctx.retrieval.contract.question",
    "longctx.retrieval.contract.registry",
)
#: Standard-library-only helpers a contract module uses, with no type of the contract's own.
CONTRACT_HELPERS = ("longctx.retrieval.duplicates",)


@pytest.mark.parametrize("module", CONTRACT_MODULES)
def test_the_contract_modules_import_no_other_package(module):
    """Each contract module, imported alone, loads only contract modules and the
    standard library."""
    code = (
        f"import json, sys; before = set(sys.modules); import {module}; "
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    loaded = json.loads(_run(code))
    ours = {m for m in loaded if m.split(".")[0] == "longctx"}
    assert ours <= {
        "longctx",
        "longctx.retrieval",
        "longctx.retrieval.lazy",
        *CONTRACT_MODULES,
        *CONTRACT_HELPERS,
    }, sorted(ours)  # lazy: the package's PEP 562 hook, standard library only
    foreign = sorted(
        m
        for m in loaded
        if m.split(".")[0] != "longctx" and m.split(".")[0] not in sys.stdlib_module_names
    )
    assert foreign == [], foreign


def test_the_contract_module_gathers_every_contract_module():
    """Its names load their modules on first use: the bare import loads none of them (``longctx
    --help`` needs only the registry), reading every name loads exactly the contract modules."""
    code = (
        "import json, sys, longctx.retrieval.contract as c; bare = sorted(sys.modules); "
        "[getattr(c, n) for n in c.__all__]; print(json.dumps([bare, sorted(sys.modules)]))"
    )
    bare, loaded = json.loads(_run(code))
    ours = sorted(
        ["longctx", "longctx.retrieval", "longctx.retrieval.lazy", "longctx.retrieval.contract"]
    )
    assert [m for m in bare if m.split(".")[0] == "longctx"] == ours
    assert [m for m in loaded if m.split(".")[0] == "longctx"] == sorted(
        [
            "longctx",
            "longctx.retrieval",
            "longctx.retrieval.lazy",
            *CONTRACT_MODULES,
            *CONTRACT_HELPERS,
        ]
    )


def test_the_retrieval_package_talks_to_no_chat_server():
    """``retrieval`` never calls a chat model: the routes of a chat server are named beside
    ``graphs/calls/llm.py`` only."""
    routes = ("/tokenize", "/detokenize", "/chat/completions", "/completions")
    found = []
    for path in sorted((ROOT / "retrieval").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.endswith(routes)
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    assert found == []


def test_contract_types_have_one_home():
    import longctx
    from longctx import retrieval
    from longctx.retrieval import contract

    for name in ("Answer", "Evidence", "Usage", "Question", "Step", "Corpus", "Document"):
        assert getattr(longctx, name) is getattr(contract, name)
    assert retrieval.Registry is contract.Registry
    defined = {name: getattr(contract, name).__module__ for name in contract.__all__}
    assert set(defined.values()) == set(CONTRACT_MODULES) - {"longctx.retrieval.contract"}, (
        defined
    )  # each part has its own module


def test_third_party_strategy_through_an_entry_point(tmp_path):
    """A throw-away package installed with pip adds a strategy that ``answer()`` runs."""
    src = tmp_path / "src"
    (src / "echo_strategy").mkdir(parents=True)
    (src / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"
        [project]
        name = "echo-strategy"
        version = "0.1"
        [project.entry-points."longctx.strategies"]
        echo = "echo_strategy"
    """)
    )
    (src / "echo_strategy" / "__init__.py").write_text(
        textwrap.dedent('''
        """A third-party strategy: answers with the first document's title."""
        from dataclasses import dataclass
        from langgraph.graph import END, START, StateGraph
        from longctx.graphs import STRATEGIES, StrategyConfig, StrategyContext
        from longctx.graphs.plugin.config import option

        @dataclass(frozen=True, kw_only=True)
        class EchoConfig(StrategyConfig):
            repeat: int = option(1, min=1)

        def echo(state, runtime):
            title = runtime.context.corpus.documents[0].title
            return {"answer": " ".join([title] * runtime.context.config.repeat), "raw": title}

        @STRATEGIES.register("echo", config_cls=EchoConfig, description="echoes the first title")
        def build_graph(config=None):
            graph = StateGraph(dict, context_schema=StrategyContext)
            graph.add_node("echo", echo)
            graph.add_edge(START, "echo")
            graph.add_edge("echo", END)
            return graph.compile()
    ''')
    )
    target = tmp_path / "site"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "--target",
        str(target),
        str(src),
    ]
    subprocess.run(pip, check=True, capture_output=True, timeout=300)
    code = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(target)!r})
        from longctx import answer, Corpus, STRATEGIES
        from tests.scripted import ScriptedChatModel
        assert "echo" in STRATEGIES.names()
        corpus = Corpus.from_texts(["x"], titles=["Alpha"])
        llm = ScriptedChatModel(replies=[])
        result = answer(corpus, "Which title?", strategy="echo", llm=llm, repeat=2)
        print(result.answer, result.config["repeat"])
    """)
    assert _run(code).strip() == "Alpha Alpha 2"


def test_registries_share_one_idiom():
    from longctx.agents.chat_models import CHAT_MODELS
    from longctx.experiments.benchmarks import BENCHMARKS
    from longctx.experiments.metrics import METRICS
    from longctx.experiments.synth.domains import DOMAINS
    from longctx.graphs import STRATEGIES
    from longctx.retrieval import EMBEDDERS, RETRIEVERS
    from longctx.retrieval.contract import Registry

    registries = (STRATEGIES, RETRIEVERS, EMBEDDERS, CHAT_MODELS, BENCHMARKS, METRICS, DOMAINS)
    assert all(
        isinstance(r, Registry) and r.group and r.group.startswith("longctx.") for r in registries
    )
    assert len({r.group for r in registries}) == len(registries)


def _docstrings(tree: ast.AST) -> set[int]:
    """``id``s of the docstring nodes of a module and its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
        ):
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.add(id(first.value))
    return found


def _documented_defaults(tree: ast.AST) -> set[int]:
    """``id``s of the constants in parameter defaults and ``default=`` arguments: the library's
    documented default strategy is a fact of the API, not of a strategy."""
    found = set()
    for node in ast.walk(tree):
        defaults: list[ast.expr | None] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defaults = [*node.args.defaults, *node.args.kw_defaults]
        elif isinstance(node, ast.Call):
            defaults = [k.value for k in node.keywords if k.arg == "default"]
        found.update(id(sub) for d in defaults if d is not None for sub in ast.walk(d))
    return found


def test_no_module_outside_a_strategy_package_names_a_strategy():
    """What the library knows of a strategy is on its registry entry, declared in
    ``graphs/<name>/``: no other module names one (docstrings and documented defaults aside), so a
    strategy is added, in the tree or as a plug-in, without editing the report, the plots, the demo
    or the CLI."""
    from longctx.graphs import STRATEGIES

    names = {
        n
        for n in STRATEGIES.names()
        if STRATEGIES.get(n).build_graph.__module__.startswith("longctx.graphs.")
    }
    paths = [
        p
        for p in (ROOT / "graphs").rglob("*.py")
        if not (ROOT / "graphs" / p.relative_to(ROOT / "graphs").parts[0] / "plugin.toml").exists()
    ]
    for package in ("retrieval", "memory", "agents", "experiments"):
        paths += list((ROOT / package).rglob("*.py"))
    found = []
    for path in sorted(paths):
        where = str(path.relative_to(ROOT))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        allowed = _docstrings(tree) | _documented_defaults(tree)
        found += [
            f"{where}:{node.lineno}: {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in allowed
        ]
    assert len(names) >= 8 and found == [], "\n".join(found)


_MODEL_CALLS = {"invoke", "ainvoke", "stream", "astream", "batch", "abatch", "bind"}


def _budget_bypasses(tree: ast.AST, where: str) -> list[str]:
    """Calls that hand a chat model ``max_tokens=`` directly: ``model.invoke(..., max_tokens=n)`` or
    ``functools.partial(model.invoke, max_tokens=n)``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not any(k.arg == "max_tokens" for k in node.keywords):
            continue
        func = node.func
        target = (
            node.args[0]
            if isinstance(func, (ast.Name, ast.Attribute))
            and getattr(func, "attr", getattr(func, "id", "")) == "partial"
            and node.args
            else func
        )
        if isinstance(target, ast.Attribute) and target.attr in _MODEL_CALLS:
            found.append(f"{where}:{node.lineno}")
    return found


def test_every_answer_budget_goes_through_budget_kwargs():
    """A budget handed to a chat model as ``max_tokens=`` goes out as ``max_completion_tokens``
    from a ``ChatOpenAI`` the user built, which llama.cpp servers ignore;
    :func:`longctx.graphs.metering.budget_field.budget_kwargs` sends the field the model honours, so
    no library call passes ``max_tokens=`` to a model itself."""
    bad = ast.parse(
        "functools.partial(model.invoke, max_tokens=8)\nllm.ainvoke(messages, max_tokens=8)\n"
        "llm.invoke(m, **budget_kwargs(llm, 8))"
    )
    assert _budget_bypasses(bad, "example") == [
        "example:1",
        "example:2",
    ]  # the check sees both forms, and not the right one
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found += _budget_bypasses(
                ast.parse(path.read_text(encoding="utf-8")), str(path.relative_to(ROOT))
            )
    assert found == [], "\n".join(found)
