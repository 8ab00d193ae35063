"""The ``longctx`` argument parser, with nothing but the standard library loaded.

``longctx --help`` and a mistyped command or option answer at once because this module imports none
of the engines (LangGraph, LangChain, faiss, bm25s, torch, llama.cpp) and no strategy package: the
strategy and retriever names it offers are the registries' own
(:data:`longctx.graphs.plugin.strategy_registry.STRATEGIES`,
:data:`longctx.retrieval.retriever_registry.RETRIEVERS`), which know their names from each
package's ``plugin.toml`` and the entry points of third-party plug-ins, and import a plug-in only
when it is looked up.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from longctx.graphs.plugin.strategy_registry import STRATEGIES
from longctx.retrieval.retriever_registry import RETRIEVERS

#: Copies, for the help text, of ``longctx.retrieval.embedding_backends.EMBEDDING_BACKENDS``,
#: ``longctx.agents.run_plan.CONFIRM_MINUTES`` and ``longctx.experiments.reports.export.FORMATS`` (a
#: test keeps them equal).
EMBEDDING_BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8")
CONFIRM_MINUTES = 15.0
FORMATS = ("official",)


class IndexStrategies:
    """``longctx index`` choices: the strategies not declared to use no index
    (``uses_index = false`` in their ``plugin.toml``); a plug-in's use of an index is checked once
    it is loaded."""

    def __contains__(self, name: object) -> bool:
        return (
            isinstance(name, str)
            and name in STRATEGIES
            and STRATEGIES.declared(name).get("uses_index", True) is not False
        )

    def __iter__(self) -> Iterator[str]:
        return iter([name for name in STRATEGIES.names() if name in self])


def check_strategy_list(value: str | None) -> None:
    """Raise the registry's ``KeyError`` for the first unknown name of a comma-separated list."""
    for name in (s.strip() for s in (value or "").split(",")):
        if name:
            STRATEGIES.check(name)


def _add_retrieval_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--retriever", choices=RETRIEVERS, help="retriever (default: the strategy's, bm25)"
    )
    p.add_argument(
        "--retriever-model", help="embedding model name or local path for dense/contriever/openai"
    )
    p.add_argument(
        "--embedding-backend",
        choices=list(EMBEDDING_BACKENDS),
        help=(
            "dense retriever's embedding backend (default on a CPU: torch-bf16 where it has "
            "native bfloat16, else torch)"
        ),
    )
    p.add_argument(
        "--chunk-unit", choices=["words", "tokens"], help="chunk by words (LongBench v1) or tokens"
    )
    p.add_argument("--chunk-size", type=int, help="chunk length in units (default 200 words)")
    p.add_argument("--chunk-overlap", type=int, help="units shared by consecutive chunks")
    p.add_argument(
        "--cache-dir", help="index cache root (default $LONGCTX_CACHE_DIR or ~/.cache/longctx)"
    )


def _add_ray_arg(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help=(
            f"{what} on Ray (needs pip install 'longctx-lab[ray]'): a cluster address such as "
            "'auto' or HOST:6379; "
            "none: $RAY_ADDRESS or a new local instance"
        ),
    )


def _add_duplicates_arg(p: argparse.ArgumentParser) -> None:
    """``--keep-duplicates``: keep a document whose text equals an earlier one's
    (``longctx.retrieval.duplicates``)."""
    p.add_argument(
        "--keep-duplicates",
        action="store_true",
        help=(
            "keep documents whose text equals an earlier one's (default: dropped, with a warning "
            "naming them)"
        ),
    )


def _add_yes_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "-y",
        "--yes",
        action="store_true",
        help=(
            f"do not ask before a run estimated over {CONFIRM_MINUTES:.0f} minutes (nobody is "
            "asked when stdin is not a terminal)"
        ),
    )


