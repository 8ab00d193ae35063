"""The ``longctx`` subcommands: each ``cmd_*`` runs one parsed command line and returns its
exit status.

Loaded by :mod:`longctx.experiments.cli.app` only once a command line has parsed, so that ``--help``
and argument errors never wait for the engines this module imports. The commands on one corpus
(``answer``, ``index``) are in :mod:`longctx.experiments.cli.corpus_commands`; what the options
become (strategy options, retrieval overrides, a budget) in :mod:`longctx.experiments.cli.options`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from longctx import ChatModelError, make_chat_model
from longctx.agents.run_plan import announce_plan
from longctx.experiments.benchmarks import BenchmarkDataError, load_benchmark
from longctx.experiments.ceilings.measure import (
    ceilings_json,
    compute_ceilings,
    format_table,
    load_tokenizer,
)
from longctx.experiments.cli.corpus_commands import cmd_answer, cmd_index
from longctx.experiments.cli.demo import READING, demo_strategies, run_demo
from longctx.experiments.cli.options import budget_from_args, parse_options, parse_value
from longctx.experiments.planning.plan import plan_experiment
from longctx.experiments.planning.prices import load_prices
from longctx.experiments.planning.run_prices import save_run_prices
from longctx.experiments.reports.export import export_official, official_command
from longctx.experiments.runner import (
    RunConfig,
    RunInterrupted,
    check_out_folder,
    run_experiment,
    select_samples,
)
from longctx.experiments.synth import (
    NeedleConfig,
    SynthConfig,
    generate,
    get_domain,
    load_samples,
    parse_tokens,
)
from longctx.graphs.calls.llm import model_id
from longctx.retrieval import CorpusError
from longctx.retrieval.contract.errors import LongctxError
from longctx.retrieval.embedder_base import EmbedderError
from longctx.retrieval.extras import MissingExtraError, require
from longctx.retrieval.locks import LockHeld
from longctx.retrieval.ray_support import RayNotInstalledError
from longctx.retrieval.rerank import RerankError

#: Errors of the user's input or environment: printed on one line, exit status 2 (``OSError``: a
#: path that is a file where a folder is wanted, no permission, a full disk; its message names the
#: path; ``RerankError``: a rerank server that failed for good, named with what it said).
USER_ERRORS = (
    LongctxError,
    CorpusError,
    ChatModelError,
    KeyError,
    TypeError,
    ValueError,
    RayNotInstalledError,
    LockHeld,
    BenchmarkDataError,
    EmbedderError,
    OSError,
    MissingExtraError,
    RerankError,
)


def cmd_run(args: argparse.Namespace) -> int:
    """Run (or resume) an experiment and print what this invocation did."""
    own = args.corpus is not None or args.questions is not None
    if own and (args.benchmark or args.data):
        raise ValueError(
            "Give either --benchmark (with --data) or --corpus with --questions, not both."
        )
    if own and not (args.corpus and args.questions):
        raise ValueError("Your own run needs both --corpus PATH and --questions FILE.")
    if not own and not args.benchmark:
        raise ValueError(
            "Give --benchmark NAME (see 'longctx run --help'), or --corpus PATH --questions FILE "
            "for your own documents."
        )
    check_out_folder(args.out)  # before any sample loads or model starts
    options = {
        "strategies": tuple(s.strip() for s in args.strategies.split(",") if s.strip()),
        "llm": args.llm,
        "datasets": tuple(args.subset),
        "limit": args.limit,
        "concurrency": args.concurrency,
        "strategy_options": parse_options(args.option),
        "loader_options": {k: v for k, v in (parse_value(item) for item in args.loader_option)},
        "llm_cache": not args.no_llm_cache,
        "inject_once": args.inject_once,
    }
    options["budget"], _ = budget_from_args(args, args.llm, options["strategy_options"].values())
    if own:
        config = RunConfig.for_corpus(args.corpus, args.questions, **options)
    else:
        config = RunConfig(benchmark=args.benchmark, data_path=args.data, **options)
    prices = load_prices(args.prices) if args.prices else None  # kept for the run's report
    if args.ray is not None:
        from longctx.experiments.runner.ray_runner import run_experiment_ray

        endpoints = [u.strip() for u in (args.endpoints or "").split(",") if u.strip()]
        if prices is not None:
            save_run_prices(args.out, prices)
        counts = run_experiment_ray(config, args.out, address=args.ray or None, endpoints=endpoints)
    elif args.endpoints:
        raise ValueError("--endpoints needs --ray")
    else:
        samples = select_samples(config, None)
        chat = make_chat_model(config.llm)
        if not announce_plan(
            *plan_experiment(config, samples, chat, args.out), model_id(chat), yes=args.yes
        ):
            print("Not started.", file=sys.stderr)
            return 1
        if prices is not None:
            save_run_prices(args.out, prices)
        counts = run_experiment(config, args.out, llm=chat, samples=samples)
    print(
        f"{counts['pairs']} answers in {args.out}: {counts['skipped']} already done, "
        + (
            f"{counts['changed']} made with other settings answered again, "
            if counts.get("changed")
            else ""
        )
        + f"{counts['ok']} answered now, {counts['failed']} failed (rerun to retry them)"
    )
    return 0 if counts["failed"] == 0 else 1


def cmd_report(args: argparse.Namespace) -> int:
    """Score a run folder and print its summary table."""
    from longctx.experiments.reports.report import build_report

    judge = make_chat_model(args.judge) if args.judge else None
    plots = not args.no_plots and _plots_installed()
    result = build_report(
        args.dir,
        judge=judge,
        judge_setting=args.judge_setting,
        plots=plots,
        html=not args.no_html,
        prices=args.prices,
    )
    folder = Path(result["folder"])
    print(f"# {result['benchmark']}\n\nPrices: {result['prices']}\n")
    print((folder / "summary.md").read_text())
    print((folder / "significance.md").read_text())
    print((folder / "by_length.md").read_text())
    for extra in (
        "ceilings.md",
        "amortized_cost.md",
    ):  # written when the samples name their evidence / when some strategy answered
        if (folder / extra).exists():
            print((folder / extra).read_text())
    print(f"{'Tables, scores.json and plots' if plots else 'Tables and scores.json'} in {folder}")
    if result.get("html"):
        print(f"HTML report (open in a browser): {result['html']}")
    return 0


def _plots_installed() -> bool:
    """Whether the report's plots can be drawn; if not (the core install), say which extra
    draws them: the tables, scores and HTML report need no plotting library, so they are
    written all the same."""
    try:
        require("matplotlib", extra="plots", feature="plotting the report")
    except MissingExtraError as exc:
        print(f"Plots skipped: {exc}", file=sys.stderr)
        return False
    return True


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare the same strategies across run folders on their shared questions and print the
    paired table."""
    from longctx.experiments.reports.report import (
        compare_runs,
        comparison,
        stats,
    )  # scipy: loaded only for the commands that score

    judge = make_chat_model(args.judge) if args.judge else None
    result = compare_runs(args.dirs, judge=judge)
    columns = [c for c in comparison.PAIRWISE_COLUMNS if c != "metric"]
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for r in result.pairs:
        print(
            "| "
            + " | ".join(
                stats.format_p(r[c])
                if c in ("p_value", "p_adjusted")
                else ""
                if r[c] is None
                else str(r[c])
                for c in columns
            )
            + " |"
        )
    if not result.pairs:
        print("(no pair of strategies to compare)")
    print(
        "\nmean_diff = a - b on the questions both answered; ci: 95% paired bootstrap; p: "
        "McNemar exact (0/1 scores) or paired "
        "sign-flip permutation, Holm-adjusted across the rows."
    )
    print(
        "Questions are paired when id, question text and corpus match in both runs."
        + (
            "".join(f"\n{line}" for line in result.dropped)
            if result.dropped
            else " Every question id matched."
        )
    )
    if args.out:
        comparison.write_pairwise(Path(args.out), result.pairs)
        print(f"Written to {args.out}")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write a run's official prediction files and print how the official code scores them."""
    out = Path(args.out) if args.out else Path(args.dir) / "official"
    written = export_official(args.dir, out)
    for strategy, files in written.items():
        omitted = sum(f.omitted_failed for f in files)
        note = f", {omitted} failed answers left out as the official script does" if omitted else ""
        print(f"{strategy}: {sum(f.lines for f in files)} answers in {len(files)} file(s){note}")
        print(f"  score: {official_command(args.dir, out, strategy, files)}")
    if not written:
        print(f"No answers in {args.dir} yet.")
    return 0


