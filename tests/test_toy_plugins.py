"""The toy plug-ins of issue #36: a ``first_chunk`` strategy and a ``toy_qa`` benchmark, written in
a folder of their own as a third party writes them (their code and their entry points, no line of
the library edited), are offered by ``longctx --help`` without importing anything of theirs, answer
through ``answer()``, run in the runner of ``longctx run``, are scored in the report, get a ceiling
row that says they have no rule, and are priced by the run plan. A strategy package dropped under
``graphs/`` with its ``plugin.toml`` works in the CLI and ``answer()`` with no import
line anywhere."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The strategy: the model reads the corpus's first ``chunk_words`` words and the question, once.
FIRST_CHUNK_GRAPH = '''
"""first_chunk: the model answers from the first words of the corpus only (a toy plug-in)."""
import operator
from dataclasses import dataclass
from typing import Annotated, TypedDict

from longctx.graphs import STRATEGIES, StrategyConfig
from longctx.graphs.plugin.config import option
from longctx.graphs.metering.costs import Calls, ExpectedCost, StrategyCosts
from longctx.graphs.calls.llm import complete
from longctx.graphs.plugin.nodes import linear_graph
from longctx.retrieval.contract import Question, Step


@dataclass(frozen=True, kw_only=True)
class FirstChunkConfig(StrategyConfig):
    chunk_words: int = option(8, min=1)
    max_new_tokens: int = option(16, min=1)


class FirstChunkState(TypedDict, total=False):
    question: Question
    raw: str
    answer: str
    steps: Annotated[list[Step], operator.add]


def read_first_chunk(state, runtime):
    ctx = runtime.context
    words = " ".join(d.text for d in ctx.corpus.documents).split()[: ctx.config.chunk_words]
    prompt = " ".join(words) + "\\n\\n" + state["question"].render()
    raw = complete(ctx.llm, prompt, max_tokens=ctx.config.max_new_tokens)
    step = Step("read_first_chunk", words=len(words), calls=1)
    return {"raw": raw, "answer": raw.strip(), "steps": [step]}


def expected(cfg, corpus_tokens, documents, window):
    prompt_tokens = min(corpus_tokens, cfg.chunk_words) + 10
    return ExpectedCost(per_question=Calls(1, prompt_tokens, cfg.max_new_tokens))


@STRATEGIES.register(
    "first_chunk",
    config_cls=FirstChunkConfig,
    costs=StrategyCosts(expected=expected),
    description="answers from the first words of the corpus",
)
def build_graph(config=None):
    return linear_graph("first_chunk", FirstChunkState, ("read_first_chunk", read_first_chunk))
'''

#: The benchmark: questions over a JSONL file, scored by exact match.
TOY_QA = '''
"""toy_qa: questions with their documents in one JSONL file, exact match (a toy plug-in)."""
import json
from pathlib import Path

from longctx.experiments.benchmarks.base import BENCHMARKS, Sample
from longctx.experiments.metrics import METRICS
from longctx.retrieval.contract import Corpus, Question


def load(path=None, **options):
    rows = [json.loads(line) for line in (Path(path) / "toy_qa.jsonl").read_text().splitlines()]
    return [
        Sample(
            sample_id=r["id"],
            benchmark="toy_qa",
            dataset="toy",
            corpus=Corpus.from_texts(r["documents"]),
            question=Question(text=r["question"]),
            answers=(r["answer"],),
            metadata={"evidence_doc_ids": r["evidence"]},
        )
        for r in rows
    ]


def prompt(sample, context=None):
    if context is None:
        context = "\\n".join(d.text for d in sample.corpus.documents)
    return context + "\\n" + sample.question.text


@BENCHMARKS.register("toy_qa", version=1, load=load, prompt=prompt)
def score(pairs, **options):
    exact_match = METRICS.get("exact_match")
    per_sample = {s.sample_id: 100.0 * exact_match(p.text_or_empty, s.answers[0]) for s, p in pairs}
    overall = sum(per_sample.values()) / len(per_sample)
    return {"overall": overall, "n": len(pairs), "per_sample": per_sample}
'''

QUESTIONS = [
    {
        "id": "q0",
        "question": "What is the vault code?",
        "answer": "7421",
        "evidence": ["0"],
        "documents": ["The vault code is 7421.", "The harbour has a lighthouse and a long pier."],
    },
    {
        "id": "q1",
        "question": "What does the harbour have?",
        "answer": "a lighthouse",
        "evidence": ["1"],
        "documents": [
            "The vault is closed on Sundays and on holidays.",
            "The harbour has a lighthouse.",
        ],
    },
]


def _write_strategy(folder: Path, module: str) -> None:
    """The ``first_chunk`` package in ``folder``, importable as ``module`` (its ``plugin.toml``
    names that target)."""
    (folder / "first_chunk").mkdir(parents=True)
    (folder / "first_chunk" / "__init__.py").write_text('"""A toy strategy plug-in."""\n')
    (folder / "first_chunk" / "graph.py").write_text(FIRST_CHUNK_GRAPH)
    (folder / "first_chunk" / "plugin.toml").write_text(
        f'[strategies.first_chunk]\ntarget = "{module}.graph:build_graph"\nuses_index = false\n'
    )


def _third_party(tmp_path: Path) -> Path:
    """The two plug-ins as an installed third-party distribution: packages and entry points in
    one folder."""
    site = tmp_path / "site"
    _write_strategy(site, "first_chunk")
    (site / "toy_qa").mkdir()
    (site / "toy_qa" / "__init__.py").write_text(TOY_QA)
    dist = site / "toy_plugins-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[longctx.strategies]\nfirst_chunk = first_chunk.graph:build_graph\n\n"
        "[longctx.benchmarks]\ntoy_qa = toy_qa:score\n"
    )
    return site


def _python(code: str, *args: str, pythonpath: str, cache: Path) -> str:
    """The last line ``code`` prints in a fresh interpreter (``sys.argv[1:]`` = ``args``)."""
    env = {**os.environ, "PYTHONPATH": pythonpath, "LONGCTX_CACHE_DIR": str(cache)}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip().splitlines()[-1]


HELP = """
    import contextlib, io, json, sys
    from longctx.experiments.cli.parser import build_parser
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
        build_parser().parse_args([sys.argv[1], "--help"])
    print(json.dumps({"help": text.getvalue(), "modules": sorted(sys.modules)}))
