"""An instant command line (#29): ``longctx --help`` and argument errors load no engine, and
``import longctx`` loads its modules on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from longctx.experiments.cli import parser as cli_parser
from longctx.experiments.cli.app import main

ROOT = Path(__file__).resolve().parents[1]
#: What a start must not wait for: LangGraph, LangChain, its OpenAI client, torch,
#: sentence-transformers, faiss, bm25s, llama.cpp, scipy, matplotlib.
HEAVY = (
    "langgraph",
    "langchain_core",
    "langchain_openai",
    "torch",
    "sentence_transformers",
    "faiss",
    "bm25s",
    "llama_cpp",
    "scipy",
    "matplotlib",
)
#: The retrieval engines: loaded by the first index a run builds or reads, never by importing
#: the library.
ENGINES = ("torch", "sentence_transformers", "faiss", "bm25s", "scipy")
#: The modules a start may have loaded (a bare ``python -c pass`` has 68): ``longctx --help`` had
#: 156 and ``import longctx`` 76 when these were set, and LangGraph alone brings ~1,000 (``--help``
#: took 57 bare interpreter starts before the parser was split from the commands, 3 after). A count,
#: not a time, is checked, so a loaded machine cannot fail it.
MAX_MODULES = {"longctx --help": 250, "import longctx": 120}


def _python(*args: str, pythonpath: str = str(ROOT)) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def _loaded_after(code: str, pythonpath: str = str(ROOT)) -> tuple[list[str], str]:
    """The heavy top-level packages loaded once ``code`` has run (a ``SystemExit`` is caught),
    and stderr."""
    probe = textwrap.dedent("""
        import json, sys
        try:
            exec(sys.argv[1])
        except SystemExit:
            pass
        print(json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
    """)
    out = _python("-c", probe, code, pythonpath=pythonpath)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return [m for m in HEAVY if m in loaded], out.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["answer", "--help"],
        ["run", "--help"],
        ["anwser", "--corpus", "x"],  # a mistyped subcommand
        ["answer", "--corpus", "x", "--question", "q", "--strategy", "rga"],  # a mistyped strategy
        ["answer", "--corpus", "x"],  # a missing required argument
        ["index", "x", "--retriever", "bm52"],
        [
            "run",
            "--corpus",
            "x",
            "--questions",
            "q.csv",
            "--strategies",
            "rag,memagnet",
            "--out",
            "o",
        ],
    ],
)
def test_help_and_argument_errors_load_no_engine(argv):
    heavy, err = _loaded_after(f"from longctx.experiments.cli.app import main; main({argv!r})")
    assert heavy == [], f"longctx {' '.join(argv)} loaded {heavy}"
    if "--help" not in argv:
        assert "error:" in err


def test_import_agents_loads_no_engine_until_a_name_is_used():
    assert _loaded_after("import longctx")[0] == []
    assert _loaded_after("from longctx import Corpus, Question, Answer")[0] == []
    heavy, _ = _loaded_after("import longctx; longctx.answer")
    assert "langgraph" in heavy  # the name still works, loading what it needs


def test_the_answer_function_loads_the_retrieval_engines_on_first_use(tmp_path):
    """``from longctx import answer`` loads LangGraph but no engine (it loaded FAISS, bm25s and
    scipy, ~0.1 s, through the strategies' imports); a BM25 run then loads bm25s, and still
    not FAISS."""
    heavy, _ = _loaded_after("from longctx import answer")
    assert "langgraph" in heavy and [m for m in heavy if m in ENGINES + ("langchain_openai",)] == []
    run = (
        f"import os; os.environ['LONGCTX_CACHE_DIR'] = {str(tmp_path)!r}\n"
        "from longctx import Corpus, answer\nfrom tests.scripted import ScriptedChatModel\n"
        "result = answer(Corpus.from_texts(['alpha beta', 'gamma delta']), 'Which follows "
        "gamma?', strategy='rag', llm=ScriptedChatModel(replies=['delta']))\n"
        "assert result.answer == 'delta', result.answer"
    )
    heavy, _ = _loaded_after(run)
    assert "bm25s" in heavy and "faiss" not in heavy and "torch" not in heavy


def _modules_after(code: str) -> int:
    """How many modules a fresh interpreter holds once ``code`` has run (a ``SystemExit``
    is caught)."""
    probe = (
        "import sys\ntry:\n    exec(sys.argv[1])\nexcept SystemExit:\n    pass\n"
        "print(len(sys.modules), file=sys.stderr)"
    )
    out = _python("-c", probe, code)
    assert out.returncode == 0, out.stderr[-2000:]
    return int(out.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "start,code",
    [
        ("longctx --help", "from longctx.experiments.cli.app import main; main(['--help'])"),
        ("import longctx", "import longctx"),
    ],
)
def test_a_start_loads_a_few_modules(start, code):
    assert _modules_after("pass") < _modules_after(code) <= MAX_MODULES[start], start


def test_a_mistyped_strategy_in_a_list_is_named_with_suggestions(capsys):
    assert (
        main(
            [
                "run",
                "--corpus",
                "x",
                "--questions",
                "q.csv",
                "--strategies",
                "rag, memagnet",
                "--out",
                "o",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert err.startswith("longctx: error: Unknown strategy 'memagnet'. Did you mean: memagent?")
    assert "Available: full_context, hipporag, memagent," in err


def test_the_parser_offers_the_registries_themselves():
    """The parser's choices are the registries ``answer()`` looks names up in (no copy of their
    names): ``longctx index`` offers those whose ``plugin.toml`` does not declare ``uses_index
    = false``."""
    from longctx.agents.run_plan import CONFIRM_MINUTES
    from longctx.experiments.reports.export import FORMATS
    from longctx.graphs import STRATEGIES
    from longctx.retrieval import RETRIEVERS
    from longctx.retrieval.embedding_backends import EMBEDDING_BACKENDS

    assert cli_parser.STRATEGIES is STRATEGIES and cli_parser.RETRIEVERS is RETRIEVERS
    ours = [
        n
        for n in STRATEGIES.names()
        if STRATEGIES.get(n).build_graph.__module__.startswith("longctx.graphs.")
    ]
    assert len(ours) >= 8 and list(cli_parser.IndexStrategies()) == [
        n for n in ours if STRATEGIES.get(n).uses_index
    ]
    assert (cli_parser.EMBEDDING_BACKENDS, cli_parser.CONFIRM_MINUTES, cli_parser.FORMATS) == (
        EMBEDDING_BACKENDS,
        CONFIRM_MINUTES,
        FORMATS,
    )


def _plugin(tmp_path: Path, name: str) -> Path:
    """A third-party package on a path of its own: an entry point ``name`` whose module registers a
    strategy that builds no index."""
    (tmp_path / f"{name}_plugin.py").write_text(
        textwrap.dedent(f'''
        """A plug-in strategy that uses no index."""
        from longctx.graphs import STRATEGIES, StrategyConfig

        @STRATEGIES.register({name!r}, config_cls=StrategyConfig, description="a plug-in")
        def build_graph(config=None):
            raise NotImplementedError
    ''')
    )
    dist = tmp_path / f"{name}_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[longctx.strategies]\n{name} = {name}_plugin\n")
    return tmp_path


def test_a_plugin_strategy_is_offered_by_its_entry_point_name_without_loading_it(tmp_path):
    path = f"{_plugin(tmp_path, 'echo')}{os.pathsep}{ROOT}"
    help_text = _python("-m", "longctx.experiments.cli", "answer", "--help", pythonpath=path).stdout
    assert "echo" in help_text and "structured" in help_text
    code = (
        "from longctx.experiments.cli.parser import build_parser; build_parser().parse_args("
        "['answer', '--corpus', 'c', '--question', 'q', '--strategy', 'echo'])"
    )
    heavy, err = _loaded_after(code, pythonpath=path)
    assert heavy == [] and err == ""
    # `longctx index` learns that the plug-in builds no index once it is loaded: a one-line error,
    # before the corpus is read
    out = _python(
        "-m",
        "longctx.experiments.cli",
        "index",
        str(tmp_path / "missing"),
        "--strategy",
        "echo",
        pythonpath=path,
    )
    assert out.returncode == 2
    assert out.stderr.strip().startswith(
        "longctx: error: Strategy 'echo' uses no index; 'longctx index' builds one for pai,"
    )