def cmd_synth(args: argparse.Namespace) -> int:
    """Generate a synthetic corpus directory and print its size and time."""
    get_domain(args.domain)
    needle = None
    if args.needle_depth is not None:
        needle = NeedleConfig(
            depth=args.needle_depth,
            confusing_facts=not args.no_cfi,
            keyword_replacement=not args.no_kpr,
        )
    cfg = SynthConfig(
        domain=args.domain,
        target_tokens=parse_tokens(args.tokens),
        seed=args.seed,
        num_questions=args.questions,
        doc_tokens=args.doc_tokens,
        noise_rate=args.noise,
        needle=needle,
    )
    result = generate(cfg, args.out)
    print(
        f"{result.num_documents} documents, {result.total_tokens:,} tokens (target "
        f"{cfg.target_tokens:,}), "
        f"{result.num_questions} questions in {result.seconds:.1f}s -> {result.out_dir}"
    )
    return 0


def cmd_ceilings(args: argparse.Namespace) -> int:
    """Compute and print the evidence ceilings of a data folder."""
    loader = dict(parse_value(item) for item in args.loader_option)
    if args.subset:
        loader["datasets"] = list(args.subset)
    if loader and not args.benchmark:
        raise ValueError("--subset and --loader-option need --benchmark")
    samples = (
        load_benchmark(args.benchmark, args.data, **loader)
        if args.benchmark
        else load_samples(args.data)
    )
    samples = samples[: args.limit] if args.limit else samples
    strategies = (
        [s.strip() for s in args.strategies.split(",") if s.strip()] if args.strategies else None
    )
    ceilings = compute_ceilings(
        samples,
        strategies,
        parse_options(args.option),
        gold_sub_questions=args.gold_sub_questions,
        tokenizer=load_tokenizer(args.tokenizer),
        cache_dir=args.cache_dir,
    )
    if args.json:
        print(json.dumps(ceilings_json(ceilings), indent=2))
    else:
        print(format_table(ceilings, title=str(args.data)))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """Run the demo and print its comparison table and how to read it."""
    offered = demo_strategies()
    names = (
        list(offered)
        if args.strategies == "all"
        else [s.strip() for s in (args.strategies or "").split(",") if s.strip()]
    )
    unknown = sorted(set(names) - set(offered))
    if unknown:
        raise ValueError(
            f"The demo runs {', '.join(offered)} (or 'all'); unknown: {', '.join(unknown)}"
        )
    result = run_demo(
        args.out,
        llm=args.llm,
        questions=args.questions,
        strategies={n: offered[n] for n in names} or None,
        yes=args.yes,
    )
    if result is None:
        print("Not started.", file=sys.stderr)
        return 1
    folder = Path(result["folder"])
    print(f"\n# Demo: {len(result['summary'])} strategies on your-corpus questions (examples/)\n")
    print((folder / "summary.md").read_text())
    print((folder / "significance.md").read_text())
    print(READING)
    print(f"\nTables, scores.json, report.html and plots in {folder}")
    return 0


#: Subcommand name -> the function that runs it.
COMMANDS = {
    "answer": cmd_answer,
    "index": cmd_index,
    "run": cmd_run,
    "report": cmd_report,
    "synth": cmd_synth,
    "demo": cmd_demo,
    "ceilings": cmd_ceilings,
    "compare": cmd_compare,
    "export": cmd_export,
}

__all__ = ["COMMANDS", "USER_ERRORS", "RunInterrupted", "budget_from_args"]
