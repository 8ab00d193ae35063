"""The ``longctx`` subcommands: each ``cmd_*`` runs one parsed command line and returns its exit status.

Loaded by :mod:`experiments.cli` only once a command line has parsed, so that ``--help`` and
argument errors never wait for the engines this module imports.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agents import (
    STRATEGIES,
    Budget,
    ChatModelError,
    Corpus,
    Question,
    answer,
    index_for,
    make_chat_model,
)
from agents.run_plan import announce_plan, plan_for
from experiments.benchmarks import BenchmarkDataError, load_benchmark
from experiments.ceilings import ceilings_json, compute_ceilings, format_table, load_tokenizer
from experiments.demo import READING, demo_strategies, run_demo
from experiments.export import export_official, official_command
from experiments.planning import plan_experiment
from experiments.prices import price_for, rerank_price
from experiments.runner import (
    RunConfig,
    RunInterrupted,
    check_out_folder,
    run_experiment,
    select_samples,
)
from experiments.synth import (
    NeedleConfig,
    SynthConfig,
    generate,
    get_domain,
    load_samples,
    parse_tokens,
)
from graphs.llm import model_id
from retrieval import CorpusError
from retrieval.embedder_base import EmbedderError
from retrieval.extras import MissingExtraError
from retrieval.locks import LockHeld
from retrieval.ray_support import RayNotInstalledError, require_ray

#: Errors of the user's input or environment: printed on one line, exit status 2 (``OSError``:
#: a path that is a file where a folder is wanted, no permission, a full disk; its message names the path).
USER_ERRORS = (CorpusError, ChatModelError, KeyError, TypeError, ValueError, RayNotInstalledError, LockHeld, BenchmarkDataError, EmbedderError,
               OSError, MissingExtraError)  # fmt: skip


def budget_from_args(
    args: argparse.Namespace, llm: Any, configs: Iterable[Mapping[str, Any]] = ()
) -> tuple[Budget | None, Any]:
    """The :class:`~agents.Budget` of ``--max-calls/--max-tokens/--max-cost`` (``None`` without them)
    and the model to run (made here when ``--max-cost`` needs its price, else ``llm`` as given).

    The price comes from the report's table (:func:`experiments.prices.price_for`; local models
    are free): the library's budget takes a price rather than reading a table above its layer.
    So does the reranker's, when the strategy options ``configs`` name one (:func:`experiments.prices.rerank_price`).
    """
    if args.max_calls is None and args.max_tokens is None and args.max_cost is None:
        return None, llm
    price = None
    if args.max_cost is not None:
        llm = make_chat_model(llm)
        price = price_for(model_id(llm))
        if price is None:
            raise ValueError(f"--max-cost needs the price of {model_id(llm).split(' @ ')[0]!r}, which the price table "
                             "(experiments/prices.py) does not list; use --max-calls / --max-tokens instead")  # fmt: skip
    reranking = rerank_price(configs) if args.max_cost is not None else None
    return Budget(
        max_llm_calls=args.max_calls,
        max_prompt_tokens=args.max_tokens,
        max_cost_usd=args.max_cost,
        price=price,
        rerank_price=reranking,
    ), llm


def _retrieval_overrides(args: argparse.Namespace) -> dict:
    overrides = {
        "retriever": args.retriever,
        "chunk_unit": args.chunk_unit,
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
    }
    options = {"model": args.retriever_model, "backend": args.embedding_backend}
    if any(options.values()):
        overrides["retriever_options"] = {k: v for k, v in options.items() if v}
    return {k: v for k, v in overrides.items() if v is not None}


def _parse_value(item: str) -> tuple[str, Any]:
    """``"key=JSON"`` -> ``(key, value)``; a bare string value needs no quotes."""
    key, sep, value = item.partition("=")
    if not sep or not key:
        raise ValueError(f"Expected KEY=VALUE, got {item!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


def _parse_options(items: list[str]) -> dict[str, dict]:
    """``["rag.top_k=5", 'rag.retriever="dense"']`` -> ``{"rag": {"top_k": 5, "retriever": "dense"}}``."""
    options: dict[str, dict] = {}
    for item in items:
        strategy, dot, field = item.partition("=")[0].partition(".")
        if "=" not in item or not dot:
            raise ValueError(f"--option must look like STRATEGY.KEY=VALUE, got {item!r}")
        options.setdefault(strategy, {})[field] = _parse_value(item)[1]
    return options


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
            "Give --benchmark NAME (see 'longctx run --help'), or --corpus PATH --questions FILE for your own documents."
        )
    check_out_folder(args.out)  # before any sample loads or model starts
    options = {
        "strategies": tuple(s.strip() for s in args.strategies.split(",") if s.strip()),
        "llm": args.llm,
        "datasets": tuple(args.subset),
        "limit": args.limit,
        "concurrency": args.concurrency,
        "strategy_options": _parse_options(args.option),
        "loader_options": {k: v for k, v in (_parse_value(item) for item in args.loader_option)},
        "llm_cache": not args.no_llm_cache,
        "inject_once": args.inject_once,
    }
    options["budget"], _ = budget_from_args(args, args.llm, options["strategy_options"].values())
    if own:
        config = RunConfig.for_corpus(args.corpus, args.questions, **options)
    else:
        config = RunConfig(benchmark=args.benchmark, data_path=args.data, **options)
    if args.ray is not None:
        from experiments.ray_runner import run_experiment_ray

        endpoints = [u.strip() for u in (args.endpoints or "").split(",") if u.strip()]
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
    from experiments.report import build_report

    judge = make_chat_model(args.judge) if args.judge else None
    result = build_report(
        args.dir, judge=judge, plots=not args.no_plots, html=not args.no_html, prices=args.prices
    )
    folder = Path(result["folder"])
    print(f"# {result['benchmark']}\n")
    print((folder / "summary.md").read_text())
    print((folder / "significance.md").read_text())
    print((folder / "by_length.md").read_text())
    for extra in (
        "ceilings.md",
        "amortized_cost.md",
    ):  # written when the samples name their evidence / when some strategy answered
        if (folder / extra).exists():
            print((folder / extra).read_text())
    print(
        f"{'Tables and scores.json' if args.no_plots else 'Tables, scores.json and plots'} in {folder}"
    )
    if result.get("html"):
        print(f"HTML report (open in a browser): {result['html']}")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare the same strategies across run folders on their shared questions and print the paired table."""
    from experiments.report import (
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
        "\nmean_diff = a - b on the questions both answered; ci: 95% paired bootstrap; p: McNemar exact (0/1 scores) or paired "
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


def cmd_answer(args: argparse.Namespace) -> int:
    """Run one question and print answer, evidence titles and usage."""
    choices = {chr(ord("A") + i): c for i, c in enumerate(args.choices or [])} or None
    question = Question(text=args.question, choices=choices, instruction=args.instruction)
    spec = STRATEGIES.get(args.strategy)
    overrides = {
        "top_k": args.top_k,
        "max_new_tokens": args.max_new_tokens,
        **(_retrieval_overrides(args) if spec.uses_index else {}),
    }
    overrides = {k: v for k, v in overrides.items() if v is not None}
    options = _parse_options(
        [o if "." in o.partition("=")[0] else f"{args.strategy}.{o}" for o in args.option]
    )
    wrong = sorted(set(options) - {args.strategy})
    if wrong:
        raise ValueError(f"--option names {wrong} but the strategy is {args.strategy!r}")
    overrides.update(options.get(args.strategy, {}))
    if args.ray is not None:
        if spec.ray_stage is None:
            staged = [n for n in STRATEGIES.available() if STRATEGIES.get(n).ray_stage is not None]
            raise ValueError(
                f"--ray on 'answer' runs a strategy's own stage on Ray (--strategy {' or '.join(staged) or '<one with a Ray stage>'}), "
                f"and {args.strategy!r} has none; for an index use 'longctx index --ray', for many questions 'longctx run --ray'"
            )
        require_ray()  # the install hint now, not after the plan call
        overrides.update(spec.ray_stage.options(args.ray or None))
    cfg = spec.make_config(
        args.preset, **overrides
    )  # bad options and a bad model fail before the corpus is read
    budget, llm = budget_from_args(args, make_chat_model(args.llm), [dataclasses.asdict(cfg)])
    corpus = Corpus.from_path(args.corpus, show_progress=True)
    plans, speed = plan_for(
        {args.strategy: cfg}, [(corpus.num_tokens, len(corpus), 1)], llm, calibrate=True
    )
    if not announce_plan(plans, speed, model_id(llm), yes=args.yes):
        print("Not started.", file=sys.stderr)
        return 1
    result = answer(
        corpus,
        question,
        strategy=args.strategy,
        llm=llm,
        preset=args.preset,
        cache_dir=args.cache_dir,
        show_progress=True,
        budget=budget,
        **overrides,
    )
    if result.stopped:
        print(f"Stopped: the run reached its {result.stopped} ({budget.describe() if budget else ''}) after {result.usage.llm_calls} call(s); "
              "what it did is below (a larger budget resumes a checkpointed run)", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(result.to_dict(), ensure_ascii=False, indent=2))
        return 0
    u = result.usage
    print(f"Answer: {result.answer}")
    if result.evidence:
        print("Evidence:")
        for i, e in enumerate(
            result.evidence
        ):  # structured evidence is a table cell: no chunk, no score
            where = ", ".join(
                ([f"chunk {e.chunk_id}"] if e.chunk_id is not None else [])
                + ([f"score {e.score:.3f}"] if e.score is not None else [])
            )
            print(
                f"  [{(i if e.rank is None else e.rank) + 1}] {e.title}"
                + (f" ({where})" if where else "")
                + ("" if e.score is not None else f": {e.text[:200]}")
            )
    earlier = (
        f"; the resumed run made {u.earlier_llm_calls} more in earlier calls"
        if u.earlier_llm_calls
        else ""
    )
    cached = (
        f" ({u.cached_prompt_tokens} of the prompt tokens read from the server's prompt cache)"
        if u.cached_prompt_tokens
        else ""
    )
    reranks = (
        f", {u.rerank_calls} rerank call(s) of {u.rerank_tokens} tokens" if u.rerank_calls else ""
    )
    print(
        f"Usage: {u.llm_calls} LLM call(s), {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens"
        f"{' (estimated)' if u.estimated else ''}{cached}{reranks}, {u.seconds:.1f}s ({u.index_seconds:.1f}s indexing){earlier}"
    )
    return 0


def cmd_index(args: argparse.Namespace) -> int:
    """Build (or find) the cached index of a corpus and print where it is."""
    spec = STRATEGIES.get(args.strategy)
    if not spec.uses_index:  # a plug-in is offered by its entry point's name before it is loaded
        raise ValueError(f"Strategy {args.strategy!r} uses no index; 'longctx index' builds one for "
                         f"{', '.join(s for s in STRATEGIES.available() if STRATEGIES.get(s).uses_index)}")  # fmt: skip
    corpus = Corpus.from_path(args.path, show_progress=True)
    cfg = spec.make_config(**_retrieval_overrides(args))
    if args.ray is not None:
        from retrieval.ray_index import build_index_ray

        index = build_index_ray(
            corpus,
            cfg.retriever,
            chunking=cfg.chunking(),
            cache_dir=args.cache_dir,
            address=args.ray or None,
            workers=args.ray_workers,
            show_progress=True,
            **dict(cfg.retriever_options),
        )
    else:
        index = index_for(corpus, cfg, cache_dir=args.cache_dir, show_progress=True)
    print(
        f"{len(corpus)} documents, {corpus.num_tokens} tokens -> {len(index)} chunks, {index.retriever.name} index at {index.path}"
    )
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
        f"{result.num_documents} documents, {result.total_tokens:,} tokens (target {cfg.target_tokens:,}), "
        f"{result.num_questions} questions in {result.seconds:.1f}s -> {result.out_dir}"
    )
    return 0


def cmd_ceilings(args: argparse.Namespace) -> int:
    """Compute and print the evidence ceilings of a data folder."""
    samples = (
        load_benchmark(args.benchmark, args.data) if args.benchmark else load_samples(args.data)
    )
    samples = samples[: args.limit] if args.limit else samples
    strategies = (
        [s.strip() for s in args.strategies.split(",") if s.strip()] if args.strategies else None
    )
    ceilings = compute_ceilings(
        samples,
        strategies,
        _parse_options(args.option),
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