def _add_budget_args(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--max-calls", type=int, metavar="N", help=f"at most N model calls {what}")
    p.add_argument("--max-tokens", type=int, metavar="N", help=f"at most N prompt tokens {what}")
    p.add_argument(
        "--max-cost",
        type=float,
        metavar="USD",
        help=(
            f"at most this many USD {what}, at the price table (--prices; refused for a free model)"
        ),
    )
    _add_prices_arg(p, "the price table --max-cost counts at")


def _add_prices_arg(
    p: argparse.ArgumentParser, what: str, default: str = "built-in list prices"
) -> None:
    p.add_argument(
        "--prices",
        metavar="FILE",
        help=(
            f"JSON of USD per 1M tokens per model id, {what}, "
            f'e.g. {{"gpt-4o-mini": {{"prompt": 0.15, "completion": 0.6}}}} (default: {default}; '
            "local models free)"
        ),
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``longctx`` and its subcommands."""
    parser = argparse.ArgumentParser(
        prog="longctx", description="Agentic long-context reasoning over large corpora."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_answer(sub)
    _add_index(sub)
    _add_run(sub)
    _add_report(sub)
    _add_compare(sub)
    _add_export(sub)
    _add_ceilings(sub)
    _add_demo(sub)
    _add_synth(sub)
    return parser


def _add_answer(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx answer`` subcommand's arguments."""
    p = sub.add_parser(
        "answer",
        help="answer a question over a corpus",
        description="Answer a question over a corpus.",
    )
    p.add_argument(
        "--corpus", required=True, help="a file or folder (.txt .md .rst .json .jsonl .pdf .html)"
    )
    p.add_argument("--question", required=True, help="the question")
    _add_duplicates_arg(p)
    p.add_argument(
        "--choices",
        nargs="+",
        metavar="CHOICE",
        help="multiple-choice options, lettered A, B, C, ...",
    )
    p.add_argument("--instruction", help="output-format instruction appended to the prompt")
    p.add_argument("--strategy", default="rag", choices=STRATEGIES, help="strategy (default: rag)")
    p.add_argument("--preset", help="a named config of the strategy, e.g. longbench-500x3")
    p.add_argument("--llm", help="'embedded' (default), 'embedded:PATH.gguf' or 'openai:MODEL'")
    p.add_argument("--top-k", type=int, help="chunks retrieved (default 7)")
    p.add_argument("--max-new-tokens", type=int, help="answer token budget")
    p.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="[STRATEGY.]KEY=JSON",
        help="strategy option, e.g. chunk_tokens=4000 or pai.domain=finance",
    )
    _add_yes_arg(p)
    _add_retrieval_args(p)
    _add_ray_arg(p, "with --strategy structured, extract the documents (the Map stage)")
    _add_budget_args(
        p,
        "for this answer: a plan over it is refused before any call; a run reaching it stops "
        "and says so",
    )


def _add_index(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx index`` subcommand's arguments."""
    p = sub.add_parser(
        "index",
        help="prebuild and cache a corpus index",
        description="Chunk and index a corpus once.",
    )
    p.add_argument("path", help="a file or folder (.txt .md .rst .json .jsonl .pdf .html)")
    p.add_argument("--strategy", default="rag", choices=IndexStrategies())
    _add_duplicates_arg(p)
    _add_retrieval_args(p)
    _add_ray_arg(p, "embed the chunks")
    p.add_argument("--ray-workers", type=int, default=2, help="embedding actors on Ray (default 2)")


def _add_run(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx run`` subcommand's arguments."""
    p = sub.add_parser(
        "run",
        help="compare strategies on a benchmark (resumable)",
        description="Run strategies x samples; rerun to resume.",
    )
    p.add_argument(
        "--benchmark", help="benchmark registry name, e.g. longbench_v2, lveval, corpusqa, synth"
    )
    p.add_argument(
        "--corpus",
        help="your own documents (a file or folder), with --questions instead of --benchmark",
    )
    p.add_argument(
        "--questions",
        help=(
            "your questions: JSONL or CSV with 'question' and optional 'answer', "
            "'answer_type', 'id'"
        ),
    )
    p.add_argument(
        "--strategies",
        required=True,
        help=(
            "comma-separated strategy names, e.g. rag,full_context,memagent; a strategy twice as "
            "variants "
            "STRATEGY@LABEL, each its own column with its own --option, e.g. rag@bm25,rag@hybrid"
        ),
    )
    p.add_argument("--llm", help="'embedded' (default), 'embedded:PATH.gguf' or 'openai:MODEL'")
    p.add_argument("--data", help="benchmark files folder (default $LONGCTX_DATA_DIR/<benchmark>)")
    p.add_argument(
        "--subset",
        nargs="+",
        default=[],
        metavar="DATASET",
        help="only these datasets of the benchmark",
    )
    p.add_argument(
        "--loader-option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help='benchmark loader option, e.g. lengths=["16k"] (LV-Eval)',
    )
    p.add_argument("--limit", type=int, help="first N samples only")
    p.add_argument(
        "--concurrency", type=int, default=2, help="answers in flight at once (default 2)"
    )
    p.add_argument(
        "--inject-once",
        action="store_true",
        help=(
            "inject once, ask many: each strategy answers all questions over one context in one "
            "unit, its index built or loaded once"
        ),
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="STRATEGY.KEY=JSON",
        help=(
            "strategy option, e.g. rag.top_k=5, or a variant's, e.g. rag@hybrid.retriever=hybrid "
            "(a strategy's own options apply to each of its variants too)"
        ),
    )
    p.add_argument(
        "--no-llm-cache",
        action="store_true",
        help="do not replay temperature-0 calls from the run's cache",
    )
    p.add_argument("--out", required=True, help="result folder; rerunning into it resumes")
    _add_yes_arg(p)
    _add_ray_arg(p, "run the work units as tasks")
    p.add_argument(
        "--endpoints",
        help="with --ray and openai:MODEL: comma-separated base URLs to spread the work over",
    )
    _add_budget_args(
        p, "per work unit (a sample x strategy; a batched strategy's group of questions)"
    )


def _add_report(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx report`` subcommand's arguments."""
    p = sub.add_parser(
        "report",
        help="tables and plots of a run folder",
        description="Score a run and write tables and plots.",
    )
    p.add_argument("dir", help="a folder written by 'longctx run'")
    p.add_argument(
        "--judge",
        help=(
            "chat model spec for LLM-judged benchmarks (Loong; CorpusQA; MemoryAgentBench "
            "LongMemEval, InfBench-Sum)"
        ),
    )
    p.add_argument(
        "--judge-setting",
        metavar="NAME",
        help=(
            "which official judge, for a benchmark with two (BrowseComp-Plus: evaluate_run, the "
            "default, or evaluate_with_openai: give --judge openai:gpt-4.1)"
        ),
    )
    p.add_argument("--no-plots", action="store_true")
    kept = "the table the run was given (its prices.json), else built-in list prices"
    _add_prices_arg(p, "for the report's cost estimate", kept)
    p.add_argument("--no-html", action="store_true", help="do not write report.html")


def _add_compare(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx compare`` subcommand's arguments."""
    p = sub.add_parser(
        "compare",
        help="paired comparison of the same strategies across run folders",
        description="Compare run folders of one benchmark on their shared questions (two "
        "models, two configs): mean difference, 95%% paired-bootstrap interval, paired test, "
        "Holm-adjusted.",
    )
    p.add_argument(
        "dirs", nargs="+", metavar="RUN", help="two or more folders written by 'longctx run'"
    )
    p.add_argument(
        "--judge",
        help=(
            "chat model spec for LLM-judged benchmarks (Loong; CorpusQA; MemoryAgentBench "
            "LongMemEval, InfBench-Sum)"
        ),
    )
    p.add_argument("--out", metavar="CSV", help="also write the table to this CSV file")


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx export`` subcommand's arguments."""
    p = sub.add_parser(
        "export",
        help="write a run's answers as each benchmark's official prediction files",
        description=(
            "Write the files the benchmark's official scorer reads (LongBench pred/, v2 "
            "results/, LV-Eval, Loong, CorpusQA, RULER-HotpotQA)."
        ),
    )
    p.add_argument("dir", help="a folder written by 'longctx run'")
    p.add_argument(
        "--format",
        default="official",
        choices=FORMATS,
        help="official: the official scripts' layouts (default)",
    )
    p.add_argument("--out", help="where to write (default DIR/official)")


def _add_ceilings(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx ceilings`` subcommand's arguments."""
    p = sub.add_parser(
        "ceilings",
        help="evidence ceilings per strategy, LLM-free (upper bounds, not accuracies)",
        description=(
            "Share of questions whose complete evidence can reach each strategy's final call "
            "(see docs/ceilings.md)."
        ),
    )
    p.add_argument(
        "data", help="a 'longctx synth' folder, or a benchmark's data folder with --benchmark"
    )
    p.add_argument(
        "--benchmark", help="benchmark whose samples name evidence_doc_ids (default: synth)"
    )
    p.add_argument(
        "--subset", nargs="+", default=[], metavar="DATASET", help="only these datasets of it"
    )
    p.add_argument(
        "--loader-option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="benchmark loader option, as for 'longctx run' (e.g. docs_per_query=1000)",
    )
    p.add_argument(
        "--strategies", help="comma-separated strategy names (default: every one with a rule)"
    )
    p.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="STRATEGY.KEY=JSON",
        help="strategy option, e.g. rag.top_k=50",
    )
    p.add_argument(
        "--gold-sub-questions",
        action="store_true",
        help="self_ask / pai follow-ups are the gold sub-questions",
    )
    p.add_argument(
        "--tokenizer",
        help=(
            "memagent / full_context tokenizer: cl100k (default) or a local Hugging Face tokenizer"
        ),
    )
    p.add_argument("--limit", type=int, help="first N questions only")
    p.add_argument(
        "--cache-dir", help="index cache root (default $LONGCTX_CACHE_DIR or ~/.cache/longctx)"
    )
    p.add_argument("--json", action="store_true", help="print JSON (with per-question reach)")


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx demo`` subcommand's arguments."""
    p = sub.add_parser(
        "demo",
        help="compare the strategies on five short reports (examples/), offline",
        description="Run the demo comparison.",
    )
    p.add_argument(
        "--out", default="runs/demo", help="result folder (default runs/demo); rerunning resumes"
    )
    p.add_argument("--llm", help="chat model spec (default: the embedded model)")
    p.add_argument(
        "--questions",
        type=int,
        help="ask the first N questions of examples/questions.csv (default 4)",
    )
    p.add_argument(
        "--strategies",
        help=(
            "comma-separated strategies, or 'all' (default: those that finish in minutes on "
            "2 cores)"
        ),
    )
    _add_yes_arg(p)


def _add_synth(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """The ``longctx synth`` subcommand's arguments."""
    p = sub.add_parser(
        "synth",
        help="generate a synthetic CorpusQA-style corpus",
        description="Generate documents, facts and questions.",
    )
    p.add_argument("--domain", default="finance", help="finance or education (default: finance)")
    p.add_argument(
        "--tokens",
        default="128K",
        help="corpus size: 128K, 1M, 4M, 10M or an integer (default 128K)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output directory (must be new or empty)")
    p.add_argument("--questions", type=int, default=30, help="questions to generate (default 30)")
    p.add_argument(
        "--doc-tokens",
        type=int,
        default=4000,
        help="typical document length in tokens (default 4000)",
    )
    p.add_argument(
        "--noise", type=float, default=0.1, help="share of noise documents (default 0.1)"
    )
    p.add_argument(
        "--needle-depth", type=float, help="plant a factrecall needle at this depth (0-1)"
    )
    p.add_argument("--no-cfi", action="store_true", help="needle without confusing facts")
    p.add_argument("--no-kpr", action="store_true", help="needle without keyword replacement")