"""


def _loaded_ours(modules: list[str]) -> list[str]:
    """What of LangGraph, the strategy packages and the plug-ins a process has imported."""
    return [
        m
        for m in modules
        if m.split(".")[0] in ("langgraph", "langchain_core", "first_chunk", "toy_qa")
        or (
            m.startswith("longctx.graphs.")
            and m not in ("longctx.graphs.plugin", "longctx.graphs.plugin.strategy_registry")
        )
    ]


def test_the_toy_plugins_are_offered_by_help_without_importing_them(tmp_path):
    site = _third_party(tmp_path)
    shown = {}
    for command in ("answer", "run", "index"):
        shown[command] = json.loads(
            _python(HELP, command, pythonpath=f"{site}{os.pathsep}{ROOT}", cache=tmp_path / "cache")
        )
        assert _loaded_ours(shown[command]["modules"]) == [], (
            f"longctx {command} --help loaded {_loaded_ours(shown[command]['modules'])}"
        )
    assert (
        "{first_chunk,full_context,hipporag,memagent,pai,pai_minus,rag,raptor,rlm,search_agent,self_ask,self_route,structured}"
        in shown["answer"]["help"]
    )
    # `longctx index`: the built-ins declared to build an index, and the plug-in (checked
    # once loaded)
    assert (
        "{first_chunk,pai,pai_minus,rag,search_agent,self_ask,self_route}" in shown["index"]["help"]
    )


RUN = """
    import json, sys
    from pathlib import Path
    from longctx import Corpus, answer
    from longctx.agents.run_plan import describe_plan
    from longctx.experiments.benchmarks import load_benchmark
    from longctx.experiments.ceilings.measure import compute_ceilings, default_strategies
    from longctx.experiments.planning.plan import plan_experiment
    from longctx.experiments.reports.report import build_report
    from longctx.experiments.runner import RunConfig, read_rows, run_experiment
    from tests.scripted import ScriptedChatModel

    data, out = Path(sys.argv[1]), Path(sys.argv[2])
    model = ScriptedChatModel(
        reply_fn=lambda prompt: "7421" if "7421" in prompt else "I do not know"
    )
    vault = Corpus.from_texts(["The vault code is 7421.", "Other things."])
    one = answer(vault, "What is the vault code?", strategy="first_chunk", llm=model)
    config = RunConfig(
        benchmark="toy_qa", strategies=("first_chunk",), data_path=str(data), llm_cache=False
    )
    samples = load_benchmark("toy_qa", data)
    plans, _ = plan_experiment(config, samples, model, calibrate=False)
    run_experiment(config, out / "run", llm=model, show_progress=False)
    report = build_report(out / "run", plots=False)
    (ceiling,) = compute_ceilings(samples, ["first_chunk"], cache_dir=out / "cache")
    print(json.dumps({
        "answer": one.answer, "steps": [s.node for s in one.steps],
        "plan": describe_plan(plans, "scripted", None),
        "rows": sorted(
            (r["sample_id"], r["strategy"], r["answer"])
            for r in read_rows(out / "run")
            if r["status"] == "ok"
        ),
        "html": Path(report["html"]).read_text(encoding="utf-8"),
        "ceiling": [ceiling.strategy, ceiling.skipped], "default_ceilings": default_strategies(),
    }))
"""


def test_the_toy_plugins_answer_run_report_ceiling_and_plan(tmp_path):
    site = _third_party(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "toy_qa.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    got = json.loads(
        _python(
            RUN,
            str(data),
            str(tmp_path),
            pythonpath=f"{site}{os.pathsep}{ROOT}",
            cache=tmp_path / "cache",
        )
    )
    assert got["answer"] == "7421" and got["steps"] == ["read_first_chunk"]
    # the run: q0's evidence is in the first words, q1's is not (first_chunk reads 8 words)
    assert got["rows"] == [["q0", "first_chunk", "7421"], ["q1", "first_chunk", "I do not know"]]
    assert 'data-strategy="first_chunk"' in got["html"] and "toy_qa" in got["html"]
    assert (
        got["ceiling"] == ["first_chunk", "no ceiling rule for this strategy"]
        and "first_chunk" not in got["default_ceilings"]
    )
    assert "first_chunk: 2 question(s), ~2 calls" in got["plan"]


DROPPED = """
    import contextlib, io, json, sys
    from longctx import graphs
    graphs.__path__.append(sys.argv[1])  # as if first_chunk/ had been copied into graphs/
    from longctx.experiments.cli.parser import build_parser
    text = io.StringIO()
    with contextlib.redirect_stdout(text), contextlib.suppress(SystemExit):
        build_parser().parse_args(["answer", "--help"])
    modules = sorted(sys.modules)
    from longctx import Corpus, answer
    from tests.scripted import ScriptedChatModel
    llm = ScriptedChatModel(replies=["alpha"])
    result = answer(
        Corpus.from_texts(["alpha beta gamma"]), "First word?", strategy="first_chunk", llm=llm
    )
    print(json.dumps({"help": text.getvalue(), "modules": modules, "answer": result.answer}))
"""


def test_a_strategy_package_under_graphs_needs_no_import_line(tmp_path):
    """Its ``plugin.toml`` is all that makes it known (with the old hand list in
    ``graphs/__init__.py``: offered by the CLI, a KeyError in ``answer()``)."""
    _write_strategy(tmp_path / "extra", "longctx.graphs.first_chunk")
    got = json.loads(
        _python(DROPPED, str(tmp_path / "extra"), pythonpath=str(ROOT), cache=tmp_path / "cache")
    )
    assert "first_chunk" in got["help"] and _loaded_ours(got["modules"]) == []
    assert got["answer"] == "alpha"


def test_a_broken_third_party_plugin_is_left_out_of_listings_not_of_lookups(tmp_path):
    site = tmp_path / "site"
    (site / "broken_plugin").mkdir(parents=True)
    (site / "broken_plugin" / "__init__.py").write_text(
        'raise ImportError("broken_plugin needs torch 99")\n'
    )
    dist = site / "broken_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[longctx.strategies]\nbroken = broken_plugin:build_graph\n"
    )
    code = """
        import json, logging
        from longctx.graphs import STRATEGIES
        from longctx.experiments.cli.demo import default_demo
        logging.basicConfig(level=logging.WARNING)
        listed = STRATEGIES.available()
        try:
            STRATEGIES.get("broken")
            looked_up = "loaded"
        except ImportError as exc:
            looked_up = str(exc)
        print(json.dumps({
            "names": STRATEGIES.names(), "available": listed,
            "demo": list(default_demo()), "lookup": looked_up,
        }))
    """
    out = json.loads(
        _python(code, pythonpath=os.pathsep.join([str(site), str(ROOT)]), cache=tmp_path / "cache")
    )
    assert "broken" in out["names"]  # declared: the CLI offers it without importing it
    assert "broken" not in out["available"] and {"rag", "memagent", "full_context"} <= set(
        out["available"]
    )
    assert (
        out["demo"] and out["lookup"] == "broken_plugin needs torch 99"
    )  # asked for by name: its own error
